//! The rovers of the shared token bucket (seastar `rovers<T, capped_release>`).
//!
//! `tail` counts tokens grabbed, `head` tokens replenished; both only grow (wrapping
//! arithmetic). The capped-release variant adds `ceil`, starting at `limit` and raised by
//! `release`: `head` may never pass it, so tokens come back only after they were released.

use crate::sync::{AtomicU64, Ordering};

/// `wrapping_difference(a, b)` of seastar: `max(a - b, 0)` with the subtraction wrapping and
/// read as signed, so a rover that overtook the other gives 0.
pub fn wrapping_difference(a: u64, b: u64) -> u64 {
    (a.wrapping_sub(b) as i64).max(0) as u64
}

/// What a bucket needs of its rovers.
pub trait Rovers: Send + Sync {
    /// Whether this is the capped-release variant.
    const CAPPED: bool;
    /// Rovers of a fresh bucket.
    fn new(limit: u64) -> Self;
    /// Tokens grabbed so far (wrapping).
    fn tail(&self) -> &AtomicU64;
    /// Tokens replenished so far (wrapping).
    fn head(&self) -> &AtomicU64;
    /// Most tokens one replenish may add now.
    fn max_extra(&self, limit: u64) -> u64;
    /// Gives `tokens` back (capped variant); the pure variant ignores it.
    fn release(&self, tokens: u64);
}

/// `rovers<T, capped_release::no>`: replenished by time, up to `tail + limit`.
#[derive(Debug)]
pub struct PureRovers {
    tail: AtomicU64,
    head: AtomicU64,
}

impl Rovers for PureRovers {
    const CAPPED: bool = false;

    fn new(_limit: u64) -> Self {
        PureRovers {
            tail: AtomicU64::new(0),
            head: AtomicU64::new(0),
        }
    }

    fn tail(&self) -> &AtomicU64 {
        &self.tail
    }

    fn head(&self) -> &AtomicU64 {
        &self.head
    }

    fn max_extra(&self, limit: u64) -> u64 {
        wrapping_difference(
            self.tail.load(Ordering::Relaxed).wrapping_add(limit),
            self.head.load(Ordering::Relaxed),
        )
    }

    /// seastar deletes `release` for the pure rovers; the perf test calls it only on capped
    /// buckets. Here it is a no-op so that one releaser serves every strategy.
    fn release(&self, _tokens: u64) {}
}

/// `rovers<T, capped_release::yes>`: replenished by time, but never past `ceil`.
#[derive(Debug)]
pub struct CappedRovers {
    tail: AtomicU64,
    head: AtomicU64,
    ceil: AtomicU64,
}

impl CappedRovers {
    /// Tokens released so far plus the initial `limit` (wrapping).
    pub fn ceil(&self) -> u64 {
        self.ceil.load(Ordering::Relaxed)
    }
}

impl Rovers for CappedRovers {
    const CAPPED: bool = true;

    fn new(limit: u64) -> Self {
        CappedRovers {
            tail: AtomicU64::new(0),
            head: AtomicU64::new(0),
            ceil: AtomicU64::new(limit),
        }
    }

    fn tail(&self) -> &AtomicU64 {
        &self.tail
    }

    fn head(&self) -> &AtomicU64 {
        &self.head
    }

    fn max_extra(&self, _limit: u64) -> u64 {
        wrapping_difference(
            self.ceil.load(Ordering::Relaxed),
            self.head.load(Ordering::Relaxed),
        )
    }

    fn release(&self, tokens: u64) {
        self.ceil.fetch_add(tokens, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_difference_is_zero_when_b_is_ahead() {
        assert_eq!(wrapping_difference(10, 3), 7);
        assert_eq!(wrapping_difference(3, 10), 0);
        assert_eq!(wrapping_difference(2, u64::MAX - 1), 4);
        assert_eq!(wrapping_difference(u64::MAX - 1, 2), 0);
    }

    #[test]
    fn capped_ceil_starts_at_limit_and_grows_by_release() {
        let r = CappedRovers::new(500);
        assert_eq!(r.max_extra(500), 500);
        r.release(20);
        assert_eq!(r.max_extra(500), 520);
        assert_eq!(r.ceil(), 520);
    }

    #[test]
    fn pure_allows_up_to_tail_plus_limit() {
        let r = PureRovers::new(500);
        r.tail().fetch_add(100, Ordering::Relaxed);
        r.head().fetch_add(50, Ordering::Relaxed);
        assert_eq!(r.max_extra(500), 550);
    }
}
