//! Probes that record when, how often and on which thread they fired, and a common face
//! for the engines.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

pub use crate::wakeup_delay::WakeupDelay;
use timer_engines::{
    EventExecutorGroup, HashedWheelTimer, ScheduledExecutor, TimerHandle, WheelConfig,
};

pub struct Probe {
    pub id: usize,
    pub deadline: Instant,
}

pub struct Recorder {
    fires: Vec<AtomicU32>,
    total: AtomicU64,
    early: AtomicUsize,
    max_late_nanos: AtomicU64,
    thread_names: Mutex<BTreeSet<String>>,
}

impl Recorder {
    pub fn new(ids: usize) -> Arc<Self> {
        Arc::new(Self {
            fires: (0..ids).map(|_| AtomicU32::new(0)).collect(),
            total: AtomicU64::new(0),
            early: AtomicUsize::new(0),
            max_late_nanos: AtomicU64::new(0),
            thread_names: Mutex::new(BTreeSet::new()),
        })
    }

    /// The expiry callback of the engines under test.
    pub fn record(&self, probe: Probe) {
        let now = Instant::now();
        match now.checked_duration_since(probe.deadline) {
            Some(late) => {
                let late = u64::try_from(late.as_nanos()).unwrap();
                self.max_late_nanos.fetch_max(late, Ordering::Relaxed);
            }
            None => {
                self.early.fetch_add(1, Ordering::Relaxed);
            }
        }
        let name = thread::current().name().unwrap_or("<unnamed>").to_owned();
        self.thread_names.lock().unwrap().insert(name);
        self.fires[probe.id].fetch_add(1, Ordering::Relaxed);
        self.total.fetch_add(1, Ordering::Release);
    }

    pub fn fires(&self, id: usize) -> u32 {
        self.fires[id].load(Ordering::Relaxed)
    }

    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Acquire)
    }

    /// Callbacks that ran before their deadline.
    pub fn early(&self) -> usize {
        self.early.load(Ordering::Relaxed)
    }

    pub fn max_lateness(&self) -> Duration {
        Duration::from_nanos(self.max_late_nanos.load(Ordering::Relaxed))
    }

    pub fn thread_names(&self) -> BTreeSet<String> {
        self.thread_names.lock().unwrap().clone()
    }
}

/// The engines, for tests that hold for any of them.
pub trait Engine: Sync {
    fn arm(&self, deadline: Instant, probe: Probe) -> TimerHandle;
    fn counters(&self) -> Vec<(&'static str, u64)>;

    fn counter(&self, name: &str) -> u64 {
        self.counters()
            .into_iter()
            .find(|(counter, _)| *counter == name)
            .unwrap_or_else(|| panic!("no counter named {name}"))
            .1
    }

    /// Registers a probe for `id` that expires at `deadline`.
    fn arm_probe(&self, id: usize, deadline: Instant) -> TimerHandle {
        self.arm(deadline, Probe { id, deadline })
    }
}

impl Engine for ScheduledExecutor<Probe> {
    fn arm(&self, deadline: Instant, probe: Probe) -> TimerHandle {
        self.schedule(deadline, probe)
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        ScheduledExecutor::counters(self)
    }
}

impl Engine for EventExecutorGroup<Probe> {
    fn arm(&self, deadline: Instant, probe: Probe) -> TimerHandle {
        self.schedule(deadline, probe)
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        EventExecutorGroup::counters(self)
    }
}

impl Engine for HashedWheelTimer<Probe> {
    fn arm(&self, deadline: Instant, probe: Probe) -> TimerHandle {
        self.new_timeout(deadline, probe)
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        HashedWheelTimer::counters(self)
    }
}

pub fn executor(threads: usize, recorder: &Arc<Recorder>) -> ScheduledExecutor<Probe> {
    let recorder = Arc::clone(recorder);
    ScheduledExecutor::new(threads, move |probe| recorder.record(probe))
}

pub fn event_executor(threads: usize, recorder: &Arc<Recorder>) -> EventExecutorGroup<Probe> {
    let recorder = Arc::clone(recorder);
    EventExecutorGroup::new(threads, move |probe| recorder.record(probe))
}

pub fn wheel(config: WheelConfig, recorder: &Arc<Recorder>) -> HashedWheelTimer<Probe> {
    let recorder = Arc::clone(recorder);
    HashedWheelTimer::new(config, move |probe| recorder.record(probe))
}

/// Polls `done` every millisecond for up to `limit`; true as soon as it holds.
pub fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let give_up = Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= give_up {
            return false;
        }
        thread::sleep(Duration::from_millis(1));
    }
}

/// Sleeps until `instant` (if it is in the future).
pub fn sleep_until(instant: Instant) {
    thread::sleep(instant.saturating_duration_since(Instant::now()));
}

/// The most a callback may run after its deadline: the engine's `granularity` (a wheel's
/// tick), plus `hops` wake-ups in series (the worker's; for an offloading wheel or an executor
/// handing a task on, that thread's too) each as late as `delay` saw this machine wake threads,
/// plus `slack` for what one sampling thread does not see. A fixed wall-clock bound failed on a
/// busy 2-core machine (the offloading wheel 200 ms late); this one grows with the measured
/// scheduling delay and is `granularity + slack` on a quiet machine.
pub fn allowed_lateness(
    granularity: Duration,
    hops: u32,
    delay: &WakeupDelay,
    slack: Duration,
) -> Duration {
    granularity + delay.worst() * hops + slack
}
