//! The `describe` document: strategies, scenarios, parameters, metrics, plots and needs.

use serde_json::{json, Value as Json};
use suite_cli::describe::{document, metrics};

use crate::params::{specs, Strategy, SCENARIOS};

/// The metrics: (name, unit, better, label, headline).
#[rustfmt::skip]
const METRICS: &[(&str, &str, &str, &str, bool)] = &[
    ("iops", "req/s", "higher", "IOPS", true),
    ("latency_ns.p50", "ns", "lower", "p50", true),
    ("latency_ns.p99", "ns", "lower", "p99", true),
    ("limit_ratio", "x", "higher", "of limit", true),
    ("shard_fairness", "x", "higher", "fairness", true),
    ("bw_bytes", "B/s", "higher", "bandwidth", false),
    ("latency_ns.p90", "ns", "lower", "p90", false),
    ("latency_ns.p999", "ns", "lower", "p99.9", false),
    ("latency_ns.max", "ns", "lower", "max", false),
    ("dispatched", "requests", "higher", "dispatched", false),
    ("completed", "requests", "higher", "completed", false),
    ("flow_ratio.last", "x", "lower", "flow ratio", false),
    ("flow_ratio.max", "x", "lower", "flow ratio max", false),
    ("cpu_ns_per_op", "ns", "lower", "CPU/op", false),
];

pub fn describe() -> Json {
    let mut d = document(
        "io",
        Strategy::Unlimited.name(),
        Strategy::ALL.iter().map(|s| (s.name(), s.help())),
        SCENARIOS,
        &specs(),
        metrics(METRICS),
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
