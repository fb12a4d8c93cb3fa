//! The real scylla driver (`scylla-driver`, `scylla-driver-no-timeout`) against the CQL
//! server on 127.0.0.1, both in this process: the driver connects (OPTIONS, STARTUP,
//! REGISTER, the topology queries, PREPARE), every prepared write is answered and counted
//! by the server, the accounting is exact, and in a slow tail exactly the writes the server
//! delayed time out.
//!
//! Whether a write answered at once beats its timeout depends on how late this busy machine
//! runs the threads in between: a slow-tail attempt whose timeouts differ from the delayed
//! writes fails only if the measured wake-up delay stayed far within the timeout, and is
//! otherwise run again with a longer timeout (as in `common`).

#![cfg(feature = "cql")]

use std::net::SocketAddr;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use timers::metrics::Report;
use timers::params::{self, Params};
use timers::server::{Protocol, Server, ServerConfig};
use timers::strategy::scylla_driver;
use timers::strategy::StrategyKind;

#[path = "../engines/tests/engines/wakeup_delay.rs"]
mod wakeup_delay;
use wakeup_delay::WakeupDelay;

const WARMUP: Duration = Duration::from_millis(200);
const WINDOW: Duration = Duration::from_millis(600);
/// A conclusive attempt has at least this many measured writes, and in a slow tail this
/// many delayed ones.
const MIN_ISSUED: u64 = 100;
const MIN_SLOW: u64 = 5;
const MAX_ATTEMPTS: u32 = 4;
/// The timeout must exceed the worst wake-up delay this many times over for a fast write
/// that still timed out to be the code's fault (a server reader and writer, the driver's
/// router and the task wake in series).
const MARGIN: u32 = 4;

/// Runs are timing-sensitive: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

fn resolve(extra: &[String]) -> Params {
    let mut overrides: Vec<String> = [
        "threads=2",
        "connections=2",
        "concurrency=16",
        "server_threads=1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    overrides.extend_from_slice(extra);
    params::resolve(Some(params::scenario(None).unwrap()), &overrides).unwrap()
}

/// One run of `kind` against an in-process CQL server; the report and the first error.
fn run(kind: StrategyKind, params: &Params, window: Duration) -> (Report, Option<String>) {
    let server = Server::start_protocol(ServerConfig::from_params(params), 0, Protocol::Cql)
        .expect("the CQL server starts");
    let addr: SocketAddr = server.addr();
    let runtime = kind.build_runtime(params.threads).unwrap();
    let result = runtime.block_on(async {
        let shared = scylla_driver::connect(kind, params, addr).await?;
        scylla_driver::run(&shared, params, (WARMUP, window), None, |_| {}).await
    });
    drop(runtime);
    drop(server);
    result.unwrap_or_else(|e| panic!("{}: {e}", kind.name()))
}

/// What holds for every run: exact accounting, and the server got every measured write.
fn check_sound(kind: StrategyKind, report: &Report, first_error: &Option<String>) {
    let s = &report.stats;
    let what = kind.name();
    assert_eq!(s.errors, 0, "{what}: {first_error:?}");
    assert_eq!(s.issued, s.ok + s.timeouts + s.errors, "{what}: {s:?}");
    assert_eq!((s.unresolved, report.lost_tasks), (0, 0), "{what}");
    assert_eq!(
        report.server_requests, s.issued,
        "{what}: the server's count"
    );
    assert!(
        report.violations().is_empty(),
        "{what}: {:?}",
        report.violations()
    );
    let timer = |name: &str| {
        report
            .timer
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |&(_, v)| v)
    };
    if kind.has_timeout() {
        // One tokio timer per request, fired exactly for the timeouts.
        assert_eq!(timer("registered"), s.issued, "{what}");
        assert_eq!(timer("fired"), s.timeouts, "{what}");
        assert_eq!(timer("cancelled"), s.ok, "{what}");
    } else {
        assert_eq!(timer("registered"), 0, "{what}");
        assert_eq!(s.timeouts, 0, "{what}: no timeout, no timeouts");
    }
}

#[test]
fn the_driver_connects_and_every_prepared_write_is_answered() {
    let _one_at_a_time = serial();
    for kind in [
        StrategyKind::ScyllaDriver,
        StrategyKind::ScyllaDriverNoTimeout,
    ] {
        // A timeout no answer given at once comes near: nothing may time out.
        let params = resolve(&["timeout_ms=30000".to_string()]);
        let (report, first_error) = run(kind, &params, WINDOW);
        check_sound(kind, &report, &first_error);
        let s = &report.stats;
        assert!(
            s.issued >= MIN_ISSUED,
            "{}: only {} writes",
            kind.name(),
            s.issued
        );
        assert_eq!((s.ok, s.timeouts), (s.issued, 0), "{}", kind.name());
        assert_eq!(report.server_slow, 0);
        assert!(
            report.latency.len() == s.ok,
            "one latency per answered write"
        );
    }
}

