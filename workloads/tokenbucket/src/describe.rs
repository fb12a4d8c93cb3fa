//! The `describe` document: strategies, scenarios, parameters, metrics and plots.

use serde_json::{json, Value as Json};

use crate::params::{specs, Strategy, SCENARIOS};
use suite_cli::describe::{document, metric};

pub fn describe() -> Json {
    let metrics = vec![
        metric("rate_ratio", "x", "higher", "rate ratio", true),
        metric("tokens_per_sec", "tokens/s", "higher", "tokens/s", true),
        // Per shard as rates; the window totals stay for the record (a table labels them so).
        metric(
            "shard_tokens_per_sec_min",
            "tokens/s",
            "higher",
            "shard min tokens/s",
            true,
        ),
        metric(
            "shard_tokens_per_sec_max",
            "tokens/s",
            "lower",
            "shard max tokens/s",
            true,
        ),
        metric("shard_tokens_min", "tokens", "higher", "shard min", false),
        metric("shard_tokens_max", "tokens", "lower", "shard max", false),
        metric("shard_fairness", "x", "higher", "fairness", true),
        metric("ops_per_sec", "grabs/s", "higher", "grabs/s", false),
        metric("released", "tokens", "higher", "released", false),
        metric("dropped_ratio", "x", "lower", "dropped", true),
        metric("shard_cpu_share", "x", "higher", "shard CPU", true),
        metric("shard_runq_share", "x", "lower", "shard runq", false),
        metric("sleeps", "sleeps", "lower", "sleeps", false),
        metric(
            "sleep_overshoot_ns.p50",
            "ns",
            "lower",
            "overshoot p50",
            false,
        ),
        metric(
            "sleep_overshoot_ns.p99",
            "ns",
            "lower",
            "overshoot p99",
            false,
        ),
        metric(
            "timer_lateness_ns.p50",
            "ns",
            "lower",
            "timer late p50",
            false,
        ),
        metric(
            "timer_lateness_ns.p99",
            "ns",
            "lower",
            "timer late p99",
            false,
        ),
        metric("flow_ratio.last", "x", "lower", "flow ratio", false),
        metric("flow_ratio.max", "x", "lower", "flow ratio max", false),
    ];
    let mut d = document(
        "tokenbucket",
        Strategy::Pure.name(),
        Strategy::ALL.iter().map(|s| (s.name(), s.help())),
        SCENARIOS,
        &specs(),
        metrics,
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
