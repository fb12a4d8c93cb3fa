//! The timeout strategies: their names, the runtime each runs on, and the per-request path
//! that issues a request and waits for its outcome under the strategy's timeout.
//!
//! One module per strategy family:
//! - [`no_timeout`]: `none`, the baseline;
//! - [`tokio_timeout`]: `tokio-timeout`, `tokio-timeout-alt`, `tokio-timeout-legacy`,
//!   `tokio-timeout-sharded` (one tokio timer per request; they differ only in the tokio they
//!   run on);
//! - [`router_deadlines`]: `deadline-tracker` (deadlines kept by the connection router);
//! - [`engine`]: `event-executor` (lettuce up to 6.3.1), `hashed-wheel-offload` (lettuce
//!   6.3.2), and for comparison `scheduled-executor` (Java's `ScheduledThreadPoolExecutor`)
//!   and `hashed-wheel` (Netty's wheel expiring on its worker): thread-based timers from the
//!   `timer-engines` crate;
//! - [`scylla_driver`]: `scylla-driver`, `scylla-driver-no-timeout` (the real scylla driver,
//!   `request_timeout` set or None, against the CQL server; a load loop of its own).

pub mod engine;
pub mod no_timeout;
pub mod router_deadlines;
#[cfg(feature = "cql")]
pub mod scylla_driver;
pub mod tokio_timeout;

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::completion::{Answer, Completion, Outcome};
use crate::connection::Connection;
use crate::metrics::TimerCounts;
use crate::params::Params;

/// A strategy as named on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrategyKind {
    None,
    TokioTimeout,
    TokioTimeoutAlt,
    TokioTimeoutLegacy,
    TokioTimeoutSharded,
    DeadlineTracker,
    ScheduledExecutor,
    EventExecutor,
    HashedWheel,
    HashedWheelOffload,
    ScyllaDriver,
    ScyllaDriverNoTimeout,
}

impl StrategyKind {
    /// Every strategy, the baseline first.
    pub const ALL: [StrategyKind; 12] = [
        StrategyKind::None,
        StrategyKind::TokioTimeout,
        StrategyKind::TokioTimeoutAlt,
        StrategyKind::TokioTimeoutLegacy,
        StrategyKind::TokioTimeoutSharded,
        StrategyKind::DeadlineTracker,
        StrategyKind::ScheduledExecutor,
        StrategyKind::EventExecutor,
        StrategyKind::HashedWheel,
        StrategyKind::HashedWheelOffload,
        StrategyKind::ScyllaDriver,
        StrategyKind::ScyllaDriverNoTimeout,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            StrategyKind::None => "none",
            StrategyKind::TokioTimeout => "tokio-timeout",
            StrategyKind::TokioTimeoutAlt => "tokio-timeout-alt",
            StrategyKind::TokioTimeoutLegacy => "tokio-timeout-legacy",
            StrategyKind::TokioTimeoutSharded => "tokio-timeout-sharded",
            StrategyKind::DeadlineTracker => "deadline-tracker",
            StrategyKind::ScheduledExecutor => "scheduled-executor",
            StrategyKind::EventExecutor => "event-executor",
            StrategyKind::HashedWheel => "hashed-wheel",
            StrategyKind::HashedWheelOffload => "hashed-wheel-offload",
            StrategyKind::ScyllaDriver => "scylla-driver",
            StrategyKind::ScyllaDriverNoTimeout => "scylla-driver-no-timeout",
        }
    }

    /// One line for `describe`.
    pub fn help(self) -> &'static str {
        match self {
            StrategyKind::None => "no client-side timeout (baseline)",
            StrategyKind::TokioTimeout => {
                "each request's wait wrapped in tokio::time::timeout, as the scylla driver does with request_timeout (one timer per request; today's tokio, 1.54: one wheel under one lock again since 1.45 reverted the sharding, #7226)"
            }
            StrategyKind::TokioTimeoutAlt => {
                "tokio-timeout on a runtime with tokio's unstable per-worker alt timer"
            }
            StrategyKind::TokioTimeoutLegacy => {
                "tokio-timeout on tokio 1.37: one timer wheel under one lock, before tokio sharded it (runs timers-bench-legacy)"
            }
            StrategyKind::TokioTimeoutSharded => {
                "tokio-timeout on tokio 1.44: the sharded timer wheel of tokio 1.38-1.44 (#6534; one wheel and lock per worker; reverted in 1.45 by #7226) (runs timers-bench-sharded)"
            }
            StrategyKind::DeadlineTracker => {
                "scylla-rust-driver PR #564, never merged: deadlines kept by the connection router in its handler map, one armable timer per connection"
            }
            StrategyKind::ScheduledExecutor => {
                "for comparison, not what lettuce used: Java's ScheduledThreadPoolExecutor (one locked heap, executor_threads workers signalled through a condition), cancelled on completion"
            }
            StrategyKind::EventExecutor => {
                "lettuce <= 6.3.1: each expiry scheduled on Netty's DefaultEventExecutorGroup (computation_threads executors dealt round-robin; schedule and cancel are tasks in the executor's queue), cancelled on completion"
            }
            StrategyKind::HashedWheel => {
                "reference point: Netty's hashed wheel timer (lock-free queues, one ticking worker), expiry on the worker"
            }
            StrategyKind::HashedWheelOffload => {
                "lettuce 6.3.2: Netty's hashed wheel timer whose timer task submits the expiry to lettuce's event executor group (computation_threads executors)"
            }
            StrategyKind::ScyllaDriver => {
                "the real scylla driver (1.9.0) against the suite's CQL server, request_timeout = timeout_ms: it wraps each request's whole execution in tokio::time::timeout (PR #564's deadline tracker was never merged); prepared writes, closed loop"
            }
            StrategyKind::ScyllaDriverNoTimeout => {
                "scylla-driver with request_timeout None: no client-side timer (the driver's own baseline)"
            }
        }
    }

    /// Looks a strategy up by its command-line name.
    pub fn from_name(name: &str) -> Option<StrategyKind> {
        StrategyKind::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The comma-separated list of names, for error messages.
    pub fn names() -> String {
        StrategyKind::ALL.map(StrategyKind::name).join(", ")
    }

    /// Whether requests carry a client-side timeout.
    pub fn has_timeout(self) -> bool {
        !matches!(
            self,
            StrategyKind::None | StrategyKind::ScyllaDriverNoTimeout
        )
    }

    /// Whether the real scylla driver runs it (against the CQL server, see
    /// [`scylla_driver`]) rather than our connection and [`Timer`].
    pub fn is_driver(self) -> bool {
        matches!(
            self,
            StrategyKind::ScyllaDriver | StrategyKind::ScyllaDriverNoTimeout
        )
    }

    /// The strategy it is compared with instead of the baseline (`compare_with` in
    /// `describe`): the same client without the feature under test. `none` is another client
    /// than the real driver, so the driver with its timeout is compared with the driver
    /// without one.
    pub fn twin(self) -> Option<StrategyKind> {
        match self {
            StrategyKind::ScyllaDriver => Some(StrategyKind::ScyllaDriverNoTimeout),
            _ => None,
        }
    }

    /// Builds the client runtime the strategy runs on.
    pub fn build_runtime(self, threads: usize) -> Result<tokio::runtime::Runtime, String> {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder
            .worker_threads(threads)
            .thread_name("timers-client")
            .enable_all();
        if self == StrategyKind::TokioTimeoutAlt {
            tokio_timeout::enable_alt_timer(&mut builder)?;
        }
        builder
            .build()
            .map_err(|e| format!("cannot build the client runtime: {e}"))
    }
}

