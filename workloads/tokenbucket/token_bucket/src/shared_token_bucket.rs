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
//! That rounding is upstream's ([`Replenish::Round`]) and it is not rate-neutral: a shard
//! that replenishes every 0.5-1 token's time gets a whole token each time and the timestamp
//! moves by less than a token's time (at 300 ns polls of a 1M/s bucket: a token per 600 ns,
//! 1.667x the rate). seastar's #1723 (fa80682b0) advanced the timestamp by the tokens' exact
//! time instead and was reverted (6e80e84a3): with the "replenished yesterday" start and the
//! 1 h `max_delta` clamp it moved the timestamp by one hour of a day's lag, so every later
//! replenish found an hour's worth again and bandwidth caps stopped holding.
//! [`Replenish::Exact`] carries the fraction without that bug: it floors the tokens, moves
//! the timestamp by their exact time, and by the whole delta past `max_delta`.
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

/// A day: seastar's bucket starts as if replenished a day before it was made, so that its
/// first replenish fills it (to `limit`).
pub const DAY_NS: u64 = 86_400 * NANOS_PER_SEC;

/// How a replenish turns elapsed time into tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Replenish {
    /// seastar's: `round(rate x delta)` tokens, the timestamp moves by the whole delta.
    #[default]
    Round,
    /// `floor(rate x delta)` tokens, the timestamp moves by exactly their time (the fraction
    /// of a token carries over); past `max_delta` by the whole delta, as `Round`.
    Exact,
}

/// What a replenish claimed but could not add, and since when those tokens accrued.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dropped {
    pub tokens: u64,
    /// The timestamp the replenish started from: the tokens accrued from it to its `now_ns`.
    pub since_ns: u64,
}

