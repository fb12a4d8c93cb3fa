//! seastar PR #1766's flow monitor (`io_queue::update_flow_ratio`, `request_capacity`).
//!
//! Each shard counts what it dispatched and what completed. Every averaging period
//! (`io_latency_goal x averaging_decay_ticks`, 0.75 ms x 100 = 75 ms by default) the
//! instantaneous ratio dispatched/completed over the period enters an exponential moving
//! average, `ratio = factor x ratio + (1 - factor) x instant` (factor 0.95), skipped when
//! nothing completed. While the average exceeds the threshold (`--io-flow-rate-threshold`,
//! 1.1 in the code), a request costs `tokens x ratio`, capped at the bucket's capacity. The
//! bucket's rate is unchanged.

/// One shard's dispatched/completed flow ratio.
#[derive(Clone, Debug)]
pub struct FlowMonitor {
    smoothing: f64,
    threshold: f64,
    dispatched: u64,
    completed: u64,
    prev_dispatched: u64,
    prev_completed: u64,
    ratio: f64,
    max_ratio: f64,
}

impl FlowMonitor {
    /// `smoothing` is the EMA factor (seastar `flow_ratio_ema_factor`, 0.95), `threshold`
    /// the ratio above which costs grow (`flow_ratio_backpressure_threshold`, 1.1).
    pub fn new(smoothing: f64, threshold: f64) -> Self {
        FlowMonitor {
            smoothing,
            threshold,
            dispatched: 0,
            completed: 0,
            prev_dispatched: 0,
            prev_completed: 0,
            ratio: 1.0,
            max_ratio: 1.0,
        }
    }

    /// Counts work handed out (seastar: `_requests_dispatched++`).
    pub fn dispatched(&mut self, amount: u64) {
        self.dispatched += amount;
    }

    /// Counts work finished (seastar: `_requests_completed++` in `complete_request`).
    pub fn completed(&mut self, amount: u64) {
        self.completed += amount;
    }

    /// One averaging period ended (`update_flow_ratio`, on the averaging timer).
    pub fn update(&mut self) {
        if self.completed > self.prev_completed {
            let instant = (self.dispatched - self.prev_dispatched) as f64
                / (self.completed - self.prev_completed) as f64;
            self.ratio = self.ratio * self.smoothing + instant * (1.0 - self.smoothing);
            self.max_ratio = self.max_ratio.max(self.ratio);
            self.prev_dispatched = self.dispatched;
            self.prev_completed = self.completed;
        }
    }

    /// The cost in bucket tokens of a request of `tokens` (`request_capacity`): `tokens`
    /// while the ratio is at most the threshold, else `tokens x ratio` (rounded, at least
    /// `tokens`) capped at `max_capacity`.
    pub fn cost(&self, tokens: u64, max_capacity: u64) -> u64 {
        if self.ratio <= self.threshold {
            return tokens;
        }
        let scaled = (tokens as f64 * self.ratio).round() as u64;
        scaled.max(tokens).min(max_capacity.max(tokens))
    }

    /// The current moving average.
    pub fn ratio(&self) -> f64 {
        self.ratio
    }

    /// The largest average seen.
    pub fn max_ratio(&self) -> f64 {
        self.max_ratio
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_at_one_and_follows_the_ema() {
        let mut f = FlowMonitor::new(0.95, 1.1);
        assert_eq!(f.ratio(), 1.0);
        f.dispatched(200);
        f.completed(100);
        f.update();
        assert!((f.ratio() - (0.95 + 0.05 * 2.0)).abs() < 1e-12);
        // Nothing completed: no update.
        f.dispatched(50);
        f.update();
        assert!((f.ratio() - 1.05).abs() < 1e-12);
    }

    #[test]
    fn cost_grows_only_above_the_threshold_and_is_capped() {
        let mut f = FlowMonitor::new(0.0, 1.1);
        f.dispatched(105);
        f.completed(100);
        f.update();
        assert_eq!(f.cost(100, 1000), 100, "1.05 <= 1.1");
        f.dispatched(150);
        f.completed(100);
        f.update();
        assert!((f.ratio() - 1.5).abs() < 1e-12);
        assert_eq!(f.cost(100, 1000), 150);
        assert_eq!(f.cost(100, 120), 120);
        assert_eq!(f.max_ratio(), 1.5);
    }
}
