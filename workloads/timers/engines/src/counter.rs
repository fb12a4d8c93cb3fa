//! Event counters the engines report through `counters()`.

use std::sync::atomic::{AtomicU64, Ordering};

/// A relaxed event counter: cheap enough for every hot path, exact once the engine is quiet.
#[derive(Debug, Default)]
pub(crate) struct Counter(AtomicU64);

impl Counter {
    pub(crate) fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}
