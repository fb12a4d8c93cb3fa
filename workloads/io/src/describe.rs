//! The `describe` document: strategies, scenarios, parameters, metrics, plots and needs.

use serde_json::{json, Value as Json};
use suite_cli::describe::{document, metric};

use crate::params::{specs, Strategy, SCENARIOS};

pub fn describe() -> Json {
    let metrics = vec![
        metric("iops", "req/s", "higher", "IOPS", true),
        metric("latency_ns.p50", "ns", "lower", "p50", true),
        metric("latency_ns.p99", "ns", "lower", "p99", true),
        metric("limit_ratio", "x", "higher", "of limit", true),
        metric("shard_fairness", "x", "higher", "fairness", true),
        metric("bw_bytes", "B/s", "higher", "bandwidth", false),
        metric("latency_ns.p90", "ns", "lower", "p90", false),
        metric("latency_ns.p999", "ns", "lower", "p99.9", false),
        metric("latency_ns.max", "ns", "lower", "max", false),
        metric("dispatched", "requests", "higher", "dispatched", false),
        metric("completed", "requests", "higher", "completed", false),
        metric("flow_ratio.last", "x", "lower", "flow ratio", false),
        metric("flow_ratio.max", "x", "lower", "flow ratio max", false),
        metric("cpu_ns_per_op", "ns", "lower", "CPU/op", false),
    ];
    let mut d = document(
        "io",
        Strategy::Unlimited.name(),
        Strategy::ALL.iter().map(|s| (s.name(), s.help())),
        SCENARIOS,
        &specs(),
        metrics,
    );
    d["plots"] = json!([
        {"name": "shard_completed", "chart": "per_connection",
         "title": "requests completed per shard (all repeats)",
         "metrics": [{"name": "shard_completed", "label": "requests per shard"}]}
    ]);
    d["needs"] = json!({
        "memory_bytes": "64e6 + shards * parallelism * (reqsize + 8192 + (262144 if ioengine == 'psync' else 256))"
    });
    d
}
