//! Helpers of the io suite's tests: scratch files, an instant or slow fake engine, and one
//! shard's dispatcher run on the test's thread.
#![allow(dead_code)]

use std::cell::RefCell;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use io_bench::bucket_meter::BucketMeter;
use io_bench::dispatcher::{DispatchConfig, Dispatcher, ShardOutcome};
use io_bench::engine::{Completion, Direction, Engine, Request};
use io_bench::offsets::Offsets;
use io_bench::open_loop::Schedule;
use token_bucket::measure_window::MeasureWindow;
use token_bucket::reactor::{monotonic_ns, NoObserver, Reactor};
use token_bucket::PureRovers;

/// A file of `size` bytes of a known pattern, removed on drop.
pub struct ScratchFile {
    pub path: PathBuf,
}

impl ScratchFile {
    pub fn new(tag: &str, size: usize) -> ScratchFile {
        let path = std::env::temp_dir().join(format!(
            "io-bench-test-{tag}-{}-{}",
            std::process::id(),
            monotonic_ns()
        ));
        let data: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, data).expect("write the scratch file");
        ScratchFile { path }
    }

    pub fn path_str(&self) -> &str {
        self.path.to_str().expect("utf-8 temp path")
    }
}

impl Drop for ScratchFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// An engine whose requests take `service_ns` each (0 = done at once), checking that a
/// slot never has two requests at a time.
pub struct FakeEngine {
    service_ns: u64,
    in_flight: VecDeque<(u64, usize)>,
    busy: Vec<bool>,
    buffers: Vec<Vec<u8>>,
    pub submitted: u64,
}

impl FakeEngine {
    pub fn new(slots: usize, service: Duration) -> FakeEngine {
        FakeEngine {
            service_ns: service.as_nanos() as u64,
            in_flight: VecDeque::new(),
            busy: vec![false; slots],
            buffers: vec![vec![0; 4096]; slots],
            submitted: 0,
        }
    }
}

impl Engine for FakeEngine {
    fn submit(&mut self, request: Request) -> Result<(), String> {
        assert!(
            !self.busy[request.slot],
            "slot {} submitted twice",
            request.slot
        );
        self.busy[request.slot] = true;
        self.submitted += 1;
        self.in_flight
            .push_back((monotonic_ns() + self.service_ns, request.slot));
        Ok(())
    }

    fn flush(&mut self) -> Result<(), String> {
        Ok(())
    }

    fn reap(&mut self, out: &mut Vec<Completion>, wait_ns: u64) -> Result<(), String> {
        let mut now = monotonic_ns();
        if let Some(&(due, _)) = self.in_flight.front() {
            if due > now && wait_ns > 0 {
                std::thread::sleep(Duration::from_nanos((due - now).min(wait_ns)));
                now = monotonic_ns();
            }
        }
        while let Some(&(due, slot)) = self.in_flight.front() {
            if due > now {
                break;
            }
            self.in_flight.pop_front();
            self.busy[slot] = false;
            out.push(Completion {
                slot,
                result: Ok(4096),
            });
        }
        Ok(())
    }

    fn buffer(&mut self, slot: usize) -> &mut [u8] {
        &mut self.buffers[slot]
    }
}

/// Runs one shard's dispatcher with `engine` on this thread for `run` (the window is the
/// whole run), stops it and lets it drain; returns what it counted.
pub fn run_shard(
    engine: Box<dyn Engine>,
    meter: Option<BucketMeter<PureRovers>>,
    schedule: Schedule,
    fibers: usize,
    run: Duration,
) -> ShardOutcome {
    let window = Arc::new(MeasureWindow::default());
    let stop = Arc::new(AtomicBool::new(false));
    let outcome = Rc::new(RefCell::new(ShardOutcome::default()));
    let cfg = DispatchConfig {
        reqsize: 4096,
        direction: Direction::Read,
        schedule,
        flow_costs: false,
        flow_period_ns: 75_000_000,
        flow_smoothing: 0.95,
        flow_threshold: 1.1,
    };
    let mut reactor = Reactor::new();
    reactor.spawn(Box::new(Dispatcher::new(
        engine,
        meter,
        Offsets::new(true, 1 << 20, 4096, 0, 1, 1),
        cfg,
        fibers,
        window.clone(),
        stop.clone(),
        outcome.clone(),
    )));
    let start = monotonic_ns();
    let end = start + run.as_nanos() as u64;
    window.set(start, end);
    let done = outcome.clone();
    reactor.run(
        |now| {
            if now >= end {
                stop.store(true, Ordering::Relaxed);
            }
            done.borrow().finished
        },
        &mut NoObserver,
    );
    drop(reactor);
    outcome.take()
}
