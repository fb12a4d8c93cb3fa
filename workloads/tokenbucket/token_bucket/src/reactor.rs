//! A cooperative single-threaded scheduler, one per shard, like a seastar reactor.
//!
//! Tasks run one at a time until they yield or sleep; nothing preempts a task, so a task
//! that spins (a CPU hog) delays every other task of its shard. Ready tasks run in batches,
//! as seastar's `run_some_tasks` does: a batch ends after the task during which the task
//! quota (seastar's `--task-quota-ms`, 0.5 ms) ran out or a timer came due (seastar arms its
//! high-resolution timers on a timerfd in the same preempting context as the quota timer,
//! `reactor_backend.cc` `preempt_io_context`), and the timers are checked between batches.
//! seastar reads a flag the kernel sets; here the clock is read after each task instead.
//! When no task is ready the shard first busy-polls for `idle_poll_ns` (seastar's
//! `--idle-poll-time-us`, `reactor::calculate_poll_time`), then sleeps until the next
//! deadline with `clock_nanosleep(TIMER_ABSTIME)` and a timer slack of 1 ns (the default
//! 50 µs slack, or tokio's 1 ms timer wheel, is coarse next to the 0.5 ms worth of tokens a
//! shard waits for). The reactor measures how late the kernel woke it (the overshoot) and how
//! late timers fired (lateness, which also counts time a spinning task held the shard).

pub mod clock;
mod timers;

use std::collections::VecDeque;

pub use clock::{monotonic_ns, set_timer_slack_ns, sleep_until_ns};
use timers::TimerQueue;

/// What a task wants after running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Run again after the other ready tasks (seastar `yield()`).
    Yield,
    /// Run again at this `monotonic_ns` time (seastar `sleep()`, a timer).
    SleepUntil(u64),
    /// Never run again.
    Done,
}

/// A task of a shard.
pub trait Task {
    /// Runs the task once; `now_ns` is the reactor's clock when it was picked.
    fn run(&mut self, now_ns: u64) -> Next;
}

/// What the reactor saw, for the measured window only.
pub trait ReactorObserver {
    /// The shard slept in the kernel until `target_ns` and woke `overshoot_ns` after it.
    fn slept(&mut self, target_ns: u64, overshoot_ns: u64);
    /// A timer due at `due_ns` fired `lateness_ns` after it.
    fn timer_fired(&mut self, due_ns: u64, lateness_ns: u64);
}

/// An observer that ignores everything.
pub struct NoObserver;

impl ReactorObserver for NoObserver {
    fn slept(&mut self, _: u64, _: u64) {}
    fn timer_fired(&mut self, _: u64, _: u64) {}
}

/// Longest idle sleep, so that a stop request is seen promptly.
const MAX_IDLE_NS: u64 = 10_000_000;

/// seastar's default `--task-quota-ms`: 0.5 ms.
pub const TASK_QUOTA_NS: u64 = 500_000;

/// seastar's default `--idle-poll-time-us` for this machine, in µs
/// (`reactor::calculate_poll_time`): 2000 when `/sys/hypervisor/type` exists (seastar's
/// `virtualized()`), else 200. Only a Xen guest has that file: on KVM, as on this VM,
/// seastar picks the bare-metal 200 µs.
pub fn seastar_idle_poll_us() -> u64 {
    if std::path::Path::new("/sys/hypervisor/type").exists() {
        2_000
    } else {
        200
    }
}

/// How a reactor batches tasks and waits when idle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReactorConfig {
    /// Longest batch of tasks between timer checks (the task quota).
    pub task_quota_ns: u64,
    /// How long an idle shard busy-polls before it sleeps in the kernel (0: at once).
    pub idle_poll_ns: u64,
}

impl Default for ReactorConfig {
    /// seastar's task quota; no idle polling.
    fn default() -> Self {
        ReactorConfig {
            task_quota_ns: TASK_QUOTA_NS,
            idle_poll_ns: 0,
        }
    }
}

/// The scheduler of one shard.
pub struct Reactor {
    tasks: Vec<Option<Box<dyn Task>>>,
    ready: VecDeque<usize>,
    timers: TimerQueue,
    config: ReactorConfig,
}

impl Default for Reactor {
    fn default() -> Self {
        Self::new()
    }
}

impl Reactor {
    pub fn new() -> Self {
        Self::with_config(ReactorConfig::default())
    }

    pub fn with_config(config: ReactorConfig) -> Self {
        Reactor {
            tasks: Vec::new(),
            ready: VecDeque::new(),
            timers: TimerQueue::default(),
            config,
        }
    }

    /// Adds a task, ready to run.
    pub fn spawn(&mut self, task: Box<dyn Task>) {
        self.tasks.push(Some(task));
        self.ready.push_back(self.tasks.len() - 1);
    }

    /// Adds a task that first runs at `at_ns`.
    pub fn spawn_at(&mut self, task: Box<dyn Task>, at_ns: u64) {
        self.tasks.push(Some(task));
        self.timers.push(at_ns, self.tasks.len() - 1);
    }

