//! A shard's dispatcher: the reactor task that plays io_tester's fibers and seastar's
//! io_queue on one shard. Each poll it reaps completions (a fiber's request resolves, its
//! latency is recorded, capped-release gives its tokens back), lets the fibers whose turn
//! has come issue a request into the shard's FIFO queue (priced by the flow monitor under
//! flow-monitor), dispatches the queue's head while the bucket meter lets it
//! (`io_queue::poll_io_queue`), and hands the dispatched requests to the engine. With
//! requests in flight it polls again (it yields, so the shard's other tasks, the hog, run
//! between polls) until `idle_poll_ns` passed without a completion or a dispatch, as a
//! seastar reactor polls its rings before it sleeps (`--idle-poll-time-us`); then it waits
//! in the kernel for a completion at most `MAX_BLOCK_NS` (or until the next deadline) and
//! yields. With none in flight it sleeps until its next deadline (the reactor polls first). Once `stop` is set it issues nothing more,
//! drops what is still queued (never dispatched: `cancelled`) and finishes when the last
//! request in flight completed.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use hdrhistogram::Histogram;
use token_bucket::measure_window::MeasureWindow;
use token_bucket::reactor::{monotonic_ns, Next, Task};
use token_bucket::{FlowMonitor, Rovers};

use crate::bucket_meter::{BucketMeter, Grab};
use crate::engine::{fill_pattern, Completion, Direction, Engine, Request};
use crate::offsets::Offsets;
use crate::open_loop::Schedule;
use crate::params::REQUEST_TOKENS;

/// Longest wait for a completion inside one run of the task.
pub const MAX_BLOCK_NS: u64 = 1_000_000;
/// Longest sleep without requests in flight (the stop flag is seen at least this often).
const MAX_IDLE_NS: u64 = 5_000_000;

/// How the shard's requests look and are paced.
#[derive(Clone, Copy, Debug)]
pub struct DispatchConfig {
    pub reqsize: usize,
    pub direction: Direction,
    pub schedule: Schedule,
    /// Requests cost `REQUEST_TOKENS x flow ratio` above the threshold (flow-monitor).
    pub flow_costs: bool,
    pub flow_period_ns: u64,
    pub flow_smoothing: f64,
    pub flow_threshold: f64,
    /// How long the shard polls for completions before it waits in the kernel.
    pub idle_poll_ns: u64,
}

/// What a shard did; complete once the dispatcher finished.
pub struct ShardOutcome {
    /// Latency of the requests completed inside the window, ns.
    pub latency: Histogram<u64>,
    pub window_dispatched: u64,
    pub window_completed: u64,
    pub window_bytes: u64,
    /// Over the whole run.
    pub dispatched: u64,
    pub completed: u64,
    /// Requests issued but never dispatched (still queued at the stop).
    pub cancelled: u64,
    pub flow_ratio: f64,
    pub flow_ratio_max: f64,
    /// Set when the dispatcher ended (`error` says whether it failed).
    pub finished: bool,
    pub error: Option<String>,
}

impl Default for ShardOutcome {
    fn default() -> Self {
        ShardOutcome {
            latency: Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds"),
            window_dispatched: 0,
            window_completed: 0,
            window_bytes: 0,
            dispatched: 0,
            completed: 0,
            cancelled: 0,
            flow_ratio: 1.0,
            flow_ratio_max: 1.0,
            finished: false,
            error: None,
        }
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Fiber {
    busy: bool,
    /// When its current (busy) or next (idle) request is due.
    due_ns: u64,
    /// Where the current request's latency counts from.
    origin_ns: u64,
    offset: u64,
    cost: u64,
}

/// The dispatcher task of one shard (`meter` is `None` for unlimited).
pub struct Dispatcher<R: Rovers> {
    engine: Box<dyn Engine>,
    meter: Option<BucketMeter<R>>,
    offsets: Offsets,
    cfg: DispatchConfig,
    fibers: Vec<Fiber>,
    queue: VecDeque<usize>,
    queued_capacity: u64,
    in_flight: usize,
    completions: Vec<Completion>,
    flow: FlowMonitor,
    next_flow_ns: u64,
    /// When a poll last reaped a completion or dispatched a request.
    last_work_ns: u64,
    started: bool,
    window: Arc<MeasureWindow>,
    stop: Arc<AtomicBool>,
    outcome: Rc<RefCell<ShardOutcome>>,
}

impl<R: Rovers> Dispatcher<R> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        mut engine: Box<dyn Engine>,
        meter: Option<BucketMeter<R>>,
        offsets: Offsets,
        cfg: DispatchConfig,
        fibers: usize,
        window: Arc<MeasureWindow>,
        stop: Arc<AtomicBool>,
        outcome: Rc<RefCell<ShardOutcome>>,
    ) -> Self {
        if cfg.direction == Direction::Write {
            for slot in 0..fibers {
                fill_pattern(engine.buffer(slot), slot as u64 + 1);
            }
        }
        Dispatcher {
            engine,
            meter,
            offsets,
            cfg,
            fibers: vec![Fiber::default(); fibers],
            queue: VecDeque::with_capacity(fibers),
            queued_capacity: 0,
            in_flight: 0,
            completions: Vec::with_capacity(fibers),
            flow: FlowMonitor::new(cfg.flow_smoothing, cfg.flow_threshold),
            next_flow_ns: 0,
            last_work_ns: 0,
            started: false,
            window,
            stop,
            outcome,
        }
    }

