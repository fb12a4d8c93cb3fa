//! The atomics the bucket uses: std's, or loom's in the model-checking build
//! (the `loom` feature).

#[cfg(feature = "loom")]
pub use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(feature = "loom"))]
pub use std::sync::atomic::{AtomicU64, Ordering};
