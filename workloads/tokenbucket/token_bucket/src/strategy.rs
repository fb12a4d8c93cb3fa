//! The bucket strategies the `tokenbucket` and `io` suites meter with.

/// How the shared bucket is replenished and fed back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BucketStrategy {
    /// Replenished by time, up to `limit` ahead of the grabbers.
    Pure,
    /// Replenished by time, but only up to the tokens released back (two buckets).
    CappedRelease,
    /// Pure, plus #1766's per-shard flow monitor raising request costs.
    FlowMonitor,
}

impl BucketStrategy {
    pub const ALL: [BucketStrategy; 3] = [
        BucketStrategy::Pure,
        BucketStrategy::CappedRelease,
        BucketStrategy::FlowMonitor,
    ];

    pub fn name(self) -> &'static str {
        match self {
            BucketStrategy::Pure => "pure",
            BucketStrategy::CappedRelease => "capped-release",
            BucketStrategy::FlowMonitor => "flow-monitor",
        }
    }

    /// Whether the bucket replenishes only up to what was released ([`crate::CappedRovers`]).
    pub fn capped(self) -> bool {
        self == BucketStrategy::CappedRelease
    }

    /// Whether a grab costs its tokens times the flow ratio above the threshold.
    pub fn flow_costs(self) -> bool {
        self == BucketStrategy::FlowMonitor
    }
}