    fn start(&mut self, now: u64) {
        let n = self.fibers.len();
        for (i, f) in self.fibers.iter_mut().enumerate() {
            f.due_ns = self.cfg.schedule.first(now, i, n);
        }
        self.next_flow_ns = now + self.cfg.flow_period_ns;
        self.started = true;
    }

    /// Resolves the reaped completions.
    fn complete(&mut self) -> Result<(), String> {
        if self.completions.is_empty() {
            return Ok(());
        }
        let now = monotonic_ns();
        let in_window = self.window.contains(now);
        let mut out = self.outcome.borrow_mut();
        for c in self.completions.drain(..) {
            let f = &mut self.fibers[c.slot];
            if !f.busy {
                return Err(format!("slot {} completed twice", c.slot));
            }
            let what = match self.cfg.direction {
                Direction::Read => "read",
                Direction::Write => "write",
            };
            match c.result {
                Ok(n) if n == self.cfg.reqsize => {}
                Ok(n) => {
                    return Err(format!(
                        "short {what}: {n} of {} bytes at offset {} of the scratch file",
                        self.cfg.reqsize, f.offset
                    ))
                }
                Err(errno) => {
                    return Err(format!(
                        "{what} of {} bytes at offset {} of the scratch file failed: {}",
                        self.cfg.reqsize,
                        f.offset,
                        std::io::Error::from_raw_os_error(errno)
                    ))
                }
            }
            f.busy = false;
            self.in_flight -= 1;
            out.completed += 1;
            self.flow.completed(1);
            if let Some(meter) = &self.meter {
                // Capped release: the tokens come back once the completion is reaped
                // (no-op for the pure rovers).
                meter.bucket().release(f.cost);
            }
            if in_window {
                out.window_completed += 1;
                out.window_bytes += self.cfg.reqsize as u64;
                out.latency
                    .saturating_record(now.saturating_sub(f.origin_ns).max(1));
            }
            f.due_ns = self.cfg.schedule.next(f.due_ns, now);
        }
        Ok(())
    }

    /// Fibers whose request is due issue it into the queue.
    fn issue_due(&mut self, now: u64) {
        let limit = self.meter.as_ref().map_or(u64::MAX, |m| m.bucket().limit());
        for (slot, f) in self.fibers.iter_mut().enumerate() {
            if f.busy || f.due_ns > now {
                continue;
            }
            f.busy = true;
            f.origin_ns = self.cfg.schedule.latency_origin(f.due_ns, now);
            f.offset = self.offsets.next_offset();
            f.cost = if self.cfg.flow_costs {
                self.flow.cost(REQUEST_TOKENS, limit)
            } else {
                REQUEST_TOKENS
            };
            self.queued_capacity += f.cost;
            self.queue.push_back(slot);
        }
    }

    /// At the stop: what never got dispatched is dropped.
    fn cancel_queued(&mut self) {
        let mut out = self.outcome.borrow_mut();
        for slot in self.queue.drain(..) {
            self.fibers[slot].busy = false;
            out.cancelled += 1;
        }
        self.queued_capacity = 0;
    }

