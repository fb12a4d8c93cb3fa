//! The figures of one run, their checks and their JSON form (the `result` event's fields).

use hdrhistogram::Histogram;
use serde_json::{json, Map, Value as Json};

use token_bucket::shard_threads::fairness;

use crate::dispatcher::ShardOutcome;

/// What one run measured.
pub struct Report {
    pub iops_limit: u64,
    /// Length of the measured window.
    pub seconds: f64,
    /// CPU of the process over the window, ns.
    pub cpu_ns: u64,
    pub shards: Vec<ShardOutcome>,
    pub pinned: bool,
}

impl Report {
    /// The first failure: a shard's error, or a request that did not resolve exactly once.
    pub fn failure(&self) -> Option<String> {
        for (i, s) in self.shards.iter().enumerate() {
            if let Some(e) = &s.error {
                return Some(e.clone());
            }
            if s.dispatched != s.completed {
                return Some(format!(
                    "correctness check failed: shard {i} dispatched {} requests and completed {}",
                    s.dispatched, s.completed
                ));
            }
        }
        None
    }

    pub fn window_completed(&self) -> u64 {
        self.shards.iter().map(|s| s.window_completed).sum()
    }

    /// The result fields (without `event`, `strategy`, `scenario`, `params`).
    pub fn metrics_json(&self) -> Map<String, Json> {
        let mut latency =
            Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds");
        for s in &self.shards {
            latency.add(&s.latency).expect("same bounds");
        }
        let completed = self.window_completed();
        let iops = completed as f64 / self.seconds;
        let per_shard: Vec<u64> = self.shards.iter().map(|s| s.window_completed).collect();
        let n = self.shards.len().max(1) as f64;
        let q = |q: f64| {
            if latency.is_empty() {
                0
            } else {
                latency.value_at_quantile(q)
            }
        };
        let mut m = Map::new();
        m.insert("iops".into(), json!(iops));
        m.insert("ops_per_sec".into(), json!(iops));
        m.insert(
            "bw_bytes".into(),
            json!(self.shards.iter().map(|s| s.window_bytes).sum::<u64>() as f64 / self.seconds),
        );
        m.insert(
            "latency_ns".into(),
            json!({"p50": q(0.5), "p90": q(0.9), "p99": q(0.99), "p999": q(0.999), "max": latency.max()}),
        );
        // For unlimited too: how far above the others' limit it runs.
        m.insert("limit_ratio".into(), json!(iops / self.iops_limit as f64));
        m.insert(
            "dispatched".into(),
            json!(self.shards.iter().map(|s| s.window_dispatched).sum::<u64>()),
        );
        m.insert("completed".into(), json!(completed));
        m.insert(
            "cancelled".into(),
            json!(self.shards.iter().map(|s| s.cancelled).sum::<u64>()),
        );
        m.insert(
            "flow_ratio".into(),
            json!({
                "last": self.shards.iter().map(|s| s.flow_ratio).sum::<f64>() / n,
                "max": self.shards.iter().map(|s| s.flow_ratio_max).fold(1.0, f64::max),
            }),
        );
        m.insert("shard_completed".into(), json!(per_shard));
        m.insert("shard_fairness".into(), json!(fairness(&per_shard)));
        m.insert(
            "cpu_ns_per_op".into(),
            json!(if completed == 0 {
                0.0
            } else {
                self.cpu_ns as f64 / completed as f64
            }),
        );
        m.insert("pinned".into(), json!(u8::from(self.pinned)));
        m.insert("measured_s".into(), json!(self.seconds));
        m
    }
}
