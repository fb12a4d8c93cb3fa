//! One connection against a scripted server that answers only when told: a caller's
//! timeout reaches the router as an orphan notice, a late answer frees the orphaned
//! stream, an answer and a timeout racing end each request exactly once (on the caller's
//! completion cell and on a request's own oneshot channel), a failing
//! connection fails every request once, callers wait while the router's queue is full, and
//! too many old orphans break the connection, as in the scylla driver.

use std::future::{poll_fn, Future};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use timers::completion::{Completion, ErrorKind, Outcome};
use timers::connection::{ConnConfig, Connection, FailureSignal, QUEUE_CAPACITY};
use timers::handler_map::OLD_ORPHAN_AGE;
use timers::params::Mode;
use timers::protocol::{self, FrameReader};
use timers::resolution_log::{Event, ResolutionLog};
use timers::router::OLD_ORPHAN_LIMIT;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

/// Far beyond anything these tests wait for: only a hang takes this long.
const HUNG: Duration = Duration::from_secs(120);

/// The server side of the connection, driven by the test.
struct Peer {
    socket: TcpStream,
    frames: FrameReader,
}

impl Peer {
    /// The stream id of the next request the client sends.
    async fn next_request(&mut self) -> u32 {
        loop {
            if let Some(frame) = self.frames.next_frame().expect("well-formed requests") {
                return frame.header.stream;
            }
            let read = self.frames.fill(&mut self.socket).await.expect("reads");
            assert!(read > 0, "the client closed the connection");
        }
    }

    /// Answers the request on `stream`.
    async fn answer(&mut self, stream: u32) {
        let mut out = Vec::new();
        protocol::encode_response(&mut out, stream, protocol::OP_DONE, &[]);
        self.socket.write_all(&out).await.expect("writes");
    }
}

struct Setup {
    conn: Arc<Connection>,
    peer: Peer,
    failure: Arc<FailureSignal>,
    log: Arc<ResolutionLog>,
}

async fn setup() -> Setup {
    setup_with(8).await
}

/// A connection whose `WRITE`s carry `value_bytes`.
async fn setup_with(value_bytes: u32) -> Setup {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let failure = Arc::new(FailureSignal::default());
    let log = Arc::new(ResolutionLog::new());
    let config = ConnConfig {
        mode: Mode::Write,
        value_bytes,
        tracker: false,
        log: Some(Arc::clone(&log)),
    };
    let (conn, accepted) = tokio::join!(
        Connection::connect(0, addr, &config, Arc::clone(&failure)),
        listener.accept()
    );
    Setup {
        conn: conn.unwrap(),
        peer: Peer {
            socket: accepted.unwrap().0,
            frames: FrameReader::with_capacity(4096),
        },
        failure,
        log,
    }
}

/// Waits until the router has published what `done` looks for, yielding to it meanwhile.
async fn until(done: impl Fn() -> bool) {
    while !done() {
        tokio::task::yield_now().await;
    }
}

/// Runs a test body, failing it if it hangs.
async fn guarded(body: impl Future<Output = ()>) {
    tokio::time::timeout(HUNG, body)
        .await
        .expect("the test hung: a wake-up or a resolution was lost");
}

/// Resolutions logged for the requests of the log, in order.
fn resolutions(log: &ResolutionLog) -> Vec<Outcome> {
    log.events()
        .into_iter()
        .filter_map(|event| match event {
            Event::Resolved { outcome, .. } => Some(outcome),
            Event::Issued { .. } => None,
        })
        .collect()
}