    /// `poll_io_queue`: dispatch the queue's head while the meter lets it. Returns how many
    /// requests it dispatched and whether the per-poll limit left some queued.
    fn dispatch(&mut self, now: u64) -> Result<(u64, bool), String> {
        let mut available = None;
        if let Some(meter) = &mut self.meter {
            meter.maybe_replenish(now);
            available = Some(meter.reap());
        }
        let in_window = self.window.contains(now);
        let (mut count, mut tokens) = (0, 0);
        while let Some(&slot) = self.queue.front() {
            if self.meter.as_ref().is_some_and(|m| m.tick_full(tokens)) {
                self.engine.flush()?;
                return Ok((count, true));
            }
            let cost = self.fibers[slot].cost;
            if let (Some(meter), Some(a)) = (&mut self.meter, &mut available) {
                match meter.grab(cost, a, self.queued_capacity) {
                    Grab::Ok => {}
                    Grab::Stop => break,
                    Grab::Again => continue,
                }
            }
            self.queue.pop_front();
            self.queued_capacity -= cost;
            self.engine.submit(Request {
                slot,
                direction: self.cfg.direction,
                offset: self.fibers[slot].offset,
            })?;
            self.in_flight += 1;
            count += 1;
            tokens += cost;
            self.flow.dispatched(1);
            let mut out = self.outcome.borrow_mut();
            out.dispatched += 1;
            if in_window {
                out.window_dispatched += 1;
            }
        }
        self.engine.flush()?;
        Ok((count, false))
    }

    /// The next time something is due: an idle fiber's request, the reservation, the flow
    /// update; at most `MAX_IDLE_NS` away.
    fn next_deadline(&self, now: u64, stopping: bool) -> u64 {
        let mut at = (now + MAX_IDLE_NS).min(self.next_flow_ns);
        if !stopping {
            for f in self.fibers.iter().filter(|f| !f.busy) {
                at = at.min(f.due_ns);
            }
        }
        if !self.queue.is_empty() {
            if let Some(wait) = self.meter.as_ref().and_then(BucketMeter::wait_ns) {
                at = at.min(now + wait.max(1_000));
            }
        }
        at
    }

    fn poll(&mut self) -> Result<Next, String> {
        let now = monotonic_ns();
        if !self.started {
            self.start(now);
        }
        self.engine.reap(&mut self.completions, 0)?;
        let reaped = self.completions.len();
        self.complete()?;
        if now >= self.next_flow_ns {
            self.flow.update();
            self.next_flow_ns = now + self.cfg.flow_period_ns;
            let mut out = self.outcome.borrow_mut();
            out.flow_ratio = self.flow.ratio();
            out.flow_ratio_max = self.flow.max_ratio();
        }
        let stopping = self.stop.load(Ordering::Relaxed);
        if stopping {
            self.cancel_queued();
        } else {
            // The clock as of the completions just resolved: a closed-loop fiber is due again
            // when its request completed, and issues in this poll, as io_tester's fiber loops
            // on at once (with the poll's start it waited for the next poll).
            self.issue_due(monotonic_ns());
        }
        let (dispatched, cut) = self.dispatch(now)?;
        if stopping && self.in_flight == 0 {
            return Ok(Next::Done);
        }
        if reaped > 0 || dispatched > 0 {
            self.last_work_ns = now;
        }
        if cut {
            return Ok(Next::Yield); // the rest of the queue goes next poll
        }
        let deadline = self.next_deadline(now, stopping);
        if self.in_flight == 0 {
            return Ok(Next::SleepUntil(deadline));
        }
        let now = monotonic_ns();
        if now - self.last_work_ns < self.cfg.idle_poll_ns {
            return Ok(Next::Yield);
        }
        if deadline > now {
            let wait = (deadline - now).min(MAX_BLOCK_NS);
            self.engine.reap(&mut self.completions, wait)?;
        }
        Ok(Next::Yield)
    }

    /// Requests issued and not yet resolved (queued or in flight).
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }
}

impl<R: Rovers> Task for Dispatcher<R> {
    fn run(&mut self, _now_ns: u64) -> Next {
        match self.poll() {
            Ok(Next::Done) => {
                self.outcome.borrow_mut().finished = true;
                Next::Done
            }
            Ok(next) => next,
            Err(e) => {
                let mut out = self.outcome.borrow_mut();
                out.error = Some(e);
                out.finished = true;
                Next::Done
            }
        }
    }
}