/// One request as the load loop hands it to the strategy.
#[derive(Clone, Copy, Debug)]
pub struct Request {
    pub key: u64,
    /// Issued inside the measured window.
    pub measured: bool,
    /// When it is sent; deadlines count from here.
    pub sent_at: Instant,
}

impl Request {
    /// Issues the request on `conn` with its deadline `timeout` after `sent_at`, and counts
    /// the timer registered for it.
    async fn issue_with_timeout(
        &self,
        conn: &Connection,
        timeout: Duration,
        counts: &mut TimerCounts,
    ) -> Answer {
        let deadline = Some(self.sent_at + timeout);
        counts.registered += 1;
        conn.request(deadline, self.key, self.measured).await
    }
}

/// A strategy set up for a run.
pub enum Timer {
    None,
    Tokio { timeout: Duration },
    Router { timeout: Duration },
    Engine(engine::Engine),
}

impl Timer {
    /// Sets the strategy up over the run's connections.
    pub fn new(kind: StrategyKind, params: &Params, conns: &Arc<[Arc<Connection>]>) -> Timer {
        let timeout = params.timeout;
        match kind {
            StrategyKind::None => Timer::None,
            StrategyKind::TokioTimeout
            | StrategyKind::TokioTimeoutAlt
            | StrategyKind::TokioTimeoutLegacy
            | StrategyKind::TokioTimeoutSharded => Timer::Tokio { timeout },
            StrategyKind::DeadlineTracker => Timer::Router { timeout },
            StrategyKind::ScheduledExecutor
            | StrategyKind::EventExecutor
            | StrategyKind::HashedWheel
            | StrategyKind::HashedWheelOffload => {
                Timer::Engine(engine::Engine::new(kind, params, Arc::clone(conns)))
            }
            StrategyKind::ScyllaDriver | StrategyKind::ScyllaDriverNoTimeout => {
                unreachable!("the driver strategies run in scylla_driver::execute")
            }
        }
    }

    /// Issues `request` on `conn` and waits for its outcome; `counts` collects the timer
    /// work done for it.
    pub async fn execute(
        &self,
        conn: &Connection,
        completion: &Arc<Completion>,
        request: Request,
        counts: &mut TimerCounts,
    ) -> Outcome {
        match self {
            Timer::None => no_timeout::execute(conn, request).await,
            Timer::Tokio { timeout } => {
                tokio_timeout::execute(conn, request, *timeout, counts).await
            }
            Timer::Router { timeout } => {
                router_deadlines::execute(conn, request, *timeout, counts).await
            }
            Timer::Engine(engine) => engine.execute(conn, completion, request, counts).await,
        }
    }

    /// The strategy's own cumulative counters (summed over connections where they are
    /// per connection); empty for strategies counted per request only.
    pub fn counters(&self, conns: &[Arc<Connection>]) -> Vec<(&'static str, u64)> {
        match self {
            Timer::None | Timer::Tokio { .. } => Vec::new(),
            Timer::Router { .. } => {
                let mut sum: Vec<(&'static str, u64)> = Vec::new();
                for conn in conns {
                    for (name, value) in conn.tracker_counters() {
                        match sum.iter_mut().find(|(n, _)| *n == name) {
                            Some(slot) => slot.1 += value,
                            None => sum.push((name, value)),
                        }
                    }
                }
                sum
            }
            Timer::Engine(engine) => engine.counters(),
        }
    }
}
