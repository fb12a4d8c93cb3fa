//! The measured window, in `monotonic_ns` time, set by the coordinator before the shards
//! start and read by them: grants, releases, sleeps and timers count when they happen inside
//! it, whatever the coordinator thread's own scheduling.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Default)]
pub struct MeasureWindow {
    start_ns: AtomicU64,
    end_ns: AtomicU64,
}

impl MeasureWindow {
    /// Sets the window `[start_ns, end_ns)`.
    pub fn set(&self, start_ns: u64, end_ns: u64) {
        self.start_ns.store(start_ns, Ordering::Relaxed);
        self.end_ns.store(end_ns, Ordering::Relaxed);
    }

    /// Whether `t` falls inside the window (never before it is set).
    pub fn contains(&self, t: u64) -> bool {
        let start = self.start_ns.load(Ordering::Relaxed);
        let end = self.end_ns.load(Ordering::Relaxed);
        start != 0 && t >= start && t < end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contains_only_the_half_open_window_once_set() {
        let w = MeasureWindow::default();
        assert!(!w.contains(5));
        w.set(10, 20);
        assert!(!w.contains(9));
        assert!(w.contains(10));
        assert!(w.contains(19));
        assert!(!w.contains(20));
    }
}
