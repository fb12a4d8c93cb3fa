//! One client connection, organised like a database driver's connection router.
//!
//! - The handler map ([`HandlerMap`], behind a std `Mutex` as in the scylla driver) knows
//!   every live request of the connection.
//! - Callers put request frames on an unbounded queue; the router task writes them in
//!   batches (everything queued goes out in one socket write) and, for the
//!   `deadline-tracker` strategy, also polls the connection's [`ArmableTimer`] and times
//!   out due requests.
//! - The reader task parses answers, takes their handlers out of the map under one lock
//!   per batch of frames, and resolves them after unlocking.
//!
//! If the socket fails, the connection closes its map, fails every live request, and
//! raises the run's [`FailureSignal`].

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, Notify};

use crate::armable_timer::ArmableTimer;
use crate::completion::{Completion, ErrorKind, Outcome};
use crate::deadline_tracker::DeadlineTracker;
use crate::handler_map::{Handler, HandlerMap, RequestId};
use crate::params::Mode;
use crate::protocol::{self, Frame, FrameReader, ServerStats};
use crate::resolution_log::{Event, ResolutionLog};
use crate::strategy::router_deadlines;

/// Frames taken off the queue per wake-up of the router.
const BATCH_FRAMES: usize = 512;
/// A write buffer this full goes out even if more frames are queued.
const FLUSH_BYTES: usize = 256 << 10;
/// Initial size of the read buffer.
const READ_BUFFER: usize = 64 << 10;
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

#[derive(Clone, Copy)]
enum Body {
    Data { key: u64 },
    Stats,
}

#[derive(Clone, Copy)]
struct OutFrame {
    stream: u32,
    flags: u8,
    body: Body,
}

/// See the module documentation.
pub struct Connection {
    index: usize,
    map: Mutex<HandlerMap>,
    queue: mpsc::UnboundedSender<OutFrame>,
    /// The armable timer's rearm count, published by the router.
    rearms: AtomicU64,
    log: Option<Arc<ResolutionLog>>,
    failure: Arc<FailureSignal>,
}

impl Connection {
    /// Connects to `addr` and starts the router and reader tasks on the current runtime.
    pub async fn connect(
        index: usize,
        addr: SocketAddr,
        config: &ConnConfig,
        failure: Arc<FailureSignal>,
    ) -> std::io::Result<Arc<Connection>> {
        let socket = TcpStream::connect(addr).await?;
        socket.set_nodelay(true)?;
        let (rd, wr) = socket.into_split();
        let (queue, rx) = mpsc::unbounded_channel();
        let (tracker, timer) = if config.tracker {
            let timer = ArmableTimer::new();
            (Some(DeadlineTracker::new(timer.handle())), Some(timer))
        } else {
            (None, None)
        };
        let conn = Arc::new(Connection {
            index,
            map: Mutex::new(HandlerMap::new(tracker)),
            queue,
            rearms: AtomicU64::new(0),
            log: config.log.clone(),
            failure,
        });
        let encoder = Encoder {
            mode: config.mode,
            value: vec![0x5a; config.value_bytes as usize].into_boxed_slice(),
        };
        tokio::spawn(router(Arc::clone(&conn), wr, rx, timer, encoder));
        tokio::spawn(reader(Arc::clone(&conn), rd));
        Ok(conn)
    }

    /// The connection's position in the client's list.
    pub fn index(&self) -> usize {
        self.index
    }

    fn lock(&self) -> MutexGuard<'_, HandlerMap> {
        // Map operations leave it consistent at every panic point; keep going if poisoned.
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Inserts a live handler for a new request without sending it yet.
    pub fn register(
        &self,
        completion: &Arc<Completion>,
        deadline: Option<Instant>,
        measured: bool,
    ) -> Result<RequestId, ErrorKind> {
        let id = {
            let mut map = self.lock();
            let id = map.insert(Arc::clone(completion), deadline, measured)?;
            // Armed under the lock, before anything can take the handler to resolve it.
            completion.arm(id);
            id
        };
        if let Some(log) = &self.log {
            log.record(Event::Issued {
                conn: self.index,
                id,
                deadline,
                measured,
            });
        }
        Ok(id)
    }

    /// Queues the frame of registered request `id`.
    pub fn send(&self, id: RequestId, key: u64, measured: bool) {
        let frame = OutFrame {
            stream: id.stream(),
            flags: if measured { protocol::FLAG_MEASURED } else { 0 },
            body: Body::Data { key },
        };
        // A closed queue means the router died; it closes the map and fails the request.
        let _ = self.queue.send(frame);
    }

