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
use token_bucket::reactor::{monotonic_ns, Reactor, ReactorConfig, ReactorObserver};
use token_bucket::PureRovers;

/// Whether a missing requirement fails the test rather than skipping it, as in
/// tests/requirements.py: CI set (non-empty) or REQUIRE_BPF=1.
pub fn strict() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty())
        || std::env::var("REQUIRE_BPF").is_ok_and(|v| v == "1")
}

/// `need()` of tests/requirements.py: true when `problem` is None. Otherwise the test may
/// not go on: under [`strict`] this panics (cargo hides a skipped test's note, so a green
/// CI run must have run everything); elsewhere it prints the note and returns false.
pub fn need(problem: Option<String>) -> bool {
    match problem {
        None => true,
        Some(problem) if strict() => {
            panic!("CI or REQUIRE_BPF=1 is set, so this does not skip: {problem}")
        }
        Some(problem) => {
            eprintln!("skipped: {problem}");
            false
        }
    }
}

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
    /// Requests submitted since the last flush, and the most there were at a flush.
    unflushed: u64,
    pub most_per_flush: Rc<std::cell::Cell<u64>>,
    /// Reaps that were asked to wait for a completion (the shard blocking in the kernel).
    pub blocking_reaps: Rc<std::cell::Cell<u64>>,
    /// Reaps that were not (one a dispatcher poll).
    pub quick_reaps: Rc<std::cell::Cell<u64>>,
}

impl FakeEngine {
    pub fn new(slots: usize, service: Duration) -> FakeEngine {
        FakeEngine {
            service_ns: service.as_nanos() as u64,
            in_flight: VecDeque::new(),
            busy: vec![false; slots],
            buffers: vec![vec![0; 4096]; slots],
            submitted: 0,
            unflushed: 0,
            most_per_flush: Rc::default(),
            blocking_reaps: Rc::default(),
            quick_reaps: Rc::default(),
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
        self.unflushed += 1;
        self.in_flight
            .push_back((monotonic_ns() + self.service_ns, request.slot));
        Ok(())
    }

    fn flush(&mut self) -> Result<(), String> {
        let most = &self.most_per_flush;
        most.set(most.get().max(self.unflushed));
        self.unflushed = 0;
        Ok(())
    }

    fn reap(&mut self, out: &mut Vec<Completion>, wait_ns: u64) -> Result<(), String> {
        let mut now = monotonic_ns();
        let reaps = if wait_ns > 0 {
            &self.blocking_reaps
        } else {
            &self.quick_reaps
        };
        reaps.set(reaps.get() + 1);
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

/// How long [`run_shard`] runs the dispatcher.
#[derive(Clone, Copy, Debug)]
pub enum Until {
    /// For this long (the window is the whole run).
    Elapsed(Duration),
    /// Until this many requests completed: what the test needs, however long a busy
    /// machine takes to give it (at most [`PATIENCE`], then the test's count fails).
    Completed(u64),
}

/// How long [`Until::Completed`] waits at most.
pub const PATIENCE: Duration = Duration::from_secs(120);

/// What a [`run_shard`] got.
pub struct ShardRun {
    pub outcome: ShardOutcome,
    /// From the start to the end of the drain.
    pub elapsed: Duration,
    /// Times the reactor went idle (slept): a shard that never waits has 0.
    pub idle_sleeps: u64,
}

struct CountSleeps(u64);

impl ReactorObserver for CountSleeps {
    fn slept(&mut self, _target_ns: u64, _overshoot_ns: u64) {
        self.0 += 1;
    }

    fn timer_fired(&mut self, _due_ns: u64, _lateness_ns: u64) {}
}

/// Runs one shard's dispatcher with `engine` on this thread `until` (the window is the whole
/// run), stops it and lets it drain; returns what it counted.
pub fn run_shard(
    engine: Box<dyn Engine>,
    meter: Option<BucketMeter<PureRovers>>,
    schedule: Schedule,
    fibers: usize,
    until: Until,
) -> ShardRun {
    run_shard_polling(engine, meter, schedule, fibers, until, 0)
}

/// `run_shard` with the shard polling `idle_poll_ns` before it waits in the kernel.
pub fn run_shard_polling(
    engine: Box<dyn Engine>,
    meter: Option<BucketMeter<PureRovers>>,
    schedule: Schedule,
    fibers: usize,
    until: Until,
    idle_poll_ns: u64,
) -> ShardRun {
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
        idle_poll_ns,
    };
    let mut reactor = Reactor::with_config(ReactorConfig {
        idle_poll_ns,
        ..ReactorConfig::default()
    });
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
    let (end, completed) = match until {
        Until::Elapsed(run) => (start + run.as_nanos() as u64, u64::MAX),
        Until::Completed(n) => (start + PATIENCE.as_nanos() as u64, n),
    };
    window.set(start, end);
    let done = outcome.clone();
    let mut observer = CountSleeps(0);
    reactor.run(
        |now| {
            let out = done.borrow();
            if now >= end || out.window_completed >= completed {
                stop.store(true, Ordering::Relaxed);
            }
            out.finished
        },
        &mut observer,
    );
    let elapsed = Duration::from_nanos(monotonic_ns() - start);
    drop(reactor);
    ShardRun {
        outcome: outcome.take(),
        elapsed,
        idle_sleeps: observer.0,
    }
}
