//! The `io` suite: seastar's io_tester on a scratch file, metered by the shared token bucket.
pub mod bucket_meter;
pub mod engine;
pub mod offsets;
pub mod params;
pub mod psync_engine;
pub mod uring_engine;