#[test]
fn in_a_slow_tail_exactly_the_delayed_writes_time_out() {
    let _one_at_a_time = serial();
    let mut timeout = Duration::from_millis(200);
    let mut window = WINDOW;
    let mut last = String::new();
    for number in 1..=MAX_ATTEMPTS {
        // 5% of the writes are answered three timeouts late.
        let extra = [
            "slow_fraction=0.05".to_string(),
            format!("slow_delay_ms={}", timeout.as_millis() * 3),
            format!("timeout_ms={}", timeout.as_millis()),
        ];
        let params = resolve(&extra);
        let delay = WakeupDelay::start();
        let (report, first_error) = run(StrategyKind::ScyllaDriver, &params, window);
        let worst = delay.worst();
        drop(delay);
        check_sound(StrategyKind::ScyllaDriver, &report, &first_error);
        let s = &report.stats;
        last = format!(
            "attempt {number}: timeout {timeout:?} issued {} ok {} timeouts {} server_slow {} \
             worst wake-up {worst:?}",
            s.issued, s.ok, s.timeouts, report.server_slow
        );
        eprintln!("{last}");
        if s.issued < MIN_ISSUED || report.server_slow < MIN_SLOW {
            window *= 2;
            continue;
        }
        if s.timeouts == report.server_slow {
            // The driver without a timeout waits for the same delayed writes.
            let (report, first_error) = run(StrategyKind::ScyllaDriverNoTimeout, &params, window);
            check_sound(StrategyKind::ScyllaDriverNoTimeout, &report, &first_error);
            assert!(report.server_slow >= 1, "no delayed write to wait for");
            assert_eq!(report.stats.ok, report.stats.issued);
            return;
        }
        assert!(
            worst * MARGIN > timeout,
            "{last}: the timeouts are not the delayed writes, although threads woke at worst \
             {worst:?} late"
        );
        // The machine stalled beyond what the timeout covers: again with a longer one.
        timeout = (timeout * 2).max(worst * MARGIN);
        window *= 2;
    }
    panic!("{MAX_ATTEMPTS} attempts, none conclusive; the last: {last}");
}

#[test]
fn the_driver_reads_the_one_node_and_its_tokens_and_is_refused_unknown_statements() {
    let _one_at_a_time = serial();
    let params = resolve(&[]);
    let server = Server::start_protocol(ServerConfig::from_params(&params), 0, Protocol::Cql)
        .expect("the CQL server starts");
    let runtime = StrategyKind::ScyllaDriver.build_runtime(1).unwrap();
    let reason = runtime.block_on(async {
        let session = scylla::client::session_builder::SessionBuilder::new()
            .known_node_addr(server.addr())
            .fetch_schema_metadata(false)
            .build()
            .await
            .expect("the driver connects");
        // The topology the driver read from system.local (system.peers is empty).
        let state = session.get_cluster_state();
        let nodes = state.get_nodes_info();
        assert_eq!(nodes.len(), 1, "one node");
        assert_eq!(nodes[0].host_id.as_bytes(), &timers::cql::HOST_ID);
        assert_eq!(nodes[0].address.ip(), server.addr().ip());
        assert_eq!(
            nodes[0].datacenter.as_deref(),
            Some(timers::cql::DATA_CENTER)
        );
        let ring: Vec<String> = state
            .replica_locator()
            .ring()
            .iter()
            .map(|(token, _)| token.value().to_string())
            .collect();
        assert_eq!(
            ring,
            timers::cql::tokens(),
            "the node's tokens, in ring order"
        );
        session
            .prepare("SELECT * FROM ks.nowhere")
            .await
            .expect_err("no such statement")
            .to_string()
    });
    assert!(
        reason.contains("statement not supported by the timers server"),
        "{reason}"
    );
}

#[test]
fn what_the_driver_strategies_do_not_run_is_bad_input() {
    let check = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_timers-bench"))
            .args(["check", "--duration-s", "1", "--warmup-s", "0"])
            .args(args)
            .output()
            .expect("timers-bench runs");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        stderr
    };
    let e = check(&["--strategy", "scylla-driver", "--param", "mode=read"]);
    assert!(
        e.contains("runs prepared writes only (valid: mode=write)"),
        "{e}"
    );
    let e = check(&[
        "--strategy",
        "scylla-driver-no-timeout",
        "--param",
        "max_rate=1000",
    ]);
    assert!(
        e.contains("the closed loop only (valid: max_rate=0)"),
        "{e}"
    );
    let e = check(&["--strategy", "scylla-driver", "--scenario", "timer-ops"]);
    assert!(e.contains("does not run strategy 'scylla-driver'"), "{e}");
    // And what they run is accepted.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_timers-bench"))
        .args(["check", "--duration-s", "1", "--warmup-s", "0"])
        .args(["--strategy", "scylla-driver", "--scenario", "slow-tail"])
        .output()
        .expect("timers-bench runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
