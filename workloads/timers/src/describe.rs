//! The `describe` document: strategies, scenarios, parameters, metrics and needs.

use serde_json::{json, Value as Json};
use suite_cli::describe::document;

use crate::params::{specs, SCENARIOS};
use crate::strategy::StrategyKind;

pub fn describe() -> Json {
    // Answered requests per second in every scenario (timer-ops: ops completed, not timed
    // out); the per-op figures below divide by the same ops.
    let mut metrics = vec![json!({"name": "ops_per_sec", "unit": "ops/s", "better": "higher"})];
    // CPU per op of every process of the run (timer-ops: its one process; else client and
    // server together).
    metrics.push(json!({"name": "cpu_ns_per_op", "unit": "ns", "better": "lower"}));
    for p in ["p50", "p90", "p99", "p999", "max", "mean"] {
        metrics.push(json!({"name": format!("latency_ns.{p}"), "unit": "ns", "better": "lower"}));
    }
    for role in ["client", "server"] {
        metrics.push(
            json!({"name": format!("{role}_cpu_ns_per_op"), "unit": "ns", "better": "lower"}),
        );
    }
    for (name, unit) in [
        ("timeouts", "requests"),
        ("errors", "requests"),
        ("unresolved", "requests"),
        ("handlers_left", "handlers"),
    ] {
        metrics.push(json!({"name": name, "unit": unit, "better": "lower"}));
    }
    let mut d = document(
        "timers",
        StrategyKind::None.name(),
        StrategyKind::ALL.iter().map(|s| (s.name(), s.help())),
        SCENARIOS,
        &specs(),
        metrics,
    );
    for (entry, strategy) in d["strategies"]
        .as_array_mut()
        .expect("describe's strategies are a list")
        .iter_mut()
        .zip(StrategyKind::ALL)
    {
        if let Some(twin) = strategy.twin() {
            entry["compare_with"] = json!(twin.name());
        }
    }
    d["needs"] = needs();
    d
}

/// What one run needs, as expressions the harness evaluates before it starts anything
/// (docs/workload-contract.md, `needs`): an upper bound, every request in flight at once.
fn needs() -> Json {
    json!({
        "in_flight": "concurrency",
        "threads_total": "threads + server_threads + executor_threads + computation_threads",
        "memory_bytes": "48e6 + in_flight * (1024 + 2 * value_bytes) \
            + threads_total * 2097152 + connections * 262144",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_lists_every_param_and_scenario() {
        let d = describe();
        assert_eq!(d["params"].as_array().unwrap().len(), specs().len());
        assert_eq!(d["scenarios"].as_array().unwrap().len(), SCENARIOS.len());
        assert_eq!(d["default_scenario"], "steady");
    }

    #[test]
    fn the_scylla_driver_is_compared_with_itself_without_its_timeout() {
        let d = describe();
        let twins: Vec<(&str, &str)> = d["strategies"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| Some((s["name"].as_str()?, s.get("compare_with")?.as_str()?)))
            .collect();
        assert_eq!(twins, [("scylla-driver", "scylla-driver-no-timeout")]);
    }
}
