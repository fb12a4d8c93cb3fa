//! Properties of the shared token bucket over random operation sequences (proptest):
//! the rovers never go backwards; a pure bucket never grants more than rate x window + limit
//! over any window; a capped-release bucket never grants more than released + limit.
#![cfg(not(feature = "loom"))]

use proptest::prelude::*;
use token_bucket::{CappedRovers, PureRovers, Replenish, Rovers, SharedTokenBucket};

const DAY_NS: u64 = 86_400_000_000_000;

/// A single grabber as the perf test's worker runs it: at each step the clock advances,
/// a pending grab replenishes and checks its deficiency, new grabs are taken while they
/// are covered. Returns, per step, (time, tokens granted so far, replenished timestamp).
fn drive<R: Rovers>(
    tb: &SharedTokenBucket<R>,
    steps: &[(u64, u64)],
    mut after_step: impl FnMut(&SharedTokenBucket<R>, u64),
) -> Vec<(u64, u64, u64)> {
    let mut now = DAY_NS;
    let mut granted = 0;
    let mut pending: Option<(u64, u64)> = None;
    let mut trace = vec![(now, 0, tb.replenished_ts())];
    for &(dt_ns, size) in steps {
        now += dt_ns;
        loop {
            match pending {
                Some((s, position)) => {
                    tb.replenish(now);
                    if tb.deficiency(position) > 0 {
                        break;
                    }
                    granted += s;
                    pending = None;
                }
                None => {
                    let position = tb.grab(size);
                    if tb.deficiency(position) > 0 {
                        pending = Some((size, position));
                        break;
                    }
                    granted += size;
                }
            }
        }
        after_step(tb, granted);
        trace.push((now, granted, tb.replenished_ts()));
    }
    trace
}

