//! One client connection, organised like the scylla driver's: callers hold a [`Connection`]
//! handle, and the connection's state belongs to its [`router`](crate::router) task.
//!
//! - A caller numbers its request from the connection's counter and puts it (where its
//!   outcome goes, its deadline if any, and whether it is measured) on the connection's
//!   queue, bounded at [`QUEUE_CAPACITY`] as the driver's (`mpsc::channel(1024)`): a caller
//!   waits for room. The outcome goes through a oneshot channel of the request's own, as
//!   in the driver ([`Connection::request`]), or, for a request an engine's expiry thread
//!   may also time out, to the caller's armed [`Completion`] ([`Connection::issue`]). The
//!   router allocates its stream id, writes it, and resolves it when the answer comes (or,
//!   for `deadline-tracker`, when its tracked deadline passes). No caller ever locks
//!   connection state.
//! - A request that ends without its answer on the caller's side (a tokio timeout, or an
//!   engine's expiry thread) is resolved there first, and only if that resolution wins is
//!   the router told, through a second channel, to orphan its stream; the late answer frees
//!   it. The first resolution of a request wins, so every request resolves exactly once.
//! - Counters the run needs (live requests, orphans, late answers, the deadline tracker's)
//!   are published by the router and read here without touching its state.
//!
//! If the connection breaks (its socket fails, or more than
//! [`OLD_ORPHAN_LIMIT`](crate::router::OLD_ORPHAN_LIMIT) orphans have waited over a second
//! for their answers, the driver's limit), the router fails every live and queued request
//! and raises the run's [`FailureSignal`].

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::net::TcpStream;
use tokio::sync::{mpsc, Notify};

use crate::armable_timer::ArmableTimer;
use crate::completion::{Answer, Completion, ErrorKind, Outcome, Reply};
use crate::deadline_tracker::DeadlineTracker;
use crate::handler_map::{Handler, HandlerMap, RequestId};
use crate::params::Mode;
use crate::protocol::ServerStats;
use crate::resolution_log::ResolutionLog;
use crate::resolver::Resolver;
use crate::router::published::Published;
use crate::router::{Body, Encoder, Notice, Router, Task};

/// Requests queued for the router at most (the driver's `mpsc::channel(1024)`).
pub const QUEUE_CAPACITY: usize = 1024;

/// How long a `STATS` request may take.
const STATS_TIMEOUT: Duration = Duration::from_secs(5);

/// Raised once by the first connection that fails; the run controller waits on it.
#[derive(Default)]
pub struct FailureSignal {
    reason: Mutex<Option<String>>,
    notify: Notify,
}

impl FailureSignal {
    /// Records `reason` unless a failure was recorded before.
    pub fn raise(&self, reason: String) {
        let mut slot = self.reason.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(reason);
            self.notify.notify_one();
        }
    }

    /// The first failure, if any.
    pub fn reason(&self) -> Option<String> {
        self.reason
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Waits until a failure is raised and returns its reason.
    pub async fn wait(&self) -> String {
        loop {
            if let Some(reason) = self.reason() {
                return reason;
            }
            self.notify.notified().await;
        }
    }
}

/// What a connection needs to know about the run.
#[derive(Clone)]
pub struct ConnConfig {
    pub mode: Mode,
    pub value_bytes: u32,
    /// Enforce deadlines in the router (`deadline-tracker`).
    pub tracker: bool,
    pub log: Option<Arc<ResolutionLog>>,
}

/// See the module documentation.
pub struct Connection {
    index: usize,
    tasks: mpsc::Sender<Task>,
    notices: mpsc::UnboundedSender<Notice>,
    /// The id of the next request (the driver's `request_id_generator`).
    next_id: AtomicU64,
    published: Arc<Published>,
    resolver: Resolver,
}

impl Connection {
    /// Connects to `addr` and starts the connection's router task on the current runtime.
    pub async fn connect(
        index: usize,
        addr: SocketAddr,
        config: &ConnConfig,
        failure: Arc<FailureSignal>,
    ) -> std::io::Result<Arc<Connection>> {
        let socket = TcpStream::connect(addr).await?;
        socket.set_nodelay(true)?;
        let (rd, wr) = socket.into_split();
        let (tasks, tasks_rx) = mpsc::channel(QUEUE_CAPACITY);
        let (notices, notices_rx) = mpsc::unbounded_channel();
        let (tracker, timer) = if config.tracker {
            let timer = ArmableTimer::new();
            (Some(DeadlineTracker::new(timer.handle())), Some(timer))
        } else {
            (None, None)
        };
        let map = HandlerMap::new(tracker);
        let published = Arc::new(Published::new(&map));
        let resolver = Resolver::new(index, config.log.clone());
        let router = Router {
            index,
            rd,
            wr,
            tasks: tasks_rx,
            notices: notices_rx,
            map,
            timer,
            encoder: Encoder::new(config.mode, config.value_bytes),
            resolver: resolver.clone(),
            published: Arc::clone(&published),
            failure,
        };
        tokio::spawn(router.run());
        Ok(Arc::new(Connection {
            index,
            tasks,
            notices,
            next_id: AtomicU64::new(0),
            published,
            resolver,
        }))
    }

    /// The connection's position in the client's list.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Numbers a new request and logs it.
    fn next_id(&self, deadline: Option<Instant>, measured: bool) -> RequestId {
        let id = RequestId::from_raw(self.next_id.fetch_add(1, Ordering::Relaxed));
        self.resolver.issued(id, deadline, measured);
        id
    }

