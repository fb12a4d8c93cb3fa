//! The load generator and run controller.
//!
//! `concurrency` tasks are spread round-robin over the connections; each loops: issue one
//! request through the strategy, wait for its outcome, record it. In the open loop
//! (`max_rate > 0`) each task sends on its own schedule and latency counts from the intended
//! send time, so a stall shows up as latency rather than as fewer samples. The controller
//! switches phases (warm-up, measured window, stop), then drains: it waits for every task to
//! finish its request and for late answers to free the orphaned streams, gives up on what is
//! still unresolved after a bound, and gathers the counters.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use tokio::task::JoinHandle;

use crate::completion::{Completion, ErrorKind, Outcome};
use crate::connection::{ConnConfig, Connection, FailureSignal};
use crate::cpu_time::{self, ProcessCpuClock};
use crate::metrics::{self, LatencyRecorder, Report, TaskStats, TimerCounts};
use crate::params::Params;
use crate::resolution_log::ResolutionLog;
use crate::strategy::{Request, StrategyKind, Timer};

const WARMUP: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

/// Added to the drain bound on top of the timeout and the server's delays.
const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// Longest single pacing sleep, so open-loop tasks notice the stop quickly.
const MAX_PACING_SLEEP: Duration = Duration::from_millis(100);
/// How long abandoned requests may take to reach their tasks.
const ABANDON_GRACE: Duration = Duration::from_secs(1);
/// How often the drain checks whether the connections are idle.
const IDLE_POLL: Duration = Duration::from_millis(5);

/// Phase changes the caller prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEvent {
    MeasureStart,
    MeasureEnd,
}

/// What the tasks share.
struct Shared {
    phase: AtomicU8,
    timer: Arc<Timer>,
    latency: LatencyRecorder,
    partition_count: u64,
    seed: u64,
    /// Time between two sends of one task in the open loop.
    interval: Option<Duration>,
    concurrency: usize,
}

impl Shared {
    fn phase(&self) -> u8 {
        self.phase.load(Ordering::Relaxed)
    }
}

/// Connections and the strategy, set up and ready to run.
pub struct Bench {
    kind: StrategyKind,
    params: Params,
    conns: Arc<[Arc<Connection>]>,
    timer: Arc<Timer>,
    failure: Arc<FailureSignal>,
    /// The server process's CPU clock, when the server runs in a process of its own.
    server_clock: Option<ProcessCpuClock>,
}

impl Bench {
    /// Opens `params.connections` connections to `addr` and sets the strategy up. Must run
    /// inside the runtime built for `kind`.
    pub async fn connect(
        kind: StrategyKind,
        params: &Params,
        addr: SocketAddr,
        log: Option<Arc<ResolutionLog>>,
    ) -> Result<Bench, String> {
        let failure = Arc::new(FailureSignal::default());
        let config = ConnConfig {
            mode: params.mode,
            value_bytes: params.value_bytes,
            tracker: kind == StrategyKind::DeadlineTracker,
            log,
        };
        let mut conns = Vec::with_capacity(params.connections);
        for index in 0..params.connections {
            let conn = Connection::connect(index, addr, &config, Arc::clone(&failure))
                .await
                .map_err(|e| format!("cannot connect to the server at {addr}: {e}"))?;
            conns.push(conn);
        }
        let conns: Arc<[Arc<Connection>]> = conns.into();
        let timer = Arc::new(Timer::new(kind, params, &conns));
        Ok(Bench {
            kind,
            params: params.clone(),
            conns,
            timer,
            failure,
            server_clock: None,
        })
    }

    /// Measures the CPU time of server process `pid` over the window too
    /// (`server_cpu_ns_per_op`).
    pub fn measure_server_cpu(&mut self, pid: u32) {
        self.server_clock = ProcessCpuClock::of(pid);
    }

    /// (client, server) process CPU times now.
    fn cpu_readings(&self) -> (Option<Duration>, Option<Duration>) {
        (
            ProcessCpuClock::own().now(),
            self.server_clock.and_then(|c| c.now()),
        )
    }

