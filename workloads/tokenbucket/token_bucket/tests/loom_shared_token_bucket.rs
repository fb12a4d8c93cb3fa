//! Loom model of concurrent grab and replenish: the compare-and-swap on the replenish
//! timestamp lets exactly one shard account for each stretch of time, so the tokens added
//! to `head` are exactly rate x (final timestamp - initial), whatever the interleaving, and
//! a grabber's deficiency only shrinks.
//!
//! cargo test -p token_bucket --features loom --test loom_shared_token_bucket
#![cfg(feature = "loom")]

use loom::sync::Arc;
use loom::thread;
use token_bucket::{PureRovers, SharedTokenBucket};

const T0: u64 = 1_000_000_000;
/// 1 token per microsecond: whole-µs deltas accrue exactly.
const RATE: u64 = 1_000_000;
const LIMIT: u64 = 1_000_000;

#[test]
fn two_replenishers_account_for_each_stretch_of_time_once() {
    loom::model(|| {
        let tb = Arc::new(SharedTokenBucket::<PureRovers>::new(RATE, LIMIT, 1, T0));
        // Enough grabbed that the cap (tail + limit) never bounds the replenish.
        tb.grab(10_000);
        let replenishers: Vec<_> = [T0 + 3_000, T0 + 5_000]
            .into_iter()
            .map(|now| {
                let tb = tb.clone();
                thread::spawn(move || tb.replenish(now))
            })
            .collect();
        for r in replenishers {
            r.join().unwrap();
        }
        let ts = tb.replenished_ts();
        assert!(ts == T0 + 3_000 || ts == T0 + 5_000, "timestamp {ts}");
        assert_eq!(
            tb.head(),
            (ts - T0) / 1_000,
            "head counts each µs exactly once"
        );
    });
}

#[test]
fn a_grabber_racing_a_replenisher_sees_its_deficiency_only_shrink() {
    loom::model(|| {
        let tb = Arc::new(SharedTokenBucket::<PureRovers>::new(RATE, 100, 1, T0));
        let replenisher = {
            let tb = tb.clone();
            thread::spawn(move || {
                tb.replenish(T0 + 40_000);
                tb.replenish(T0 + 80_000);
            })
        };
        let grabber = {
            let tb = tb.clone();
            thread::spawn(move || {
                let position = tb.grab(60);
                let first = tb.deficiency(position);
                let second = tb.deficiency(position);
                assert!(second <= first);
                assert!(first <= 60);
            })
        };
        replenisher.join().unwrap();
        grabber.join().unwrap();
        // Pure cap: head never passes tail + limit.
        assert!(tb.head() <= tb.tail() + 100);
        assert_eq!(tb.replenished_ts(), T0 + 80_000);
    });
}
