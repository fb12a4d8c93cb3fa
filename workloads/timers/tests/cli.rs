//! The `timers-bench` executable against the workload contract: `describe`, bad input,
//! and `run --gate` end to end (events in order, the gate honoured, a sound result, no
//! process left behind).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_timers-bench");

fn bench(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("timers-bench runs")
}

#[test]
fn describe_is_the_contract_document() {
    let out = bench(&["describe"]);
    assert!(out.status.success());
    let d: Value = serde_json::from_slice(&out.stdout).expect("describe prints JSON");
    assert_eq!(d["suite"], "timers");
    assert_eq!(d["contract_version"], 2);
    assert_eq!(d["baseline"], "none");
    assert_eq!(d["default_scenario"], "steady");
    let names: Vec<&str> = d["strategies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            assert!(!s["help"].as_str().unwrap().is_empty());
            s["name"].as_str().unwrap()
        })
        .collect();
    assert_eq!(
        names,
        [
            "none",
            "tokio-timeout",
            "tokio-timeout-alt",
            "tokio-timeout-legacy",
            "tokio-timeout-sharded",
            "deadline-tracker",
            "scheduled-executor",
            "event-executor",
            "hashed-wheel",
            "hashed-wheel-offload",
            "scylla-driver",
            "scylla-driver-no-timeout"
        ]
    );
    let scenarios: Vec<&str> = d["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(scenarios, ["steady", "slow-tail", "timer-ops"]);
    assert_eq!(d["scenarios"][1]["params"]["timeout_ms"], 100);
    let params = d["params"].as_array().unwrap();
    for name in [
        "threads",
        "connections",
        "concurrency",
        "max_rate",
        "partition_count",
        "mode",
        "value_bytes",
        "timeout_ms",
        "service_time_us",
        "service_dist",
        "slow_fraction",
        "slow_delay_ms",
        "server_threads",
        "executor_threads",
        "computation_threads",
        "tick_ms",
        "wheel_size",
        "seed",
    ] {
        let p = params
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("param {name} missing"));
        let ty = p["type"].as_str().unwrap();
        assert!(["int", "float", "choice"].contains(&ty));
        assert!(p.get("default").is_some() && p["help"].is_string(), "{p}");
        if ty == "choice" {
            assert!(p["choices"].as_array().unwrap().contains(&p["default"]));
        } else {
            assert!(p["min"].as_f64().unwrap() <= p["default"].as_f64().unwrap());
            assert!(p["default"].as_f64().unwrap() <= p["max"].as_f64().unwrap());
        }
    }
    assert_eq!(params.len(), 18);
    let metrics = d["metrics"].as_array().unwrap();
    assert!(metrics
        .iter()
        .any(|m| m["name"] == "ops_per_sec" && m["better"] == "higher"));
    assert!(metrics
        .iter()
        .any(|m| m["name"] == "latency_ns.p99" && m["better"] == "lower"));
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "--duration-s", "1", "--warmup-s", "0"];
        args.extend_from_slice(extra);
        args.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let cases: Vec<(Vec<String>, Vec<&str>)> = vec![
        (
            run(&["--strategy", "tokio"]),
            vec![
                "unknown strategy 'tokio'",
                "none, tokio-timeout,",
                "hashed-wheel-offload",
            ],
        ),
        (
            run(&["--strategy", "none", "--scenario", "burst"]),
            vec!["unknown scenario 'burst'", "steady, slow-tail"],
        ),
        (
            run(&["--strategy", "none", "--param", "speed=3"]),
            vec!["unknown parameter 'speed'", "threads, connections"],
        ),
        (
            run(&["--strategy", "none", "--param", "threads=many"]),
            vec!["'many'", "'threads'", "1..=1024"],
        ),
        (
            run(&["--strategy", "none", "--param", "concurrency=0"]),
            vec!["'0'", "'concurrency'", "1..=1000000"],
        ),
        (
            run(&["--strategy", "none", "--param", "slow_fraction=2"]),
            vec!["'slow_fraction'", "0..=1"],
        ),
        (
            run(&["--strategy", "none", "--param", "mode=scan"]),
            vec!["'scan'", "write, read"],
        ),
        (
            run(&["--strategy", "none", "--param", "timeout_ms"]),
            vec!["'timeout_ms'", "name=value"],
        ),
        (
            vec![
                "run",
                "--strategy",
                "none",
                "--duration-s",
                "soon",
                "--warmup-s",
                "0",
            ]
            .into_iter()
            .map(String::from)
            .collect(),
            vec!["'soon'", "--duration-s"],
        ),
        (
            vec!["run", "--duration-s", "1", "--warmup-s", "0"]
                .into_iter()
                .map(String::from)
                .collect(),
            vec!["--strategy"],
        ),
        (
            run(&["--strategy", "none", "--frobnicate"]),
            vec!["'--frobnicate'"],
        ),
        (vec!["launch".to_string()], vec!["'launch'"]),
        (Vec::new(), vec!["describe, check, run, serve"]),
        (
            vec![
                "run",
                "--strategy",
                "none",
                "--duration-s",
                "1",
                "--warmup-s",
                "-1",
            ]
            .into_iter()
            .map(String::from)
            .collect(),
            vec!["'-1'", "--warmup-s"],
        ),
    ];
    for (args, needles) in cases {
        let out = Command::new(BIN).args(&args).output().unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr:?}");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        for needle in needles {
            assert!(
                stderr.contains(needle),
                "{args:?}: {needle:?} not in {stderr:?}"
            );
        }
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// Reads the child's stdout lines on a thread.
fn lines_of(child: &mut Child) -> mpsc::Receiver<String> {
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    rx
}

