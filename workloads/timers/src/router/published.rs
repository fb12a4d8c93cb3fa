//! What a connection's router publishes for the rest of the client, which never touches
//! the router's state: the handler map's counters after every change, how many requests
//! the router has taken off the queue, the armable timer's re-arms, and the server's
//! counters from the last `STATS` answer. Only the router writes them.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::handler_map::HandlerMap;
use crate::protocol::ServerStats;

/// See the module documentation.
pub(crate) struct Published {
    live: AtomicU64,
    orphans: AtomicU64,
    late_responses: AtomicU64,
    /// Requests taken off the queue. Stored with `Release` after the map counters that
    /// account for them, so a reader that sees it sees those counters or later ones.
    received: AtomicU64,
    rearms: AtomicU64,
    /// The deadline tracker's counters, if the map has a tracker.
    tracker: Option<[(&'static str, AtomicU64); 3]>,
    server_requests: AtomicU64,
    server_slow: AtomicU64,
}

impl Published {
    /// The counters of a fresh `map`.
    pub(crate) fn new(map: &HandlerMap) -> Published {
        Published {
            live: AtomicU64::new(0),
            orphans: AtomicU64::new(0),
            late_responses: AtomicU64::new(0),
            received: AtomicU64::new(0),
            rearms: AtomicU64::new(0),
            tracker: map
                .tracker_counters()
                .map(|counters| counters.map(|(name, value)| (name, AtomicU64::new(value)))),
            server_requests: AtomicU64::new(0),
            server_slow: AtomicU64::new(0),
        }
    }

    pub(super) fn map_changed(&self, map: &HandlerMap) {
        self.live.store(map.live() as u64, Ordering::Relaxed);
        self.orphans.store(map.orphans() as u64, Ordering::Relaxed);
        self.late_responses
            .store(map.late_responses(), Ordering::Relaxed);
        if let (Some(published), Some(counters)) = (&self.tracker, map.tracker_counters()) {
            for ((_, slot), (_, value)) in published.iter().zip(counters) {
                slot.store(value, Ordering::Relaxed);
            }
        }
    }

    pub(super) fn received(&self, requests: u64) {
        self.received.store(requests, Ordering::Release);
    }

    pub(crate) fn rearmed(&self, rearms: u64) {
        self.rearms.store(rearms, Ordering::Relaxed);
    }

    /// Called before the `STATS` request is resolved, which orders it before the caller
    /// reads [`Published::server_stats`].
    pub(super) fn server_answered(&self, stats: ServerStats) {
        self.server_requests
            .store(stats.measured_requests, Ordering::Relaxed);
        self.server_slow
            .store(stats.measured_slow, Ordering::Relaxed);
    }

    pub(crate) fn live(&self) -> usize {
        self.live.load(Ordering::Relaxed) as usize
    }

    pub(crate) fn orphans(&self) -> usize {
        self.orphans.load(Ordering::Relaxed) as usize
    }

    pub(crate) fn late_responses(&self) -> u64 {
        self.late_responses.load(Ordering::Relaxed)
    }

    pub(crate) fn received_requests(&self) -> u64 {
        self.received.load(Ordering::Acquire)
    }

    /// The deadline tracker's counters plus the armable timer's `rearms` (empty without a
    /// tracker).
    pub(crate) fn tracker_counters(&self) -> Vec<(&'static str, u64)> {
        let Some(tracker) = &self.tracker else {
            return Vec::new();
        };
        let mut counters: Vec<_> = tracker
            .iter()
            .map(|(name, value)| (*name, value.load(Ordering::Relaxed)))
            .collect();
        counters.push(("rearms", self.rearms.load(Ordering::Relaxed)));
        counters
    }

    pub(crate) fn server_stats(&self) -> ServerStats {
        ServerStats {
            measured_requests: self.server_requests.load(Ordering::Relaxed),
            measured_slow: self.server_slow.load(Ordering::Relaxed),
        }
    }
}
