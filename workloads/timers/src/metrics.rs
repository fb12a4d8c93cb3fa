//! What a run measures: per-task counters (merged at the end), latency histograms per
//! recording thread (merged at the end), and the result of the measured window with its
//! correctness checks.
//!
//! Latencies go into one histogram per worker thread rather than per task: with thousands
//! of tasks, per-task histograms (each touched once per request) missed the cache on every
//! record and took about a tenth of the client's CPU; a thread's own histogram stays hot.
//!
//! Only requests issued inside the measured window count. `timer` reports the strategy's
//! timer work: `registered`, `cancelled` and `fired` for the window's requests, as each
//! request's task saw them, and `rearms` = 0, overlaid by the strategy's own counters
//! (engine or deadline tracker) taken as differences between the start and the end of the
//! window, which add their extras (`ticks`, `signals`, ...) and replace same-named ones.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use hdrhistogram::Histogram;
use serde_json::{json, Map, Value as Json};

use crate::completion::Outcome;

type Shard = Arc<Mutex<Histogram<u64>>>;

fn new_histogram() -> Histogram<u64> {
    // Three significant digits, growing with the largest latency seen.
    Histogram::new(3).expect("3 significant digits are supported")
}

static NEXT_RECORDER: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's shard of the recorder with the given id.
    static SHARD: RefCell<Option<(u64, Shard)>> = const { RefCell::new(None) };
}

/// Latency histograms of one run, one shard per thread that records. A shard's lock is
/// only ever contended by [`LatencyRecorder::merged`].
pub struct LatencyRecorder {
    id: u64,
    shards: Mutex<Vec<Shard>>,
}

impl Default for LatencyRecorder {
    fn default() -> Self {
        LatencyRecorder {
            id: NEXT_RECORDER.fetch_add(1, Ordering::Relaxed),
            shards: Mutex::new(Vec::new()),
        }
    }
}

impl LatencyRecorder {
    /// Records one latency into the calling thread's shard.
    pub fn record(&self, latency: Duration) {
        // Below 2^63 ns (292 years), which an auto-resizing histogram takes.
        let ns = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX);
        SHARD.with(|slot| {
            let mut slot = slot.borrow_mut();
            let shard = match slot.as_ref() {
                Some((id, shard)) if *id == self.id => shard,
                _ => {
                    let shard: Shard = Arc::new(Mutex::new(new_histogram()));
                    self.shards
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(Arc::clone(&shard));
                    &slot.insert((self.id, shard)).1
                }
            };
            shard
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .record(ns)
                .expect("latencies fit an auto-resizing histogram");
        });
    }

    /// All shards merged.
    pub fn merged(&self) -> Histogram<u64> {
        let mut all = new_histogram();
        for shard in self
            .shards
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            all.add(&*shard.lock().unwrap_or_else(PoisonError::into_inner))
                .expect("auto-resizing histograms accept any value");
        }
        all
    }
}

/// Timer work done for the requests of one task.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimerCounts {
    /// Requests sent with a timer.
    pub registered: u64,
    /// Timers cancelled because the answer (or an error) came first.
    pub cancelled: u64,
    /// Timers that fired and timed their request out.
    pub fired: u64,
}

impl TimerCounts {
    fn merge(&mut self, other: &TimerCounts) {
        self.registered += other.registered;
        self.cancelled += other.cancelled;
        self.fired += other.fired;
    }
}

/// Counters of the measured requests of one task (or, merged, of all).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskStats {
    pub issued: u64,
    pub ok: u64,
    pub timeouts: u64,
    pub errors: u64,
    /// Abandoned by the drain.
    pub unresolved: u64,
    pub timer: TimerCounts,
}

impl TaskStats {
    /// Counts one measured request.
    pub fn record(&mut self, outcome: Outcome) {
        self.issued += 1;
        match outcome {
            Outcome::Ok => self.ok += 1,
            Outcome::Timeout => self.timeouts += 1,
            Outcome::Error(_) => self.errors += 1,
            Outcome::Abandoned => self.unresolved += 1,
        }
    }

    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: &TaskStats) {
        self.issued += other.issued;
        self.ok += other.ok;
        self.timeouts += other.timeouts;
        self.errors += other.errors;
        self.unresolved += other.unresolved;
        self.timer.merge(&other.timer);
    }
}

