//! The checks of a build against an older tokio (`legacy/`, `sharded/`; included by path
//! from their tests next to `common`): its lock file pins the tokio it is for, it runs its one
//! strategy soundly, through the library and as its binary, and refuses every other one.

use std::process::Command;

use serde_json::Value;
use timers::strategy::StrategyKind;

use crate::common::{check, RACE, SLOW_TAIL, STEADY};

/// An older build: its binary, its one strategy, its lock file and the tokio it pins.
pub struct OlderBuild {
    pub bin: &'static str,
    pub kind: StrategyKind,
    pub lock: &'static str,
    /// The version prefix of the tokio in `lock`, such as "1.37.".
    pub tokio: &'static str,
}

impl OlderBuild {
    /// The lock file pins the tokio this build is for: another one would measure another
    /// timer wheel under the strategy's name.
    pub fn pins_its_tokio(&self) {
        let tokio = self
            .lock
            .split("[[package]]")
            .find(|p| p.contains("name = \"tokio\"\n"))
            .expect("tokio in Cargo.lock");
        assert!(
            tokio.contains(&format!("version = \"{}", self.tokio)),
            "{tokio}"
        );
    }

    /// The shared strategy checks, in process.
    pub fn strategy_is_sound(&self) {
        for case in [&STEADY, &SLOW_TAIL, &RACE] {
            check(self.kind, case);
        }
    }

    /// Any other strategy is bad input, named in one line.
    pub fn runs_only_its_strategy(&self) {
        let out = Command::new(self.bin)
            .args(["run", "--strategy", "tokio-timeout"])
            .args(["--duration-s", "1", "--warmup-s", "0"])
            .output()
            .unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        let only = format!("runs only strategy '{}'", self.kind.name());
        assert!(stderr.contains(&only), "{stderr}");
    }

    /// A slow-tail run of the binary: the events in order, exact accounting, and exactly
    /// the slow requests timed out.
    pub fn a_run_prints_a_sound_result(&self) {
        let out = Command::new(self.bin)
            .args([
                "run",
                "--strategy",
                self.kind.name(),
                "--scenario",
                "slow-tail",
            ])
            .args(["--duration-s", "0.5", "--warmup-s", "0.1"])
            .args(["--param", "threads=2", "--param", "server_threads=1"])
            .args(["--param", "concurrency=32"])
            // The scenario's 100 ms timeout against 300 ms answers, widened: a normal answer
            // has 300 ms to beat the timeout, a slow one comes 900 ms after it, so on a
            // loaded machine exactly the slow requests still time out.
            .args(["--param", "timeout_ms=300", "--param", "slow_delay_ms=1200"])
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
        assert_eq!(r["strategy"], self.kind.name());
        let n = |k: &str| r[k].as_u64().unwrap();
        assert_eq!(n("issued"), n("ok") + n("timeouts") + n("errors"));
        assert_eq!(n("server_requests"), n("issued"), "{r}");
        assert_eq!((n("unresolved"), n("handlers_left")), (0, 0));
        assert_eq!(r["params"]["timeout_ms"], 300);
        assert!(n("server_slow") > 0);
        assert_eq!(n("timeouts"), n("server_slow"));
    }
}
