//! The `timer-ops` scenario: the strategies' timer micro-costs, in process and without
//! network.
//!
//! `concurrency` waiter tasks run on the strategy's client runtime of `threads` workers,
//! each paired with a partner task. A waiter loops: arm its request's timeout the way the
//! strategy does on the network path, hand the request to its partner, wait for the outcome,
//! and so cancel the timeout. The partner completes the request after `service_time_us`
//! (0: after one yield), as the router completes an answered request:
//! - `none`: no timer (the cost of the loop itself, the baseline);
//! - `tokio-timeout`, `-alt`, `-legacy`, `-sharded`: the wait wrapped in `tokio::time::timeout`,
//!   registered in the runtime's timer driver on the first pending poll and deregistered
//!   when the answer wins, both under the driver's lock;
//! - `event-executor`, `hashed-wheel(-offload)`, `scheduled-executor`: the timeout is
//!   scheduled on the strategy's engine and cancelled by the partner as it resolves the
//!   request ([`Completion::resolve`]), on the partner's thread.
//!
//! `deadline-tracker` keeps its deadlines in the connection router, which this scenario
//! does not have; it is refused as bad input.
//!
//! `ns_per_op` (also under the contract's name `cpu_ns_per_op`) is the process's CPU time
//! over the measured window (every thread: the runtime's workers and the engine's threads)
//! per completed operation, so contention
//! (spinning, futex waits and their wake-ups) shows as more nanoseconds per op even where
//! the machine has too few cores for the wall time to show it.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value as Json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::completion::{Completion, Outcome};
use crate::cpu_time::{self, ProcessCpuClock};
use crate::handler_map::RequestId;
use crate::metrics::{self, LatencyRecorder, TaskStats, TimerCounts};
use crate::params::Params;
use crate::strategy::engine::Engine;
use crate::strategy::StrategyKind;

/// The scenario's name.
pub const SCENARIO: &str = "timer-ops";

const WARMUP: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;
/// Added to the drain bound on top of the timeout and the service time.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// How a waiter times its operation.
enum Arming {
    None,
    Tokio(Duration),
    Engine(Engine, Duration),
}

/// Why a strategy cannot run this scenario, if it cannot.
pub fn unsupported(kind: StrategyKind) -> Option<String> {
    (kind == StrategyKind::DeadlineTracker).then(|| {
        format!(
            "scenario '{SCENARIO}' does not run strategy '{}': its deadlines live in the \
             connection router (valid: every other strategy)",
            kind.name()
        )
    })
}