fn event(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?} is not JSON: {e}"))
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet).
fn is_gone(pid: u64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z')),
    }
}

fn wait_gone(pid: u64) -> bool {
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        if is_gone(pid) {
            return true;
        }
        thread::sleep(Duration::from_millis(20));
    }
    false
}

fn start_gated(strategy: &str, scenario: &str, extra: &[&str]) -> Child {
    let mut args = vec![
        "run",
        "--strategy",
        strategy,
        "--scenario",
        scenario,
        "--duration-s",
        "0.5",
        "--warmup-s",
        "0.2",
        "--gate",
        "--param",
        "threads=2",
        "--param",
        "server_threads=1",
        "--param",
        "concurrency=32",
    ];
    args.extend_from_slice(extra);
    Command::new(BIN)
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

#[test]
fn gated_run_follows_the_contract() {
    // The slow-tail scenario with the in-process tests' margins widened (tests/common): a
    // normal answer has 300 ms to beat the timeout, a slow one comes 900 ms after it, so on a
    // loaded machine exactly the slow requests still time out.
    let mut child = start_gated(
        "deadline-tracker",
        "slow-tail",
        &["--param", "timeout_ms=300", "--param", "slow_delay_ms=1200"],
    );
    let lines = lines_of(&mut child);
    let ready = event(&lines.recv_timeout(Duration::from_secs(20)).unwrap());
    assert_eq!(ready["event"], "ready");
    let pids: Vec<u64> = ready["pids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_u64().unwrap())
        .collect();
    assert_eq!(pids.len(), 2);
    assert_eq!(pids[0], u64::from(child.id()), "the client comes first");
    assert!(!is_gone(pids[1]), "the server runs");
    // The gate holds: nothing happens until a line arrives on stdin.
    assert!(lines.recv_timeout(Duration::from_millis(700)).is_err());
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let rest: Vec<Value> = lines.iter().map(|l| event(&l)).collect();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    let names: Vec<&str> = rest.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(names, ["measure_start", "measure_end", "result"]);
    let r = &rest[2];
    assert_eq!(r["strategy"], "deadline-tracker");
    assert_eq!(r["scenario"], "slow-tail");
    assert_eq!(r["params"]["timeout_ms"], 300);
    assert_eq!(r["params"]["slow_delay_ms"], 1200);
    assert_eq!(r["params"]["concurrency"], 32);
    assert_eq!(r["params"]["connections"], 2);
    let n = |k: &str| {
        r[k].as_u64()
            .unwrap_or_else(|| panic!("{k} missing in {r}"))
    };
    assert!(n("issued") > 0);
    assert_eq!(n("issued"), n("ok") + n("timeouts") + n("errors"));
    // The server's own count of the window's requests, taken apart from the client's.
    assert_eq!(n("server_requests"), n("issued"), "{r}");
    assert_eq!(
        (n("unresolved"), n("handlers_left"), n("errors")),
        (0, 0, 0)
    );
    assert!(n("server_slow") > 0);
    assert_eq!(n("timeouts"), n("server_slow"), "{r}");
    assert_eq!(n("late_responses"), n("timeouts"));
    assert!(r["ops_per_sec"].as_f64().unwrap() > 0.0);
    assert!(r["duration_s"].as_f64().unwrap() >= 0.5);
    let lat = &r["latency_ns"];
    for k in ["p50", "p90", "p99", "p999", "max", "mean"] {
        assert!(lat[k].as_u64().unwrap() > 0, "latency_ns.{k} in {r}");
    }
    assert!(lat["p50"].as_u64() <= lat["p99"].as_u64());
    for k in ["registered", "cancelled", "fired", "rearms"] {
        assert!(r["timer"][k].is_u64(), "timer.{k} in {r}");
    }
    assert_eq!(r["timer"]["fired"], r["timeouts"]);
    // CPU per op per role: per-op x answered requests is the role's CPU time over the
    // window, which no more than every CPU of the machine can have spent in it (with 5% and
    // 20 ms of slack: a process clock lags each running thread's by up to a tick).
    let cpus = std::thread::available_parallelism().unwrap().get() as f64;
    let window_ns = r["duration_s"].as_f64().unwrap() * 1e9;
    for role in ["client", "server"] {
        let cpu = n(&format!("{role}_cpu_ns")) as f64;
        let per_op = r[format!("{role}_cpu_ns_per_op")].as_f64().unwrap();
        assert!(per_op > 0.0, "{role} in {r}");
        assert!(
            (per_op * n("ok") as f64 - cpu).abs() <= 1.0 + cpu * 1e-9,
            "{role} in {r}"
        );
        assert!(cpu <= cpus * window_ns * 1.05 + 20e6, "{role} in {r}");
    }
    assert_eq!(n("cpu_ns"), n("client_cpu_ns") + n("server_cpu_ns"));
    assert!(wait_gone(pids[1]), "the server outlived the run");
}

#[test]
fn the_server_dies_with_a_killed_client() {
    let mut child = start_gated("none", "steady", &[]);
    let lines = lines_of(&mut child);
    let ready = event(&lines.recv_timeout(Duration::from_secs(20)).unwrap());
    let server = ready["pids"][1].as_u64().unwrap();
    assert!(!is_gone(server));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(wait_gone(server), "server {server} survived its client");
}

#[test]
fn an_ungated_open_loop_run_reads_and_keeps_its_rate() {
    let out = bench(&[
        "run",
        "--strategy",
        "tokio-timeout",
        "--duration-s",
        "1",
        "--warmup-s",
        "0.2",
        "--param",
        "threads=2",
        "--param",
        "concurrency=64",
        "--param",
        "max_rate=2000",
        "--param",
        "mode=read",
        "--param",
        "value_bytes=1000",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let events: Vec<Value> = stdout.lines().map(event).collect();
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ready", "measure_start", "measure_end", "result"]);
    let r = &events[3];
    // Bounds from the schedule, not from the machine's speed: a request sent in the window
    // was intended at most `max` latency before it (latency counts from the intended time),
    // and every request intended in [start, end - max] was sent and answered in the window.
    // Each of the 64 tasks rounds its share of an interval down or up by one send.
    let (rate, tasks) = (2000.0, 64.0);
    let window = r["duration_s"].as_f64().unwrap();
    let late = r["latency_ns"]["max"].as_f64().unwrap() / 1e9;
    let issued = r["issued"].as_f64().unwrap();
    let (low, high) = (
        rate * (window - late) - tasks,
        rate * (window + late) + tasks,
    );
    assert!(
        (low..=high).contains(&issued),
        "open loop at {rate}/s for {window} s (max latency {late} s) issued {issued}, \
         outside [{low}, {high}]"
    );
    assert_eq!(r["params"]["mode"], "read");
    assert_eq!(r["timeouts"], 0);
}

/// A private copy of the binary in a fresh directory, optionally with stand-ins for
/// `timers-bench-legacy` and `timers-bench-sharded` next to it.
fn isolated_copy(name: &str, older_stand_in: Option<&str>) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("timers-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("timers-bench");
    std::fs::copy(BIN, &exe).unwrap();
    if let Some(script) = older_stand_in {
        use std::os::unix::fs::PermissionsExt;
        for (older, _) in OLDER {
            let stand_in = dir.join(older);
            std::fs::write(&stand_in, script.replace("NAME", older)).unwrap();
            std::fs::set_permissions(&stand_in, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    exe
}

/// Starts a copy made by `isolated_copy`, again while ETXTBSY: a test thread that forks
/// while `fs::copy` has the copy open for writing holds it open until that child execs.
fn spawn_copy(command: &mut Command) -> Child {
    for _ in 0..200 {
        match command.spawn() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                thread::sleep(Duration::from_millis(10))
            }
            started => return started.unwrap(),
        }
    }
    command.spawn().unwrap()
}

/// The builds against older tokios and the strategy each runs.
const OLDER: [(&str, &str); 2] = [
    ("timers-bench-legacy", "tokio-timeout-legacy"),
    ("timers-bench-sharded", "tokio-timeout-sharded"),
];

fn older_args(strategy: &str) -> Vec<&str> {
    let args = [
        "run",
        "--strategy",
        strategy,
        "--duration-s",
        "1",
        "--warmup-s",
        "0",
    ];
    [&args[..], &["--param", "threads=2"]].concat()
}

#[test]
fn the_older_tokios_strategies_are_handed_to_their_sibling_binaries() {
    let exe = isolated_copy(
        "handoff",
        Some("#!/bin/sh\necho \"NAME pid $$ args: $*\"\nexit 7\n"),
    );
    for (older, strategy) in OLDER {
        let args = older_args(strategy);
        let child = spawn_copy(Command::new(&exe).args(&args).stdout(Stdio::piped()));
        let pid = child.id();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(7), "the stand-in's exit code");
        let stdout = String::from_utf8(out.stdout).unwrap();
        // Exec, not a child: same pid, same arguments.
        assert_eq!(
            stdout.trim(),
            format!("{older} pid {pid} args: {}", args.join(" "))
        );
    }
    std::fs::remove_dir_all(exe.parent().unwrap()).unwrap();
}

#[test]
fn a_missing_older_binary_is_a_clear_failure() {
    let exe = isolated_copy("missing", None);
    let piped = |command: &mut Command| {
        let command = command.stdout(Stdio::piped()).stderr(Stdio::piped());
        spawn_copy(command).wait_with_output().unwrap()
    };
    for ((older, strategy), dir) in OLDER.into_iter().zip(["legacy", "sharded"]) {
        let out = piped(Command::new(&exe).args(older_args(strategy)));
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(older), "{stderr}");
        assert!(stderr.contains(&format!("{dir}/Cargo.toml")), "{stderr}");
        // Bad input is still reported as such before the hand-off.
        let out = piped(
            Command::new(&exe)
                .args(older_args(strategy))
                .args(["--param", "threads=0"]),
        );
        assert_eq!(out.status.code(), Some(2));
    }
    std::fs::remove_dir_all(exe.parent().unwrap()).unwrap();
}
