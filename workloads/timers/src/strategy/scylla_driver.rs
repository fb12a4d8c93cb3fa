//! `scylla-driver` and `scylla-driver-no-timeout`: the real scylla driver (crates.io `scylla`,
//! pinned in Cargo.toml) against the suite's CQL server (`serve --protocol cql`).
//!
//! One `scylla::client::session::Session` per run, its default execution profile's
//! `request_timeout` set to `timeout_ms` (`scylla-driver`) or to None
//! (`scylla-driver-no-timeout`); schema fetching off (the server has no `system_schema`);
//! `connections` connections to the one node (`PoolSize::PerHost`). The driver (1.9.0,
//! `src/client/execution.rs`, `execute_request`) wraps each request's whole execution, the
//! plan's attempts and retries included, in `tokio::time::timeout(request_timeout, ..)`:
//! one tokio timer registered and cancelled per request, the cost PR #564 (the deadline
//! tracker, never merged) meant to remove.
//!
//! The load is the suite's closed loop: `concurrency` tasks, each executing the prepared
//! [`INSERT`] and waiting for its outcome. Measured requests carry `measured = true`, which
//! the server counts, with the slow ones among them; [`STATS`] reads both after the drain,
//! for the same checks as the other strategies (`issued` = `ok` + `timeouts` + `errors`; the
//! server received every measured request; in slow-tail, the note when the timeouts are not
//! exactly the slow requests).

use std::num::NonZeroUsize;
use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::client::PoolSize;
use scylla::errors::ExecutionError;
use scylla::statement::prepared::PreparedStatement;
use suite_cli::events;
use suite_cli::param_values::Scenario;
use tokio::task::JoinHandle;

use crate::client::RunEvent;
use crate::completion::{ErrorKind, Outcome};
use crate::cpu_time::{self, ProcessCpuClock};
use crate::cql::{INSERT, STATS};
use crate::metrics::{self, LatencyRecorder, Report, TaskStats};
use crate::params::{Mode, Params};
use crate::process::ServerProcess;
use crate::strategy::StrategyKind;
use crate::timer_ops;

const WARMUP: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;
/// Added to the drain bound on top of the timeout and the server's delays.
const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// Longest the session may take to connect and prepare the write.
const SETUP_TIMEOUT: Duration = Duration::from_secs(30);

/// Why `kind`, if it is a driver strategy, cannot run this scenario or these parameters.
pub fn unsupported(kind: StrategyKind, scenario: &Scenario, params: &Params) -> Option<String> {
    if !kind.is_driver() {
        return None;
    }
    let name = kind.name();
    if scenario.name == timer_ops::SCENARIO {
        return Some(format!(
            "scenario '{}' does not run strategy '{name}': the driver times requests it sends \
             to a server (valid: the strategies other than scylla-driver*)",
            scenario.name
        ));
    }
    if params.mode == Mode::Read {
        return Some(format!(
            "strategy '{name}' runs prepared writes only (valid: mode=write)"
        ));
    }
    if params.max_rate > 0 {
        return Some(format!(
            "strategy '{name}' runs the closed loop only (valid: max_rate=0)"
        ));
    }
    None
}

/// A connected session, the prepared write, and what the load tasks share.
pub struct Shared {
    phase: AtomicU8,
    session: Session,
    insert: PreparedStatement,
    value: Vec<u8>,
    with_timeout: bool,
    latency: LatencyRecorder,
    partition_count: u64,
    seed: u64,
    /// The first error a request got, for the note printed after the run.
    first_error: Mutex<Option<String>>,
}

