//! How a waiting request learns its outcome.
//!
//! A request whose only resolvers are the router and its own caller (`none`,
//! `tokio-timeout`, `deadline-tracker`) gets a oneshot channel of its own, as in the scylla
//! driver (`ResponseHandler::response_sender`, scylla 1.9.0 `src/network/connection.rs`):
//! the router's [`Reply::Oneshot`] sends the outcome to the caller's [`Answer`]. A caller
//! that times out closes its receiver ([`Answer::close`]): an outcome sent before that is
//! still received, and a later send fails, so exactly one of the two wins and the router
//! counts its lost answer as late.
//!
//! A request that a thread-based engine times out has a third resolver, the engine's expiry
//! thread, and goes through a [`Completion`] ([`Reply::Cell`]) instead. Each load task owns
//! one [`Completion`] and reuses it for every request it issues (it
//! has one request in flight at a time), so completing a request allocates nothing: the
//! task arms the cell with the id of its next request ([`Completion::arm`]) before handing
//! the request to the connection's router, and the router's handler map holds a clone of
//! the task's `Arc` while the request is live.
//!
//! Several parties may try to end a request: the router (an answer, a tracked deadline, a
//! connection failure, the drain giving up), the task's own tokio timeout, or an engine's
//! expiry thread. [`Completion::resolve`] lets exactly one of them win: a compare-and-swap
//! takes the armed id, so every later attempt for that request (or for an earlier request
//! of the same task) fails and the loser learns it lost. Every resolution carries the
//! [`RequestId`] it is for, and the waiter checks it.
//!
//! A request timed by a thread-based engine leaves its [`TimerHandle`] in the cell, and
//! the winner cancels it unless the winner is that timeout itself, on the winner's thread,
//! as lettuce cancels a command's timeout in its `onComplete` callback.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use timer_engines::TimerHandle;
use tokio::sync::oneshot;

use crate::handler_map::RequestId;

/// The armed id of a cell that waits for no request.
const IDLE: u64 = u64::MAX;

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

/// Where the router delivers a request's outcome.
pub enum Reply {
    /// The sending half of the request's own channel (the driver's `response_sender`).
    Oneshot(oneshot::Sender<Outcome>),
    /// The load task's reusable cell, which an engine's expiry thread may resolve too.
    Cell(Arc<Completion>),
}

impl Reply {
    /// A oneshot channel for request `id`: the router's end and the caller's.
    pub fn oneshot(id: RequestId) -> (Reply, Answer) {
        let (tx, rx) = oneshot::channel();
        (Reply::Oneshot(tx), Answer { id, rx })
    }

    /// Delivers `outcome` as the end of request `id` unless something else ended it first;
    /// returns whether this call won.
    pub fn resolve(self, id: RequestId, outcome: Outcome) -> bool {
        match self {
            Reply::Oneshot(tx) => tx.send(outcome).is_ok(),
            Reply::Cell(completion) => completion.resolve(id, outcome),
        }
    }
}

/// The caller's end of a request's oneshot channel: a future of its outcome.
pub struct Answer {
    id: RequestId,
    rx: oneshot::Receiver<Outcome>,
}

impl Answer {
    /// The request's id.
    pub fn id(&self) -> RequestId {
        self.id
    }

    /// Gives up waiting (the caller's timeout): returns the outcome if the router sent it
    /// first, else `None`, and then the router's send fails. Not to be awaited afterwards.
    pub fn close(&mut self) -> Option<Outcome> {
        self.rx.close();
        self.rx.try_recv().ok()
    }
}

impl Future for Answer {
    type Output = Outcome;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Outcome> {
        let id = self.id;
        // Every path that drops a request's reply resolves it first (see `router`).
        Pin::new(&mut self.rx)
            .poll(cx)
            .map(|sent| sent.unwrap_or_else(|_| panic!("request {id:?} was dropped unresolved")))
    }
}

#[derive(Default)]
struct State {
    resolution: Option<(RequestId, Outcome)>,
    waker: Option<Waker>,
    /// The engine timeout of the pending request, cancelled on completion.
    timeout: Option<TimerHandle>,
}

/// A reusable one-request-at-a-time completion cell.
pub struct Completion {
    /// The raw id of the request that may still be resolved, or [`IDLE`]. Only
    /// [`Completion::arm`] sets an id; only the winning resolution takes it.
    armed: AtomicU64,
    state: Mutex<State>,
}

impl Default for Completion {
    fn default() -> Self {
        Completion {
            armed: AtomicU64::new(IDLE),
            state: Mutex::default(),
        }
    }
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

    /// Makes request `id` the one this cell waits for. Call before the request leaves the
    /// task, and only once the previous request's outcome has been waited for.
    pub fn arm(&self, id: RequestId) {
        let previous = self.armed.swap(id.raw(), Ordering::AcqRel);
        debug_assert_eq!(previous, IDLE, "{id:?} armed over a pending request");
    }

    /// Leaves the engine timeout of request `id` to be cancelled by whoever completes it.
    /// Call before the request is sent, so that no answer can come first; if the timeout
    /// has fired already, it has nothing left to cancel and is dropped.
    pub fn set_timeout(&self, id: RequestId, timeout: TimerHandle) {
        let mut state = self.lock();
        // The winner takes the handle under this lock after its compare-and-swap: checked
        // here under the same lock, the handle can never be left behind for the next request.
        if self.armed.load(Ordering::Acquire) == id.raw() {
            state.timeout = Some(timeout);
        }
    }

