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

    /// The share of `[from_ns, to_ns)` inside the window (0 before it is set or when empty).
    pub fn share_of(&self, from_ns: u64, to_ns: u64) -> f64 {
        let start = self.start_ns.load(Ordering::Relaxed);
        let end = self.end_ns.load(Ordering::Relaxed);
        if start == 0 || to_ns <= from_ns {
            return 0.0;
        }
        let inside = to_ns.min(end).saturating_sub(from_ns.max(start));
        inside as f64 / (to_ns - from_ns) as f64
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

    #[test]
    fn share_of_a_span_is_its_part_inside_the_window() {
        let w = MeasureWindow::default();
        assert_eq!(w.share_of(0, 100), 0.0);
        w.set(10, 20);
        assert_eq!(w.share_of(0, 40), 0.25);
        assert_eq!(w.share_of(12, 18), 1.0);
        assert_eq!(w.share_of(15, 25), 0.5);
        assert_eq!(w.share_of(20, 30), 0.0);
        assert_eq!(w.share_of(5, 5), 0.0);
    }
}
