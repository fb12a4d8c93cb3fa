//! `tokio-timeout-legacy` on tokio 1.37: the shared strategy checks (each request resolved
//! exactly once, counters consistent, timeouts never early), and the legacy binary's
//! command line.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::process::Command;

use common::{check, RACE, SLOW_TAIL, STEADY};
use serde_json::Value;
use timers::strategy::StrategyKind;

const BIN: &str = env!("CARGO_BIN_EXE_timers-bench-legacy");

#[test]
fn runs_on_tokio_1_37() {
    // The lock file of this crate pins it; a tokio 1.38+ here would measure nothing legacy.
    let lock = include_str!("../Cargo.lock");
    let tokio = lock
        .split("[[package]]")
        .find(|p| p.contains("name = \"tokio\"\n"))
        .expect("tokio in Cargo.lock");
    assert!(tokio.contains("version = \"1.37."), "{tokio}");
}

#[test]
fn tokio_timeout_legacy() {
    for case in [&STEADY, &SLOW_TAIL, &RACE] {
        check(StrategyKind::TokioTimeoutLegacy, case);
    }
}

#[test]
fn only_the_legacy_strategy_runs_here() {
    let out = Command::new(BIN)
        .args([
            "run",
            "--strategy",
            "tokio-timeout",
            "--duration-s",
            "1",
            "--warmup-s",
            "0",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("runs only strategy 'tokio-timeout-legacy'"),
        "{stderr}"
    );
}

#[test]
fn a_legacy_run_prints_a_sound_result() {
    let out = Command::new(BIN)
        .args([
            "run",
            "--strategy",
            "tokio-timeout-legacy",
            "--scenario",
            "slow-tail",
            "--duration-s",
            "0.5",
            "--warmup-s",
            "0.1",
            "--param",
            "threads=2",
            "--param",
            "server_threads=1",
            "--param",
            "concurrency=32",
            // The scenario's 100 ms timeout against 300 ms answers, widened: a normal answer
            // has 300 ms to beat the timeout, a slow one comes 900 ms after it, so on a
            // loaded machine exactly the slow requests still time out.
            "--param",
            "timeout_ms=300",
            "--param",
            "slow_delay_ms=1200",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let events: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ready", "measure_start", "measure_end", "result"]);
    let r = &events[3];
    assert_eq!(r["strategy"], "tokio-timeout-legacy");
    let n = |k: &str| r[k].as_u64().unwrap();
    assert_eq!(n("issued"), n("ok") + n("timeouts") + n("errors"));
    assert_eq!(n("server_requests"), n("issued"), "{r}");
    assert_eq!((n("unresolved"), n("handlers_left")), (0, 0));
    assert_eq!(r["params"]["timeout_ms"], 300);
    assert!(n("server_slow") > 0);
    assert_eq!(n("timeouts"), n("server_slow"));
}
