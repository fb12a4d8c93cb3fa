//! How a waiting request learns its outcome.
//!
//! Each load task owns one [`Completion`] and reuses it for every request it issues (it
//! has one request in flight at a time), so completing a request allocates nothing: the
//! connection's handler map holds a clone of the task's `Arc` while the request is live,
//! and whoever takes the live handler out of the map calls [`Completion::resolve`] once.
//! Every resolution carries the [`RequestId`] it is for, and the waiter checks it, so a
//! resolution can never be taken for a different request of the same task.
//!
//! A request timed by a thread-based engine leaves its [`TimerHandle`] in the cell, and
//! the resolver cancels it when the request completes other than by its own expiry, on the
//! resolver's thread, as lettuce cancels a command's timeout in its `onComplete` callback.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use timer_engines::TimerHandle;

use crate::handler_map::RequestId;

/// Why a request failed without an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The connection broke (or was already broken) before the answer came.
    ConnectionClosed,
    /// The server answered with an error frame.
    Server,
    /// The connection had no free stream id.
    StreamsExhausted,
}

/// How one request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Answered in time.
    Ok,
    /// The client-side timeout fired first.
    Timeout,
    /// Failed.
    Error(ErrorKind),
    /// Still unanswered when the drain gave up; the run fails.
    Abandoned,
}

#[derive(Default)]
struct State {
    resolution: Option<(RequestId, Outcome)>,
    waker: Option<Waker>,
    /// The engine timeout of the pending request, cancelled on completion.
    timeout: Option<TimerHandle>,
}

/// A reusable one-request-at-a-time completion cell.
#[derive(Default)]
pub struct Completion {
    state: Mutex<State>,
}

impl Completion {
    /// An empty cell.
    pub fn new() -> Completion {
        Completion::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The critical sections cannot panic half-way; a poisoned lock holds valid state.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Leaves the engine timeout of the pending request to be cancelled on completion. Call
    /// before the request is sent, so that no answer can come first.
    pub fn set_timeout(&self, timeout: TimerHandle) {
        self.lock().timeout = Some(timeout);
    }

    /// Delivers the outcome of request `id`, cancels its engine timeout unless that timeout
    /// is what ended it, and wakes its waiter.
    pub fn resolve(&self, id: RequestId, outcome: Outcome) {
        let (waker, timeout) = {
            let mut state = self.lock();
            debug_assert!(
                state.resolution.is_none(),
                "request {id:?} resolved while an earlier resolution was pending"
            );
            state.resolution = Some((id, outcome));
            (state.waker.clone(), state.timeout.take())
        };
        if let Some(timeout) = timeout {
            if outcome != Outcome::Timeout {
                timeout.cancel();
            }
        }
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Waits for the outcome of request `id`.
    pub fn wait(&self, id: RequestId) -> Wait<'_> {
        Wait { cell: self, id }
    }
}

/// Future returned by [`Completion::wait`].
pub struct Wait<'a> {
    cell: &'a Completion,
    id: RequestId,
}

impl Future for Wait<'_> {
    type Output = Outcome;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Outcome> {
        let mut state = self.cell.lock();
        match state.resolution.take() {
            Some((id, outcome)) => {
                // A mismatch means a request was resolved twice or for the wrong task.
                assert_eq!(
                    id, self.id,
                    "resolution of request {id:?} delivered to the waiter of {:?}",
                    self.id
                );
                Poll::Ready(outcome)
            }
            None => {
                // The same task waits every time: keep its waker instead of cloning anew.
                if !state
                    .waker
                    .as_ref()
                    .is_some_and(|w| w.will_wake(cx.waker()))
                {
                    state.waker = Some(cx.waker().clone());
                }
                Poll::Pending
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn resolution_wakes_the_waiter() {
        let cell = Arc::new(Completion::new());
        let id = RequestId::new(3, 1);
        let remote = cell.clone();
        let resolver = tokio::spawn(async move {
            tokio::task::yield_now().await;
            remote.resolve(id, Outcome::Timeout);
        });
        assert_eq!(cell.wait(id).await, Outcome::Timeout);
        resolver.await.unwrap();
        // Resolved before waiting: ready at once, and the cell is reusable.
        let next = RequestId::new(3, 2);
        cell.resolve(next, Outcome::Ok);
        assert_eq!(cell.wait(next).await, Outcome::Ok);
    }

    #[test]
    fn completion_cancels_the_engine_timeout_unless_it_fired() {
        let engine = timer_engines::ScheduledExecutor::new(1, |_: ()| {});
        let far = std::time::Instant::now() + std::time::Duration::from_secs(3600);
        let cancelled = || {
            engine
                .counters()
                .into_iter()
                .find(|(name, _)| *name == "cancelled")
                .map(|(_, v)| v)
                .unwrap()
        };
        let cell = Completion::new();
        cell.set_timeout(engine.schedule(far, ()));
        cell.resolve(RequestId::new(1, 1), Outcome::Ok);
        assert_eq!(cancelled(), 1);
        let _ = cell.lock().resolution.take();
        cell.set_timeout(engine.schedule(far, ()));
        cell.resolve(RequestId::new(1, 2), Outcome::Timeout);
        assert_eq!(cancelled(), 1, "a timeout that fired is not cancelled");
        assert!(cell.lock().timeout.is_none());
    }

    #[tokio::test]
    #[should_panic(expected = "delivered to the waiter")]
    async fn a_resolution_for_another_request_is_caught() {
        let cell = Completion::new();
        cell.resolve(RequestId::new(1, 1), Outcome::Ok);
        cell.wait(RequestId::new(1, 2)).await;
    }
}
