//! The CPU hog of seastar's perf test (`tests/perf/shared_token_bucket.cc`, `hog`): a task
//! of a shard's reactor that sleeps Exp(rest), then spins Exp(busy) without yielding, so
//! every other task of its shard stalls meanwhile (the reactor stalls of seastar #1766).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::SeedableRng;
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
    /// A hog with mean busy and rest times, its random stream drawn from the shard's `seed`
    /// (apart from the shard's other streams).
    pub fn new(busy: Duration, rest: Duration, seed: u64, stop: Arc<AtomicBool>) -> Hog {
        let rate = |mean: Duration| 1.0 / mean.as_nanos() as f64;
        Hog {
            busy: Exp::new(rate(busy)).expect("positive mean"),
            rest: Exp::new(rate(rest)).expect("positive mean"),
            rng: SmallRng::seed_from_u64(seed ^ 0x5151),
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