    /// Registers and sends a request.
    pub fn issue(
        &self,
        completion: &Arc<Completion>,
        deadline: Option<Instant>,
        key: u64,
        measured: bool,
    ) -> Result<RequestId, ErrorKind> {
        let id = self.register(completion, deadline, measured)?;
        self.send(id, key, measured);
        Ok(id)
    }

    /// Times request `id` out if it is still live: orphans it and resolves it with
    /// [`Outcome::Timeout`]. Returns false if it was resolved another way first.
    pub fn time_out(&self, id: RequestId) -> bool {
        let handler = self.lock().orphan(id);
        match handler {
            Some(handler) => {
                self.resolve(handler, Outcome::Timeout);
                true
            }
            None => false,
        }
    }

    /// Times out the requests whose tracked deadlines are due (`deadline-tracker`).
    pub(crate) fn expire_due(&self, ids: &mut Vec<u64>, expired: &mut Vec<Handler>) {
        self.lock().expire_due(Instant::now(), ids, expired);
        for handler in expired.drain(..) {
            self.resolve(handler, Outcome::Timeout);
        }
    }

    pub(crate) fn publish_rearms(&self, rearms: u64) {
        self.rearms.store(rearms, Ordering::Relaxed);
    }

    fn resolve(&self, handler: Handler, outcome: Outcome) {
        if let Some(log) = &self.log {
            log.record(Event::Resolved {
                conn: self.index,
                id: handler.id,
                outcome,
                at: Instant::now(),
            });
        }
        handler.completion.resolve(handler.id, outcome);
    }

    /// Gives up on every live request: orphans and resolves it as [`Outcome::Abandoned`].
    /// Returns how many there were.
    pub fn abandon_live(&self) -> usize {
        let mut handlers = Vec::new();
        self.lock().orphan_all(&mut handlers);
        let n = handlers.len();
        for handler in handlers {
            self.resolve(handler, Outcome::Abandoned);
        }
        n
    }

    /// Live requests.
    pub fn live(&self) -> usize {
        self.lock().live()
    }

    /// Stream ids still held by requests resolved without an answer.
    pub fn orphans(&self) -> usize {
        self.lock().orphans()
    }

    /// Late answers to measured requests that had timed out.
    pub fn late_responses(&self) -> u64 {
        self.lock().late_responses()
    }

    /// The deadline tracker's counters plus the armable timer's `rearms` (empty for the
    /// other strategies).
    pub fn tracker_counters(&self) -> Vec<(&'static str, u64)> {
        let mut counters = self.lock().tracker_counters();
        if !counters.is_empty() {
            counters.push(("rearms", self.rearms.load(Ordering::Relaxed)));
        }
        counters
    }

    /// Asks the server for this connection's counters.
    pub async fn query_stats(&self) -> Result<ServerStats, String> {
        let completion = Arc::new(Completion::new());
        let id = self
            .register(&completion, None, false)
            .map_err(|e| format!("connection {}: STATS not sent: {e:?}", self.index))?;
        let _ = self.queue.send(OutFrame {
            stream: id.stream(),
            flags: 0,
            body: Body::Stats,
        });
        match tokio::time::timeout(STATS_TIMEOUT, completion.wait(id)).await {
            Ok(Outcome::Ok) => Ok(self.lock().server_stats),
            Ok(other) => Err(format!(
                "connection {}: STATS request ended with {other:?}",
                self.index
            )),
            Err(_) => {
                self.time_out(id);
                Err(format!(
                    "connection {}: no STATS answer within {STATS_TIMEOUT:?}",
                    self.index
                ))
            }
        }
    }

    /// Closes the map, fails the live requests and raises the failure signal.
    fn fail(&self, reason: String) {
        let mut handlers = Vec::new();
        self.lock().close(&mut handlers);
        for handler in handlers {
            self.resolve(handler, Outcome::Error(ErrorKind::ConnectionClosed));
        }
        self.failure
            .raise(format!("connection {}: {reason}", self.index));
    }

