//! The tasks of one shard, as the seastar perf test (`tests/perf/shared_token_bucket.cc`)
//! runs them: the worker that grabs tokens, the releaser timer that gives them back, and the
//! averaging timer of the flow ratio (measured for every strategy; only flow-monitor charges
//! grabs by it). The CPU hog is `token_bucket::hog`, shared with the `io` suite.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::RngExt;
use token_bucket::measure_window::MeasureWindow;
use token_bucket::reactor::{monotonic_ns, Next, Task};
use token_bucket::{FlowMonitor, Rovers, SharedTokenBucket};

use crate::params::Wait;

/// Counters of a shard that the coordinator samples (one cache line per shard).
#[derive(Default, Debug)]
#[repr(align(128))]
pub struct ShardCounters {
    /// Tokens the worker got (the request sizes, not their flow-monitor cost).
    pub granted: AtomicU64,
    /// The same, granted inside the measured window.
    pub window_granted: AtomicU64,
    /// Grabs that got their tokens inside the measured window.
    pub window_grabs: AtomicU64,
    /// Tokens released inside the measured window.
    pub window_released: AtomicU64,
    /// Tokens the worker's replenishes dropped at the bucket's limit (no grab was waiting for
    /// them: the shards were away longer than limit / rate), the part that accrued in the window.
    pub window_dropped: AtomicU64,
    /// The shard thread's id (its schedstat).
    pub tid: AtomicI32,
    /// The flow ratio, as f64 bits.
    pub flow_ratio: AtomicU64,
    /// The largest flow ratio so far, as f64 bits.
    pub flow_ratio_max: AtomicU64,
}

/// State the tasks of one shard share (they run on one thread, one at a time).
pub struct ShardState {
    /// Granted tokens not yet released (the perf test's `available`).
    pub available: u64,
    /// The shard's dispatched/completed ratio, measured for every strategy.
    pub flow: FlowMonitor,
    /// Whether grabs cost `tokens x ratio` above the threshold (strategy flow-monitor).
    pub flow_costs: bool,
}

pub type Shared = Rc<RefCell<ShardState>>;

/// The perf test's `worker::work()` loop body: one tick per run.
pub struct Worker<R: Rovers> {
    pub tb: Arc<SharedTokenBucket<R>>,
    pub state: Shared,
    pub counters: Arc<ShardCounters>,
    pub window: Arc<MeasureWindow>,
    /// A grab whose tokens are not there yet: (request size, head position).
    pub pending: Option<(u64, u64)>,
    /// Tokens per tick at most (limit / shards).
    pub per_tick_cap: u64,
    pub grab_max: u64,
    pub wait: Wait,
    pub rng: SmallRng,
}

impl<R: Rovers> Task for Worker<R> {
    fn run(&mut self, now_ns: u64) -> Next {
        let in_window = self.window.contains(now_ns);
        let mut deficiency = 0;
        let mut tick_tokens = 0;
        let mut state = self.state.borrow_mut();
        while tick_tokens < self.per_tick_cap {
            let size = if let Some((size, position)) = self.pending {
                let now = monotonic_ns();
                let dropped = self.tb.replenish(now);
                // The dropped tokens accrued over [since, now): the window's share of them.
                let share = self.window.share_of(dropped.since_ns, now);
                self.counters
                    .window_dropped
                    .fetch_add((dropped.tokens as f64 * share) as u64, Ordering::Relaxed);
                deficiency = self.tb.deficiency(position);
                if deficiency > 0 {
                    break;
                }
                self.pending = None;
                size
            } else {
                let size = self.rng.random_range(1..=self.grab_max);
                let cost = if state.flow_costs {
                    state.flow.cost(size, self.tb.limit())
                } else {
                    size
                };
                let position = self.tb.grab(cost);
                deficiency = self.tb.deficiency(position);
                if deficiency > 0 {
                    self.pending = Some((size, position));
                    break;
                }
                size
            };
            tick_tokens += size;
            state.available += size;
            state.flow.dispatched(size);
            self.counters.granted.fetch_add(size, Ordering::Relaxed);
            if in_window {
                self.counters
                    .window_granted
                    .fetch_add(size, Ordering::Relaxed);
                self.counters.window_grabs.fetch_add(1, Ordering::Relaxed);
            }
        }
        match self.wait {
            Wait::Yield => Next::Yield,
            Wait::Sleep => {
                // seastar::sleep(duration_cast<microseconds>(duration_for(d))): truncated
                // to whole microseconds, as the perf test does.
                let micros = (self.tb.duration_for(deficiency) * 1e6) as u64;
                Next::SleepUntil(monotonic_ns() + micros * 1_000)
            }
        }
    }
}

/// The perf test's release timer (`worker::do_release`): every period it releases the
/// shard's share of the rate for the real time elapsed since the last release (a hog may
/// have delayed it), at most what the worker holds. `over_release` scales that share up.
pub struct Releaser<R: Rovers> {
    pub tb: Arc<SharedTokenBucket<R>>,
    pub state: Shared,
    pub counters: Arc<ShardCounters>,
    pub window: Arc<MeasureWindow>,
    pub period_ns: u64,
    /// Tokens per period: rate / shards x period, truncated (the perf test's `const
    /// uint64_t release_per_tick`).
    pub per_period: u64,
    pub over_release: f64,
    pub last_ns: Option<u64>,
}

impl<R: Rovers> Task for Releaser<R> {
    fn run(&mut self, now_ns: u64) -> Next {
        if let Some(last) = self.last_ns {
            let real_delay = now_ns.saturating_sub(last) as f64;
            let to_release = (real_delay * self.per_period as f64 / self.period_ns as f64
                * (1.0 + self.over_release)) as u64;
            let mut state = self.state.borrow_mut();
            let tokens = to_release.min(state.available);
            state.available -= tokens;
            state.flow.completed(tokens);
            self.tb.release(tokens);
            if self.window.contains(now_ns) {
                self.counters
                    .window_released
                    .fetch_add(tokens, Ordering::Relaxed);
            }
        }
        self.last_ns = Some(now_ns);
        // timer::arm_periodic re-arms at now + period when it fires (readd_periodic).
        Next::SleepUntil(monotonic_ns() + self.period_ns)
    }
}

/// The averaging timer of the flow monitor (`io_queue::_averaging_decay_timer`).
pub struct FlowUpdater {
    pub state: Shared,
    pub counters: Arc<ShardCounters>,
    pub period_ns: u64,
}

impl Task for FlowUpdater {
    fn run(&mut self, _now_ns: u64) -> Next {
        let mut state = self.state.borrow_mut();
        state.flow.update();
        let c = &self.counters;
        c.flow_ratio
            .store(state.flow.ratio().to_bits(), Ordering::Relaxed);
        c.flow_ratio_max
            .store(state.flow.max_ratio().to_bits(), Ordering::Relaxed);
        Next::SleepUntil(monotonic_ns() + self.period_ns)
    }
}
