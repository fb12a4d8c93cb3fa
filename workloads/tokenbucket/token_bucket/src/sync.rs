//! The atomics the bucket uses: std's, or loom's in the model-checking build
//! (`--cfg token_bucket_loom`).

#[cfg(token_bucket_loom)]
pub use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(token_bucket_loom))]
pub use std::sync::atomic::{AtomicU64, Ordering};
