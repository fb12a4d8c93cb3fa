//! Netty's `HashedWheelTimer`, on which lettuce arms its command timeouts since 6.3.2.

mod buckets;
mod worker;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_queue::SegQueue;

use crate::counter::OwnedCounter;
use crate::executor::OffloadPool;
use crate::handle::TimerHandle;
use crate::padded::Padded;
use crate::state::TimeoutState;
use crate::threads::{self, Callback};
use worker::{Expirer, Worker};

/// Wheel parameters; the defaults are Netty's (and lettuce's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WheelConfig {
    /// Time between ticks; a timeout expires up to one tick after its deadline.
    pub tick: Duration,
    /// Buckets in the wheel, rounded up to a power of two.
    pub wheel_size: usize,
    /// New timeouts moved into buckets per tick at most (Netty's hard-coded 100,000),
    /// so a thread registering in a loop cannot stall the worker.
    pub max_transfers_per_tick: usize,
    pub expiry: Expiry,
}

impl Default for WheelConfig {
    fn default() -> Self {
        Self {
            tick: Duration::from_millis(100),
            wheel_size: 512,
            max_transfers_per_tick: 100_000,
            expiry: Expiry::OnWorker,
        }
    }
}

/// Where the expiry callback runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expiry {
    /// On the wheel's worker thread, as Netty runs a `TimerTask`.
    OnWorker,
    /// On a pool of `threads` threads named `wheel-offload-N`: lettuce 6.3.2's timer task
    /// only submits the expiry to its `EventExecutorGroup`.
    Offload { threads: usize },
}

/// What the registering, cancelling and worker threads share about one timeout: Netty's
/// `HashedWheelTimeout` minus the fields only the worker touches.
#[derive(Debug)]
struct WheelTimeout {
    state: TimeoutState,
    /// The slab key of the timeout's bucket entry, or [`NOT_IN_BUCKET`]. Only the worker
    /// reads or writes it (Netty's `bucket` field); it is atomic only to be `Sync`.
    slot: AtomicUsize,
}

const NOT_IN_BUCKET: usize = usize::MAX;

/// A registered timeout on its way to the worker (Netty's `timeouts` queue).
struct Pending<T> {
    deadline: Instant,
    timeout: Arc<WheelTimeout>,
    task: T,
}

/// What the worker counts; nobody else writes them, so registering and cancelling cost no
/// shared atomics beyond Netty's own.
#[derive(Debug, Default)]
struct Counters {
    /// Timeouts that left the wheel: expired, unlinked after their cancel, or skipped at
    /// the transfer because they were cancelled before it.
    retired: OwnedCounter,
    /// Successful cancels, counted as the worker drains the cancelled queue.
    cancelled: OwnedCounter,
    /// Timeouts the worker expired: their callback ran on it or was handed to the pool.
    fired: OwnedCounter,
    ticks: OwnedCounter,
    transferred: OwnedCounter,
    cancelled_unlinked: OwnedCounter,
}

/// The part of the timer cancel handles need, and the counts; it holds no task, so handles
/// never keep tasks alive.
#[derive(Debug, Default)]
struct Core {
    /// Netty's `cancelledTimeouts`, drained by the worker at the start of each tick.
    cancelled: SegQueue<Arc<WheelTimeout>>,
    stopped: AtomicBool,
    /// Netty's `pendingTimeouts`: raised by every `new_timeout` (the one shared atomic a
    /// registering thread bumps), lowered by the worker as each timeout is retired.
    pending: Padded<AtomicU64>,
    counters: Padded<Counters>,
}

impl Core {
    /// The worker's bookkeeping for a timeout leaving the wheel. Netty lowers its count
    /// twice for a timeout that is cancelled while the worker expires or unlinks it; here
    /// it is lowered once, so that `registered` (pending + retired) stays exact.
    fn retire(&self) {
        self.pending.fetch_sub(1, Ordering::Release);
        self.counters.retired.inc();
    }
}

/// A timer wheel with one worker thread named `wheel-worker`.
pub struct HashedWheelTimer<T> {
    new_timeouts: Arc<SegQueue<Pending<T>>>,
    core: Arc<Core>,
    /// The offload pool, shared with the worker, for its counts.
    offload: Option<Arc<OffloadPool<T>>>,
    worker: Option<JoinHandle<()>>,
}

