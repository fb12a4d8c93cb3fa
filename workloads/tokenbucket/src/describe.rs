//! The `describe` document: strategies, scenarios, parameters, metrics and plots.

use serde_json::{json, Value as Json};

use crate::params::{specs, Strategy, SCENARIOS};
use suite_cli::param_values::{scenarios_json, specs_json};

pub fn describe() -> Json {
    let strategies: Vec<Json> = Strategy::ALL
        .iter()
        .map(|s| json!({"name": s.name(), "help": s.help()}))
        .collect();
    let metric = |name: &str, unit: &str, better: &str, label: &str, headline: bool| {
        let mut m = json!({"name": name, "unit": unit, "better": better, "label": label});
        if headline {
            m["headline"] = json!(true);
        }
        m
    };
    let metrics = vec![
        metric("rate_ratio", "x", "higher", "rate ratio", true),
        metric("tokens_per_sec", "tokens/s", "higher", "tokens/s", true),
        metric("shard_tokens_min", "tokens", "higher", "shard min", true),
        metric("shard_tokens_max", "tokens", "lower", "shard max", true),
        metric("shard_fairness", "x", "higher", "fairness", true),
        metric("ops_per_sec", "grabs/s", "higher", "grabs/s", false),
        metric("released", "tokens", "higher", "released", false),
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
    json!({
        "suite": "tokenbucket",
        "contract_version": 1,
        "baseline": Strategy::Pure.name(),
        "strategies": strategies,
        "default_scenario": SCENARIOS[0].name,
        "scenarios": scenarios_json(SCENARIOS),
        "params": specs_json(&specs()),
        "metrics": metrics,
        "plots": [
            {"name": "shard_tokens", "chart": "per_connection",
             "title": "tokens per shard (all repeats)",
             "metrics": [{"name": "shard_tokens", "label": "tokens per shard"}]},
            {"name": "rate", "chart": "series",
             "title": "tokens/s over the measured window",
             "metrics": [{"name": "tokens_per_sec_series", "label": "tokens/s"}]}
        ],
    })
}