    /// A request whose outcome goes through a oneshot channel of its own; the caller's end.
    fn new_oneshot_task(
        &self,
        deadline: Option<Instant>,
        measured: bool,
        body: Body,
    ) -> (Task, Answer) {
        let id = self.next_id(deadline, measured);
        let (reply, answer) = Reply::oneshot(id);
        let handler = Handler {
            id,
            reply,
            deadline,
            measured,
        };
        (Task { handler, body }, answer)
    }

    /// Sends a request for `key` whose outcome comes through a oneshot channel of its own,
    /// as in the driver (for requests that only the router and their caller resolve); the
    /// caller times it out with [`Connection::time_out_answer`].
    pub async fn request(&self, deadline: Option<Instant>, key: u64, measured: bool) -> Answer {
        let (task, answer) = self.new_oneshot_task(deadline, measured, Body::Data { key });
        self.send(task).await;
        answer
    }

    /// Times the request of `answer` out from the caller's side, as the driver's dropped
    /// request future does: closes the channel and, if the router had not sent the outcome
    /// yet, tells the router to orphan the stream and returns `None` (the request timed
    /// out); otherwise returns the router's outcome.
    pub fn time_out_answer(&self, answer: &mut Answer) -> Option<Outcome> {
        let sent = answer.close();
        if sent.is_none() {
            self.resolver.resolved(answer.id(), Outcome::Timeout);
            // A router that has stopped has forgotten the request already.
            let _ = self.notices.send(Notice::Orphan(answer.id()));
        }
        sent
    }

    /// Numbers a request for `key` and arms `completion` with its id, without sending it
    /// yet; its outcome will be delivered to `completion`, which an engine's expiry thread
    /// may also resolve ([`Connection::time_out`]).
    pub fn prepare(
        &self,
        completion: &Arc<Completion>,
        deadline: Option<Instant>,
        key: u64,
        measured: bool,
    ) -> Task {
        let id = self.next_id(deadline, measured);
        completion.arm(id);
        let handler = Handler {
            id,
            reply: Reply::Cell(Arc::clone(completion)),
            deadline,
            measured,
        };
        Task {
            handler,
            body: Body::Data { key },
        }
    }

    /// Hands a prepared request to the router, once its queue has room.
    pub async fn send(&self, task: Task) {
        // The router has stopped: nothing else will ever resolve the request.
        if let Err(mpsc::error::SendError(task)) = self.tasks.send(task).await {
            let Handler { id, reply, .. } = task.handler;
            let outcome = Outcome::Error(ErrorKind::ConnectionClosed);
            self.resolver.resolve(reply, id, outcome);
        }
    }

    /// Prepares and sends a request waited for on `completion`; returns its id.
    pub async fn issue(
        &self,
        completion: &Arc<Completion>,
        deadline: Option<Instant>,
        key: u64,
        measured: bool,
    ) -> RequestId {
        let task = self.prepare(completion, deadline, key, measured);
        let id = task.id();
        self.send(task).await;
        id
    }

    /// Times request `id` of `completion` out (an engine's expiry thread): resolves it with
    /// [`Outcome::Timeout`] unless it has been resolved already, and if so tells the router
    /// to orphan its stream. Returns whether this timed it out.
    pub fn time_out(&self, completion: &Completion, id: RequestId) -> bool {
        if !self.resolver.resolve_cell(completion, id, Outcome::Timeout) {
            return false;
        }
        // A router that has stopped has forgotten the request already.
        let _ = self.notices.send(Notice::Orphan(id));
        true
    }

    /// Asks the router to give up on every live request: it resolves them as
    /// [`Outcome::Abandoned`] and orphans their streams.
    pub fn abandon_live(&self) {
        let _ = self.notices.send(Notice::AbandonAll);
    }

    /// Live requests, as the router last published.
    pub fn live(&self) -> usize {
        self.published.live()
    }

    /// Stream ids still held by requests resolved without an answer.
    pub fn orphans(&self) -> usize {
        self.published.orphans()
    }

    /// Whether every request issued so far has reached the router and left its map: each
    /// was answered, failed, or got its late answer. Meaningful once no caller is issuing.
    pub fn is_idle(&self) -> bool {
        let issued = self.next_id.load(Ordering::Relaxed);
        // Read first: the map counters below are at least as new as this count.
        self.published.received_requests() == issued && self.live() == 0 && self.orphans() == 0
    }

    /// Late answers to measured requests that had timed out.
    pub fn late_responses(&self) -> u64 {
        self.published.late_responses()
    }

    /// The deadline tracker's counters plus the armable timer's `rearms` (empty for the
    /// other strategies).
    pub fn tracker_counters(&self) -> Vec<(&'static str, u64)> {
        self.published.tracker_counters()
    }

    /// Asks the server for this connection's counters.
    pub async fn query_stats(&self) -> Result<ServerStats, String> {
        let (task, mut answer) = self.new_oneshot_task(None, false, Body::Stats);
        self.send(task).await;
        let outcome = match tokio::time::timeout(STATS_TIMEOUT, &mut answer).await {
            Ok(outcome) => Some(outcome),
            Err(_elapsed) => self.time_out_answer(&mut answer),
        };
        match outcome {
            Some(Outcome::Ok) => Ok(self.published.server_stats()),
            Some(other) => Err(format!(
                "connection {}: STATS request ended with {other:?}",
                self.index
            )),
            None => Err(format!(
                "connection {}: no STATS answer within {STATS_TIMEOUT:?}",
                self.index
            )),
        }
    }
}
