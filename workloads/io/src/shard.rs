//! One shard: a thread (pinned when there are CPUs enough) running a cooperative reactor with
//! the dispatcher task and, in the stall scenario, the tokenbucket suite's CPU hog.

use std::cell::RefCell;
use std::fs::File;
use std::rc::Rc;
use std::sync::mpsc::Sender;
use std::sync::Arc;

use token_bucket::hog::Hog;
use token_bucket::reactor::{NoObserver, Reactor, ReactorConfig};
use token_bucket::shard_threads::Shard;
use token_bucket::{Rovers, SharedTokenBucket};

use crate::bucket_meter::BucketMeter;
use crate::dispatcher::{DispatchConfig, Dispatcher, ShardOutcome};
use crate::engine::{Direction, Engine, Submit};
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
    submit: Submit,
    name: &str,
) -> Result<Box<dyn Engine>, String> {
    Ok(match kind {
        IoEngine::Psync => Box::new(PsyncEngine::new(file, slots, reqsize, name)?),
        IoEngine::IoUring => Box::new(UringEngine::new(file, slots, reqsize, submit)?),
    })
}

/// What a shard thread needs besides its [`Shard`].
pub struct ShardSpawn<R: Rovers> {
    pub strategy: Strategy,
    pub params: Params,
    pub file: Arc<File>,
    /// `None` for unlimited.
    pub tb: Option<Arc<SharedTokenBucket<R>>>,
    /// Told once the shard's engine is set up (or why it is not).
    pub ready: Sender<Result<(), String>>,
}

impl<R: Rovers + 'static> ShardSpawn<R> {
    pub fn run(self, shard: Shard) -> ShardOutcome {
        let p = &self.params;
        let pinned = shard.settle();
        let name = format!("shard-{}", shard.index);
        let engine = make_engine(
            p.engine,
            self.file.clone(),
            p.parallelism,
            p.reqsize,
            p.submit,
            &name,
        );
        let engine = match engine {
            Ok(engine) => {
                let _ = self.ready.send(Ok(()));
                engine
            }
            Err(e) => {
                let _ = self.ready.send(Err(e.clone()));
                shard.wait_start();
                return ShardOutcome {
                    error: Some(e),
                    finished: true,
                    ..ShardOutcome::default()
                };
            }
        };
        let seed = shard.seed(p.seed);
        let offsets = Offsets::new(
            p.op.is_random(),
            p.file_size,
            p.reqsize as u64,
            shard.index as u64,
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
            flow_costs: self.strategy.bucket().is_some_and(|b| b.flow_costs()),
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
            shard.window.clone(),
            shard.stop.clone(),
            outcome.clone(),
        )));
        if p.hog {
            let hog = Hog::new(p.hog_busy, p.hog_rest, seed, shard.stop.clone());
            reactor.spawn(Box::new(hog));
        }
        shard.wait_start();
        let done = outcome.clone();
        reactor.run(|_| done.borrow().finished, &mut NoObserver);
        drop(reactor);
        shard.note_pinning(pinned);
        outcome.take()
    }
}
