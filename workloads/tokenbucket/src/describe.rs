//! The `describe` document: strategies, scenarios, parameters, metrics and plots.

use serde_json::{json, Value as Json};

use crate::params::{specs, strategy_help, Strategy, SCENARIOS};
use suite_cli::describe::{document, metrics};

/// The metrics: (name, unit, better, label, headline).
#[rustfmt::skip]
const METRICS: &[(&str, &str, &str, &str, bool)] = &[
    ("rate_ratio", "x", "higher", "rate ratio", true),
    ("tokens_per_sec", "tokens/s", "higher", "tokens/s", true),
    // Per shard as rates; the window totals stay for the record (a table labels them so).
    ("shard_tokens_per_sec_min", "tokens/s", "higher", "shard min tokens/s", true),
    ("shard_tokens_per_sec_max", "tokens/s", "lower", "shard max tokens/s", true),
    ("shard_tokens_min", "tokens", "higher", "shard min", false),
    ("shard_tokens_max", "tokens", "lower", "shard max", false),
    ("shard_fairness", "x", "higher", "fairness", true),
    ("ops_per_sec", "grabs/s", "higher", "grabs/s", false),
    ("released", "tokens", "higher", "released", false),
    ("dropped_ratio", "x", "lower", "dropped", true),
    ("shard_cpu_share", "x", "higher", "shard CPU", true),
    ("shard_runq_share", "x", "lower", "shard runq", false),
    ("sleeps", "sleeps", "lower", "sleeps", false),
    ("sleep_overshoot_ns.p50", "ns", "lower", "overshoot p50", false),
    ("sleep_overshoot_ns.p99", "ns", "lower", "overshoot p99", false),
    ("timer_lateness_ns.p50", "ns", "lower", "timer late p50", false),
    ("timer_lateness_ns.p99", "ns", "lower", "timer late p99", false),
    ("flow_ratio.last", "x", "lower", "flow ratio", false),
    ("flow_ratio.max", "x", "lower", "flow ratio max", false),
];

pub fn describe() -> Json {
    let mut d = document(
        "tokenbucket",
        Strategy::Pure.name(),
        Strategy::ALL.iter().map(|&s| (s.name(), strategy_help(s))),
        SCENARIOS,
        &specs(),
        metrics(METRICS),
    );
    d["plots"] = json!([
        {"name": "shard_tokens", "chart": "per_connection",
         "title": "tokens per shard (all repeats)",
         "metrics": [{"name": "shard_tokens", "label": "tokens per shard"}]},
        {"name": "rate", "chart": "series",
         "title": "tokens/s over the measured window",
         "metrics": [{"name": "tokens_per_sec_series", "label": "tokens/s"}]}
    ]);
    d
}
