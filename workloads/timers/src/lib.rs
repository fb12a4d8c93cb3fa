//! Timer strategies for request timeouts, measured under a cql-stress-like load: a client
//! organised like a database driver's connection router, its own server, and the
//! strategies that time requests out (see [`strategy`]). The `timers-bench` binary drives
//! it through the workload contract ([`cli`]).

pub mod armable_timer;
pub mod cli;
pub mod client;
pub mod completion;
pub mod connection;
pub mod cpu_time;
#[cfg(feature = "cql")]
pub mod cql;
pub mod deadline_tracker;
mod describe;
pub mod handler_map;
pub mod metrics;
pub mod params;
pub mod process;
pub mod protocol;
pub mod resolution_log;
mod resolver;
pub mod router;
pub mod server;
pub mod strategy;
mod sync;
pub mod timer_ops;