    /// Longest the drain waits for the measured requests and the late answers.
    fn drain_bound(&self) -> Duration {
        let p = &self.params;
        let mut bound = DRAIN_GRACE + p.max_service_time();
        if self.kind.has_timeout() {
            bound += p.timeout;
        }
        if p.slow_fraction > 0.0 {
            bound += p.slow_delay;
        }
        if matches!(
            self.kind,
            StrategyKind::HashedWheel | StrategyKind::HashedWheelOffload
        ) {
            bound += p.tick;
        }
        bound
    }

    async fn sleep_or_fail(&self, duration: Duration) -> Result<(), String> {
        tokio::select! {
            _ = tokio::time::sleep(duration) => Ok(()),
            reason = self.failure.wait() => Err(reason),
        }
    }

    /// Runs warm-up, the measured window and the drain, calling `on_event` at the window's
    /// start and end. Fails if a connection broke.
    pub async fn run(
        &self,
        warmup: Duration,
        duration: Duration,
        mut on_event: impl FnMut(RunEvent),
    ) -> Result<Report, String> {
        let p = &self.params;
        let shared = Arc::new(Shared {
            phase: AtomicU8::new(WARMUP),
            timer: Arc::clone(&self.timer),
            latency: LatencyRecorder::default(),
            partition_count: p.partition_count,
            seed: p.seed,
            interval: (p.max_rate > 0)
                .then(|| Duration::from_secs_f64(p.concurrency as f64 / p.max_rate as f64)),
            concurrency: p.concurrency,
        });
        let start = Instant::now();
        let tasks: Vec<JoinHandle<TaskStats>> = (0..p.concurrency)
            .map(|i| {
                let conn = Arc::clone(&self.conns[i % self.conns.len()]);
                tokio::spawn(task_loop(Arc::clone(&shared), conn, i, start))
            })
            .collect();
        let stop = || shared.phase.store(STOP, Ordering::Relaxed);

        if let Err(reason) = self.sleep_or_fail(warmup).await {
            stop();
            return Err(reason);
        }
        let before = self.timer.counters(&self.conns);
        shared.phase.store(MEASURE, Ordering::Relaxed);
        let window_start = Instant::now();
        let cpu_start = self.cpu_readings();
        on_event(RunEvent::MeasureStart);
        if let Err(reason) = self.sleep_or_fail(duration).await {
            stop();
            return Err(reason);
        }
        stop();
        let window = window_start.elapsed();
        let cpu_end = self.cpu_readings();
        let after = self.timer.counters(&self.conns);
        on_event(RunEvent::MeasureEnd);

        let (stats, handlers_left, lost_tasks) = self.drain(tasks).await?;
        if let Some(reason) = self.failure.reason() {
            return Err(reason);
        }
        let mut server_slow = 0;
        let mut server_requests = 0;
        for conn in self.conns.iter() {
            let s = conn.query_stats().await?;
            server_slow += s.measured_slow;
            server_requests += s.measured_requests;
        }
        Ok(Report {
            window,
            timer: metrics::timer_counters(&stats.timer, &before, &after),
            stats,
            latency: shared.latency.merged(),
            late_responses: self.conns.iter().map(|c| c.late_responses()).sum(),
            server_slow,
            server_requests,
            timeouts_may_be_unsent: false,
            connections: p.connections as u64,
            // A connection that broke failed the run above.
            connections_open: self.conns.len() as u64,
            handlers_left,
            lost_tasks,
            client_cpu: cpu_time::spent(cpu_start.0, cpu_end.0),
            server_cpu: cpu_time::spent(cpu_start.1, cpu_end.1),
        })
    }

