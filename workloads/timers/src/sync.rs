//! The atomics and mutex of the armable timer: std's. The loom model compiles
//! `armable_timer.rs` with a `sync` of loom's in their place.

pub use std::sync::atomic::{AtomicU64, Ordering};
pub use std::sync::{Arc, Mutex};
