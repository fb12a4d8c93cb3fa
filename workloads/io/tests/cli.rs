//! The binary's contract: describe is valid JSON with the scratch parameters, bad input is
//! one line and exit 2 (also for `check`), a missing scratch file is exit 2, a run prints its
//! events in order.

use std::process::Command;

fn io_bench(args: &[&str], scratch: Option<&str>) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_io-bench"));
    cmd.args(args).env_remove("HARNESS_SCRATCH_FILE");
    if let Some(path) = scratch {
        cmd.env("HARNESS_SCRATCH_FILE", path);
    }
    let out = cmd.output().expect("run io-bench");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const WINDOW: [&str; 4] = ["--duration-s", "0.2", "--warmup-s", "0"];

#[test]
fn describe_lists_the_scratch_params() {
    let (code, out, _) = io_bench(&["describe"], None);
    assert_eq!(code, 0);
    let d: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(d["suite"], "io");
    assert_eq!(d["baseline"], "unlimited");
    let param = |name: &str| {
        d["params"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(param("file_size_mb")["default"], 64);
    assert_eq!(param("file_size_mb")["max"], 256);
    assert_eq!(param("dir")["type"], "string");
    assert_eq!(param("dir")["default"], "");
    let scenarios: Vec<&str> = d["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        scenarios,
        ["randread", "seqread", "randwrite", "seqwrite", "stall"]
    );
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    for (params, want) in [
        (vec!["--param", "iops_limit=-1"], "parameter 'iops_limit'"),
        (vec!["--param", "reqsize=0"], "parameter 'reqsize'"),
        (
            vec!["--param", "direct=true", "--param", "reqsize=1000"],
            "a multiple of 512 with direct=true",
        ),
        (vec!["--param", "ioengine=aio"], "parameter 'ioengine'"),
    ] {
        for verb in ["check", "run"] {
            let mut args = vec![verb, "--strategy", "pure"];
            args.extend(&params);
            args.extend(WINDOW);
            let (code, out, err) = io_bench(&args, Some("/nonexistent"));
            assert_eq!(code, 2, "{verb} {params:?}: {err}");
            assert!(out.is_empty());
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(err.contains(want), "{err}");
        }
    }
    let (code, _, err) = io_bench(
        &["check", "--strategy", "fast"]
            .iter()
            .chain(&WINDOW)
            .copied()
            .collect::<Vec<_>>(),
        None,
    );
    assert_eq!(code, 2);
    assert!(err.contains("(valid: unlimited, pure, capped-release, flow-monitor)"));
}

#[test]
fn check_needs_no_file_and_run_needs_one() {
    let args: Vec<&str> = ["--strategy", "pure"]
        .iter()
        .chain(&WINDOW)
        .copied()
        .collect();
    let (code, out, err) = io_bench(&[&["check"][..], &args].concat(), None);
    assert_eq!((code, out.as_str(), err.as_str()), (0, "", ""));
    let (code, out, err) = io_bench(&[&["run"][..], &args].concat(), None);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert_eq!(
        err.trim(),
        "error: HARNESS_SCRATCH_FILE is not set: run this suite through the harness, or set it to a file of file_size_mb MiB"
    );
    // A file smaller than file_size_mb: a run-time failure, exit 1 before ready.
    let path = std::env::temp_dir().join(format!("io-bench-cli-small-{}", std::process::id()));
    std::fs::write(&path, vec![0u8; 8192]).unwrap();
    let (code, out, err) = io_bench(&[&["run"][..], &args].concat(), path.to_str());
    let _ = std::fs::remove_file(&path);
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("less than file_size_mb"), "{err}");
}

#[test]
fn a_run_prints_its_events_in_order() {
    let path = std::env::temp_dir().join(format!("io-bench-cli-run-{}", std::process::id()));
    std::fs::write(&path, vec![7u8; 1 << 20]).unwrap();
    let mut args = vec!["run", "--strategy", "flow-monitor", "--scenario", "stall"];
    args.extend(["--param", "file_size_mb=1", "--param", "parallelism=2"]);
    args.extend(WINDOW);
    let (code, out, err) = io_bench(&args, path.to_str());
    let _ = std::fs::remove_file(&path);
    assert_eq!(code, 0, "{err}");
    let events: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ready", "measure_start", "measure_end", "result"]);
    let result = &events[3];
    assert_eq!(result["strategy"], "flow-monitor");
    assert_eq!(result["params"]["hog"], true);
    for key in [
        "iops",
        "bw_bytes",
        "dispatched",
        "completed",
        "shard_fairness",
        "cpu_ns_per_op",
    ] {
        assert!(result[key].is_number(), "{key}");
    }
    for q in ["p50", "p90", "p99", "p999", "max"] {
        assert!(result["latency_ns"][q].is_u64(), "{q}");
    }
}

/// `check` sets up an io_uring to see whether the kernel allows it: exit 0 where it does,
/// else exit 2 with one line giving the reason (the errno of io_uring_setup).
#[test]
fn check_says_whether_io_uring_is_available() {
    let mut args = vec![
        "check",
        "--strategy",
        "pure",
        "--param",
        "ioengine=io_uring",
    ];
    args.extend(WINDOW);
    let (code, out, err) = io_bench(&args, None);
    assert!(out.is_empty());
    match io_bench::uring_engine::unavailable() {
        None => assert_eq!((code, err.as_str()), (0, "")),
        Some(reason) => {
            assert_eq!(code, 2);
            assert_eq!(err.trim(), format!("error: {reason}"));
            assert!(reason.starts_with("io_uring unavailable: "), "{reason}");
        }
    }
}
