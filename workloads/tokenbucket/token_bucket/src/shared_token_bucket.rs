//! `seastar::internal::shared_token_bucket<uint64_t, std::ratio<1>, Capped>`: one bucket
//! shared by every shard, without locks.
//!
//! Grabbing is a `fetch_add` on `tail` that never fails: the returned position is where
//! `head` must get to before the tokens are there, so grabbers form a FIFO queue.
//! Replenishing turns the time elapsed since the last replenish into tokens (rate x elapsed,
//! rounded), claims that time with one compare-and-swap on the timestamp (the loser leaves
//! it to the winner) and adds the tokens to `head`, at most up to the rovers' cap; tokens
//! above the cap are lost, because the timestamp moves by the whole elapsed time.
//!
//! Time is nanoseconds on the caller's monotonic clock, as a `u64`.

use crate::rovers::{wrapping_difference, Rovers};
use crate::sync::{AtomicU64, Ordering};

/// Nanoseconds in a second.
pub const NANOS_PER_SEC: u64 = 1_000_000_000;
/// seastar's `max_delta`: one replenish accounts for at most an hour.
pub const MAX_DELTA_NS: u64 = 3_600 * NANOS_PER_SEC;
/// seastar's `max_rate`: `u64::MAX / 2 / max_delta` (in seconds), so `rate x max_delta`
/// cannot overflow.
pub const MAX_RATE: u64 = u64::MAX / 2 / 3_600;

/// The shared token bucket over rovers `R` (pure or capped-release).
#[derive(Debug)]
pub struct SharedTokenBucket<R: Rovers> {
    rate: AtomicU64,
    limit: u64,
    threshold: u64,
    replenished: AtomicU64,
    rovers: R,
}

impl<R: Rovers> SharedTokenBucket<R> {
    /// A bucket of `rate` tokens/s (at most [`MAX_RATE`]), `limit` tokens at most in it, and
    /// replenishing only when at least `threshold` tokens (clamped to 1..=limit) accumulated.
    /// `replenished_ns` is the initial timestamp: seastar pretends the bucket was replenished
    /// a day ago so that the first replenish fills it (to `limit`).
    pub fn new(rate: u64, limit: u64, threshold: u64, replenished_ns: u64) -> Self {
        SharedTokenBucket {
            rate: AtomicU64::new(rate.min(MAX_RATE)),
            limit,
            threshold: threshold.clamp(1, limit.max(1)),
            replenished: AtomicU64::new(replenished_ns),
            rovers: R::new(limit),
        }
    }

    /// Takes `tokens`; returns the `head` position at which they are all there.
    pub fn grab(&self, tokens: u64) -> u64 {
        self.rovers
            .tail()
            .fetch_add(tokens, Ordering::SeqCst)
            .wrapping_add(tokens)
    }

    /// Gives `tokens` back to be replenished (capped-release only; no-op when pure).
    pub fn release(&self, tokens: u64) {
        self.rovers.release(tokens);
    }

    /// Puts `tokens` straight back into the bucket.
    pub fn refund(&self, tokens: u64) {
        self.rovers.head().fetch_add(tokens, Ordering::SeqCst);
    }

    /// Adds the tokens accumulated since the last replenish, as of `now_ns`.
    pub fn replenish(&self, now_ns: u64) {
        let ts = self.replenished.load(Ordering::Relaxed);
        if now_ns <= ts {
            return;
        }
        let delta = now_ns - ts;
        let extra = self.accumulated_in(delta);
        if extra >= self.threshold {
            if self
                .replenished
                .compare_exchange_weak(ts, ts + delta, Ordering::SeqCst, Ordering::Relaxed)
                .is_err()
            {
                return; // next time or another shard
            }
            let add = extra.min(self.rovers.max_extra(self.limit));
            self.rovers.head().fetch_add(add, Ordering::SeqCst);
        }
    }

    /// Tokens still missing before `head` reaches `from` (0 = they are there).
    pub fn deficiency(&self, from: u64) -> u64 {
        wrapping_difference(from, self.head())
    }

    /// Tokens accumulated at the bucket's rate in `delta_ns` (at most an hour's worth),
    /// rounded to the nearest token as `std::round` does.
    pub fn accumulated_in(&self, delta_ns: u64) -> u64 {
        let delta_s = delta_ns.min(MAX_DELTA_NS) as f64 / NANOS_PER_SEC as f64;
        (self.rate() as f64 * delta_s).round() as u64
    }

    /// Seconds it takes to accumulate `tokens`, in floating point: seastar #1722 fixed an
    /// integer division here that made any deficiency below one second's worth of tokens 0 s.
    pub fn duration_for(&self, tokens: u64) -> f64 {
        tokens as f64 / self.rate() as f64
    }

