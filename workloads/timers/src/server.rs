//! The server the client is measured against: a tokio multi-thread runtime answering the
//! [`protocol`](crate::protocol) on 127.0.0.1.
//!
//! Per connection a reader task parses request frames and a writer task writes the answers
//! in batches. Answers due at once go straight to the writer's queue; an answer with a
//! service time, or one of the `slow_fraction` answered only after `slow_delay`, is sent by
//! its own task when its tokio timer fires, so answers leave in any order.
//!
//! A client that sends without reading cannot make the server grow: the writer's queue is
//! bounded ([`REPLY_QUEUE`] answers, as the scylla driver bounds its own connection's queue
//! at 1024), and so are the answers waiting for their delay ([`MAX_DELAYED`]); the reader
//! stops reading while either is full, and TCP's window stops the client. Accepting goes on
//! through per-connection failures and waits out a lack of descriptors or memory
//! ([`accept`]), so no client can end the server. Each connection
//! counts the requests flagged as measured and how many of them it made slow, and reports
//! both in answer to `STATS`; since frames of one connection are read in order, a `STATS`
//! sent after a batch of requests counts all of them.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use rand_distr::Exp1;
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinHandle;

use crate::params::{Params, ServiceDist};
use crate::protocol::{self, FrameReader, ProtocolError, Request, ServerStats};

/// Answers taken off the queue per wake-up of a writer.
const BATCH_REPLIES: usize = 512;
/// A write buffer this full goes out even if more answers are queued.
const FLUSH_BYTES: usize = 256 << 10;
/// Answers queued for a connection's writer at most (the scylla driver's request queue is a
/// `mpsc::channel(1024)` too); beyond, the reader waits.
pub(crate) const REPLY_QUEUE: usize = 1024;
/// Answers of one connection waiting for their delay at most: the most requests a client
/// with 15-bit stream ids (the scylla driver's, and ours) has in flight on a connection.
pub(crate) const MAX_DELAYED: usize = 1 << 15;
/// How long accepting waits before it retries when descriptors or memory ran out.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);
/// Initial size of a connection's read buffer.
pub(crate) const READ_BUFFER: usize = 64 << 10;
/// Longest exponential service time, in means.
const EXP_CAP: f64 = 10.0;

/// How the server answers.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub threads: usize,
    pub slow_fraction: f64,
    pub slow_delay: Duration,
    pub service_time: Duration,
    pub service_dist: ServiceDist,
    pub seed: u64,
}

impl ServerConfig {
    /// The server side of a run's parameters.
    pub fn from_params(params: &Params) -> ServerConfig {
        ServerConfig {
            threads: params.server_threads,
            slow_fraction: params.slow_fraction,
            slow_delay: params.slow_delay,
            service_time: params.service_time,
            service_dist: params.service_dist,
            seed: params.seed,
        }
    }

    /// The random source of connection `conn_no`'s decisions.
    pub(crate) fn rng(&self, conn_no: u64) -> SmallRng {
        SmallRng::seed_from_u64(self.seed ^ conn_no.wrapping_mul(0x2545_f491_4f6c_dd1d))
    }

    /// The delay before answering one request, and whether it is a slow one. The CQL
    /// server ([`crate::cql::server`]) answers its writes by the same decision.
    pub(crate) fn delay(&self, rng: &mut SmallRng) -> (Duration, bool) {
        if self.slow_fraction > 0.0 && rng.random::<f64>() < self.slow_fraction {
            return (self.slow_delay, true);
        }
        let service = match self.service_dist {
            ServiceDist::Fixed => self.service_time,
            ServiceDist::Exp if self.service_time.is_zero() => Duration::ZERO,
            ServiceDist::Exp => {
                let draw: f64 = rng.sample(Exp1);
                self.service_time.mul_f64(draw.min(EXP_CAP))
            }
        };
        (service, false)
    }
}

/// The protocol a server speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Protocol {
    /// The suite's own [`protocol`](crate::protocol).
    Timers,
    /// CQL native protocol v4, for the scylla driver ([`crate::cql::server`]).
    #[cfg(feature = "cql")]
    Cql,
}

/// A running server; dropping it shuts its runtime down.
pub struct Server {
    runtime: Option<Runtime>,
    addr: SocketAddr,
    accept: Option<JoinHandle<io::Result<()>>>,
}

impl Server {
    /// Binds 127.0.0.1:`port` (0 = any free port) and starts serving our protocol on a
    /// runtime of `config.threads` workers.
    pub fn start(config: ServerConfig, port: u16) -> io::Result<Server> {
        Server::start_protocol(config, port, Protocol::Timers)
    }