    /// Delivers `outcome` as the end of request `id` if nothing has ended it yet: cancels its
    /// engine timeout unless that timeout is what ended it, and wakes the waiter. Returns
    /// whether this call won; a losing call changes nothing.
    pub fn resolve(&self, id: RequestId, outcome: Outcome) -> bool {
        if self
            .armed
            .compare_exchange(id.raw(), IDLE, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return false;
        }
        let (waker, timeout) = {
            let mut state = self.lock();
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
        true
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
    use std::sync::Barrier;

    /// The router's send and the caller's close race: exactly one wins, and the caller
    /// sees the router's outcome exactly when the router won.
    #[test]
    fn a_oneshot_answer_and_its_close_resolve_exactly_once() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        for raw in 0..2000 {
            let id = RequestId::from_raw(raw);
            let (reply, mut answer) = Reply::oneshot(id);
            let start = Arc::new(Barrier::new(2));
            let router = {
                let start = Arc::clone(&start);
                std::thread::spawn(move || {
                    start.wait();
                    reply.resolve(id, Outcome::Ok)
                })
            };
            start.wait();
            let answered = answer.close();
            let router_won = router.join().unwrap();
            assert_eq!(answered.is_some(), router_won, "request {raw}");
            if router_won {
                assert_eq!(answered, Some(Outcome::Ok));
            }
        }
        let (reply, answer) = Reply::oneshot(RequestId::from_raw(1));
        assert!(reply.resolve(RequestId::from_raw(1), Outcome::Timeout));
        assert_eq!(runtime.block_on(answer), Outcome::Timeout);
    }

    #[tokio::test]
    async fn resolution_wakes_the_waiter() {
        let cell = Arc::new(Completion::new());
        let id = RequestId::from_raw(1);
        cell.arm(id);
        let remote = cell.clone();
        let resolver = tokio::spawn(async move {
            tokio::task::yield_now().await;
            assert!(remote.resolve(id, Outcome::Timeout));
        });
        assert_eq!(cell.wait(id).await, Outcome::Timeout);
        resolver.await.unwrap();
        // Resolved before waiting: ready at once, and the cell is reusable.
        let next = RequestId::from_raw(2);
        cell.arm(next);
        assert!(cell.resolve(next, Outcome::Ok));
        assert_eq!(cell.wait(next).await, Outcome::Ok);
    }

    #[tokio::test]
    async fn only_the_first_resolution_of_the_armed_request_wins() {
        let cell = Completion::new();
        let (first, second) = (RequestId::from_raw(7), RequestId::from_raw(8));
        assert!(!cell.resolve(first, Outcome::Ok), "nothing was armed");
        cell.arm(first);
        assert!(cell.resolve(first, Outcome::Timeout));
        assert!(!cell.resolve(first, Outcome::Ok), "resolved twice");
        assert_eq!(cell.wait(first).await, Outcome::Timeout);
        // A late resolver of the previous request cannot end the next one.
        cell.arm(second);
        assert!(!cell.resolve(first, Outcome::Ok));
        assert!(cell.resolve(second, Outcome::Ok));
        assert_eq!(cell.wait(second).await, Outcome::Ok);
    }

    /// Two threads released together resolve the same request: exactly one wins, and the
    /// waiter sees the winner's outcome.
    #[test]
    fn racing_resolvers_resolve_exactly_once() {
        let cell = Arc::new(Completion::new());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        for raw in 0..2000 {
            let id = RequestId::from_raw(raw);
            cell.arm(id);
            let start = Arc::new(Barrier::new(2));
            let racer = {
                let (cell, start) = (Arc::clone(&cell), Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    cell.resolve(id, Outcome::Timeout)
                })
            };
            start.wait();
            let mine = cell.resolve(id, Outcome::Ok);
            let theirs = racer.join().unwrap();
            assert!(mine != theirs, "request {raw}: both or neither won");
            let expected = if mine { Outcome::Ok } else { Outcome::Timeout };
            assert_eq!(runtime.block_on(cell.wait(id)), expected);
        }
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
        let take = |cell: &Completion| cell.lock().resolution.take();
        let first = RequestId::from_raw(1);
        cell.arm(first);
        cell.set_timeout(first, engine.schedule(far, ()));
        assert!(cell.resolve(first, Outcome::Ok));
        assert_eq!(cancelled(), 1);
        take(&cell);
        let second = RequestId::from_raw(2);
        cell.arm(second);
        cell.set_timeout(second, engine.schedule(far, ()));
        assert!(cell.resolve(second, Outcome::Timeout));
        assert_eq!(cancelled(), 1, "a timeout that fired is not cancelled");
        assert!(cell.lock().timeout.is_none());
        take(&cell);
        // A timeout that fired before its handle was set is not kept for the next request.
        let third = RequestId::from_raw(3);
        cell.arm(third);
        assert!(cell.resolve(third, Outcome::Timeout));
        cell.set_timeout(third, engine.schedule(far, ()));
        assert!(cell.lock().timeout.is_none());
    }

    #[tokio::test]
    #[should_panic(expected = "delivered to the waiter")]
    async fn a_resolution_for_another_request_is_caught() {
        let cell = Completion::new();
        cell.arm(RequestId::from_raw(1));
        cell.resolve(RequestId::from_raw(1), Outcome::Ok);
        cell.wait(RequestId::from_raw(2)).await;
    }
}
