//! `tokio-timeout-legacy` on tokio 1.37 (one timer wheel under one lock, before tokio
//! sharded it): the checks of an older build (`tests/common/older_build.rs`).

#[path = "../../tests/common/mod.rs"]
mod common;
#[path = "../../tests/common/older_build.rs"]
mod older_build;

use older_build::OlderBuild;
use timers::strategy::StrategyKind;

const LEGACY: OlderBuild = OlderBuild {
    bin: env!("CARGO_BIN_EXE_timers-bench-legacy"),
    kind: StrategyKind::TokioTimeoutLegacy,
    lock: include_str!("../Cargo.lock"),
    // Any tokio from 1.38 on would not be the single-lock wheel before the sharding.
    tokio: "1.37.",
};

#[test]
fn runs_on_tokio_1_37() {
    LEGACY.pins_its_tokio();
}

#[test]
fn tokio_timeout_legacy() {
    LEGACY.strategy_is_sound();
}

#[test]
fn only_the_legacy_strategy_runs_here() {
    LEGACY.runs_only_its_strategy();
}

#[test]
fn a_legacy_run_prints_a_sound_result() {
    LEGACY.a_run_prints_a_sound_result();
}
