//! The `io` suite: seastar's io_tester on a scratch file, metered by the shared token bucket.
pub mod bench_run;
pub mod bucket_meter;
pub mod cpu_time;
pub mod describe;
pub mod dispatcher;
pub mod engine;
pub mod metrics;
pub mod offsets;
pub mod open_loop;
pub mod params;
pub mod psync_engine;
pub mod scratch_file;
pub mod shard;
pub mod uring_engine;
