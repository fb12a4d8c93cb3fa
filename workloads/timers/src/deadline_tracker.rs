//! The in-flight request deadlines of one connection, in order, driving the
//! connection's [`ArmableTimer`](crate::armable_timer::ArmableTimer).
//!
//! The timer is armed only when the earliest deadline moves earlier (an
//! insert) or after an expiry batch (the next earliest deadline). A response
//! that arrives in time removes its deadline without touching the timer: a
//! timer left armed for it fires early, finds nothing due and is re-armed for
//! the next deadline. With equal timeouts that costs one re-arm per
//! `timeout - latency` instead of one per request.
//!
//! The router loop is: wait for [`ArmableTimer::elapsed`], then call
//! [`DeadlineTracker::pop_expired`] with the instant it returned, and repeat.
//! Every elapse must be followed by a `pop_expired`, which re-arms the timer.
//!
//! [`ArmableTimer::elapsed`]: crate::armable_timer::ArmableTimer::elapsed

use std::collections::BTreeSet;

use tokio::time::Instant;

use crate::armable_timer::ArmHandle;

/// Not thread-safe: it lives in the connection's handler map, which only the router task
/// touches.
pub struct DeadlineTracker {
    arm: ArmHandle,
    /// `(deadline, request id)`, ordered by deadline. Request ids are unique
    /// among in-flight requests.
    deadlines: BTreeSet<(Instant, u64)>,
    inserted: u64,
    removed: u64,
    expired: u64,
}

impl DeadlineTracker {
    /// An empty tracker that arms the timer behind `arm`.
    pub fn new(arm: ArmHandle) -> Self {
        Self {
            arm,
            deadlines: BTreeSet::new(),
            inserted: 0,
            removed: 0,
            expired: 0,
        }
    }

    /// Tracks request `request_id`, due at `deadline`; arms the timer if this
    /// is now the earliest deadline.
    pub fn insert(&mut self, deadline: Instant, request_id: u64) {
        let earliest = self.deadlines.first().map(|&(earliest, _)| earliest);
        let fresh = self.deadlines.insert((deadline, request_id));
        debug_assert!(fresh, "request {request_id} inserted twice");
        self.inserted += 1;
        if earliest.is_none_or(|earliest| deadline < earliest) {
            self.arm.arm(deadline);
        }
    }

    /// Stops tracking a request whose response came in time; returns false if
    /// it was not tracked (it has expired already). Leaves the timer armed.
    pub fn remove(&mut self, deadline: Instant, request_id: u64) -> bool {
        let removed = self.deadlines.remove(&(deadline, request_id));
        self.removed += u64::from(removed);
        removed
    }

    /// Removes the requests due at `now` and appends their ids to `out`, in
    /// deadline order; then arms the timer for the next deadline, if any.
    pub fn pop_expired(&mut self, now: Instant, out: &mut Vec<u64>) {
        while let Some(&(deadline, request_id)) = self.deadlines.first() {
            if deadline > now {
                // After an elapse the timer is unarmed: arm it for what is
                // left. (A timer still armed is armed at or before this
                // deadline, and arming, which only lowers, changes nothing.)
                self.arm.arm(deadline);
                return;
            }
            self.deadlines.pop_first();
            self.expired += 1;
            out.push(request_id);
        }
    }

    /// How many requests are being tracked.
    pub fn len(&self) -> usize {
        self.deadlines.len()
    }

    /// Whether no request is being tracked.
    pub fn is_empty(&self) -> bool {
        self.deadlines.is_empty()
    }

    /// Requests inserted, removed in time, and expired so far.
    pub fn counters(&self) -> [(&'static str, u64); 3] {
        [
            ("inserted", self.inserted),
            ("removed", self.removed),
            ("expired", self.expired),
        ]
    }
}
