//! One run: open the scratch file, start the shards (each sets up its engine before
//! `ready`), wait out the warm-up, read the process's CPU at the window's edges, stop the
//! shards (they drain what is in flight) and gather what they counted.

use std::fs::File;
use std::sync::mpsc::channel;
use std::sync::Arc;

use suite_cli::cli::Plan;
use suite_cli::events::OnEvent;
pub use suite_cli::events::RunEvent;
use token_bucket::reactor::{monotonic_ns, sleep_until_ns};
use token_bucket::shard_threads::ShardThreads;
use token_bucket::shared_token_bucket::DAY_NS;
use token_bucket::{CappedRovers, PureRovers, Rovers, SharedTokenBucket};

use crate::cpu_time::process_cpu_ns;
use crate::metrics::Report;
use crate::params::{Params, Strategy, REQUEST_TOKENS};
use crate::scratch_file;
use crate::shard::ShardSpawn;

/// What `run` runs: a strategy, its parameters and the window.
pub type RunPlan = Plan<Strategy, Params>;

/// Runs `plan` on the scratch file at `path`, telling `on_event` of its moments (it may block
/// after `ready`: the gate).
pub fn run(plan: &RunPlan, path: &str, on_event: &mut OnEvent) -> Result<Report, String> {
    let p = &plan.params;
    let file = Arc::new(scratch_file::open(path, p.file_size, p.reqsize, p.direct)?);
    if plan.strategy.bucket().is_some_and(|b| b.capped()) {
        run_with::<CappedRovers>(plan, file, on_event)
    } else {
        run_with::<PureRovers>(plan, file, on_event)
    }
}

fn run_with<R: Rovers + 'static>(
    plan: &RunPlan,
    file: Arc<File>,
    on_event: &mut OnEvent,
) -> Result<Report, String> {
    let (strategy, params) = (plan.strategy, &plan.params);
    let tb = strategy.bucket().map(|_| {
        Arc::new(SharedTokenBucket::<R>::new(
            params.bucket_rate(),
            params.bucket_limit(),
            REQUEST_TOKENS.min(params.bucket_limit()),
            monotonic_ns().saturating_sub(DAY_NS),
        ))
    });
    let (ready_tx, ready_rx) = channel();
    let threads = ShardThreads::spawn(params.shards, params.pin, |shard| {
        let spawn = ShardSpawn {
            strategy,
            params: params.clone(),
            file: file.clone(),
            tb: tb.clone(),
            ready: ready_tx.clone(),
        };
        move || spawn.run(shard)
    })?;
    let mut setup_error = None;
    for _ in 0..params.shards {
        if let Ok(Err(e)) = ready_rx.recv() {
            setup_error.get_or_insert(e);
        }
    }
    if let Some(e) = setup_error {
        threads.abandon();
        return Err(e);
    }
    if let Err(e) = on_event(RunEvent::Ready) {
        threads.abandon();
        return Err(e);
    }
    let (start_ns, end_ns) = threads.start(plan.warmup, plan.duration);
    sleep_until_ns(start_ns);
    let cpu_start = process_cpu_ns();
    on_event(RunEvent::MeasureStart)?;
    sleep_until_ns(end_ns);
    let cpu_end = process_cpu_ns();
    on_event(RunEvent::MeasureEnd)?;
    let pinned = threads.pinned();
    Ok(Report {
        iops_limit: params.iops_limit,
        seconds: plan.duration.as_secs_f64(),
        cpu_ns: cpu_end.saturating_sub(cpu_start),
        shards: threads.stop()?,
        pinned,
    })
}