#[tokio::test]
async fn a_late_answer_frees_an_orphaned_stream() {
    guarded(async {
        let Setup {
            conn,
            mut peer,
            log,
            ..
        } = setup().await;
        let completion = Arc::new(Completion::new());
        let id = conn.issue(&completion, Some(Instant::now()), 1, true).await;
        let stream = peer.next_request().await;
        assert!(conn.time_out(&completion, id));
        assert!(!conn.time_out(&completion, id), "timed out twice");
        assert_eq!(completion.wait(id).await, Outcome::Timeout);
        until(|| conn.orphans() == 1).await;
        assert_eq!((conn.live(), conn.late_responses()), (0, 0));
        assert!(!conn.is_idle());

        peer.answer(stream).await;
        until(|| conn.orphans() == 0).await;
        assert_eq!(conn.late_responses(), 1);
        assert!(conn.is_idle());
        // The freed stream carries the next request.
        let next = conn.issue(&completion, None, 2, true).await;
        assert_eq!(peer.next_request().await, stream);
        peer.answer(stream).await;
        assert_eq!(completion.wait(next).await, Outcome::Ok);
        let verified = log.verify().unwrap();
        assert_eq!(verified.measured, 2);
        assert_eq!(resolutions(&log), [Outcome::Timeout, Outcome::Ok]);
    })
    .await;
}

/// The timeout wins but its notice has not reached the router when the answer comes: the
/// answer frees the stream, loses, and counts as late.
#[tokio::test]
async fn an_answer_that_loses_to_a_timeout_counts_as_late() {
    guarded(async {
        let Setup {
            conn,
            mut peer,
            log,
            ..
        } = setup().await;
        let completion = Arc::new(Completion::new());
        let id = conn.issue(&completion, Some(Instant::now()), 1, true).await;
        let stream = peer.next_request().await;
        // A timeout resolving the request without notifying the router (yet).
        assert!(completion.resolve(id, Outcome::Timeout));
        peer.answer(stream).await;
        until(|| conn.late_responses() == 1).await;
        assert_eq!((conn.live(), conn.orphans()), (0, 0));
        assert!(conn.is_idle());
        assert_eq!(completion.wait(id).await, Outcome::Timeout);
        assert!(resolutions(&log).is_empty(), "the router resolved it too");
    })
    .await;
}

#[tokio::test]
async fn an_answer_before_the_timeout_wins() {
    guarded(async {
        let Setup {
            conn,
            mut peer,
            log,
            ..
        } = setup().await;
        let completion = Arc::new(Completion::new());
        let id = conn.issue(&completion, Some(Instant::now()), 1, true).await;
        let stream = peer.next_request().await;
        peer.answer(stream).await;
        assert_eq!(completion.wait(id).await, Outcome::Ok);
        assert!(
            !conn.time_out(&completion, id),
            "timed out after its answer"
        );
        until(|| conn.is_idle()).await;
        assert_eq!((conn.orphans(), conn.late_responses()), (0, 0));
        log.verify().unwrap();
        assert_eq!(resolutions(&log), [Outcome::Ok]);
    })
    .await;
}

/// A thread times each request out while the server answers it: whichever wins, the
/// request resolves once, every late answer is counted, and no stream is left behind.
#[test]
fn timeouts_racing_answers_resolve_each_request_once() {
    const REQUESTS: usize = 2000;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(guarded(async {
        let Setup {
            conn,
            mut peer,
            log,
            ..
        } = setup().await;
        let (expire, expiries) = std::sync::mpsc::channel::<(Arc<Completion>, _)>();
        let expirer = {
            let conn = Arc::clone(&conn);
            std::thread::spawn(move || {
                let mut fired = 0;
                for (completion, id) in expiries {
                    fired += usize::from(conn.time_out(&completion, id));
                }
                fired
            })
        };
        let completion = Arc::new(Completion::new());
        let mut timeouts = 0;
        for key in 0..REQUESTS as u64 {
            let id = conn
                .issue(&completion, Some(Instant::now()), key, true)
                .await;
            let stream = peer.next_request().await;
            expire.send((Arc::clone(&completion), id)).unwrap();
            peer.answer(stream).await;
            match completion.wait(id).await {
                Outcome::Timeout => timeouts += 1,
                outcome => assert_eq!(outcome, Outcome::Ok),
            }
        }
        drop(expire);
        let fired = expirer.join().unwrap();
        assert_eq!(fired, timeouts, "timeouts that won vs timeouts seen");
        until(|| conn.is_idle()).await;
        assert_eq!(conn.late_responses(), timeouts as u64, "late answers");
        let verified = log.verify().unwrap();
        assert_eq!(verified.measured, REQUESTS);
        assert_eq!(verified.measured_count(Outcome::Timeout), timeouts);
        eprintln!("{timeouts} of {REQUESTS} requests timed out");
    }));
}