impl Arming {
    fn new(kind: StrategyKind, params: &Params) -> Arming {
        match kind {
            StrategyKind::None => Arming::None,
            StrategyKind::TokioTimeout
            | StrategyKind::TokioTimeoutAlt
            | StrategyKind::TokioTimeoutLegacy
            | StrategyKind::TokioTimeoutSharded => Arming::Tokio(params.timeout),
            StrategyKind::ScheduledExecutor
            | StrategyKind::EventExecutor
            | StrategyKind::HashedWheel
            | StrategyKind::HashedWheelOffload => {
                let engine = Engine::with_expiry(kind, params, |target| {
                    target.resolve_timed_out();
                });
                Arming::Engine(engine, params.timeout)
            }
            StrategyKind::DeadlineTracker => unreachable!("refused by unsupported()"),
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        match self {
            Arming::Engine(engine, _) => engine.counters(),
            _ => Vec::new(),
        }
    }
}

struct Shared {
    phase: AtomicU8,
    arming: Arming,
    latency: LatencyRecorder,
}

/// The measured window's figures.
pub struct OpsReport {
    pub window: Duration,
    pub stats: TaskStats,
    pub latency: hdrhistogram::Histogram<u64>,
    pub cpu: Option<Duration>,
    pub timer: Vec<(String, u64)>,
    /// Waiter tasks that did not finish within the drain bound.
    pub lost_tasks: u64,
}

impl OpsReport {
    /// The metrics as JSON fields of the result line.
    pub fn metrics_json(&self) -> Map<String, Json> {
        let s = &self.stats;
        let secs = self.window.as_secs_f64();
        let h = &self.latency;
        let q = |p: f64| {
            if h.is_empty() {
                0
            } else {
                h.value_at_quantile(p)
            }
        };
        let mut out = Map::new();
        let ops = s.ok + s.timeouts;
        out.insert(
            "ops_per_sec".into(),
            json!(if secs > 0.0 { ops as f64 / secs } else { 0.0 }),
        );
        if let Some(cpu) = self.cpu {
            let ns = u64::try_from(cpu.as_nanos()).unwrap_or(u64::MAX);
            out.insert("cpu_ns".into(), json!(ns));
            if ops > 0 {
                // The one process's CPU per op, under the contract's name and the
                // scenario's own.
                let per_op = ns as f64 / ops as f64;
                out.insert("cpu_ns_per_op".into(), json!(per_op));
                out.insert("ns_per_op".into(), json!(per_op));
            }
        }
        out.insert(
            "latency_ns".into(),
            json!({"p50": q(0.5), "p90": q(0.9), "p99": q(0.99), "p999": q(0.999),
                   "max": h.max(), "mean": h.mean().round() as u64}),
        );
        out.insert("duration_s".into(), json!(secs));
        out.insert("issued".into(), json!(s.issued));
        out.insert("ok".into(), json!(s.ok));
        out.insert("timeouts".into(), json!(s.timeouts));
        out.insert("errors".into(), json!(s.errors));
        out.insert("unresolved".into(), json!(s.unresolved + self.lost_tasks));
        let timer: Map<String, Json> = self
            .timer
            .iter()
            .map(|(name, value)| (name.clone(), json!(value)))
            .collect();
        out.insert("timer".into(), Json::Object(timer));
        out
    }

