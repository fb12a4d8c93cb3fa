//! `event-executor`, `hashed-wheel-offload`, `scheduled-executor`, `hashed-wheel`: lettuce's
//! command expiry and its alternatives. `event-executor` is lettuce up to 6.3.1, which
//! scheduled each expiry on its Netty `DefaultEventExecutorGroup`; `hashed-wheel-offload`
//! is lettuce 6.3.2, whose `HashedWheelTimer` task submits the expiry to that group (here a
//! group of `computation_threads`). For comparison, `scheduled-executor` is Java's
//! `ScheduledThreadPoolExecutor` and `hashed-wheel` Netty's wheel expiring on its worker.
//!
//! Each request schedules a timeout on a thread-based engine from the `timer-engines` crate
//! before it is sent; whoever completes the request cancels it on the spot (lettuce's
//! `onComplete(... -> timeout.cancel())`, see [`Completion`](crate::completion::Completion)).
//! When the timeout fires, the engine's callback completes the request as timed out on the
//! engine's thread, as lettuce completes the command exceptionally, and tells the
//! connection's router to orphan its stream. The completion's first resolution wins: a
//! callback that loses the race against the answer changes nothing and sends no notice.
//!
//! Cancellations happen on the resolving thread, not in the task, so the `timer` counters
//! of these strategies come from the engine (`cancelled` included).

use std::sync::Arc;
use std::time::Instant;

use timer_engines::{
    EventExecutorGroup, Expiry, HashedWheelTimer, ScheduledExecutor, TimerHandle, WheelConfig,
};

use crate::completion::{Completion, Outcome};
use crate::connection::Connection;
use crate::handler_map::RequestId;
use crate::metrics::TimerCounts;
use crate::params::Params;
use crate::strategy::{Request, StrategyKind};

/// What a scheduled timeout expires.
pub struct ExpiryTarget {
    conn: u32,
    id: RequestId,
    completion: Arc<Completion>,
}

enum Kind {
    Executor(ScheduledExecutor<ExpiryTarget>),
    EventExecutor(EventExecutorGroup<ExpiryTarget>),
    Wheel(HashedWheelTimer<ExpiryTarget>),
}

impl ExpiryTarget {
    /// The connection index given when the timeout was armed.
    pub fn conn(&self) -> u32 {
        self.conn
    }

    /// Resolves the request as timed out; whether that won (see [`Completion::resolve`]).
    pub fn resolve_timed_out(&self) -> bool {
        self.completion.resolve(self.id, Outcome::Timeout)
    }
}

/// A running timer engine; dropping it joins its threads.
pub struct Engine {
    kind: Kind,
    timeout: std::time::Duration,
}

impl Engine {
    /// Starts the engine of `strategy` for `conns`.
    pub fn new(strategy: StrategyKind, params: &Params, conns: Arc<[Arc<Connection>]>) -> Engine {
        Engine::with_expiry(strategy, params, move |target: ExpiryTarget| {
            conns[target.conn as usize].time_out(&target.completion, target.id);
        })
    }

    /// Starts the engine of `strategy` with `on_expire` run for each timeout that fires (the
    /// `timer-ops` scenario resolves the request as timed out, with no connection).
    pub fn with_expiry(
        strategy: StrategyKind,
        params: &Params,
        on_expire: impl Fn(ExpiryTarget) + Send + Sync + 'static,
    ) -> Engine {
        let wheel = |expiry| WheelConfig {
            tick: params.tick,
            wheel_size: params.wheel_size,
            expiry,
            ..WheelConfig::default()
        };
        let kind = match strategy {
            StrategyKind::ScheduledExecutor => {
                Kind::Executor(ScheduledExecutor::new(params.executor_threads, on_expire))
            }
            StrategyKind::EventExecutor => Kind::EventExecutor(EventExecutorGroup::new(
                params.computation_threads,
                on_expire,
            )),
            StrategyKind::HashedWheel => {
                Kind::Wheel(HashedWheelTimer::new(wheel(Expiry::OnWorker), on_expire))
            }
            StrategyKind::HashedWheelOffload => Kind::Wheel(HashedWheelTimer::new(
                wheel(Expiry::Offload {
                    threads: params.computation_threads,
                }),
                on_expire,
            )),
            other => unreachable!("{} does not run on a timer engine", other.name()),
        };
        Engine {
            kind,
            timeout: params.timeout,
        }
    }

    fn schedule(&self, deadline: Instant, target: ExpiryTarget) -> TimerHandle {
        match &self.kind {
            Kind::Executor(executor) => executor.schedule(deadline, target),
            Kind::EventExecutor(group) => group.schedule(deadline, target),
            Kind::Wheel(wheel) => wheel.new_timeout(deadline, target),
        }
    }

    /// Arms the timeout of request `id` of `completion` at `deadline` and leaves its handle in
    /// the cell, for whoever resolves the request to cancel (as [`Engine::execute`] does
    /// before it sends the request). `conn` is what [`ExpiryTarget::conn`] reports.
    pub fn arm(&self, conn: u32, id: RequestId, completion: &Arc<Completion>, deadline: Instant) {
        let target = ExpiryTarget {
            conn,
            id,
            completion: Arc::clone(completion),
        };
        completion.set_timeout(id, self.schedule(deadline, target));
    }

    /// Issues `request` with a timeout on the engine and waits for the outcome.
    pub async fn execute(
        &self,
        conn: &Connection,
        completion: &Arc<Completion>,
        request: Request,
        counts: &mut TimerCounts,
    ) -> Outcome {
        let deadline = request.sent_at + self.timeout;
        let task = conn.prepare(completion, Some(deadline), request.key, request.measured);
        let id = task.id();
        self.arm(conn.index() as u32, id, completion, deadline);
        counts.registered += 1;
        conn.send(task).await;
        let outcome = completion.wait(id).await;
        if outcome == Outcome::Timeout {
            counts.fired += 1;
        }
        outcome
    }

    /// The engine's cumulative counters.
    pub fn counters(&self) -> Vec<(&'static str, u64)> {
        match &self.kind {
            Kind::Executor(executor) => executor.counters(),
            Kind::EventExecutor(group) => group.counters(),
            Kind::Wheel(wheel) => wheel.counters(),
        }
    }
}