impl<T: Send + 'static> HashedWheelTimer<T> {
    /// Starts the worker (and the offload pool, if configured). Ticks count from now.
    ///
    /// # Panics
    /// If `tick` is zero, `wheel_size` is zero or above 2^30 (Netty's limits),
    /// `max_transfers_per_tick` is zero, or an offload pool has zero threads.
    pub fn new(config: WheelConfig, on_expire: impl Fn(T) + Send + Sync + 'static) -> Self {
        assert!(!config.tick.is_zero(), "tick must be positive");
        assert!(
            (1..=1 << 30).contains(&config.wheel_size),
            "wheel_size must be in 1..=2^30"
        );
        assert!(
            config.max_transfers_per_tick > 0,
            "max_transfers_per_tick must be positive"
        );
        let core = Arc::new(Core::default());
        let new_timeouts = Arc::new(SegQueue::new());
        let on_expire: Callback<T> = Arc::new(on_expire);
        let (expirer, offload) = match config.expiry {
            Expiry::OnWorker => (Expirer::OnWorker(on_expire), None),
            Expiry::Offload { threads } => {
                let pool = Arc::new(OffloadPool::new("wheel-offload", threads, on_expire));
                (Expirer::Offload(Arc::clone(&pool)), Some(pool))
            }
        };
        let worker = Worker::new(
            &config,
            Instant::now(),
            Arc::clone(&new_timeouts),
            Arc::clone(&core),
            expirer,
        );
        Self {
            new_timeouts,
            core,
            offload,
            worker: Some(threads::spawn_named("wheel-worker".into(), move || {
                worker.run()
            })),
        }
    }

    /// Registers `task` to expire at `deadline` (Netty's `newTimeout`): the pending count
    /// and a lock-free push; the worker places it into a bucket on its next tick.
    pub fn new_timeout(&self, deadline: Instant, task: T) -> TimerHandle {
        let timeout = Arc::new(WheelTimeout {
            state: TimeoutState::new(),
            slot: AtomicUsize::new(NOT_IN_BUCKET),
        });
        // Netty checks the new count against `maxPendingTimeouts`, unlimited by default.
        self.core.pending.fetch_add(1, Ordering::Relaxed);
        self.new_timeouts.push(Pending {
            deadline,
            timeout: Arc::clone(&timeout),
            task,
        });
        WheelCancel {
            timeout,
            core: Arc::clone(&self.core),
        }
        .into()
    }

    /// `registered`, `cancelled`, `fired`, `ticks`, `transferred`, `cancelled_unlinked`,
    /// and in offload mode `executor_wakeups` (submits that woke a waiting pool thread).
    /// All but `registered` and `executor_wakeups` are the worker's counts and lag up to a
    /// tick behind the cancels; all are exact once the timer is quiet.
    pub fn counters(&self) -> Vec<(&'static str, u64)> {
        let counters = &self.core.counters;
        // Retired first: the worker lowers `pending` before it counts the retirement, so
        // the sum may run one behind while it works, never ahead.
        let retired = counters.retired.get();
        let registered = retired + self.core.pending.load(Ordering::Acquire);
        let mut out = vec![
            ("registered", registered),
            ("cancelled", counters.cancelled.get()),
            ("fired", counters.fired.get()),
            ("ticks", counters.ticks.get()),
            ("transferred", counters.transferred.get()),
            ("cancelled_unlinked", counters.cancelled_unlinked.get()),
        ];
        if let Some(pool) = &self.offload {
            out.push(("executor_wakeups", pool.wakeups()));
        }
        out
    }
}

impl<T> Drop for HashedWheelTimer<T> {
    fn drop(&mut self) {
        self.core.stopped.store(true, Ordering::Release);
        if let Some(worker) = self.worker.take() {
            // Netty interrupts the sleeping worker; here the worker parks between ticks.
            worker.thread().unpark();
            threads::join(worker);
        }
    }
}

/// Netty's `HashedWheelTimeout.cancel`: claim the state, then leave the unlinking to the
/// worker's next tick through the lock-free cancelled queue. Unlike Java's references, the
/// `Arc` on the core costs a shared reference-count update per handle made and dropped.
#[derive(Clone, Debug)]
pub(crate) struct WheelCancel {
    timeout: Arc<WheelTimeout>,
    core: Arc<Core>,
}

impl WheelCancel {
    pub(crate) fn cancel(&self) -> bool {
        if !self.timeout.state.try_cancel() {
            return false;
        }
        // A stopped worker no longer drains the queue; skip the push rather than have
        // the queue grow for as long as handles live.
        if !self.core.stopped.load(Ordering::Acquire) {
            self.core.cancelled.push(Arc::clone(&self.timeout));
        }
        true
    }
}