/// The driver's completions: each request's own oneshot channel. The caller times each
/// request out while the server answers it: whichever wins, the request resolves once, the
/// router counts every answer that lost as late, and no stream is left behind.
#[test]
fn oneshot_timeouts_racing_answers_resolve_each_request_once() {
    const REQUESTS: usize = 2000;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(guarded(async {
        let Setup {
            conn,
            mut peer,
            log,
            ..
        } = setup().await;
        let mut timeouts = 0;
        for key in 0..REQUESTS as u64 {
            let mut answer = conn.request(Some(Instant::now()), key, true).await;
            let stream = peer.next_request().await;
            peer.answer(stream).await;
            // Let the router's send and this timeout race, now one ahead, now the other.
            for _ in 0..key % 3 {
                tokio::task::yield_now().await;
            }
            match conn.time_out_answer(&mut answer) {
                None => timeouts += 1,
                Some(outcome) => assert_eq!(outcome, Outcome::Ok),
            }
        }
        until(|| conn.is_idle()).await;
        assert_eq!(conn.late_responses(), timeouts as u64, "late answers");
        let verified = log.verify().unwrap();
        assert_eq!(verified.measured, REQUESTS);
        assert_eq!(verified.measured_count(Outcome::Timeout), timeouts);
        assert_eq!(verified.measured_count(Outcome::Ok), REQUESTS - timeouts);
        eprintln!("{timeouts} of {REQUESTS} requests timed out");
    }));
}

#[tokio::test]
async fn abandoned_requests_resolve_once_and_free_their_streams_later() {
    guarded(async {
        let Setup {
            conn,
            mut peer,
            log,
            ..
        } = setup().await;
        let completion = Arc::new(Completion::new());
        let id = conn.issue(&completion, None, 1, true).await;
        let stream = peer.next_request().await;
        conn.abandon_live();
        assert_eq!(completion.wait(id).await, Outcome::Abandoned);
        until(|| conn.orphans() == 1).await;
        peer.answer(stream).await;
        until(|| conn.is_idle()).await;
        assert_eq!(conn.late_responses(), 1);
        log.verify().unwrap();
        assert_eq!(resolutions(&log), [Outcome::Abandoned]);
    })
    .await;
}

/// Requests live, timed out, queued and issued after the failure: each resolves once.
#[tokio::test]
async fn a_failing_connection_fails_every_request_once() {
    guarded(async {
        let Setup {
            conn,
            mut peer,
            failure,
            log,
        } = setup().await;
        let cells: Vec<Arc<Completion>> = (0..3).map(|_| Arc::new(Completion::new())).collect();
        let live = conn.issue(&cells[0], None, 1, true).await;
        let timed_out = conn.issue(&cells[1], Some(Instant::now()), 2, true).await;
        peer.next_request().await;
        assert!(conn.time_out(&cells[1], timed_out));
        let maybe_queued = conn.issue(&cells[2], None, 3, true).await;
        drop(peer);
        let reason = failure.wait().await;
        assert!(reason.starts_with("connection 0: "), "{reason}");

        let closed = Outcome::Error(ErrorKind::ConnectionClosed);
        assert_eq!(cells[0].wait(live).await, closed);
        assert_eq!(cells[1].wait(timed_out).await, Outcome::Timeout);
        assert_eq!(cells[2].wait(maybe_queued).await, closed);
        let after = conn.issue(&cells[0], None, 4, true).await;
        assert_eq!(cells[0].wait(after).await, closed);
        assert_eq!((conn.live(), conn.orphans()), (0, 0));
        let verified = log.verify().unwrap();
        assert_eq!(verified.measured, 4);
        assert_eq!(verified.measured_count(closed), 3);
    })
    .await;
}

