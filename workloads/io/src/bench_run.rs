//! One run: open the scratch file, start the shards (each sets up its engine before
//! `ready`), wait out the warm-up, read the process's CPU at the window's edges, stop the
//! shards (they drain what is in flight) and gather what they counted.

use std::fs::File;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::channel;
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;
use std::time::Duration;

use token_bucket::measure_window::MeasureWindow;
use token_bucket::reactor::{monotonic_ns, set_timer_slack_ns, sleep_until_ns};
use token_bucket::{cpu_pinning, CappedRovers, PureRovers, Rovers, SharedTokenBucket};

use crate::cpu_time::process_cpu_ns;
use crate::dispatcher::ShardOutcome;
use crate::metrics::Report;
use crate::params::{Params, Strategy, REQUEST_TOKENS};
use crate::scratch_file;
use crate::shard::ShardSpawn;

/// A day, in ns: seastar's bucket pretends it was replenished "yesterday".
const DAY_NS: u64 = 86_400 * 1_000_000_000;

/// Events the run reports as they happen.
pub enum RunEvent {
    Ready,
    MeasureStart,
    MeasureEnd,
}

/// Runs `strategy` with `params` on the scratch file at `path`.
pub fn run(
    strategy: Strategy,
    params: &Params,
    path: &str,
    warmup: Duration,
    duration: Duration,
    on_event: &mut dyn FnMut(RunEvent) -> Result<(), String>,
) -> Result<Report, String> {
    let file = Arc::new(scratch_file::open(
        path,
        params.file_size,
        params.reqsize,
        params.direct,
    )?);
    match strategy {
        Strategy::CappedRelease => {
            run_with::<CappedRovers>(strategy, params, file, warmup, duration, on_event)
        }
        _ => run_with::<PureRovers>(strategy, params, file, warmup, duration, on_event),
    }
}

fn run_with<R: Rovers + 'static>(
    strategy: Strategy,
    params: &Params,
    file: Arc<File>,
    warmup: Duration,
    duration: Duration,
    on_event: &mut dyn FnMut(RunEvent) -> Result<(), String>,
) -> Result<Report, String> {
    let tb = (strategy != Strategy::Unlimited).then(|| {
        Arc::new(SharedTokenBucket::<R>::new(
            params.bucket_rate(),
            params.bucket_limit(),
            REQUEST_TOKENS.min(params.bucket_limit()),
            monotonic_ns().saturating_sub(DAY_NS),
        ))
    });
    let stop = Arc::new(AtomicBool::new(false));
    let window = Arc::new(MeasureWindow::default());
    let start = Arc::new(Barrier::new(params.shards + 1));
    let cpus = cpu_pinning::allowed_cpus();
    let pin = params.pin && cpus.len() >= params.shards;
    let (ready_tx, ready_rx) = channel();
    let mut handles: Vec<JoinHandle<ShardOutcome>> = Vec::new();
    for shard in 0..params.shards {
        let spawn = ShardSpawn {
            shard,
            strategy,
            params: params.clone(),
            file: file.clone(),
            tb: tb.clone(),
            window: window.clone(),
            stop: stop.clone(),
            ready: ready_tx.clone(),
            start: start.clone(),
            cpu: if pin { cpus.get(shard).copied() } else { None },
        };
        let handle = std::thread::Builder::new()
            .name(format!("shard-{shard}"))
            .spawn(move || spawn.run())
            .map_err(|e| format!("cannot start shard {shard}: {e}"));
        match handle {
            Ok(h) => handles.push(h),
            // The shards started so far wait at the barrier; exiting ends them.
            Err(e) => return Err(e),
        }
    }
    let stop_all = |handles: Vec<JoinHandle<ShardOutcome>>| {
        stop.store(true, Ordering::Relaxed);
        handles
            .into_iter()
            .map(|h| h.join().map_err(|_| "a shard panicked".to_string()))
            .collect::<Result<Vec<_>, String>>()
    };
    let mut setup_error = None;
    for _ in 0..params.shards {
        if let Ok(Err(e)) = ready_rx.recv() {
            setup_error.get_or_insert(e);
        }
    }
    if let Some(e) = setup_error {
        stop.store(true, Ordering::Relaxed);
        start.wait();
        let _ = stop_all(handles);
        return Err(e);
    }
    if let Err(e) = on_event(RunEvent::Ready) {
        stop.store(true, Ordering::Relaxed);
        start.wait();
        let _ = stop_all(handles);
        return Err(e);
    }
    set_timer_slack_ns(1);
    let t0 = monotonic_ns();
    let start_ns = t0 + warmup.as_nanos() as u64;
    let end_ns = start_ns + duration.as_nanos() as u64;
    window.set(start_ns, end_ns);
    start.wait();
    sleep_until_ns(start_ns);
    let cpu_start = process_cpu_ns();
    on_event(RunEvent::MeasureStart)?;
    sleep_until_ns(end_ns);
    let cpu_end = process_cpu_ns();
    on_event(RunEvent::MeasureEnd)?;
    let shards = stop_all(handles)?;
    Ok(Report {
        strategy,
        iops_limit: params.iops_limit,
        seconds: duration.as_secs_f64(),
        cpu_ns: cpu_end.saturating_sub(cpu_start),
        shards,
        pinned: pin,
    })
}
