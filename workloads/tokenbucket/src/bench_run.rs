//! One run: start the shards (threads, each a reactor with its tasks), wait out the warm-up,
//! sample the tokens granted through the measured window, stop the shards and report.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::SeedableRng;
use suite_cli::cli::Plan;
use suite_cli::events::{OnEvent, RunEvent};
use token_bucket::hog::Hog;
use token_bucket::measure_window::MeasureWindow;
use token_bucket::reactor::{monotonic_ns, sleep_until_ns, Reactor, ReactorObserver};
use token_bucket::shard_threads::{Shard, ShardThreads};
use token_bucket::shared_token_bucket::DAY_NS;
use token_bucket::{CappedRovers, FlowMonitor, PureRovers, Rovers, SharedTokenBucket};

use crate::metrics::{Report, ShardLatencies};
use crate::params::{Params, Strategy};
use crate::shard_cpu::{current_tid, Schedstat};
use crate::shard_tasks::{FlowUpdater, Releaser, ShardCounters, ShardState, Worker};

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

/// Runs `plan`, telling `on_event` of its moments (it may block after `ready`: the gate).
pub fn run(plan: &RunPlan, on_event: &mut OnEvent) -> Result<Report, String> {
    if plan.strategy.capped() {
        run_with::<CappedRovers>(plan, on_event)
    } else {
        run_with::<PureRovers>(plan, on_event)
    }
}

type RunPlan = Plan<Strategy, Params>;

fn run_with<R: Rovers + 'static>(plan: &RunPlan, on_event: &mut OnEvent) -> Result<Report, String> {
    let (strategy, params) = (plan.strategy, &plan.params);
    let tb = Arc::new(
        SharedTokenBucket::<R>::new(
            params.rate,
            params.limit,
            params.threshold,
            monotonic_ns().saturating_sub(DAY_NS),
        )
        .with_replenish(params.replenish),
    );
    let counters: Vec<Arc<ShardCounters>> = (0..params.shards)
        .map(|_| Arc::new(ShardCounters::default()))
        .collect();
    let threads = ShardThreads::spawn(params.shards, params.pin, |shard| {
        let spawn = ShardSpawn {
            strategy,
            params: params.clone(),
            tb: tb.clone(),
            counters: counters[shard.index].clone(),
        };
        move || spawn.run(shard)
    })?;
    if let Err(e) = on_event(RunEvent::Ready) {
        threads.abandon();
        return Err(e);
    }
    let (start_ns, end_ns) = threads.start(plan.warmup, plan.duration);

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
    let pinned = threads.pinned();
    let latencies = threads.stop()?.into_iter().collect::<Result<Vec<_>, _>>()?;
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
        rate: params.rate,
        seconds: plan.duration.as_secs_f64(),
        shard_tokens: per_shard.iter().map(|s| s[0]).collect(),
        grabs: per_shard.iter().map(|s| s[1]).sum(),
        released: per_shard.iter().map(|s| s[2]).sum(),
        dropped: per_shard.iter().map(|s| s[3]).sum(),
        shard_cpu,
        series,
        flow,
        latencies,
        pinned,
        head: tb.head(),
        tail: tb.tail(),
    })
}

/// What a shard thread needs besides its [`Shard`].
struct ShardSpawn<R: Rovers> {
    strategy: Strategy,
    params: Params,
    tb: Arc<SharedTokenBucket<R>>,
    counters: Arc<ShardCounters>,
}

impl<R: Rovers + 'static> ShardSpawn<R> {
    fn run(self, shard: Shard) -> Result<ShardLatencies, String> {
        let p = &self.params;
        let pinned = shard.settle();
        self.counters.tid.store(current_tid(), Ordering::Relaxed);
        let seed = shard.seed(p.seed);
        let state = Rc::new(RefCell::new(ShardState {
            available: 0,
            flow: FlowMonitor::new(p.flow_smoothing, p.flow_threshold),
            flow_costs: self.strategy.flow_costs(),
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
            window: shard.window.clone(),
            pending: None,
            per_tick_cap: p.per_tick_cap(),
            grab_max: p.grab_max(),
            wait: p.wait,
            rng: SmallRng::seed_from_u64(seed),
        }));
        let period_ns = p.release_period.as_nanos() as u64;
        let mut observer = Observer {
            window: shard.window.clone(),
            latencies: ShardLatencies::new(),
        };
        shard.wait_start();
        let now = monotonic_ns();
        reactor.spawn_at(
            Box::new(Releaser {
                tb: self.tb.clone(),
                state: state.clone(),
                counters: self.counters.clone(),
                window: shard.window.clone(),
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
            let hog = Hog::new(p.hog_busy, p.hog_rest, seed, shard.stop.clone());
            reactor.spawn(Box::new(hog));
        }
        reactor.run(|_| shard.stop.load(Ordering::Relaxed), &mut observer);
        shard.note_pinning(pinned);
        Ok(observer.latencies)
    }
}
