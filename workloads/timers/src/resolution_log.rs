//! An optional record of every request issued and every resolution delivered, for tests.
//!
//! When a run is given a [`ResolutionLog`], connections append one [`Event::Issued`] per
//! request and one [`Event::Resolved`] each time a handler is resolved. [`ResolutionLog::verify`]
//! then checks that every request was resolved exactly once and measures how late (never
//! early) timeouts fired relative to their deadlines. Without a log the hot path pays one
//! branch on an `Option`.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::completion::Outcome;
use crate::handler_map::RequestId;

/// One logged fact.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// Request `id` went out on connection `conn`.
    Issued {
        conn: usize,
        id: RequestId,
        deadline: Option<Instant>,
        measured: bool,
    },
    /// Request `id` of connection `conn` was resolved with `outcome` at `at`.
    Resolved {
        conn: usize,
        id: RequestId,
        outcome: Outcome,
        at: Instant,
    },
}

/// See the module documentation.
#[derive(Default)]
pub struct ResolutionLog {
    events: Mutex<Vec<Event>>,
}

/// What [`ResolutionLog::verify`] found in a log that passed.
#[derive(Clone, Debug, Default)]
pub struct Verified {
    /// Requests issued (measured or not).
    pub issued: usize,
    /// Requests issued inside the measured window.
    pub measured: usize,
    /// Resolutions by outcome, all requests.
    pub outcomes: HashMap<Outcome, usize>,
    /// Resolutions by outcome, measured requests only.
    pub measured_outcomes: HashMap<Outcome, usize>,
    /// `resolved_at - deadline` of every timed-out request.
    pub timeout_lateness: Vec<Duration>,
}

impl Verified {
    /// Measured requests that ended with `outcome`.
    pub fn measured_count(&self, outcome: Outcome) -> usize {
        self.measured_outcomes.get(&outcome).copied().unwrap_or(0)
    }

    /// The largest timeout lateness, zero without timeouts.
    pub fn max_lateness(&self) -> Duration {
        self.timeout_lateness
            .iter()
            .copied()
            .max()
            .unwrap_or_default()
    }
}

impl ResolutionLog {
    /// An empty log.
    pub fn new() -> ResolutionLog {
        ResolutionLog::default()
    }

    pub(crate) fn record(&self, event: Event) {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(event);
    }

    /// A copy of the events so far.
    pub fn events(&self) -> Vec<Event> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Checks that every issued request was resolved exactly once, nothing unissued was
    /// resolved, and no timeout fired before its deadline. Returns one line per violation
    /// (at most 20 of them, plus a count) on failure.
    pub fn verify(&self) -> Result<Verified, String> {
        struct Seen {
            issued: usize,
            deadline: Option<Instant>,
            measured: bool,
            resolutions: Vec<(Outcome, Instant)>,
        }
        let mut seen: HashMap<(usize, RequestId), Seen> = HashMap::new();
        for event in self.events() {
            let (key, fresh) = match event {
                Event::Issued { conn, id, .. } | Event::Resolved { conn, id, .. } => (
                    (conn, id),
                    Seen {
                        issued: 0,
                        deadline: None,
                        measured: false,
                        resolutions: Vec::new(),
                    },
                ),
            };
            let entry = seen.entry(key).or_insert(fresh);
            match event {
                Event::Issued {
                    deadline, measured, ..
                } => {
                    entry.issued += 1;
                    entry.deadline = deadline;
                    entry.measured = measured;
                }
                Event::Resolved { outcome, at, .. } => entry.resolutions.push((outcome, at)),
            }
        }
        let mut problems = Vec::new();
        let mut verified = Verified::default();
        for ((conn, id), s) in &seen {
            if s.issued != 1 {
                problems.push(format!(
                    "conn {conn} request {id:?}: issued {} times",
                    s.issued
                ));
            }
            if s.resolutions.len() != 1 {
                problems.push(format!(
                    "conn {conn} request {id:?}: resolved {} times ({:?})",
                    s.resolutions.len(),
                    s.resolutions.iter().map(|r| r.0).collect::<Vec<_>>()
                ));
            }
            verified.issued += s.issued;
            verified.measured += usize::from(s.measured);
            for &(outcome, at) in &s.resolutions {
                *verified.outcomes.entry(outcome).or_default() += 1;
                if s.measured {
                    *verified.measured_outcomes.entry(outcome).or_default() += 1;
                }
                if outcome != Outcome::Timeout {
                    continue;
                }
                match s.deadline {
                    None => problems.push(format!(
                        "conn {conn} request {id:?}: timed out without a deadline"
                    )),
                    Some(deadline) if at < deadline => problems.push(format!(
                        "conn {conn} request {id:?}: timed out {:?} before its deadline",
                        deadline - at
                    )),
                    Some(deadline) => verified.timeout_lateness.push(at - deadline),
                }
            }
        }
        if problems.is_empty() {
            return Ok(verified);
        }
        problems.sort();
        let total = problems.len();
        problems.truncate(20);
        Err(format!(
            "{total} violation(s) among {} requests:\n{}",
            seen.len(),
            problems.join("\n")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issued(conn: usize, seq: u64, deadline: Option<Instant>) -> Event {
        Event::Issued {
            conn,
            id: RequestId::from_raw(seq),
            deadline,
            measured: true,
        }
    }

    fn resolved(conn: usize, seq: u64, outcome: Outcome, at: Instant) -> Event {
        Event::Resolved {
            conn,
            id: RequestId::from_raw(seq),
            outcome,
            at,
        }
    }

    #[test]
    fn a_clean_log_passes_with_lateness() {
        let t0 = Instant::now();
        let log = ResolutionLog::new();
        log.record(issued(0, 1, Some(t0)));
        log.record(issued(1, 1, Some(t0)));
        log.record(resolved(0, 1, Outcome::Ok, t0));
        log.record(resolved(
            1,
            1,
            Outcome::Timeout,
            t0 + Duration::from_millis(3),
        ));
        let v = log.verify().unwrap();
        assert_eq!((v.issued, v.measured), (2, 2));
        assert_eq!(v.measured_count(Outcome::Ok), 1);
        assert_eq!(v.max_lateness(), Duration::from_millis(3));
    }

    #[test]
    fn double_missing_and_early_resolutions_fail() {
        let t0 = Instant::now();
        let log = ResolutionLog::new();
        log.record(issued(0, 1, Some(t0)));
        log.record(resolved(0, 1, Outcome::Ok, t0));
        log.record(resolved(
            0,
            1,
            Outcome::Timeout,
            t0 + Duration::from_millis(1),
        ));
        log.record(issued(0, 2, None));
        log.record(issued(0, 3, Some(t0 + Duration::from_secs(1))));
        log.record(resolved(0, 3, Outcome::Timeout, t0));
        let err = log.verify().unwrap_err();
        assert!(err.starts_with("3 violation(s)"), "{err}");
        assert!(err.contains("resolved 2 times"), "{err}");
        assert!(err.contains("resolved 0 times"), "{err}");
        assert!(err.contains("before its deadline"), "{err}");
    }
}
