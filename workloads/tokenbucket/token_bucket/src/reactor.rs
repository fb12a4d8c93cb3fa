//! A cooperative single-threaded scheduler, one per shard, like a seastar reactor.
//!
//! Tasks run one at a time until they yield or sleep; nothing preempts a task, so a task
//! that spins (a CPU hog) delays every other task of its shard. Timers have nanosecond
//! deadlines on `CLOCK_MONOTONIC`; when no task is ready the shard sleeps until the next
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

/// The scheduler of one shard.
pub struct Reactor {
    tasks: Vec<Option<Box<dyn Task>>>,
    ready: VecDeque<usize>,
    timers: TimerQueue,
}

impl Default for Reactor {
    fn default() -> Self {
        Self::new()
    }
}

impl Reactor {
    pub fn new() -> Self {
        Reactor {
            tasks: Vec::new(),
            ready: VecDeque::new(),
            timers: TimerQueue::default(),
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

    /// Runs tasks until `stop()` says so (checked between tasks and at least every 10 ms) or
    /// no task is left. `observe` gets the overshoot of every sleep and the lateness of every
    /// timer.
    pub fn run(&mut self, mut stop: impl FnMut(u64) -> bool, observe: &mut dyn ReactorObserver) {
        loop {
            let now = monotonic_ns();
            if stop(now) {
                return;
            }
            while let Some((due, id)) = self.timers.pop_due(now) {
                observe.timer_fired(due, now - due);
                self.ready.push_back(id);
            }
            if let Some(id) = self.ready.pop_front() {
                let task = self.tasks[id].as_mut().expect("ready tasks exist");
                match task.run(now) {
                    Next::Yield => self.ready.push_back(id),
                    Next::SleepUntil(at) => self.timers.push(at, id),
                    Next::Done => self.tasks[id] = None,
                }
                continue;
            }
            let target = match self.timers.next_due() {
                Some(due) => due.min(now + MAX_IDLE_NS),
                None if self.tasks.iter().all(Option::is_none) => return,
                None => now + MAX_IDLE_NS,
            };
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