/// Runs `kind` against a CQL server started as a child process, prints the events and the
/// result line; returns the correctness violations (empty = sound).
pub fn execute(
    kind: StrategyKind,
    scenario: &str,
    params: &Params,
    (warmup, duration): (Duration, Duration),
    gate: bool,
    (exe, server_args): (&Path, &[String]),
) -> Result<Vec<String>, String> {
    let mut args = server_args.to_vec();
    args.extend(["--protocol".to_string(), "cql".to_string()]);
    // Spawned from the main thread, which lives as long as the process.
    let server = ServerProcess::spawn(exe, &args)?;
    let runtime = kind.build_runtime(params.threads)?;
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], server.port()));
    let shared = runtime.block_on(connect(kind, params, addr))?;
    events::ready(&[std::process::id(), server.pid()], gate)?;
    let server_clock = ProcessCpuClock::of(server.pid());
    let on_event = |event| match event {
        RunEvent::MeasureStart => events::measure_start(),
        RunEvent::MeasureEnd => events::measure_end(),
    };
    let (report, note) = runtime.block_on(run(
        &shared,
        params,
        (warmup, duration),
        server_clock,
        on_event,
    ))?;
    let mut metrics = report.metrics_json();
    // Kept inside the driver, not observable from here: not reported rather than 0.
    metrics.shift_remove("late_responses");
    metrics.shift_remove("handlers_left");
    events::result(kind.name(), scenario, params.values(), metrics);
    drop(runtime);
    drop(server);
    if let Some(note) = note {
        eprintln!("note: {note}");
    }
    if report.unsent() > 0 {
        eprintln!(
            "note: {} measured requests never reached the server: the driver timed them out \
             (or they failed) before sending them",
            report.unsent()
        );
    }
    report.note_timeouts_beyond_slow(params.slow_tail_expected(kind));
    Ok(report.violations())
}

/// Opens the session of `kind` to the CQL server at `addr` and prepares the write.
pub async fn connect(
    kind: StrategyKind,
    params: &Params,
    addr: std::net::SocketAddr,
) -> Result<Arc<Shared>, String> {
    let timeout = kind.has_timeout().then_some(params.timeout);
    let profile = ExecutionProfile::builder()
        .request_timeout(timeout)
        .build()
        .into_handle();
    let connections = NonZeroUsize::new(params.connections).expect("resolved: never 0");
    let setup = async {
        let session = SessionBuilder::new()
            .known_node_addr(addr)
            .fetch_schema_metadata(false)
            .pool_size(PoolSize::PerHost(connections))
            .default_execution_profile_handle(profile)
            .build()
            .await
            .map_err(|e| format!("the scylla driver cannot connect to {addr}: {e}"))?;
        let insert = session
            .prepare(INSERT)
            .await
            .map_err(|e| format!("the scylla driver cannot prepare the write: {e}"))?;
        Ok::<_, String>((session, insert))
    };
    let (session, insert) = tokio::time::timeout(SETUP_TIMEOUT, setup)
        .await
        .map_err(|_| {
            format!("the scylla driver did not connect to {addr} within {SETUP_TIMEOUT:?}")
        })??;
    Ok(Arc::new(Shared {
        phase: AtomicU8::new(WARMUP),
        session,
        insert,
        value: vec![0xa5; params.value_bytes as usize],
        with_timeout: timeout.is_some(),
        latency: LatencyRecorder::default(),
        partition_count: params.partition_count,
        seed: params.seed,
        first_error: Mutex::new(None),
    }))
}