/// The measured window's result.
#[derive(Clone, Debug)]
pub struct Report {
    /// Length of the measured window.
    pub window: Duration,
    pub stats: TaskStats,
    /// Latency of the measured `ok` requests in nanoseconds.
    pub latency: Histogram<u64>,
    pub late_responses: u64,
    /// Measured requests the server answered only after the slow delay.
    pub server_slow: u64,
    /// Measured requests the server received.
    pub server_requests: u64,
    /// Whether a timed-out request may never have been sent: the scylla driver times out a
    /// request's whole execution, which can end before the request is written. Our
    /// connections queue a request before its timeout starts, and write every one queued.
    pub timeouts_may_be_unsent: bool,
    /// Connections asked for (`connections`).
    pub connections: u64,
    /// Connections open at the end of the run, as counted where they can be: our client's,
    /// or the ones the CQL server had open to the scylla driver's pool.
    pub connections_open: u64,
    /// Live handlers left in the maps when the drain ended.
    pub handlers_left: u64,
    /// Load tasks the drain had to abort: their request was resolved by nobody (nor was it
    /// live any more), and their counts are missing from `stats`.
    pub lost_tasks: u64,
    /// The `timer` object, in order.
    pub timer: Vec<(String, u64)>,
    /// CPU time of the client process (every thread: load tasks, runtime workers, the
    /// strategy's timer and executor threads) over the window.
    pub client_cpu: Option<Duration>,
    /// CPU time of the server process over the window.
    pub server_cpu: Option<Duration>,
}