/// Over every window of a `drive` trace (from a step's replenish timestamp to a later
/// step), the tokens granted are at most rate x window + limit + `per_replenish` a step.
fn grants_within(
    trace: &[(u64, u64, u64)],
    rate: u64,
    limit: u64,
    per_replenish: f64,
) -> Result<(), TestCaseError> {
    for i in 0..trace.len() {
        for j in i + 1..trace.len() {
            let window_s = (trace[j].0 - trace[i].2) as f64 / 1e9;
            let granted = trace[j].1 - trace[i].1;
            let bound = rate as f64 * window_s + limit as f64 + per_replenish * (j - i) as f64;
            prop_assert!(
                granted as f64 <= bound + 1e-6,
                "steps {i}..{j}: granted {granted} > {bound}"
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// With whole microseconds and a rate in whole tokens per microsecond, every replenish
    /// accrues exactly rate x elapsed: the bound holds with no rounding term. A window
    /// starts at the bucket's replenish timestamp as of its first step (the time from which
    /// tokens accrue; it equals the step's time once that step replenished).
    #[test]
    fn pure_grants_at_most_rate_times_window_plus_limit(
        rate_per_us in 1u64..4,
        limit in 1u64..2_000,
        steps in prop::collection::vec((1u64..3_000, 1u64..200), 1..120),
    ) {
        let rate = rate_per_us * 1_000_000;
        let steps: Vec<(u64, u64)> =
            steps.iter().map(|&(us, size)| (us * 1_000, size.min(limit))).collect();
        let tb = SharedTokenBucket::<PureRovers>::new(rate, limit, 1, 0);
        let trace = drive(&tb, &steps, |_, _| {});
        grants_within(&trace, rate, limit, 0.0)?;
    }

    /// Any rate, nanosecond times and a threshold: seastar rounds each replenish to the
    /// nearest token, so the bound gains at most half a token per replenish, and a window
    /// starts at the bucket's replenish timestamp (which lags while below the threshold).
    #[test]
    fn pure_grants_at_most_rate_times_window_plus_limit_plus_rounding(
        rate in 1_000u64..5_000_000,
        limit in 1u64..2_000,
        threshold in 1u64..50,
        steps in prop::collection::vec((1u64..3_000_000, 1u64..200), 1..120),
    ) {
        let steps: Vec<(u64, u64)> = steps.iter().map(|&(ns, s)| (ns, s.min(limit))).collect();
        let tb = SharedTokenBucket::<PureRovers>::new(rate, limit, threshold, 0);
        let trace = drive(&tb, &steps, |_, _| {});
        grants_within(&trace, rate, limit, 0.5)?;
    }

    /// `replenish=exact` at any rate, nanosecond times and a threshold: the tokens are floored
    /// and the timestamp moves by their time rounded up, so the bound has no rounding term.
    /// Steps are short (below a token's time at the higher rates), where `round` exceeds it.
    #[test]
    fn exact_pure_grants_at_most_rate_times_window_plus_limit(
        rate in 1_000u64..5_000_000,
        limit in 1u64..2_000,
        threshold in 1u64..50,
        steps in prop::collection::vec((1u64..20_000, 1u64..200), 1..400),
    ) {
        let steps: Vec<(u64, u64)> = steps.iter().map(|&(ns, s)| (ns, s.min(limit))).collect();
        let tb = SharedTokenBucket::<PureRovers>::new(rate, limit, threshold, 0)
            .with_replenish(Replenish::Exact);
        let trace = drive(&tb, &steps, |_, _| {});
        grants_within(&trace, rate, limit, 0.0)?;
    }

    /// Releases of random parts of what was granted: the total granted never exceeds
    /// released + limit, and the rovers (tail, head, ceil) never go backwards.
    #[test]
    fn capped_grants_at_most_released_plus_limit_and_rovers_only_grow(
        limit in 1u64..2_000,
        steps in prop::collection::vec((1u64..3_000_000, 1u64..200), 1..150),
        fractions in prop::collection::vec(0.0f64..1.0, 150),
    ) {
        let steps: Vec<(u64, u64)> = steps.iter().map(|&(ns, s)| (ns, s.min(limit))).collect();
        let tb = SharedTokenBucket::<CappedRovers>::new(1_000_000, limit, 1, 0);
        let mut released = 0u64;
        let mut step = 0;
        let mut last = (0u64, 0u64, tb.rovers().ceil());
        drive(&tb, &steps, |tb, granted| {
            prop_assert_ok(granted <= released + limit, format!("granted {granted} > released {released} + {limit}"));
            let now = (tb.tail(), tb.head(), tb.rovers().ceil());
            prop_assert_ok(now.0 >= last.0 && now.1 >= last.1 && now.2 >= last.2,
                format!("rovers went back: {last:?} -> {now:?}"));
            last = now;
            let give = ((granted - released) as f64 * fractions[step % fractions.len()]) as u64;
            tb.release(give);
            released += give;
            step += 1;
        });
    }

    #[test]
    fn pure_rovers_only_grow_and_head_stays_within_limit_of_tail(
        limit in 1u64..2_000,
        steps in prop::collection::vec((1u64..3_000_000, 1u64..200), 1..150),
    ) {
        let steps: Vec<(u64, u64)> = steps.iter().map(|&(ns, s)| (ns, s.min(limit))).collect();
        let tb = SharedTokenBucket::<PureRovers>::new(1_000_000, limit, 1, 0);
        let mut last = (0u64, 0u64);
        drive(&tb, &steps, |tb, _| {
            let now = (tb.tail(), tb.head());
            prop_assert_ok(now.0 >= last.0 && now.1 >= last.1,
                format!("rovers went back: {last:?} -> {now:?}"));
            prop_assert_ok(now.1 <= now.0 + limit, format!("head {} > tail {} + {limit}", now.1, now.0));
            last = now;
        });
    }
}

/// `prop_assert!` returns from the enclosing function; inside the per-step closure a panic
/// does the same job (proptest catches it and shrinks).
fn prop_assert_ok(ok: bool, message: String) {
    assert!(ok, "{message}");
}