    pub fn rate(&self) -> u64 {
        self.rate.load(Ordering::Relaxed)
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    pub fn threshold(&self) -> u64 {
        self.threshold
    }

    pub fn replenished_ts(&self) -> u64 {
        self.replenished.load(Ordering::Relaxed)
    }

    pub fn update_rate(&self, rate: u64) {
        self.rate.store(rate.min(MAX_RATE), Ordering::Relaxed);
    }

    /// Tokens grabbed so far (wrapping).
    pub fn tail(&self) -> u64 {
        self.rovers.tail().load(Ordering::Relaxed)
    }

    /// Tokens replenished so far (wrapping).
    pub fn head(&self) -> u64 {
        self.rovers.head().load(Ordering::Relaxed)
    }

    pub fn rovers(&self) -> &R {
        &self.rovers
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rovers::{CappedRovers, PureRovers};

    const DAY_NS: u64 = 86_400 * NANOS_PER_SEC;

    #[test]
    fn first_replenish_fills_to_limit() {
        let tb = SharedTokenBucket::<PureRovers>::new(1_000_000, 500, 1, 0);
        tb.replenish(DAY_NS);
        assert_eq!(tb.head(), 500);
        let tb = SharedTokenBucket::<CappedRovers>::new(1_000_000, 500, 1, 0);
        tb.replenish(DAY_NS);
        assert_eq!(tb.head(), 500);
    }

    #[test]
    fn grab_queues_and_deficiency_counts_the_missing_tokens() {
        let tb = SharedTokenBucket::<PureRovers>::new(1_000_000, 500, 1, 0);
        tb.replenish(DAY_NS);
        let a = tb.grab(300);
        let b = tb.grab(300);
        assert_eq!(tb.deficiency(a), 0);
        assert_eq!(tb.deficiency(b), 100);
        // 100 µs at 1M t/s = 100 tokens.
        tb.replenish(DAY_NS + 100_000);
        assert_eq!(tb.deficiency(b), 0);
    }

    #[test]
    fn below_threshold_the_timestamp_stays() {
        let tb = SharedTokenBucket::<PureRovers>::new(1_000, 100, 10, 0);
        tb.replenish(DAY_NS);
        let ts = tb.replenished_ts();
        tb.replenish(DAY_NS + 5_000_000); // 5 tokens < 10
        assert_eq!(tb.replenished_ts(), ts);
        tb.replenish(DAY_NS + 10_000_000);
        assert_eq!(tb.replenished_ts(), DAY_NS + 10_000_000);
    }

    #[test]
    fn tokens_above_the_cap_are_lost() {
        let tb = SharedTokenBucket::<PureRovers>::new(1_000_000, 500, 1, 0);
        tb.replenish(DAY_NS);
        tb.replenish(DAY_NS + NANOS_PER_SEC); // a second's worth, nothing grabbed
        assert_eq!(tb.head(), 500);
        assert_eq!(tb.replenished_ts(), DAY_NS + NANOS_PER_SEC);
    }

    #[test]
    fn capped_replenishes_only_what_was_released() {
        let tb = SharedTokenBucket::<CappedRovers>::new(1_000_000, 500, 1, 0);
        tb.replenish(DAY_NS);
        let pos = tb.grab(500);
        assert_eq!(tb.deficiency(pos), 0);
        tb.grab(100);
        tb.replenish(DAY_NS + NANOS_PER_SEC);
        assert_eq!(tb.head(), 500, "nothing released yet");
        tb.release(40);
        tb.replenish(DAY_NS + 2 * NANOS_PER_SEC);
        assert_eq!(tb.head(), 540);
    }

    /// seastar #1722: `duration_for` divided integers, so a deficiency below the rate gave a
    /// zero wait and sleepers polled.
    #[test]
    fn issue_1722_small_deficiency_gives_a_nonzero_wait() {
        let tb = SharedTokenBucket::<PureRovers>::new(1_000_000, 500, 1, 0);
        for tokens in [1, 7, 128, 999_999] {
            let wait = tb.duration_for(tokens);
            assert!(wait > 0.0, "{tokens} tokens: {wait}");
            assert!((wait - tokens as f64 / 1e6).abs() < 1e-12);
        }
        assert_eq!(tb.duration_for(0), 0.0);
    }

    #[test]
    fn rate_and_threshold_are_clamped_as_upstream() {
        let tb = SharedTokenBucket::<PureRovers>::new(u64::MAX, 500, 0, 0);
        assert_eq!(tb.rate(), MAX_RATE);
        assert_eq!(tb.threshold(), 1);
        let tb = SharedTokenBucket::<PureRovers>::new(10, 5, 9, 0);
        assert_eq!(tb.threshold(), 5);
        // An hour's worth at max rate does not overflow.
        assert!(tb.accumulated_in(u64::MAX) <= 3_600 * 10);
    }
}