/// The router's queue holds [`QUEUE_CAPACITY`] requests, as the driver's: with the writer
/// stuck on a peer that reads nothing, a caller waits once that many are queued, and goes
/// on once the peer reads; every request then resolves once.
#[tokio::test]
async fn a_caller_waits_while_the_queue_is_full() {
    guarded(async {
        // Large frames fill the socket's buffers after a few requests.
        let Setup {
            conn,
            mut peer,
            log,
            ..
        } = setup_with(64 << 10).await;
        let limit = QUEUE_CAPACITY + 100_000;
        let mut cells = Vec::new();
        let waiting = loop {
            assert!(
                cells.len() < limit,
                "{limit} requests queued without a wait"
            );
            let completion = Arc::new(Completion::new());
            cells.push(Arc::clone(&completion));
            let (conn, key) = (Arc::clone(&conn), cells.len() as u64);
            let mut issue = Box::pin(async move { conn.issue(&completion, None, key, true).await });
            let polled = poll_fn(|cx| Poll::Ready(issue.as_mut().poll(cx))).await;
            if polled.is_ready() {
                continue;
            }
            // A send may also be pending only for tokio's cooperative budget: then the
            // router runs meanwhile and the send goes through once the budget is back.
            for _ in 0..100 {
                tokio::task::yield_now().await;
            }
            match poll_fn(|cx| Poll::Ready(issue.as_mut().poll(cx))).await {
                Poll::Ready(_) => continue,
                Poll::Pending => break issue,
            }
        };
        let issued = cells.len();
        // The router has taken `live` requests and is stuck writing the last of them.
        assert_eq!(issued - 1 - conn.live(), QUEUE_CAPACITY, "{issued} issued");
        let mut streams = Vec::new();
        let reading = async {
            for _ in 0..issued {
                streams.push(peer.next_request().await);
            }
        };
        let (_, id) = tokio::join!(reading, waiting);
        for stream in streams {
            peer.answer(stream).await;
        }
        assert_eq!(cells.last().unwrap().wait(id).await, Outcome::Ok);
        until(|| conn.is_idle()).await;
        let verified = log.verify().unwrap();
        assert_eq!(verified.measured, issued);
        assert_eq!(verified.measured_count(Outcome::Ok), issued);
    })
    .await;
}

/// More than [`OLD_ORPHAN_LIMIT`] requests timed out and unanswered for over
/// [`OLD_ORPHAN_AGE`] break the connection, as the driver's orphaner does: the live
/// request and any later one fail.
#[tokio::test]
async fn too_many_old_orphans_break_the_connection() {
    guarded(async {
        let Setup {
            conn,
            mut peer,
            failure,
            log,
        } = setup().await;
        let orphans = OLD_ORPHAN_LIMIT + 1;
        let mut timed = Vec::new();
        for key in 0..orphans as u64 {
            let completion = Arc::new(Completion::new());
            let id = conn
                .issue(&completion, Some(Instant::now()), key, true)
                .await;
            timed.push((completion, id));
        }
        let live_cell = Arc::new(Completion::new());
        let live = conn.issue(&live_cell, None, 1 << 20, true).await;
        // Every request has its stream before it times out, so that each becomes an orphan.
        for _ in 0..=orphans {
            peer.next_request().await;
        }
        for (completion, id) in &timed {
            assert!(conn.time_out(completion, *id));
        }
        until(|| conn.orphans() == orphans).await;
        // Checked once every OLD_ORPHAN_AGE: broken within two of them on an idle machine.
        let broken = tokio::time::timeout(30 * OLD_ORPHAN_AGE, failure.wait()).await;
        let reason = broken.expect("the connection outlived its old orphans");
        assert_eq!(
            reason,
            format!("connection 0: too many old orphaned stream ids: {orphans}")
        );
        let closed = Outcome::Error(ErrorKind::ConnectionClosed);
        assert_eq!(live_cell.wait(live).await, closed);
        let after = conn.issue(&live_cell, None, 2 << 20, true).await;
        assert_eq!(live_cell.wait(after).await, closed);
        assert_eq!((conn.live(), conn.orphans()), (0, 0));
        let verified = log.verify().unwrap();
        assert_eq!(verified.measured, orphans + 2);
        assert_eq!(verified.measured_count(Outcome::Timeout), orphans);
        assert_eq!(verified.measured_count(closed), 2);
    })
    .await;
}