/// The shared token bucket over rovers `R` (pure or capped-release).
#[derive(Debug)]
pub struct SharedTokenBucket<R: Rovers> {
    rate: AtomicU64,
    limit: u64,
    threshold: u64,
    replenished: AtomicU64,
    replenish: Replenish,
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
            replenish: Replenish::Round,
            rovers: R::new(limit),
        }
    }

    /// The same bucket replenishing by `mode`.
    pub fn with_replenish(self, mode: Replenish) -> Self {
        SharedTokenBucket {
            replenish: mode,
            ..self
        }
    }

    pub fn replenish_mode(&self) -> Replenish {
        self.replenish
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

    /// Adds the tokens accumulated since the last replenish, as of `now_ns`; returns those it
    /// claimed but dropped at the rovers' cap (nobody had grabbed them within the limit's
    /// time: with `Exact`, the added and the dropped tokens together are the rate's, so a
    /// caller can tell a bucket that granted less from shards that were not there to grab).
    pub fn replenish(&self, now_ns: u64) -> Dropped {
        let ts = self.replenished.load(Ordering::Relaxed);
        let none = Dropped {
            tokens: 0,
            since_ns: ts,
        };
        if now_ns <= ts {
            return none;
        }
        let delta = now_ns - ts;
        let (extra, advance) = match self.replenish {
            Replenish::Round => (self.accumulated_in(delta), delta),
            Replenish::Exact => self.exact_tokens_in(delta),
        };
        if extra >= self.threshold {
            if self
                .replenished
                .compare_exchange_weak(ts, ts + advance, Ordering::SeqCst, Ordering::Relaxed)
                .is_err()
            {
                return none; // next time or another shard
            }
            let add = extra.min(self.rovers.max_extra(self.limit));
            self.rovers.head().fetch_add(add, Ordering::SeqCst);
            return Dropped {
                tokens: extra - add,
                ..none
            };
        }
        none
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

    /// `Replenish::Exact`: the whole tokens accrued in `delta_ns` and the time they took, in
    /// integers (no float rounding). The time is rounded up to whole nanoseconds, so it never
    /// exceeds `delta_ns` and the bucket never runs above its rate; it loses < 1 ns a replenish.
    /// Past `max_delta` the tokens are an hour's and the time is the whole delta: advancing by
    /// an hour only was #1723's bug.
    fn exact_tokens_in(&self, delta_ns: u64) -> (u64, u64) {
        let rate = u128::from(self.rate());
        let tokens = rate * u128::from(delta_ns.min(MAX_DELTA_NS)) / u128::from(NANOS_PER_SEC);
        if delta_ns > MAX_DELTA_NS || rate == 0 {
            return (tokens as u64, delta_ns);
        }
        let time = (tokens * u128::from(NANOS_PER_SEC)).div_ceil(rate);
        (tokens as u64, time as u64)
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

    /// What a replenish could not add is returned: after a shard was away for 2 ms, a 500
    /// token bucket at 1M t/s had 2000 tokens' time and room for the 500 it did not grab.
    #[test]
    fn replenish_returns_the_tokens_dropped_at_the_cap() {
        let tb = SharedTokenBucket::<PureRovers>::new(1_000_000, 500, 1, 0)
            .with_replenish(Replenish::Exact);
        tb.replenish(DAY_NS);
        tb.grab(500);
        let dropped = |tokens, since_ns| Dropped { tokens, since_ns };
        let at = DAY_NS + 100_000;
        assert_eq!(
            tb.replenish(at),
            dropped(0, DAY_NS),
            "100 tokens, room for 500"
        );
        assert_eq!(
            tb.replenish(at + 2_000_000),
            dropped(1_600, at),
            "2000, room for 400"
        );
        assert_eq!(tb.head(), 1_000);
        let now = at + 2_000_000;
        assert_eq!(tb.replenish(now), dropped(0, now), "no time passed");
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

    /// A shard grabbing everything there is and replenishing every `poll_ns` of a simulated
    /// clock for one second: the tokens it got.
    fn tokens_in_a_second(mode: Replenish, poll_ns: u64) -> u64 {
        let tb = SharedTokenBucket::<PureRovers>::new(1_000_000, 500, 1, 0).with_replenish(mode);
        tb.replenish(DAY_NS);
        tb.grab(tb.head() - tb.tail());
        let start = tb.tail();
        let mut now = DAY_NS;
        while now < DAY_NS + NANOS_PER_SEC {
            now += poll_ns;
            tb.replenish(now);
            tb.grab(tb.head() - tb.tail());
        }
        tb.tail() - start
    }

    /// Upstream's rounding at 300 ns polls of a 1M/s bucket: 300 ns is 0.3 token (0), 600 ns
    /// is 0.6 (1 token) and the timestamp moves by 600 ns, so a token every 600 ns: 1.667x.
    #[test]
    fn round_replenish_at_300ns_polls_gives_five_thirds_of_the_rate() {
        // The last poll (at 1 s + 200 ns) is the 1_666_667th token's.
        assert_eq!(tokens_in_a_second(Replenish::Round, 300), 1_666_667);
        // At a poll of a whole token's time it is exact.
        assert_eq!(tokens_in_a_second(Replenish::Round, 1_000), 1_000_000);
    }

    #[test]
    fn exact_replenish_holds_the_rate_at_any_poll() {
        for poll_ns in [300, 499, 501, 600, 999, 1_001, 1_500, 33_333] {
            let got = tokens_in_a_second(Replenish::Exact, poll_ns);
            // The last poll may end up to a poll past the second.
            let most = 1_000_000 + poll_ns.div_ceil(1_000);
            assert!((999_999..=most).contains(&got), "poll {poll_ns} ns: {got}");
        }
    }

    /// A shard that is away for up to 4 ms at a time (8 limits' worth) gets fewer tokens
    /// than the rate, and the dropped tokens make up the difference to the token: the
    /// bucket's exact accounting tells starvation from a short grant.
    #[test]
    fn exact_granted_plus_dropped_is_the_rate_however_long_the_shard_is_away() {
        let tb = SharedTokenBucket::<PureRovers>::new(1_000_000, 500, 1, 0)
            .with_replenish(Replenish::Exact);
        tb.replenish(DAY_NS);
        tb.grab(tb.head() - tb.tail());
        let start = tb.tail();
        let (mut now, mut dropped, mut away) = (DAY_NS, 0, 0u64);
        while now < DAY_NS + NANOS_PER_SEC {
            // Polls of 300 ns and gaps of 1..=4 ms, one of each in seven.
            away = (away + 1) % 7;
            now += if away == 0 {
                1_000_000 * (1 + now % 4)
            } else {
                300
            };
            dropped += tb.replenish(now).tokens;
            tb.grab(tb.head() - tb.tail());
        }
        let granted = tb.tail() - start;
        let due = (now - DAY_NS) / 1_000;
        assert!(granted < due * 9 / 10, "granted {granted} of {due}");
        assert!(
            (due - 1..=due).contains(&(granted + dropped)),
            "{granted} + {dropped} of {due}"
        );
    }

    /// #1723's bug, which got it reverted: from "replenished yesterday" the first replenish
    /// is clamped to `max_delta`'s hour; moving the timestamp by that hour's exact time left
    /// 23 h of lag, so every replenish after it filled the bucket again. Exact moves it by the
    /// whole delta past `max_delta`.
    #[test]
    fn exact_replenish_past_max_delta_takes_the_whole_delta() {
        let tb = SharedTokenBucket::<PureRovers>::new(1_000_000, 500, 1, 0)
            .with_replenish(Replenish::Exact);
        tb.replenish(DAY_NS);
        assert_eq!(tb.head(), 500);
        assert_eq!(tb.replenished_ts(), DAY_NS);
        tb.grab(500);
        tb.replenish(DAY_NS + 100_000); // 100 µs: 100 tokens, not a refill
        assert_eq!(tb.head(), 600);
        assert_eq!(tb.replenished_ts(), DAY_NS + 100_000);
    }

    /// Exact floors and carries: 2.5 tokens' time gives 2 and leaves the half for later.
    #[test]
    fn exact_replenish_carries_the_fraction() {
        let tb = SharedTokenBucket::<PureRovers>::new(1_000_000, 500, 1, 0)
            .with_replenish(Replenish::Exact);
        tb.replenish(DAY_NS);
        tb.grab(500);
        tb.replenish(DAY_NS + 2_500);
        assert_eq!(tb.head(), 502);
        assert_eq!(tb.replenished_ts(), DAY_NS + 2_000);
        tb.replenish(DAY_NS + 3_000);
        assert_eq!(tb.head(), 503);
        // A rate whose token time is not whole nanoseconds: 3 tokens/µs, 333.3 ns each; the
        // timestamp is rounded up, never past now.
        let tb = SharedTokenBucket::<PureRovers>::new(3_000_000, 500, 1, 0)
            .with_replenish(Replenish::Exact);
        tb.replenish(DAY_NS);
        tb.grab(500);
        tb.replenish(DAY_NS + 500);
        assert_eq!(tb.head(), 501);
        assert_eq!(tb.replenished_ts(), DAY_NS + 334);
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
