//! `tokio-timeout-sharded` on tokio 1.44, the last release with the sharded timer wheel: the
//! checks of an older build (`tests/common/older_build.rs`).

#[path = "../../tests/common/mod.rs"]
mod common;
#[path = "../../tests/common/older_build.rs"]
mod older_build;

use older_build::OlderBuild;
use timers::strategy::StrategyKind;

const SHARDED: OlderBuild = OlderBuild {
    bin: env!("CARGO_BIN_EXE_timers-bench-sharded"),
    kind: StrategyKind::TokioTimeoutSharded,
    lock: include_str!("../Cargo.lock"),
    // tokio sharded its timer wheel in 1.38 (#6534) and reverted that in 1.45 (#7226).
    tokio: "1.44.",
};

#[test]
fn runs_on_tokio_1_44() {
    SHARDED.pins_its_tokio();
}

#[test]
fn tokio_timeout_sharded() {
    SHARDED.strategy_is_sound();
}

#[test]
fn only_the_sharded_strategy_runs_here() {
    SHARDED.runs_only_its_strategy();
}

#[test]
fn a_sharded_run_prints_a_sound_result() {
    SHARDED.a_run_prints_a_sound_result();
}