    /// [`Server::start`], speaking `protocol`.
    pub fn start_protocol(
        config: ServerConfig,
        port: u16,
        protocol: Protocol,
    ) -> io::Result<Server> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.threads)
            .thread_name("timers-server")
            .enable_all()
            .build()?;
        let listener = runtime.block_on(TcpListener::bind(SocketAddr::from((
            Ipv4Addr::LOCALHOST,
            port,
        ))))?;
        let addr = listener.local_addr()?;
        let config = Arc::new(config);
        let accept = match protocol {
            Protocol::Timers => runtime.spawn(accept_loop(listener, config)),
            #[cfg(feature = "cql")]
            Protocol::Cql => runtime.spawn(crate::cql::server::accept_loop(listener, config)),
        };
        Ok(Server {
            runtime: Some(runtime),
            addr,
            accept: Some(accept),
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves until accepting fails.
    pub fn wait(mut self) -> io::Result<()> {
        let runtime = self.runtime.as_ref().expect("present until drop");
        let accept = self.accept.take().expect("present until wait");
        runtime
            .block_on(accept)
            .map_err(|e| io::Error::other(format!("accept task failed: {e}")))?
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

async fn accept_loop(listener: TcpListener, config: Arc<ServerConfig>) -> io::Result<()> {
    let mut conn_no = 0u64;
    loop {
        let socket = accept(&listener, "timers server").await?;
        tokio::spawn(serve_connection(socket, Arc::clone(&config), conn_no));
        conn_no += 1;
    }
}

/// What an error of `accept` means for the accepting loop.
#[derive(Debug, PartialEq, Eq)]
enum AcceptFailure {
    /// One connection failed (reset or aborted before it was taken, ...): take the next.
    Connection,
    /// The listener itself is broken: stop serving.
    Listener,
    /// Out of descriptors or memory (or unknown): wait, then retry, as hyper's and tokio's
    /// servers do; connections closing free what is missing.
    Resources,
}

fn accept_failure(e: &io::Error) -> AcceptFailure {
    match e.raw_os_error() {
        Some(
            libc::ECONNABORTED
            | libc::ECONNRESET
            | libc::ECONNREFUSED
            | libc::EPROTO
            | libc::EPERM
            | libc::EINTR
            | libc::EAGAIN
            | libc::ETIMEDOUT
            | libc::ENETDOWN
            | libc::ENETUNREACH
            | libc::EHOSTDOWN
            | libc::EHOSTUNREACH
            | libc::ENONET
            | libc::ENOPROTOOPT,
        ) => AcceptFailure::Connection,
        Some(libc::EBADF | libc::EINVAL | libc::ENOTSOCK | libc::EOPNOTSUPP | libc::EFAULT) => {
            AcceptFailure::Listener
        }
        _ => AcceptFailure::Resources,
    }
}

/// The next connection on `listener` (both protocols' accepting loops). A failure of one
/// connection is skipped; running out of descriptors (EMFILE, ENFILE) or memory (ENOBUFS,
/// ENOMEM) is said once on stderr (`who`: the server's name) and retried every
/// [`ACCEPT_BACKOFF`] until it passes. Only a broken listener is an error.
pub(crate) async fn accept(listener: &TcpListener, who: &str) -> io::Result<TcpStream> {
    let mut said = false;
    loop {
        match listener.accept().await {
            Ok((socket, _)) => {
                // Fails only for a socket already dead, which its reader will find.
                let _ = socket.set_nodelay(true);
                if said {
                    eprintln!("{who}: accepting again");
                }
                return Ok(socket);
            }
            Err(e) => match accept_failure(&e) {
                AcceptFailure::Connection => {}
                AcceptFailure::Listener => return Err(e),
                AcceptFailure::Resources => {
                    if !said {
                        eprintln!(
                            "{who}: cannot accept a connection: {e}; retrying every {} ms",
                            ACCEPT_BACKOFF.as_millis()
                        );
                        said = true;
                    }
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
        }
    }
}

/// One answer on its way to the writer.
#[derive(Clone, Copy, Debug)]
struct Reply {
    stream: u32,
    kind: ReplyKind,
}

#[derive(Clone, Copy, Debug)]
enum ReplyKind {
    Done,
    Value(u32),
    Stats(ServerStats),
    Error(&'static str),
}

async fn serve_connection(socket: TcpStream, config: Arc<ServerConfig>, conn_no: u64) {
    let (rd, wr) = socket.into_split();
    let (replies, rx) = mpsc::channel(REPLY_QUEUE);
    tokio::spawn(write_replies(wr, rx));
    if let Err(e) = read_requests(rd, replies, &config, conn_no).await {
        // The client hanging up at the end of a run is normal; broken frames are not.
        if e.kind() == io::ErrorKind::InvalidData {
            eprintln!("timers server: connection {conn_no}: {e}");
        }
    }
}

/// Reads and serves requests until the client hangs up or its writer is gone. Waits (and so
/// stops reading) while the writer's queue or the delayed answers are full.
async fn read_requests(
    mut rd: OwnedReadHalf,
    replies: mpsc::Sender<Reply>,
    config: &ServerConfig,
    conn_no: u64,
) -> io::Result<()> {
    let mut frames = FrameReader::with_capacity(READ_BUFFER);
    let mut rng = config.rng(conn_no);
    let mut stats = ServerStats::default();
    let delayed = Arc::new(Semaphore::new(MAX_DELAYED));
    // The writer is gone (the client stopped reading or hung up): so is this connection.
    let gone = || Ok(());
    loop {
        if frames.fill(&mut rd).await? == 0 {
            return Ok(());
        }
        while let Some(frame) = frames.next_frame()? {
            let stream = frame.header.stream;
            let measured = frame.header.flags & protocol::FLAG_MEASURED != 0;
            let kind = match Request::decode(&frame.header, frame.body) {
                Ok(Request::Write { .. }) => ReplyKind::Done,
                Ok(Request::Read { value_len, .. }) => ReplyKind::Value(value_len),
                Ok(Request::Stats) => {
                    let reply = Reply {
                        stream,
                        kind: ReplyKind::Stats(stats),
                    };
                    if replies.send(reply).await.is_err() {
                        return gone();
                    }
                    continue;
                }
                Err(ProtocolError::UnknownOpcode(_)) => ReplyKind::Error("unknown opcode"),
                Err(_) => ReplyKind::Error("malformed request"),
            };
            let reply = Reply { stream, kind };
            if matches!(kind, ReplyKind::Error(_)) {
                if replies.send(reply).await.is_err() {
                    return gone();
                }
                continue;
            }
            let (delay, slow) = config.delay(&mut rng);
            if measured {
                stats.measured_requests += 1;
                stats.measured_slow += u64::from(slow);
            }
            if delay.is_zero() {
                if replies.send(reply).await.is_err() {
                    return gone();
                }
            } else {
                let Ok(slot) = Arc::clone(&delayed).acquire_owned().await else {
                    unreachable!("the semaphore is never closed");
                };
                let replies = replies.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(delay).await;
                    // A failed send means the writer is gone; the reader stops soon after.
                    let _ = replies.send(reply).await;
                    drop(slot);
                });
            }
        }
    }
}

async fn write_replies(wr: OwnedWriteHalf, rx: mpsc::Receiver<Reply>) {
    let mut value = Vec::new();
    let encode = move |reply: Reply, out: &mut Vec<u8>| match reply.kind {
        ReplyKind::Done => protocol::encode_response(out, reply.stream, protocol::OP_DONE, &[]),
        ReplyKind::Value(len) => {
            let len = len as usize;
            if value.len() < len {
                value.resize(len, 0xa5);
            }
            protocol::encode_response(out, reply.stream, protocol::OP_VALUE, &value[..len]);
        }
        ReplyKind::Stats(stats) => protocol::encode_response(
            out,
            reply.stream,
            protocol::OP_STATS_RESULT,
            &stats.to_bytes(),
        ),
        ReplyKind::Error(message) => {
            protocol::encode_response(out, reply.stream, protocol::OP_ERROR, message.as_bytes())
        }
    };
    write_batched(wr, rx, encode).await;
}

/// A connection's writer (ours and the CQL mode's): answers taken off the queue in batches,
/// encoded into one buffer, written when the queue is drained or the buffer is full, so the
/// buffer holds at most [`FLUSH_BYTES`] and one answer.
pub(crate) async fn write_batched<R>(
    mut wr: OwnedWriteHalf,
    mut rx: mpsc::Receiver<R>,
    mut encode: impl FnMut(R, &mut Vec<u8>),
) {
    let mut batch = Vec::with_capacity(BATCH_REPLIES);
    let mut out = Vec::with_capacity(FLUSH_BYTES);
    loop {
        if rx.recv_many(&mut batch, BATCH_REPLIES).await == 0 {
            return;
        }
        for reply in batch.drain(..) {
            encode(reply, &mut out);
            if out.len() >= FLUSH_BYTES && flush(&mut wr, &mut out).await.is_err() {
                return;
            }
        }
        while out.len() < FLUSH_BYTES {
            match rx.try_recv() {
                Ok(reply) => encode(reply, &mut out),
                Err(_) => break,
            }
        }
        if !out.is_empty() && flush(&mut wr, &mut out).await.is_err() {
            return;
        }
    }
}

/// Writes `out` and empties it, not keeping a large answer's buffer. An error means the
/// client is gone: the writer returns, and dropping its queue fails further sends quietly.
async fn flush(wr: &mut OwnedWriteHalf, out: &mut Vec<u8>) -> io::Result<()> {
    wr.write_all(out).await?;
    out.clear();
    if out.capacity() > 4 * FLUSH_BYTES {
        *out = Vec::with_capacity(FLUSH_BYTES);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(slow_fraction: f64) -> ServerConfig {
        ServerConfig {
            threads: 1,
            slow_fraction,
            slow_delay: Duration::from_millis(50),
            service_time: Duration::ZERO,
            service_dist: ServiceDist::Fixed,
            seed: 7,
        }
    }

    #[test]
    fn accept_failures_stop_only_a_broken_listener() {
        let of = |errno| accept_failure(&io::Error::from_raw_os_error(errno));
        for errno in [libc::EMFILE, libc::ENFILE, libc::ENOBUFS, libc::ENOMEM] {
            assert_eq!(of(errno), AcceptFailure::Resources, "{errno}");
        }
        for errno in [
            libc::ECONNABORTED,
            libc::ECONNRESET,
            libc::EPROTO,
            libc::EPERM,
        ] {
            assert_eq!(of(errno), AcceptFailure::Connection, "{errno}");
        }
        assert_eq!(of(libc::EBADF), AcceptFailure::Listener);
        assert_eq!(of(libc::EINVAL), AcceptFailure::Listener);
    }

    #[test]
    fn delays_follow_the_config() {
        let mut rng = SmallRng::seed_from_u64(1);
        let c = config(0.0);
        assert_eq!(c.delay(&mut rng), (Duration::ZERO, false));
        let c = config(1.0);
        assert_eq!(c.delay(&mut rng), (Duration::from_millis(50), true));
        let c = ServerConfig {
            service_time: Duration::from_micros(100),
            service_dist: ServiceDist::Exp,
            ..config(0.0)
        };
        let draws: Vec<Duration> = (0..10_000).map(|_| c.delay(&mut rng).0).collect();
        assert!(draws.iter().all(|d| *d <= Duration::from_millis(1)));
        let mean = draws.iter().sum::<Duration>() / draws.len() as u32;
        assert!(
            (Duration::from_micros(90)..Duration::from_micros(110)).contains(&mean),
            "{mean:?}"
        );
        let c = config(0.25);
        let slow = (0..10_000).filter(|_| c.delay(&mut rng).1).count();
        assert!((2_200..2_800).contains(&slow), "{slow}");
    }

    #[test]
    fn answers_requests_out_of_order_and_counts_measured_slow_ones() {
        let server = Server::start(config(0.5), 0).unwrap();
        let client = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        client.block_on(async {
            let mut socket = TcpStream::connect(server.addr()).await.unwrap();
            let mut out = Vec::new();
            for stream in 0..40u32 {
                let flags = if stream % 2 == 0 {
                    protocol::FLAG_MEASURED
                } else {
                    0
                };
                if stream % 4 < 2 {
                    protocol::encode_write(&mut out, stream, flags, 1, &[0; 10]);
                } else {
                    protocol::encode_read(&mut out, stream, flags, 1, 33);
                }
            }
            out.extend_from_slice(&[0, 0, 0, 0, 99, 0, 0, 0, 0x42, 0]);
            socket.write_all(&out).await.unwrap();
            let mut frames = FrameReader::with_capacity(1024);
            let mut seen = Vec::new();
            while seen.len() < 41 {
                assert!(frames.fill(&mut socket).await.unwrap() > 0);
                while let Some(f) = frames.next_frame().unwrap() {
                    seen.push((f.header.stream, f.header.opcode, f.body.len()));
                }
            }
            // The unknown opcode is answered with an error at once, before the slow ones.
            assert!(seen.contains(&(99, protocol::OP_ERROR, "unknown opcode".len())));
            let mut streams: Vec<u32> = seen.iter().map(|s| s.0).collect();
            assert_ne!(streams, (0..40).chain([99]).collect::<Vec<_>>(), "in order");
            streams.sort();
            assert_eq!(streams, (0..40).chain([99]).collect::<Vec<_>>());
            for &(stream, opcode, len) in &seen {
                match stream {
                    99 => {}
                    s if s % 4 < 2 => assert_eq!((opcode, len), (protocol::OP_DONE, 0)),
                    _ => assert_eq!((opcode, len), (protocol::OP_VALUE, 33)),
                }
            }
            out.clear();
            protocol::encode_stats(&mut out, 1000);
            socket.write_all(&out).await.unwrap();
            let stats = loop {
                if let Some(f) = frames.next_frame().unwrap() {
                    assert_eq!(f.header.opcode, protocol::OP_STATS_RESULT);
                    break ServerStats::from_bytes(f.body).unwrap();
                }
                assert!(frames.fill(&mut socket).await.unwrap() > 0);
            };
            assert_eq!(stats.measured_requests, 20);
            assert!((1..20).contains(&stats.measured_slow), "{stats:?}");
        });
    }
}