/// Builds the `timer` object: per-request counts overlaid by the window's differences of the
/// strategy's own counters (`before`/`after` snapshots).
pub fn timer_counters(
    counts: &TimerCounts,
    before: &[(&'static str, u64)],
    after: &[(&'static str, u64)],
) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = vec![
        ("registered".into(), counts.registered),
        ("cancelled".into(), counts.cancelled),
        ("fired".into(), counts.fired),
        ("rearms".into(), 0),
    ];
    for &(name, end) in after {
        let start = before
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0, |&(_, v)| v);
        let delta = end.saturating_sub(start);
        match out.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = delta,
            None => out.push((name.to_string(), delta)),
        }
    }
    out
}

impl Report {
    /// Ops/s of the window: answered requests per second.
    pub fn ops_per_sec(&self) -> f64 {
        let secs = self.window.as_secs_f64();
        if secs > 0.0 {
            self.stats.ok as f64 / secs
        } else {
            0.0
        }
    }

    /// `<role>_cpu_ns` and `<role>_cpu_ns_per_op` (CPU time over the window per answered
    /// request, the ops of `ops_per_sec`) for the roles whose CPU time was read;
    /// `cpu_ns_per_op` is both processes together.
    fn cpu_json(&self, out: &mut Map<String, Json>) {
        let both = self.client_cpu.zip(self.server_cpu).map(|(c, s)| c + s);
        for (role, cpu) in [
            ("client", self.client_cpu),
            ("server", self.server_cpu),
            ("", both),
        ] {
            let role = if role.is_empty() {
                String::new()
            } else {
                format!("{role}_")
            };
            let Some(cpu) = cpu else { continue };
            let ns = u64::try_from(cpu.as_nanos()).unwrap_or(u64::MAX);
            out.insert(format!("{role}cpu_ns"), json!(ns));
            if self.stats.ok > 0 {
                out.insert(
                    format!("{role}cpu_ns_per_op"),
                    json!(ns as f64 / self.stats.ok as f64),
                );
            }
        }
    }

    /// Measured requests the server never received (`issued - server_requests`).
    pub fn unsent(&self) -> u64 {
        self.stats.issued.saturating_sub(self.server_requests)
    }

    /// The metrics as JSON fields of the result line.
    pub fn metrics_json(&self) -> Map<String, Json> {
        let s = &self.stats;
        let h = &self.latency;
        let latency = if h.is_empty() {
            json!({"p50": 0, "p90": 0, "p99": 0, "p999": 0, "max": 0, "mean": 0})
        } else {
            json!({
                "p50": h.value_at_quantile(0.5),
                "p90": h.value_at_quantile(0.9),
                "p99": h.value_at_quantile(0.99),
                "p999": h.value_at_quantile(0.999),
                "max": h.max(),
                "mean": h.mean().round() as u64,
            })
        };
        let timer: Map<String, Json> = self
            .timer
            .iter()
            .map(|(name, value)| (name.clone(), json!(value)))
            .collect();
        let mut out = Map::new();
        out.insert("ops_per_sec".into(), json!(self.ops_per_sec()));
        out.insert("latency_ns".into(), latency);
        out.insert("duration_s".into(), json!(self.window.as_secs_f64()));
        out.insert("issued".into(), json!(s.issued));
        out.insert("ok".into(), json!(s.ok));
        out.insert("timeouts".into(), json!(s.timeouts));
        out.insert("errors".into(), json!(s.errors));
        out.insert("late_responses".into(), json!(self.late_responses));
        out.insert("server_slow".into(), json!(self.server_slow));
        out.insert("server_requests".into(), json!(self.server_requests));
        out.insert("unsent".into(), json!(self.unsent()));
        out.insert("connections_open".into(), json!(self.connections_open));
        out.insert("handlers_left".into(), json!(self.handlers_left));
        out.insert("unresolved".into(), json!(s.unresolved + self.lost_tasks));
        out.insert("timer".into(), Json::Object(timer));
        self.cpu_json(&mut out);
        out
    }

    /// Says on stderr when a run that should time out exactly the slow requests
    /// (`slow_tail_expected`: a timeout, slow requests, a timeout shorter than their delay)
    /// timed out others too, or fewer: overload, not a violation.
    pub fn note_timeouts_beyond_slow(&self, slow_tail_expected: bool) {
        let s = &self.stats;
        if slow_tail_expected && s.timeouts != self.server_slow {
            eprintln!(
                "note: {} requests timed out but the server made {} slow: requests other than \
                 the slow ones took longer than timeout_ms (overload), or slow ones beat it",
                s.timeouts, self.server_slow
            );
        }
    }

    /// Correctness violations of the run, one line each (empty when it is sound).
    pub fn violations(&self) -> Vec<String> {
        let s = &self.stats;
        let mut out = Vec::new();
        if s.unresolved > 0 {
            out.push(format!(
                "{} requests were still unresolved when the drain ended",
                s.unresolved
            ));
        }
        if s.issued != s.ok + s.timeouts + s.errors + s.unresolved {
            out.push(format!(
                "issued {} != ok {} + timeouts {} + errors {} + unresolved {}",
                s.issued, s.ok, s.timeouts, s.errors, s.unresolved
            ));
        }
        if self.lost_tasks > 0 {
            out.push(format!(
                "{} load tasks never had their request resolved (a handler was lost); \
                 their counts are missing",
                self.lost_tasks
            ));
        }
        if self.handlers_left > 0 {
            out.push(format!(
                "{} live handlers were left in the maps after the drain",
                self.handlers_left
            ));
        }
        // Every measured request reaches the server unless it failed before being sent, or,
        // with the driver, timed out before being sent: the ones missing must be among those.
        let (may_be_unsent, which) = if self.timeouts_may_be_unsent {
            (s.errors + s.timeouts, "failed or timed out")
        } else {
            (s.errors, "failed")
        };
        if self.server_requests > s.issued || self.unsent() > may_be_unsent {
            out.push(format!(
                "the server received {} measured requests, the client issued {}: {} never \
                 reached it, {} {which}",
                self.server_requests,
                s.issued,
                s.issued as i128 - self.server_requests as i128,
                may_be_unsent
            ));
        }
        if self.connections_open < self.connections {
            out.push(format!(
                "{} connections were open at the end of the run, {} were asked for \
                 (connections)",
                self.connections_open, self.connections
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(stats: TaskStats, latency: Histogram<u64>) -> Report {
        Report {
            window: Duration::from_secs(2),
            server_requests: stats.issued,
            timeouts_may_be_unsent: false,
            connections: 2,
            connections_open: 2,
            stats,
            latency,
            late_responses: 0,
            server_slow: 0,
            handlers_left: 0,
            lost_tasks: 0,
            timer: Vec::new(),
            client_cpu: Some(Duration::from_millis(4)),
            server_cpu: None,
        }
    }

    #[test]
    fn records_merge_and_report() {
        let mut a = TaskStats::default();
        a.record(Outcome::Ok);
        a.record(Outcome::Timeout);
        let mut b = TaskStats::default();
        b.record(Outcome::Ok);
        b.record(Outcome::Error(crate::completion::ErrorKind::Server));
        a.merge(&b);
        assert_eq!((a.issued, a.ok, a.timeouts, a.errors), (4, 2, 1, 1));
        let recorder = Arc::new(LatencyRecorder::default());
        recorder.record(Duration::from_micros(100));
        // Another thread records into a shard of its own; merging sees both.
        let remote = Arc::clone(&recorder);
        std::thread::spawn(move || remote.record(Duration::from_micros(300)))
            .join()
            .unwrap();
        assert_eq!(recorder.shards.lock().unwrap().len(), 2);
        // A second recorder on this thread does not mix with the first.
        let other = LatencyRecorder::default();
        other.record(Duration::from_secs(1));
        let r = report(a, recorder.merged());
        assert_eq!(r.ops_per_sec(), 1.0);
        let m = r.metrics_json();
        let p50 = m["latency_ns"]["p50"].as_u64().unwrap();
        assert!((99_900..=100_100).contains(&p50), "{p50}");
        let max = m["latency_ns"]["max"].as_u64().unwrap();
        assert!((299_000..=301_000).contains(&max), "{max}");
        assert_eq!(other.merged().len(), 1);
        // 4 ms of client CPU over 2 answered requests; no server reading, no server figure.
        assert_eq!(m["client_cpu_ns"], 4_000_000);
        assert_eq!(m["client_cpu_ns_per_op"], 2_000_000.0);
        assert!(!m.contains_key("server_cpu_ns_per_op"));
        assert!(!m.contains_key("cpu_ns_per_op"), "both roles or no total");
        assert!(r.violations().is_empty(), "{:?}", r.violations());
    }

    #[test]
    fn violations_are_reported() {
        let mut s = TaskStats::default();
        s.record(Outcome::Abandoned);
        s.ok = 5;
        let mut r = report(s, new_histogram());
        r.handlers_left = 2;
        r.server_requests = 0;
        r.lost_tasks = 1;
        let v = r.violations();
        assert_eq!(v.len(), 5, "{v:?}");
        assert_eq!(r.metrics_json()["unresolved"], 2);
    }

    #[test]
    fn requests_missing_at_the_server_must_have_failed_or_with_the_driver_timed_out() {
        let mut s = TaskStats::default();
        for outcome in [Outcome::Ok, Outcome::Ok, Outcome::Timeout, Outcome::Timeout] {
            s.record(outcome);
        }
        s.record(Outcome::Error(crate::completion::ErrorKind::Server));
        let mut r = report(s, new_histogram());
        // Ours sends every request it times out: only the error may be missing.
        r.server_requests = 4;
        assert!(r.violations().is_empty(), "{:?}", r.violations());
        assert_eq!((r.unsent(), &r.metrics_json()["unsent"]), (1, &json!(1)));
        r.server_requests = 3;
        let v = r.violations();
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].starts_with("the server received 3 measured requests, the client issued 5: 2 never reached it, 1 failed"), "{v:?}");
        // The driver may time a request out before sending it: those may be missing too...
        r.timeouts_may_be_unsent = true;
        r.server_requests = 2;
        assert!(r.violations().is_empty(), "{:?}", r.violations());
        // ...but not an answered one, nor one received twice.
        r.server_requests = 1;
        let v = r.violations();
        assert!(
            v[0].ends_with("4 never reached it, 3 failed or timed out"),
            "{v:?}"
        );
        r.server_requests = 6;
        assert_eq!(r.violations().len(), 1);
        // Connections asked for but not open fail the run.
        r.server_requests = 5;
        r.connections_open = 1;
        let v = r.violations();
        assert_eq!(
            v,
            ["1 connections were open at the end of the run, 2 were asked for (connections)"]
        );
    }

    #[test]
    fn timer_counters_overlay_window_differences() {
        let counts = TimerCounts {
            registered: 10,
            cancelled: 9,
            fired: 1,
        };
        let before = [("fired", 5), ("ticks", 100)];
        let after = [("fired", 7), ("ticks", 130), ("signals", 4)];
        let t = timer_counters(&counts, &before, &after);
        let get = |name: &str| t.iter().find(|(n, _)| n == name).unwrap().1;
        assert_eq!((get("registered"), get("fired"), get("rearms")), (10, 2, 0));
        assert_eq!((get("ticks"), get("signals")), (30, 4));
    }
}
