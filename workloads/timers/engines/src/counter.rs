//! Event counters the engines report through `counters()`.

use std::sync::atomic::{AtomicU64, Ordering};

/// A relaxed event counter that several threads bump: exact once the engine is quiet.
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

/// An event counter only one thread bumps (an engine's own thread), so a plain load and
/// store do instead of a locked read-modify-write. Other threads only read it.
#[derive(Debug, Default)]
pub(crate) struct OwnedCounter(AtomicU64);

impl OwnedCounter {
    /// Only ever called from the owning thread.
    pub(crate) fn inc(&self) {
        let next = self.0.load(Ordering::Relaxed) + 1;
        self.0.store(next, Ordering::Release);
    }

    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}
