//! One run: start the shards (threads, each a reactor with its tasks), wait out the warm-up,
//! sample the tokens granted through the measured window, stop the shards and report.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::SeedableRng;
use token_bucket::hog::Hog;
use token_bucket::measure_window::MeasureWindow;
use token_bucket::reactor::{
    monotonic_ns, set_timer_slack_ns, sleep_until_ns, Reactor, ReactorObserver,
};
use token_bucket::{cpu_pinning, CappedRovers, FlowMonitor, PureRovers, Rovers, SharedTokenBucket};

use crate::metrics::{Report, ShardLatencies};
use crate::params::{Params, Strategy};
use crate::shard_cpu::{current_tid, Schedstat};
use crate::shard_tasks::{FlowUpdater, Releaser, ShardCounters, ShardState, Worker};

/// A day, in ns: seastar's bucket pretends it was replenished "yesterday".
const DAY_NS: u64 = 86_400 * 1_000_000_000;

/// Records a shard's sleeps and timer lateness inside the window.
struct Observer {
    window: Arc<MeasureWindow>,
    latencies: ShardLatencies,
}

impl ReactorObserver for Observer {
    fn slept(&mut self, target_ns: u64, overshoot_ns: u64) {
        if self.window.contains(target_ns) {
            self.latencies.record_sleep(overshoot_ns);
        }
    }

    fn timer_fired(&mut self, due_ns: u64, lateness_ns: u64) {
        if self.window.contains(due_ns) {
            self.latencies.record_lateness(lateness_ns);
        }
    }
}

/// Events the run reports as they happen.
pub enum RunEvent {
    Ready,
    MeasureStart,
    MeasureEnd,
}

/// Runs `strategy` with `params`; `gate` is called after `ready` (it may block).
pub fn run(
    strategy: Strategy,
    params: &Params,
    warmup: Duration,
    duration: Duration,
    on_event: &mut dyn FnMut(RunEvent) -> Result<(), String>,
) -> Result<Report, String> {
    match strategy {
        Strategy::CappedRelease => {
            run_with::<CappedRovers>(strategy, params, warmup, duration, on_event)
        }
        Strategy::Pure | Strategy::FlowMonitor => {
            run_with::<PureRovers>(strategy, params, warmup, duration, on_event)
        }
    }
}

