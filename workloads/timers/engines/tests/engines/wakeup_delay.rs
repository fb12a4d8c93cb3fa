//! How late this machine wakes a sleeping thread right now. Shared by the engines' tests and
//! the strategy tests of `timers` and `timers-legacy` (included by path): timer threads wait
//! the same way for their next tick, task or deadline, so on a loaded machine their callbacks
//! are late by about as much, whatever the engine or strategy does.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How long the probe thread sleeps at a time.
const STEP: Duration = Duration::from_millis(1);

/// A thread that sleeps [`STEP`] at a time, from `start` until dropped, and keeps its worst
/// oversleep.
pub struct WakeupDelay {
    stop: Arc<AtomicBool>,
    worst_nanos: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl WakeupDelay {
    pub fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let worst_nanos = Arc::new(AtomicU64::new(0));
        let thread = {
            let (stop, worst_nanos) = (Arc::clone(&stop), Arc::clone(&worst_nanos));
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let due = Instant::now() + STEP;
                    thread::sleep(STEP);
                    let late = Instant::now().saturating_duration_since(due);
                    let late = u64::try_from(late.as_nanos()).unwrap_or(u64::MAX);
                    worst_nanos.fetch_max(late, Ordering::Relaxed);
                }
            })
        };
        Self {
            stop,
            worst_nanos,
            thread: Some(thread),
        }
    }

    /// The worst oversleep seen so far.
    pub fn worst(&self) -> Duration {
        Duration::from_nanos(self.worst_nanos.load(Ordering::Relaxed))
    }
}

impl Drop for WakeupDelay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }
}
