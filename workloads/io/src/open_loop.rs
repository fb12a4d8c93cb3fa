//! When a fiber issues its requests (io_tester `issue_requests_in_parallel` and
//! `issue_requests_at_rate`).
//!
//! Closed loop: a fiber issues its next request when the last one completed, after
//! `think_time`; latency counts from the issue. Open loop: each fiber issues `rps`
//! requests/s, fiber `i` of `n` shifted by `i/n` of the period as in io_tester; a fiber still
//! has one request at a time, so when completions lag it issues at once, behind schedule.
//! Unlike io_tester, which measures from the actual issue and restarts its schedule from it
//! (coordinated omission), the schedule here is fixed in advance and a request's latency
//! counts from its intended time, so the lag is in the latency.

/// How a shard's fibers are paced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    Closed { think_ns: u64 },
    Open { period_ns: u64 },
}

impl Schedule {
    /// `rps` requests/s per fiber (0 = closed loop with `think_ns`).
    pub fn new(rps: u64, think_ns: u64) -> Schedule {
        match 1_000_000_000u64.checked_div(rps) {
            None => Schedule::Closed { think_ns },
            Some(period_ns) => Schedule::Open {
                period_ns: period_ns.max(1),
            },
        }
    }

    /// When fiber `fiber` of `fibers` first issues, from `start_ns`.
    pub fn first(self, start_ns: u64, fiber: usize, fibers: usize) -> u64 {
        match self {
            Schedule::Closed { .. } => start_ns,
            Schedule::Open { period_ns } => {
                start_ns + period_ns / fibers.max(1) as u64 * fiber as u64
            }
        }
    }

    /// When the fiber's next request is due, after the one due at `due_ns` completed at
    /// `completed_ns`.
    pub fn next(self, due_ns: u64, completed_ns: u64) -> u64 {
        match self {
            Schedule::Closed { think_ns } => completed_ns + think_ns,
            Schedule::Open { period_ns } => due_ns + period_ns,
        }
    }

    /// The time a request due at `due_ns` and issued at `now_ns` counts its latency from.
    pub fn latency_origin(self, due_ns: u64, now_ns: u64) -> u64 {
        match self {
            Schedule::Closed { .. } => now_ns,
            Schedule::Open { .. } => due_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_loop_keeps_its_schedule_whatever_the_completions() {
        let s = Schedule::new(1_000, 0);
        assert_eq!(
            s,
            Schedule::Open {
                period_ns: 1_000_000
            }
        );
        assert_eq!(s.first(10, 1, 4), 10 + 250_000);
        // A request due at 5 ms completing at 9 ms: the next is still due at 6 ms, and one
        // issued late at 9 ms counts from 6 ms.
        let next = s.next(5_000_000, 9_000_000);
        assert_eq!(next, 6_000_000);
        assert_eq!(s.latency_origin(next, 9_000_000), 6_000_000);
    }

    #[test]
    fn closed_loop_thinks_after_completion_and_counts_from_the_issue() {
        let s = Schedule::new(0, 50);
        assert_eq!(s.first(10, 3, 4), 10);
        assert_eq!(s.next(5, 100), 150);
        assert_eq!(s.latency_origin(150, 170), 170);
    }
}