    /// Runs tasks until `stop()` says so (checked between batches and at least every 10 ms)
    /// or no task is left. `observe` gets the overshoot of every sleep and the lateness of
    /// every timer.
    pub fn run(&mut self, mut stop: impl FnMut(u64) -> bool, observe: &mut dyn ReactorObserver) {
        // When the shard last ran out of work (seastar's idle_start); None while busy.
        let mut idle_since: Option<u64> = None;
        loop {
            let mut now = monotonic_ns();
            if stop(now) {
                return;
            }
            while let Some((due, id)) = self.timers.pop_due(now) {
                observe.timer_fired(due, now - due);
                self.ready.push_back(id);
            }
            if !self.ready.is_empty() {
                idle_since = None;
                let preempt_at = (now + self.config.task_quota_ns)
                    .min(self.timers.next_due().unwrap_or(u64::MAX));
                while let Some(id) = self.ready.pop_front() {
                    let task = self.tasks[id].as_mut().expect("ready tasks exist");
                    match task.run(now) {
                        Next::Yield => self.ready.push_back(id),
                        Next::SleepUntil(at) => self.timers.push(at, id),
                        Next::Done => self.tasks[id] = None,
                    }
                    now = monotonic_ns();
                    if now >= preempt_at || self.timers.next_due().is_some_and(|d| d <= now) {
                        break;
                    }
                }
                continue;
            }
            let next_due = self.timers.next_due();
            if next_due.is_none() && self.tasks.iter().all(Option::is_none) {
                return;
            }
            let idle_start = *idle_since.get_or_insert(now);
            if now - idle_start < self.config.idle_poll_ns {
                std::hint::spin_loop();
                continue;
            }
            let target = next_due.map_or(now + MAX_IDLE_NS, |due| due.min(now + MAX_IDLE_NS));
            let woke = sleep_until_ns(target);
            observe.slept(target, woke.saturating_sub(target));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    struct Recorder {
        name: &'static str,
        log: Rc<RefCell<Vec<&'static str>>>,
        left: u32,
        sleep_ns: Option<u64>,
    }

    impl Task for Recorder {
        fn run(&mut self, now_ns: u64) -> Next {
            self.log.borrow_mut().push(self.name);
            if self.left == 0 {
                return Next::Done;
            }
            self.left -= 1;
            match self.sleep_ns {
                Some(ns) => Next::SleepUntil(now_ns + ns),
                None => Next::Yield,
            }
        }
    }

    #[derive(Default)]
    struct Count {
        sleeps: u32,
        fired: u32,
    }

    impl ReactorObserver for Count {
        fn slept(&mut self, _: u64, _: u64) {
            self.sleeps += 1;
        }
        fn timer_fired(&mut self, _: u64, _: u64) {
            self.fired += 1;
        }
    }

    #[test]
    fn yielding_tasks_take_turns_and_sleepers_wake() {
        let log = Rc::new(RefCell::new(Vec::new()));
        let mut r = Reactor::new();
        for name in ["a", "b"] {
            r.spawn(Box::new(Recorder {
                name,
                log: log.clone(),
                left: 2,
                sleep_ns: None,
            }));
        }
        r.spawn(Box::new(Recorder {
            name: "s",
            log: log.clone(),
            left: 1,
            sleep_ns: Some(200_000),
        }));
        let mut count = Count::default();
        r.run(|_| false, &mut count);
        let log = log.borrow();
        assert_eq!(&log[..6], &["a", "b", "s", "a", "b", "a"]);
        assert_eq!(log.iter().filter(|n| **n == "s").count(), 2);
        assert_eq!(count.fired, 1);
        assert!(count.sleeps >= 1, "idle until the sleeper's timer");
    }

    /// A shard whose only task sleeps 200 µs at a time: with an idle poll far longer than
    /// any wait it never sleeps in the kernel (it spins until the timer is due); with none it
    /// sleeps in the kernel for its waits.
    #[test]
    fn an_idle_shard_polls_before_it_sleeps() {
        let run = |idle_poll_ns| {
            let mut r = Reactor::with_config(ReactorConfig {
                idle_poll_ns,
                ..ReactorConfig::default()
            });
            r.spawn(Box::new(Recorder {
                name: "s",
                log: Rc::new(RefCell::new(Vec::new())),
                left: 20,
                sleep_ns: Some(200_000),
            }));
            let mut count = Count::default();
            r.run(|_| false, &mut count);
            assert_eq!(count.fired, 20);
            count.sleeps
        };
        // 10 s: a kernel sleep would need one 200 µs wait to have lasted 10 s.
        assert_eq!(run(10_000_000_000), 0);
        assert!(run(0) >= 1);
    }

    #[test]
    fn stop_ends_the_run() {
        let mut r = Reactor::new();
        r.spawn(Box::new(Recorder {
            name: "forever",
            log: Rc::new(RefCell::new(Vec::new())),
            left: u32::MAX,
            sleep_ns: Some(1_000),
        }));
        let end = monotonic_ns() + 20_000_000;
        r.run(|now| now >= end, &mut NoObserver);
        assert!(monotonic_ns() >= end);
    }
}