    /// Handles one answer under the map lock; resolutions are deferred to `answered`.
    fn on_answer(
        &self,
        map: &mut HandlerMap,
        frame: Frame<'_>,
        answered: &mut Vec<(Handler, Outcome)>,
    ) -> Result<(), String> {
        let outcome = match frame.header.opcode {
            protocol::OP_DONE | protocol::OP_VALUE => Outcome::Ok,
            protocol::OP_ERROR => Outcome::Error(ErrorKind::Server),
            protocol::OP_STATS_RESULT => {
                map.server_stats =
                    ServerStats::from_bytes(frame.body).map_err(|e| e.to_string())?;
                Outcome::Ok
            }
            other => return Err(format!("unexpected answer opcode {other:#04x}")),
        };
        match map.take_answered(frame.header.stream) {
            Ok(Some(handler)) => answered.push((handler, outcome)),
            Ok(None) => {}
            Err(unknown) => {
                return Err(format!(
                    "answer on stream {} which carries no request",
                    unknown.0
                ))
            }
        }
        Ok(())
    }
}

/// Turns queued frames into bytes.
struct Encoder {
    mode: Mode,
    value: Box<[u8]>,
}

impl Encoder {
    fn encode(&self, frame: OutFrame, out: &mut Vec<u8>) {
        match (frame.body, self.mode) {
            (Body::Data { key }, Mode::Write) => {
                protocol::encode_write(out, frame.stream, frame.flags, key, &self.value)
            }
            (Body::Data { key }, Mode::Read) => {
                protocol::encode_read(out, frame.stream, frame.flags, key, self.value.len() as u32)
            }
            (Body::Stats, _) => protocol::encode_stats(out, frame.stream),
        }
    }
}

/// The router task: the writer, and the deadline timer when the strategy has one.
async fn router(
    conn: Arc<Connection>,
    wr: OwnedWriteHalf,
    rx: mpsc::UnboundedReceiver<OutFrame>,
    timer: Option<ArmableTimer>,
    encoder: Encoder,
) {
    // Both halves run inside this one task; the writer only ends on an error.
    let reason = tokio::select! {
        biased;
        reason = write_loop(wr, rx, &encoder) => reason,
        never = expiry(&conn, timer) => match never {},
    };
    conn.fail(reason);
}

async fn expiry(conn: &Connection, timer: Option<ArmableTimer>) -> Infallible {
    match timer {
        Some(mut timer) => router_deadlines::expiry_loop(conn, &mut timer).await,
        None => std::future::pending().await,
    }
}

/// Writes queued frames, batching everything queued into one write.
async fn write_loop(
    mut wr: OwnedWriteHalf,
    mut rx: mpsc::UnboundedReceiver<OutFrame>,
    encoder: &Encoder,
) -> String {
    let mut batch = Vec::with_capacity(BATCH_FRAMES);
    let mut out = Vec::with_capacity(FLUSH_BYTES);
    loop {
        if rx.recv_many(&mut batch, BATCH_FRAMES).await == 0 {
            return "request queue closed".to_string();
        }
        for frame in batch.drain(..) {
            encoder.encode(frame, &mut out);
        }
        while out.len() < FLUSH_BYTES {
            match rx.try_recv() {
                Ok(frame) => encoder.encode(frame, &mut out),
                Err(_) => break,
            }
        }
        if let Err(e) = wr.write_all(&out).await {
            return format!("write failed: {e}");
        }
        out.clear();
    }
}

/// The reader task.
async fn reader(conn: Arc<Connection>, mut rd: OwnedReadHalf) {
    let reason = read_loop(&conn, &mut rd).await;
    conn.fail(reason);
}

async fn read_loop(conn: &Connection, rd: &mut OwnedReadHalf) -> String {
    let mut frames = FrameReader::with_capacity(READ_BUFFER);
    let mut answered = Vec::with_capacity(BATCH_FRAMES);
    loop {
        match frames.fill(rd).await {
            Ok(0) if frames.has_partial_frame() => {
                return "server closed the connection mid-frame".to_string()
            }
            Ok(0) => return "server closed the connection".to_string(),
            Ok(_) => {}
            Err(e) => return format!("read failed: {e}"),
        }
        let result = {
            let mut map = conn.lock();
            loop {
                match frames.next_frame() {
                    Ok(Some(frame)) => {
                        if let Err(reason) = conn.on_answer(&mut map, frame, &mut answered) {
                            break Err(reason);
                        }
                    }
                    Ok(None) => break Ok(()),
                    Err(e) => break Err(e.to_string()),
                }
            }
        };
        for (handler, outcome) in answered.drain(..) {
            conn.resolve(handler, outcome);
        }
        if let Err(reason) = result {
            return reason;
        }
    }
}