    /// Correctness violations (empty when sound): every operation resolved exactly once.
    pub fn violations(&self) -> Vec<String> {
        let s = &self.stats;
        let mut out = Vec::new();
        if s.issued != s.ok + s.timeouts + s.errors + s.unresolved {
            out.push(format!(
                "issued {} != ok {} + timeouts {} + errors {} + unresolved {}",
                s.issued, s.ok, s.timeouts, s.errors, s.unresolved
            ));
        }
        if s.unresolved + s.errors + self.lost_tasks > 0 {
            out.push(format!(
                "{} operations unresolved, {} failed, {} waiter tasks lost",
                s.unresolved, s.errors, self.lost_tasks
            ));
        }
        out
    }
}

/// Runs warm-up, the measured window and the drain on `runtime` (built for `kind` with
/// `params.threads` workers), calling `on_event` at the window's edges.
pub fn run(
    runtime: &tokio::runtime::Runtime,
    kind: StrategyKind,
    params: &Params,
    warmup: Duration,
    duration: Duration,
    mut on_event: impl FnMut(crate::client::RunEvent),
) -> Result<OpsReport, String> {
    if let Some(reason) = unsupported(kind) {
        return Err(reason);
    }
    // The engine's threads start here and are joined when `shared` goes.
    let shared = Arc::new(Shared {
        phase: AtomicU8::new(WARMUP),
        arming: Arming::new(kind, params),
        latency: LatencyRecorder::default(),
    });
    let service = params.service_time;
    runtime.block_on(async {
        let tasks: Vec<JoinHandle<TaskStats>> = (0..params.concurrency)
            .map(|_| {
                let completion = Arc::new(Completion::new());
                let (tx, rx) = mpsc::channel(1);
                tokio::spawn(partner(Arc::clone(&completion), rx, service));
                tokio::spawn(waiter(Arc::clone(&shared), completion, tx))
            })
            .collect();
        tokio::time::sleep(warmup).await;
        let before = shared.arming.counters();
        shared.phase.store(MEASURE, Ordering::Relaxed);
        let window_start = Instant::now();
        let clock = ProcessCpuClock::own();
        let cpu_start = clock.now();
        on_event(crate::client::RunEvent::MeasureStart);
        tokio::time::sleep(duration).await;
        shared.phase.store(STOP, Ordering::Relaxed);
        let window = window_start.elapsed();
        let cpu_end = clock.now();
        let after = shared.arming.counters();
        on_event(crate::client::RunEvent::MeasureEnd);

        let bound = DRAIN_GRACE + service + params.timeout;
        let deadline = tokio::time::Instant::now() + bound;
        let mut stats = TaskStats::default();
        let mut lost_tasks = 0;
        for mut task in tasks {
            match tokio::time::timeout_at(deadline, &mut task).await {
                Ok(Ok(s)) => stats.merge(&s),
                Ok(Err(e)) => return Err(format!("waiter task failed: {e}")),
                Err(_) => {
                    task.abort();
                    lost_tasks += 1;
                }
            }
        }
        Ok(OpsReport {
            window,
            timer: metrics::timer_counters(&stats.timer, &before, &after),
            stats,
            latency: shared.latency.merged(),
            cpu: cpu_time::spent(cpu_start, cpu_end),
            lost_tasks,
        })
    })
}

/// Completes each request it is handed after `service` (or one yield).
async fn partner(
    completion: Arc<Completion>,
    mut rx: mpsc::Receiver<RequestId>,
    service: Duration,
) {
    while let Some(id) = rx.recv().await {
        if service.is_zero() {
            tokio::task::yield_now().await;
        } else {
            tokio::time::sleep(service).await;
        }
        // Loses (changes nothing) when the timeout came first.
        completion.resolve(id, Outcome::Ok);
    }
}

/// Arms, hands over, waits, cancels; until the run stops.
async fn waiter(
    shared: Arc<Shared>,
    completion: Arc<Completion>,
    tx: mpsc::Sender<RequestId>,
) -> TaskStats {
    let mut stats = TaskStats::default();
    let mut unmeasured = TimerCounts::default();
    let mut next_id = 0u64;
    loop {
        let phase = shared.phase.load(Ordering::Relaxed);
        if phase == STOP {
            break;
        }
        let measured = phase == MEASURE;
        let counts = if measured {
            &mut stats.timer
        } else {
            &mut unmeasured
        };
        next_id += 1;
        let id = RequestId::from_raw(next_id);
        let start = Instant::now();
        completion.arm(id);
        if let Arming::Engine(engine, timeout) = &shared.arming {
            engine.arm(0, id, &completion, start + *timeout);
        }
        if !matches!(shared.arming, Arming::None) {
            counts.registered += 1;
        }
        if tx.send(id).await.is_err() {
            // The partner is gone: end the request so that it is counted, then stop.
            completion.resolve(id, Outcome::Abandoned);
        }
        let outcome = match &shared.arming {
            Arming::Tokio(timeout) => {
                match tokio::time::timeout(*timeout, completion.wait(id)).await {
                    Ok(outcome) => {
                        counts.cancelled += 1;
                        outcome
                    }
                    Err(_elapsed) => {
                        if completion.resolve(id, Outcome::Timeout) {
                            counts.fired += 1;
                        }
                        completion.wait(id).await
                    }
                }
            }
            Arming::Engine(..) => {
                let outcome = completion.wait(id).await;
                if outcome == Outcome::Timeout {
                    counts.fired += 1;
                }
                outcome
            }
            Arming::None => completion.wait(id).await,
        };
        if measured {
            stats.record(outcome);
            shared.latency.record(start.elapsed());
        }
        if outcome == Outcome::Abandoned {
            break;
        }
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params;

    fn run_kind(kind: StrategyKind, extra: &[&str]) -> OpsReport {
        let scenario = params::scenario(Some(SCENARIO)).unwrap();
        let overrides: Vec<String> = ["threads=2", "concurrency=8"]
            .iter()
            .chain(extra)
            .map(|s| s.to_string())
            .collect();
        let p = params::resolve(Some(scenario), &overrides).unwrap();
        let runtime = kind.build_runtime(p.threads).unwrap();
        let mut events = Vec::new();
        let r = run(
            &runtime,
            kind,
            &p,
            Duration::from_millis(20),
            Duration::from_millis(100),
            |e| events.push(e),
        )
        .unwrap();
        assert_eq!(
            events,
            [
                crate::client::RunEvent::MeasureStart,
                crate::client::RunEvent::MeasureEnd
            ]
        );
        r
    }

    fn timer(r: &OpsReport, name: &str) -> u64 {
        r.timer.iter().find(|(n, _)| n == name).map_or(0, |t| t.1)
    }

    #[test]
    fn every_operation_resolves_once_and_counts_agree() {
        for kind in [
            StrategyKind::None,
            StrategyKind::TokioTimeout,
            StrategyKind::EventExecutor,
            StrategyKind::HashedWheelOffload,
        ] {
            let r = run_kind(kind, &[]);
            assert!(r.violations().is_empty(), "{kind:?}: {:?}", r.violations());
            let s = &r.stats;
            assert!(s.ok > 0, "{kind:?}");
            // A 5 s timeout never fires in a 100 ms window.
            assert_eq!(s.timeouts, 0, "{kind:?}");
            // Per request for tokio. An engine's own counters count what it processed in
            // the window, which lags the requests' view by its queues and its ticks (the
            // wheel's default 100 ms tick need not come in a 100 ms window on a busy
            // machine): no bound on them holds here.
            match kind {
                StrategyKind::None => assert_eq!(timer(&r, "registered"), 0),
                StrategyKind::TokioTimeout => {
                    assert_eq!(timer(&r, "registered"), s.issued);
                    assert_eq!(timer(&r, "cancelled"), s.ok);
                }
                _ => {}
            }
            // CPU per op x ops is the window's CPU time, which no more than every CPU can
            // have spent over the window; the process clock's reading lags each running
            // thread's by up to a scheduler tick, hence 5% and 20 ms of slack.
            let m = r.metrics_json();
            let cpu = m["cpu_ns"].as_f64().unwrap();
            let per_op = m["ns_per_op"].as_f64().unwrap();
            assert!((per_op * (s.ok + s.timeouts) as f64 - cpu).abs() <= 1.0 + cpu * 1e-9);
            let cpus = std::thread::available_parallelism().unwrap().get() as f64;
            let bound = cpus * r.window.as_secs_f64() * 1e9 * 1.05 + 20e6;
            assert!(cpu <= bound, "{kind:?}: {cpu} ns of CPU > {bound}");
        }
    }

    #[test]
    fn timeouts_that_fire_resolve_the_operation_once() {
        // Completions come 30 ms late against a 1 ms timeout: every measured op times out.
        for kind in [StrategyKind::TokioTimeout, StrategyKind::HashedWheel] {
            let r = run_kind(
                kind,
                &["timeout_ms=1", "service_time_us=30000", "tick_ms=1"],
            );
            assert!(r.violations().is_empty(), "{kind:?}: {:?}", r.violations());
            let s = &r.stats;
            // Which side wins each race is the machine's doing (a timer thread kept off the
            // CPU for 30 ms loses it); that each op resolves once is not. Tokio's counters
            // are per request; the wheel's count what its thread processed in the window.
            assert!(s.timeouts > 0, "{kind:?}");
            if kind == StrategyKind::TokioTimeout {
                assert_eq!(timer(&r, "fired"), s.timeouts, "{kind:?}");
            }
        }
    }

    #[test]
    fn deadline_tracker_is_refused() {
        assert!(unsupported(StrategyKind::DeadlineTracker).is_some());
        assert!(unsupported(StrategyKind::EventExecutor).is_none());
    }
}
