//! Loom model of the armable timer's wake-up protocol, together with the
//! deadline tracker that arms it.
//!
//! The two modules are compiled here from their sources, with loom's atomics and
//! mutex as their `crate::sync` (the library's are std's): neither the library
//! nor tokio is built again for the model (`cfg(loom)` would change tokio's
//! internals as well). `cargo test --test loom_armable_timer` runs it alone.

use std::task::{Context, Poll, Waker};
use std::time::Duration;

use loom::sync::{Arc, Mutex};
use tokio::time::Instant;

mod sync {
    pub use loom::sync::atomic::{AtomicU64, Ordering};
    pub use loom::sync::{Arc, Mutex};
}
// The model uses part of each module.
#[allow(dead_code)]
#[path = "../src/armable_timer.rs"]
mod armable_timer;
#[allow(dead_code)]
#[path = "../src/deadline_tracker.rs"]
mod deadline_tracker;

use armable_timer::{ArmableTimer, Sleeper};
use deadline_tracker::DeadlineTracker;

/// Time that moves only when the model's clock thread advances it.
struct FakeClock {
    base: Instant,
    state: Mutex<ClockState>,
}

struct ClockState {
    /// Nanoseconds since `base`.
    now: u64,
    /// The waker of a pending sleep.
    sleeper: Option<Waker>,
    /// The deadline of the last sleep that reported Ready.
    fired: Option<Instant>,
}

impl FakeClock {
    fn at(&self, nanos: u64) -> Instant {
        self.base + Duration::from_nanos(nanos)
    }

    fn now(&self) -> Instant {
        self.at(self.state.lock().unwrap().now)
    }

    fn advance_to(&self, nanos: u64) {
        let sleeper = {
            let mut state = self.state.lock().unwrap();
            state.now = nanos;
            state.sleeper.take()
        };
        if let Some(waker) = sleeper {
            waker.wake();
        }
    }

    fn take_fired(&self) -> Option<Instant> {
        self.state.lock().unwrap().fired.take()
    }
}

struct FakeSleep {
    clock: Arc<FakeClock>,
    deadline: Instant,
}

impl Sleeper for FakeSleep {
    fn reset(&mut self, deadline: Instant) {
        self.deadline = deadline;
    }

    fn poll_sleep(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.clock.state.lock().unwrap();
        if self.clock.at(state.now) >= self.deadline {
            state.fired = Some(self.deadline);
            Poll::Ready(())
        } else {
            state.sleeper = Some(cx.waker().clone());
            Poll::Pending
        }
    }

    fn now(&self) -> Instant {
        self.clock.now()
    }
}

/// Request deadlines, in nanoseconds of fake time, in insertion order: the
/// second one re-arms the timer earlier, possibly below the current time.
const DEADLINES: [u64; 2] = [2, 1];
/// The clock's steps; it ends past every deadline.
const TICKS: [u64; 2] = [1, 3];

/// One thread inserts requests (arming the timer), one advances the clock,
/// and the router loop waits for the timer, expires what is due and re-arms
/// for the rest. A lost wake-up leaves the router blocked after the other
/// threads finish, which loom reports as a deadlock.
#[test]
fn no_lost_wake_up_and_no_early_expiry() {
    let mut model = loom::model::Builder::new();
    // Bounded to finish in seconds; LOOM_MAX_PREEMPTIONS=4 explores further
    // (about ten times longer).
    model.preemption_bound.get_or_insert(3);
    model.check(|| {
        let clock = Arc::new(FakeClock {
            base: Instant::now(),
            state: Mutex::new(ClockState {
                now: 0,
                sleeper: None,
                fired: None,
            }),
        });
        let mut timer = ArmableTimer::with_sleeper(FakeSleep {
            clock: Arc::clone(&clock),
            deadline: clock.at(0),
        });
        let tracker = Arc::new(Mutex::new(DeadlineTracker::new(timer.handle())));

        let inserter = {
            let (clock, tracker) = (Arc::clone(&clock), Arc::clone(&tracker));
            loom::thread::spawn(move || {
                for (id, &deadline) in DEADLINES.iter().enumerate() {
                    tracker
                        .lock()
                        .unwrap()
                        .insert(clock.at(deadline), id as u64);
                }
            })
        };
        let ticker = {
            let clock = Arc::clone(&clock);
            loom::thread::spawn(move || {
                for &tick in &TICKS {
                    clock.advance_to(tick);
                }
            })
        };

        let mut expired = [false; DEADLINES.len()];
        let mut ids = Vec::new();
        while expired.contains(&false) {
            let now = loom::future::block_on(timer.elapsed());
            let fired = clock
                .take_fired()
                .expect("Ready without the sleep elapsing");
            assert!(fired <= now, "Ready before the deadline it slept for");
            ids.clear();
            tracker.lock().unwrap().pop_expired(now, &mut ids);
            for &id in &ids {
                let id = id as usize;
                assert!(!expired[id], "request {id} expired twice");
                assert!(clock.at(DEADLINES[id]) <= now);
                expired[id] = true;
            }
        }

        inserter.join().unwrap();
        ticker.join().unwrap();
    });
}