    /// Waits for the tasks, then for the connections to go idle (late answers free the
    /// orphaned streams), within the drain bound; abandons whatever is still live after it.
    /// A task whose request is not even in a map any more (resolved by nobody) is aborted
    /// after [`ABANDON_GRACE`]; its counts are lost. Returns the merged task stats, the
    /// live handlers found when the waiting ended, and the aborted tasks.
    async fn drain(
        &self,
        tasks: Vec<JoinHandle<TaskStats>>,
    ) -> Result<(TaskStats, u64, u64), String> {
        let joined = |result: Result<TaskStats, tokio::task::JoinError>| {
            result.map_err(|e| format!("load task failed: {e}"))
        };
        let deadline = tokio::time::Instant::now() + self.drain_bound();
        let mut stats = TaskStats::default();
        let mut pending = Vec::new();
        for mut task in tasks {
            match tokio::time::timeout_at(deadline, &mut task).await {
                Ok(result) => stats.merge(&joined(result)?),
                Err(_) => pending.push(task),
            }
        }
        while tokio::time::Instant::now() < deadline && !self.conns.iter().all(|c| c.is_idle()) {
            tokio::time::sleep(IDLE_POLL).await;
        }
        let handlers_left = self.conns.iter().map(|c| c.live() as u64).sum();
        let mut lost_tasks = 0;
        if !pending.is_empty() {
            for conn in self.conns.iter() {
                conn.abandon_live();
            }
            let deadline = tokio::time::Instant::now() + ABANDON_GRACE;
            for mut task in pending {
                match tokio::time::timeout_at(deadline, &mut task).await {
                    Ok(result) => stats.merge(&joined(result)?),
                    Err(_) => {
                        task.abort();
                        lost_tasks += 1;
                    }
                }
            }
        }
        Ok((stats, handlers_left, lost_tasks))
    }
}

/// Sleeps until `at` in slices, returning false as soon as the run stops.
async fn pace_until(shared: &Shared, at: Instant) -> bool {
    loop {
        if shared.phase() == STOP {
            return false;
        }
        let now = Instant::now();
        if now >= at {
            return true;
        }
        let wake = at.min(now + MAX_PACING_SLEEP);
        tokio::time::sleep_until(wake.into()).await;
    }
}

/// One load task.
async fn task_loop(
    shared: Arc<Shared>,
    conn: Arc<Connection>,
    index: usize,
    start: Instant,
) -> TaskStats {
    let completion = Arc::new(Completion::new());
    let mut rng = SmallRng::seed_from_u64(
        shared.seed ^ (index as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15),
    );
    let mut stats = TaskStats::default();
    let mut unmeasured = TimerCounts::default();
    // Open loop: task i sends at start + i/rate, then every concurrency/rate.
    let mut next_send = shared
        .interval
        .map(|interval| start + interval.mul_f64(index as f64 / shared.concurrency as f64));
    loop {
        let intended = match (next_send.as_mut(), shared.interval) {
            (Some(next), Some(interval)) => {
                if !pace_until(&shared, *next).await {
                    break;
                }
                let intended = *next;
                *next += interval;
                Some(intended)
            }
            _ => None,
        };
        let phase = shared.phase();
        if phase == STOP {
            break;
        }
        let measured = phase == MEASURE;
        let sent_at = Instant::now();
        let request = Request {
            key: rng.random_range(0..shared.partition_count),
            measured,
            sent_at,
        };
        let counts = if measured {
            &mut stats.timer
        } else {
            &mut unmeasured
        };
        let outcome = shared
            .timer
            .execute(&conn, &completion, request, counts)
            .await;
        if measured {
            stats.record(outcome);
            if outcome == Outcome::Ok {
                shared.latency.record(intended.unwrap_or(sent_at).elapsed());
            }
        }
        match outcome {
            // The connection takes no more requests, or the drain gave up.
            Outcome::Abandoned | Outcome::Error(ErrorKind::ConnectionClosed) => break,
            // An error that returned without waiting must not starve the worker.
            Outcome::Error(_) => tokio::task::yield_now().await,
            Outcome::Ok | Outcome::Timeout => {}
        }
    }
    stats
}