/// Warm-up, the measured window (`on_event` at its start and end), the drain, the server's
/// counters (`server_clock`: the server process's CPU clock, if it runs in one). Returns
/// the report and a note on the first error, if requests failed.
pub async fn run(
    shared: &Arc<Shared>,
    params: &Params,
    (warmup, duration): (Duration, Duration),
    server_clock: Option<ProcessCpuClock>,
    mut on_event: impl FnMut(RunEvent),
) -> Result<(Report, Option<String>), String> {
    let cpu = || {
        (
            ProcessCpuClock::own().now(),
            server_clock.and_then(|c| c.now()),
        )
    };
    let tasks: Vec<JoinHandle<TaskStats>> = (0..params.concurrency)
        .map(|i| tokio::spawn(task_loop(Arc::clone(shared), i)))
        .collect();
    tokio::time::sleep(warmup).await;
    shared.phase.store(MEASURE, Ordering::Relaxed);
    let window_start = Instant::now();
    let cpu_start = cpu();
    on_event(RunEvent::MeasureStart);
    tokio::time::sleep(duration).await;
    shared.phase.store(STOP, Ordering::Relaxed);
    let window = window_start.elapsed();
    let cpu_end = cpu();
    on_event(RunEvent::MeasureEnd);

    // Every task ends once its request does: answered, timed out, or (no timeout) answered
    // late. A task still running after the bound lost its request; its counts are missing.
    let mut bound = DRAIN_GRACE + params.max_service_time() + params.slow_delay;
    if shared.with_timeout {
        bound += params.timeout;
    }
    let deadline = tokio::time::Instant::now() + bound;
    let mut stats = TaskStats::default();
    let mut lost_tasks = 0;
    for mut task in tasks {
        match tokio::time::timeout_at(deadline, &mut task).await {
            Ok(joined) => stats.merge(&joined.map_err(|e| format!("load task failed: {e}"))?),
            Err(_) => {
                task.abort();
                lost_tasks += 1;
            }
        }
    }
    let (server_requests, server_slow, server_connections) = server_stats(&shared.session).await?;
    let report = Report {
        window,
        timer: metrics::timer_counters(&stats.timer, &[], &[]),
        stats,
        latency: shared.latency.merged(),
        late_responses: 0,
        server_slow,
        server_requests,
        timeouts_may_be_unsent: true,
        connections: params.connections as u64,
        // The server's count has the driver's control connection too (cluster metadata),
        // which is not one of the pool's.
        connections_open: server_connections.saturating_sub(1),
        handlers_left: 0,
        lost_tasks,
        client_cpu: cpu_time::spent(cpu_start.0, cpu_end.0),
        server_cpu: cpu_time::spent(cpu_start.1, cpu_end.1),
    };
    let note = shared
        .first_error
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
        .map(|e| format!("{} requests failed; the first: {e}", report.stats.errors));
    Ok((report, note))
}

/// The server's (measured requests, measured slow, connections open) over all connections.
async fn server_stats(session: &Session) -> Result<(u64, u64, u64), String> {
    let fail = |e: &dyn std::fmt::Display| format!("cannot read the server's counters: {e}");
    let rows = session
        .query_unpaged(STATS, ())
        .await
        .map_err(|e| fail(&e))?
        .into_rows_result()
        .map_err(|e| fail(&e))?;
    let (requests, slow, connections) =
        rows.single_row::<(i64, i64, i64)>().map_err(|e| fail(&e))?;
    let count = |v: i64| u64::try_from(v).map_err(|_| fail(&"a negative count"));
    Ok((count(requests)?, count(slow)?, count(connections)?))
}

/// One load task: execute the write, wait for its outcome, record it, until the stop.
async fn task_loop(shared: Arc<Shared>, index: usize) -> TaskStats {
    let mut rng = SmallRng::seed_from_u64(
        shared.seed ^ (index as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15),
    );
    let mut stats = TaskStats::default();
    loop {
        let phase = shared.phase.load(Ordering::Relaxed);
        if phase == STOP {
            break;
        }
        let measured = phase == MEASURE;
        // partition_count is at most 10^12: the key fits a bigint.
        let key = rng.random_range(0..shared.partition_count) as i64;
        let sent_at = Instant::now();
        let result = shared
            .session
            .execute_unpaged(&shared.insert, (key, &shared.value[..], measured))
            .await;
        let outcome = match result {
            Ok(_) => Outcome::Ok,
            Err(ExecutionError::RequestTimeout(_)) => Outcome::Timeout,
            Err(e) => {
                let mut first = shared
                    .first_error
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                first.get_or_insert_with(|| e.to_string());
                Outcome::Error(ErrorKind::Server)
            }
        };
        if measured {
            stats.record(outcome);
            // The driver's timer: one per request, fired or cancelled.
            if shared.with_timeout {
                stats.timer.registered += 1;
                match outcome {
                    Outcome::Timeout => stats.timer.fired += 1,
                    _ => stats.timer.cancelled += 1,
                }
            }
            if outcome == Outcome::Ok {
                shared.latency.record(sent_at.elapsed());
            }
        }
        if matches!(outcome, Outcome::Error(_)) {
            // An error that returned without waiting must not starve the worker.
            tokio::task::yield_now().await;
        }
    }
    stats
}
