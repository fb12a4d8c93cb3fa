//! Whole runs through the library, both engines, on a real file: every shard's requests
//! resolve exactly once (also under the stall scenario's hogs), and the events come in the
//! contract's order.

mod common;

use std::time::Duration;

use common::{need, ScratchFile};
use io_bench::bench_run::{self, RunEvent};
use io_bench::params;
use io_bench::uring_engine;
use suite_cli::cli::Plan;

fn run(scenario: &str, strategy: &str, overrides: &[&str]) -> io_bench::metrics::Report {
    let scratch = ScratchFile::new("run", 1 << 20);
    let mut o: Vec<String> = vec!["file_size_mb=1".into(), "shards=2".into()];
    o.extend(overrides.iter().map(|s| s.to_string()));
    let scenario = params::scenario(Some(scenario)).unwrap();
    let plan = Plan {
        strategy: params::Strategy::from_name(strategy).unwrap(),
        scenario,
        params: params::resolve(Some(scenario), &o).unwrap(),
        warmup: Duration::from_millis(50),
        duration: Duration::from_millis(300),
    };
    let mut events = Vec::new();
    let report = bench_run::run(&plan, scratch.path_str(), &mut |e| {
        events.push(match e {
            RunEvent::Ready => "ready",
            RunEvent::MeasureStart => "measure_start",
            RunEvent::MeasureEnd => "measure_end",
        });
        Ok(())
    })
    .unwrap();
    assert_eq!(events, ["ready", "measure_start", "measure_end"]);
    report
}

fn engines() -> Vec<&'static str> {
    if need(uring_engine::unavailable().map(|reason| format!("io_uring: {reason}"))) {
        vec!["ioengine=psync", "ioengine=io_uring"]
    } else {
        vec!["ioengine=psync"]
    }
}

#[test]
fn every_request_resolves_exactly_once_in_whole_runs() {
    for engine in engines() {
        for (scenario, strategy) in [
            ("randwrite", "unlimited"),
            ("seqread", "pure"),
            ("stall", "capped-release"),
            ("stall", "flow-monitor"),
        ] {
            let r = run(
                scenario,
                strategy,
                &[engine, "parallelism=4", "iops_limit=3000"],
            );
            assert_eq!(r.failure(), None, "{engine} {scenario} {strategy}");
            for s in &r.shards {
                assert_eq!(s.dispatched, s.completed, "{engine} {scenario} {strategy}");
            }
            assert!(r.window_completed() > 0, "{engine} {scenario} {strategy}");
        }
    }
}

/// The bucket bounds a whole run: 2000/s for the 0.3 s window plus the warm-up's share is at
/// most the window's 600 + a bucket's fill, whatever the scheduling. No lower bound: a busy
/// machine may keep both shards off their CPUs for the whole short window (dispatch.rs runs
/// a meter until a count instead).
#[test]
fn the_limit_bounds_a_whole_run() {
    let r = run("randread", "pure", &["iops_limit=2000"]);
    assert_eq!(r.failure(), None);
    let done = r.window_completed();
    assert!(done <= 600 * 102 / 100 + 4, "{done}");
}

#[test]
fn the_limit_ratio_is_the_rate_over_the_limit_for_every_strategy() {
    // pure is held at the limit; unlimited is measured against the same limit.
    for (strategy, high) in [("pure", 1.05), ("unlimited", f64::MAX)] {
        let m = run("randread", strategy, &["iops_limit=2000"]).metrics_json();
        let ratio = m["limit_ratio"].as_f64().unwrap();
        let iops = m["iops"].as_f64().unwrap();
        assert!(
            (ratio - iops / 2000.0).abs() < 1e-9,
            "{strategy}: {ratio} vs {iops}"
        );
        assert!((0.0..=high).contains(&ratio), "{strategy}: {ratio}");
    }
}
