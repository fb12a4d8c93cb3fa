//! One shard: a thread (pinned when there are CPUs enough) running a cooperative reactor with
//! the dispatcher task and, in the stall scenario, the tokenbucket suite's CPU hog.

use std::cell::RefCell;
use std::fs::File;
use std::rc::Rc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Barrier};

use rand::rngs::SmallRng;
use rand::SeedableRng;
use token_bucket::hog::Hog;
use token_bucket::measure_window::MeasureWindow;
use token_bucket::reactor::{set_timer_slack_ns, NoObserver, Reactor, ReactorConfig};
use token_bucket::{cpu_pinning, Rovers, SharedTokenBucket};

use crate::bucket_meter::BucketMeter;
use crate::dispatcher::{DispatchConfig, Dispatcher, ShardOutcome};
use crate::engine::{Direction, Engine};
use crate::offsets::Offsets;
use crate::open_loop::Schedule;
use crate::params::{IoEngine, Params, Strategy};
use crate::psync_engine::PsyncEngine;
use crate::uring_engine::UringEngine;

/// The engine `kind` with `slots` buffers of `reqsize` on `file`.
pub fn make_engine(
    kind: IoEngine,
    file: Arc<File>,
    slots: usize,
    reqsize: usize,
    name: &str,
) -> Result<Box<dyn Engine>, String> {
    Ok(match kind {
        IoEngine::Psync => Box::new(PsyncEngine::new(file, slots, reqsize, name)?),
        IoEngine::IoUring => Box::new(UringEngine::new(file, slots, reqsize)?),
    })
}

/// What a shard thread needs.
pub struct ShardSpawn<R: Rovers> {
    pub shard: usize,
    pub strategy: Strategy,
    pub params: Params,
    pub file: Arc<File>,
    /// `None` for unlimited.
    pub tb: Option<Arc<SharedTokenBucket<R>>>,
    pub window: Arc<MeasureWindow>,
    pub stop: Arc<AtomicBool>,
    /// Told once the shard's engine is set up (or why it is not).
    pub ready: Sender<Result<(), String>>,
    pub start: Arc<Barrier>,
    pub cpu: Option<usize>,
}

impl<R: Rovers + 'static> ShardSpawn<R> {
    pub fn run(self) -> ShardOutcome {
        let p = &self.params;
        let pinned = self.cpu.map(cpu_pinning::pin_current_thread);
        set_timer_slack_ns(1);
        let name = format!("shard-{}", self.shard);
        let engine = make_engine(p.engine, self.file.clone(), p.parallelism, p.reqsize, &name);
        let engine = match engine {
            Ok(engine) => {
                let _ = self.ready.send(Ok(()));
                engine
            }
            Err(e) => {
                let _ = self.ready.send(Err(e.clone()));
                self.start.wait();
                return ShardOutcome {
                    error: Some(e),
                    finished: true,
                    ..ShardOutcome::default()
                };
            }
        };
        let seed = p.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ self.shard as u64;
        let offsets = Offsets::new(
            p.op.is_random(),
            p.file_size,
            p.reqsize as u64,
            self.shard as u64,
            p.shards as u64,
            seed,
        );
        let cfg = DispatchConfig {
            reqsize: p.reqsize,
            direction: if p.op.is_write() {
                Direction::Write
            } else {
                Direction::Read
            },
            schedule: Schedule::new(p.rps, p.think_time.as_nanos() as u64),
            flow_costs: self.strategy == Strategy::FlowMonitor,
            flow_period_ns: p.flow_period.as_nanos() as u64,
            flow_smoothing: p.flow_smoothing,
            flow_threshold: p.flow_threshold,
            idle_poll_ns: p.idle_poll.as_nanos() as u64,
        };
        let outcome = Rc::new(RefCell::new(ShardOutcome::default()));
        let meter = self
            .tb
            .clone()
            .map(|tb| BucketMeter::new(tb, p.per_tick_threshold(), R::CAPPED));
        let mut reactor = Reactor::with_config(ReactorConfig {
            idle_poll_ns: p.idle_poll.as_nanos() as u64,
            ..ReactorConfig::default()
        });
        reactor.spawn(Box::new(Dispatcher::new(
            engine,
            meter,
            offsets,
            cfg,
            p.parallelism,
            self.window.clone(),
            self.stop.clone(),
            outcome.clone(),
        )));
        if p.hog {
            reactor.spawn(Box::new(Hog::new(
                p.hog_busy.as_nanos() as f64,
                p.hog_rest.as_nanos() as f64,
                SmallRng::seed_from_u64(seed ^ 0x5151),
                self.stop.clone(),
            )));
        }
        self.start.wait();
        let done = outcome.clone();
        reactor.run(|_| done.borrow().finished, &mut NoObserver);
        drop(reactor);
        if let Some(Err(e)) = pinned {
            eprintln!("note: shard {} not pinned: {e}", self.shard);
        }
        outcome.take()
    }
}
