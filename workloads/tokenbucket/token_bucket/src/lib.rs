//! seastar's shared token bucket and what the `tokenbucket` and `io` suites build on it.
//!
//! - [`shared_token_bucket`]: `include/seastar/util/shared_token_bucket.hh`, the bucket all
//!   shards grab from (rovers, replenish, deficiency, `duration_for`).
//! - [`rovers`]: its two rover sets, pure (replenished by time up to `limit`) and
//!   capped-release (replenished only up to the tokens released back).
//! - [`flow_monitor`]: seastar PR #1766's per-shard dispatched/completed ratio that raises a
//!   request's cost when completions lag.
//! - [`reactor`]: a cooperative single-threaded scheduler per shard, like a seastar reactor,
//!   with microsecond timers.
//! - [`hog`]: the perf test's CPU hog task, stalling its shard's reactor.
//! - [`cpu_pinning`]: one shard thread per CPU, as seastar pins its reactors.
//! - [`measure_window`]: the measured window the shards count their events in.
//! - [`shard_threads`]: the shard threads of a run, started together and stopped by one flag.
//! - [`strategy`]: the bucket strategies (pure, capped-release, flow monitor).

pub mod cpu_pinning;
pub mod flow_monitor;
pub mod hog;
pub mod measure_window;
pub mod reactor;
pub mod rovers;
pub mod shard_threads;
pub mod shared_token_bucket;
pub mod strategy;
pub mod sync;

pub use flow_monitor::FlowMonitor;
pub use rovers::{CappedRovers, PureRovers, Rovers};
pub use shared_token_bucket::{Dropped, Replenish, SharedTokenBucket};
pub use strategy::BucketStrategy;
