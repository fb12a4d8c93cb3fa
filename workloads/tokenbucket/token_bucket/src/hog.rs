//! The CPU hog of seastar's perf test (`tests/perf/shared_token_bucket.cc`, `hog`): a task
//! of a shard's reactor that sleeps Exp(rest), then spins Exp(busy) without yielding, so
//! every other task of its shard stalls meanwhile (the reactor stalls of seastar #1766).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand_distr::{Distribution, Exp};

use crate::reactor::{monotonic_ns, Next, Task};

/// The perf test's `hog`: sleep Exp(rest), then spin Exp(busy) without yielding.
pub struct Hog {
    pub busy: Exp<f64>,
    pub rest: Exp<f64>,
    pub rng: SmallRng,
    pub stop: Arc<AtomicBool>,
    pub started: bool,
}

impl Hog {
    /// A hog with mean busy and rest times in nanoseconds.
    pub fn new(busy_ns: f64, rest_ns: f64, rng: SmallRng, stop: Arc<AtomicBool>) -> Hog {
        Hog {
            busy: Exp::new(1.0 / busy_ns).expect("positive mean"),
            rest: Exp::new(1.0 / rest_ns).expect("positive mean"),
            rng,
            stop,
            started: false,
        }
    }
}

impl Task for Hog {
    fn run(&mut self, _now_ns: u64) -> Next {
        if self.started {
            let until = monotonic_ns() + self.busy.sample(&mut self.rng) as u64;
            while monotonic_ns() < until && !self.stop.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        }
        self.started = true;
        Next::SleepUntil(monotonic_ns() + self.rest.sample(&mut self.rng) as u64)
    }
}