fn run_with<R: Rovers + 'static>(
    strategy: Strategy,
    params: &Params,
    warmup: Duration,
    duration: Duration,
    on_event: &mut dyn FnMut(RunEvent) -> Result<(), String>,
) -> Result<Report, String> {
    let tb = Arc::new(
        SharedTokenBucket::<R>::new(
            params.rate,
            params.limit,
            params.threshold,
            monotonic_ns().saturating_sub(DAY_NS),
        )
        .with_replenish(params.replenish),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let window = Arc::new(MeasureWindow::default());
    let start = Arc::new(Barrier::new(params.shards + 1));
    let cpus = cpu_pinning::allowed_cpus();
    let pin = params.pin && cpus.len() >= params.shards;
    let counters: Vec<Arc<ShardCounters>> = (0..params.shards)
        .map(|_| Arc::new(ShardCounters::default()))
        .collect();
    let mut handles: Vec<JoinHandle<Result<ShardLatencies, String>>> = Vec::new();
    for shard in 0..params.shards {
        let spawn = ShardSpawn {
            shard,
            strategy,
            params: params.clone(),
            tb: tb.clone(),
            counters: counters[shard].clone(),
            stop: stop.clone(),
            window: window.clone(),
            start: start.clone(),
            cpu: pin.then(|| cpus[shard]),
        };
        let handle = std::thread::Builder::new()
            .name(format!("shard-{shard}"))
            .spawn(move || spawn.run())
            .map_err(|e| format!("cannot start shard {shard}: {e}"))?;
        handles.push(handle);
    }
    let stop_all = |handles: Vec<JoinHandle<Result<ShardLatencies, String>>>| {
        stop.store(true, Ordering::Relaxed);
        handles
            .into_iter()
            .map(|h| h.join().map_err(|_| "a shard panicked".to_string())?)
            .collect::<Result<Vec<_>, String>>()
    };
    if let Err(e) = on_event(RunEvent::Ready) {
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

    let granted = |c: &[Arc<ShardCounters>]| -> u64 {
        c.iter().map(|c| c.granted.load(Ordering::Relaxed)).sum()
    };
    let measured_start = sleep_until_ns(start_ns);
    let tids: Vec<i32> = counters
        .iter()
        .map(|c| c.tid.load(Ordering::Relaxed))
        .collect();
    let sched_start: Vec<Schedstat> = tids.iter().map(|&t| Schedstat::read(t)).collect();
    on_event(RunEvent::MeasureStart)?;
    // tokens/s of all shards every series period, as the coordinator samples it: a sample
    // the coordinator took too soon after the last one (it was kept off the CPU and is
    // catching up) is merged into the next.
    let series_ns = params.series.as_nanos() as u64;
    let mut series = Vec::new();
    let mut last_total = granted(&counters);
    let mut last_t = measured_start;
    let mut next = start_ns + series_ns;
    while next <= end_ns {
        let t = sleep_until_ns(next);
        next += series_ns;
        if t - last_t < series_ns / 2 {
            continue;
        }
        let total = granted(&counters);
        series.push((total - last_total) as f64 / ((t - last_t) as f64 / 1e9));
        last_total = total;
        last_t = t;
    }
    let measured_end = sleep_until_ns(end_ns);
    let elapsed = Duration::from_nanos(measured_end - measured_start);
    let shard_cpu: Vec<(f64, f64)> = tids
        .iter()
        .zip(&sched_start)
        .map(|(&t, &start)| Schedstat::read(t).shares_since(start, elapsed))
        .collect();
    on_event(RunEvent::MeasureEnd)?;
    let flow: Vec<(f64, f64)> = counters
        .iter()
        .map(|c| {
            (
                f64::from_bits(c.flow_ratio.load(Ordering::Relaxed)),
                f64::from_bits(c.flow_ratio_max.load(Ordering::Relaxed)),
            )
        })
        .collect();
    // The window's totals are what the shards counted as granted or released inside it
    // (final once they are joined), over its planned length: the coordinator's own
    // scheduling does not enter them.
    let latencies = stop_all(handles)?;
    let per_shard: Vec<[u64; 4]> = counters
        .iter()
        .map(|c| {
            [
                c.window_granted.load(Ordering::Relaxed),
                c.window_grabs.load(Ordering::Relaxed),
                c.window_released.load(Ordering::Relaxed),
                c.window_dropped.load(Ordering::Relaxed),
            ]
        })
        .collect();
    Ok(Report {
        strategy,
        rate: params.rate,
        seconds: duration.as_secs_f64(),
        shard_tokens: per_shard.iter().map(|s| s[0]).collect(),
        grabs: per_shard.iter().map(|s| s[1]).sum(),
        released: per_shard.iter().map(|s| s[2]).sum(),
        dropped: per_shard.iter().map(|s| s[3]).sum(),
        shard_cpu,
        series,
        flow,
        latencies,
        pinned: pin,
        head: tb.head(),
        tail: tb.tail(),
    })
}

/// What a shard thread needs.
struct ShardSpawn<R: Rovers> {
    shard: usize,
    strategy: Strategy,
    params: Params,
    tb: Arc<SharedTokenBucket<R>>,
    counters: Arc<ShardCounters>,
    stop: Arc<AtomicBool>,
    window: Arc<MeasureWindow>,
    start: Arc<Barrier>,
    cpu: Option<usize>,
}

impl<R: Rovers + 'static> ShardSpawn<R> {
    fn run(self) -> Result<ShardLatencies, String> {
        let p = &self.params;
        let pinned = self.cpu.map(cpu_pinning::pin_current_thread);
        self.counters.tid.store(current_tid(), Ordering::Relaxed);
        set_timer_slack_ns(1);
        let seed = p.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ self.shard as u64;
        let state = Rc::new(RefCell::new(ShardState {
            available: 0,
            flow: FlowMonitor::new(p.flow_smoothing, p.flow_threshold),
            flow_costs: self.strategy == Strategy::FlowMonitor,
        }));
        self.counters
            .flow_ratio
            .store(1.0f64.to_bits(), Ordering::Relaxed);
        self.counters
            .flow_ratio_max
            .store(1.0f64.to_bits(), Ordering::Relaxed);
        let mut reactor = Reactor::with_config(p.reactor);
        reactor.spawn(Box::new(Worker {
            tb: self.tb.clone(),
            state: state.clone(),
            counters: self.counters.clone(),
            window: self.window.clone(),
            pending: None,
            per_tick_cap: p.per_tick_cap(),
            grab_max: p.grab_max(),
            wait: p.wait,
            rng: SmallRng::seed_from_u64(seed),
        }));
        let period_ns = p.release_period.as_nanos() as u64;
        let mut observer = Observer {
            window: self.window.clone(),
            latencies: ShardLatencies::new(),
        };
        self.start.wait();
        let now = monotonic_ns();
        reactor.spawn_at(
            Box::new(Releaser {
                tb: self.tb.clone(),
                state: state.clone(),
                counters: self.counters.clone(),
                window: self.window.clone(),
                period_ns,
                per_period: p.release_per_period(),
                over_release: p.over_release,
                last_ns: Some(now),
            }),
            now + period_ns,
        );
        let flow_ns = p.flow_period.as_nanos() as u64;
        reactor.spawn_at(
            Box::new(FlowUpdater {
                state: state.clone(),
                counters: self.counters.clone(),
                period_ns: flow_ns,
            }),
            now + flow_ns,
        );
        if p.hog {
            reactor.spawn(Box::new(Hog::new(
                p.hog_busy.as_nanos() as f64,
                p.hog_rest.as_nanos() as f64,
                SmallRng::seed_from_u64(seed ^ 0x5151),
                self.stop.clone(),
            )));
        }
        let stop = self.stop.clone();
        reactor.run(|_| stop.load(Ordering::Relaxed), &mut observer);
        if let Some(Err(e)) = pinned {
            eprintln!("note: shard {} not pinned: {e}", self.shard);
        }
        Ok(observer.latencies)
    }
}
