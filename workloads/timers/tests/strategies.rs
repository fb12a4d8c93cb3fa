//! Every strategy (but `tokio-timeout-legacy` and `tokio-timeout-sharded`, tested by the
//! `timers-legacy` and `timers-sharded` crates on their tokio) against a real server over
//! real sockets: each request resolves exactly once, counters agree with the resolution log
//! and the server, and timeouts fire never early and within the strategy's granularity.

mod common;

use common::{check, RACE, SLOW_TAIL, STEADY};
use timers::strategy::StrategyKind;

fn all_cases(kind: StrategyKind) {
    for case in [&STEADY, &SLOW_TAIL, &RACE] {
        check(kind, case);
    }
}

#[test]
fn none() {
    all_cases(StrategyKind::None);
}

#[test]
fn tokio_timeout() {
    all_cases(StrategyKind::TokioTimeout);
}

#[test]
fn tokio_timeout_alt() {
    all_cases(StrategyKind::TokioTimeoutAlt);
}

#[test]
fn deadline_tracker() {
    all_cases(StrategyKind::DeadlineTracker);
}

#[test]
fn scheduled_executor() {
    all_cases(StrategyKind::ScheduledExecutor);
}

#[test]
fn event_executor() {
    all_cases(StrategyKind::EventExecutor);
}

#[test]
fn hashed_wheel() {
    all_cases(StrategyKind::HashedWheel);
}

#[test]
fn hashed_wheel_offload() {
    all_cases(StrategyKind::HashedWheelOffload);
}
