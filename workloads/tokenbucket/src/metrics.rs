//! The figures of one run and their JSON form (the `result` event's fields).

use hdrhistogram::Histogram;
use serde_json::{json, Map, Value as Json};
use token_bucket::shard_threads::fairness;

/// A shard's reactor sleeps (kernel overshoot) and timer lateness, in ns.
pub struct ShardLatencies {
    sleep_overshoot: Histogram<u64>,
    timer_lateness: Histogram<u64>,
}

impl ShardLatencies {
    pub fn new() -> Self {
        let hist = || Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds");
        ShardLatencies {
            sleep_overshoot: hist(),
            timer_lateness: hist(),
        }
    }

    pub fn record_sleep(&mut self, overshoot_ns: u64) {
        self.sleep_overshoot.saturating_record(overshoot_ns.max(1));
    }

    pub fn record_lateness(&mut self, lateness_ns: u64) {
        self.timer_lateness.saturating_record(lateness_ns.max(1));
    }
}

impl Default for ShardLatencies {
    fn default() -> Self {
        Self::new()
    }
}

/// What one run measured.
pub struct Report {
    pub rate: u64,
    /// Length of the measured window.
    pub seconds: f64,
    /// Tokens each shard got in the window.
    pub shard_tokens: Vec<u64>,
    pub grabs: u64,
    pub released: u64,
    /// Tokens the bucket dropped at its limit in the window (no grab was waiting for them).
    pub dropped: u64,
    /// Per shard, the shares of the window it spent on a CPU and on the run queue.
    pub shard_cpu: Vec<(f64, f64)>,
    /// Tokens/s of all shards, one value per sampling period.
    pub series: Vec<f64>,
    /// Per shard (last, max) flow ratio (acted on by flow-monitor only).
    pub flow: Vec<(f64, f64)>,
    pub latencies: Vec<ShardLatencies>,
    pub pinned: bool,
    /// The rovers at the end (a bug check: head never passes tail + limit).
    pub head: u64,
    pub tail: u64,
}

fn percentiles(h: &Histogram<u64>) -> Json {
    if h.is_empty() {
        return json!({"p50": 0, "p99": 0, "max": 0});
    }
    json!({
        "p50": h.value_at_quantile(0.5),
        "p99": h.value_at_quantile(0.99),
        "max": h.max(),
    })
}

impl Report {
    pub fn tokens(&self) -> u64 {
        self.shard_tokens.iter().sum()
    }

    /// The result fields (without `event`, `strategy`, `scenario`, `params`).
    pub fn metrics_json(&self) -> Map<String, Json> {
        let tokens_per_sec = self.tokens() as f64 / self.seconds;
        let min = self.shard_tokens.iter().copied().min().unwrap_or(0);
        let max = self.shard_tokens.iter().copied().max().unwrap_or(0);
        let mut overshoot =
            Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds");
        let mut lateness = overshoot.clone();
        for l in &self.latencies {
            overshoot.add(&l.sleep_overshoot).expect("same bounds");
            lateness.add(&l.timer_lateness).expect("same bounds");
        }
        let mut m = Map::new();
        m.insert("tokens_per_sec".into(), json!(tokens_per_sec));
        m.insert(
            "rate_ratio".into(),
            json!(tokens_per_sec / self.rate as f64),
        );
        m.insert(
            "ops_per_sec".into(),
            json!(self.grabs as f64 / self.seconds),
        );
        m.insert("tokens".into(), json!(self.tokens()));
        m.insert("shard_tokens".into(), json!(self.shard_tokens));
        m.insert("shard_tokens_min".into(), json!(min));
        m.insert("shard_tokens_max".into(), json!(max));
        m.insert(
            "shard_tokens_per_sec_min".into(),
            json!(min as f64 / self.seconds),
        );
        m.insert(
            "shard_tokens_per_sec_max".into(),
            json!(max as f64 / self.seconds),
        );
        m.insert("shard_fairness".into(), json!(fairness(&self.shard_tokens)));
        m.insert("released".into(), json!(self.released));
        // With replenish=exact the bucket's tokens are granted or dropped: rate_ratio +
        // dropped_ratio is 1 within the window's edges, and the shards' CPU tells whether
        // the drops were the machine's (shards waiting for a CPU) or the strategy's.
        let due = self.rate as f64 * self.seconds;
        m.insert("dropped".into(), json!(self.dropped));
        m.insert("dropped_ratio".into(), json!(self.dropped as f64 / due));
        let n = self.shard_cpu.len().max(1) as f64;
        let cpu: Vec<f64> = self.shard_cpu.iter().map(|s| s.0).collect();
        m.insert("shard_cpu_share".into(), json!(cpu.iter().sum::<f64>() / n));
        // Per shard as well: two always-runnable shards need not get equal CPU over a short
        // window on a busy machine, and a shard's tokens follow its CPU.
        m.insert("shard_cpu_shares".into(), json!(cpu));
        m.insert(
            "shard_runq_share".into(),
            json!(self.shard_cpu.iter().map(|s| s.1).sum::<f64>() / n),
        );
        m.insert("sleeps".into(), json!(overshoot.len()));
        m.insert("sleep_overshoot_ns".into(), percentiles(&overshoot));
        m.insert("timer_lateness_ns".into(), percentiles(&lateness));
        m.insert("tokens_per_sec_series".into(), json!(self.series));
        let flow = &self.flow;
        let last = flow.iter().map(|f| f.0).sum::<f64>() / flow.len().max(1) as f64;
        let max = flow.iter().map(|f| f.1).fold(1.0, f64::max);
        m.insert("flow_ratio".into(), json!({"last": last, "max": max}));
        m.insert("pinned".into(), json!(u8::from(self.pinned)));
        m.insert("measured_s".into(), json!(self.seconds));
        m
    }
}
