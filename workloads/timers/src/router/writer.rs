//! The router's writer: takes requests off the connection's queue, allocates their stream
//! ids in the handler map and writes their frames, everything queued in one socket write.
//! Once the queue is drained it yields before writing, as the scylla driver's writer does by
//! default (its write coalescing): callers woken meanwhile queue their requests into the
//! same write.

use tokio::io::AsyncWriteExt;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::mpsc;

use crate::completion::{ErrorKind, Outcome};
use crate::handler_map::HandlerMap;
use crate::params::Mode;
use crate::protocol;
use crate::resolver::Resolver;
use crate::router::map::RouterMap;
use crate::router::{Body, Task};

/// Requests taken off the queue per wake-up.
const BATCH_FRAMES: usize = 512;
/// A write buffer this full goes out even if more requests are queued.
const FLUSH_BYTES: usize = 256 << 10;

/// Turns requests into frames.
pub(crate) struct Encoder {
    mode: Mode,
    value: Box<[u8]>,
}

impl Encoder {
    /// Requests of `mode` (`WRITE`s carry `value_bytes`, `READ`s ask for as many).
    pub(crate) fn new(mode: Mode, value_bytes: u32) -> Encoder {
        Encoder {
            mode,
            value: vec![0x5a; value_bytes as usize].into_boxed_slice(),
        }
    }

    fn encode(&self, stream: u32, measured: bool, body: Body, out: &mut Vec<u8>) {
        let flags = if measured { protocol::FLAG_MEASURED } else { 0 };
        match (body, self.mode) {
            (Body::Data { key }, Mode::Write) => {
                protocol::encode_write(out, stream, flags, key, &self.value)
            }
            (Body::Data { key }, Mode::Read) => {
                protocol::encode_read(out, stream, flags, key, self.value.len() as u32)
            }
            (Body::Stats, _) => protocol::encode_stats(out, stream),
        }
    }
}

/// Writes queued requests until the socket fails (`Err`) or every sender of the queue is
/// gone (`Ok`).
pub(super) async fn writer(
    wr: &mut OwnedWriteHalf,
    tasks: &mut mpsc::UnboundedReceiver<Task>,
    map: &RouterMap,
    encoder: &Encoder,
    resolver: &Resolver,
) -> Result<(), String> {
    let mut batch = Vec::with_capacity(BATCH_FRAMES);
    let mut out = Vec::with_capacity(FLUSH_BYTES);
    let mut received = 0;
    loop {
        if tasks.recv_many(&mut batch, BATCH_FRAMES).await == 0 {
            return Ok(());
        }
        received += take(&mut batch, tasks, map, encoder, resolver, &mut out);
        // The driver's write coalescing: with the queue drained, yield so that the callers
        // woken meanwhile queue their requests into the same write, until a yield brings
        // none.
        while out.len() < FLUSH_BYTES {
            tokio::task::yield_now().await;
            let taken = take(&mut batch, tasks, map, encoder, resolver, &mut out);
            if taken == 0 {
                break;
            }
            received += taken;
        }
        // After the guard has published the map that holds these requests.
        map.published().received(received);
        if let Err(e) = wr.write_all(&out).await {
            return Err(format!("write failed: {e}"));
        }
        out.clear();
    }
}

/// Routes `batch`, then whatever is queued, until `out` is full; returns how many requests
/// it took.
fn take(
    batch: &mut Vec<Task>,
    tasks: &mut mpsc::UnboundedReceiver<Task>,
    map: &RouterMap,
    encoder: &Encoder,
    resolver: &Resolver,
    out: &mut Vec<u8>,
) -> u64 {
    let mut map = map.lock();
    let mut taken = batch.len() as u64;
    for task in batch.drain(..) {
        route(task, &mut map, encoder, resolver, out);
    }
    while out.len() < FLUSH_BYTES {
        let Ok(task) = tasks.try_recv() else { break };
        taken += 1;
        route(task, &mut map, encoder, resolver, out);
    }
    taken
}

/// Allocates `task`'s stream and encodes its frame; fails it if no stream id is free.
fn route(
    task: Task,
    map: &mut HandlerMap,
    encoder: &Encoder,
    resolver: &Resolver,
    out: &mut Vec<u8>,
) {
    let Task { handler, body } = task;
    let measured = handler.measured;
    match map.allocate(handler) {
        Ok(stream) => encoder.encode(stream, measured, body, out),
        Err(handler) => {
            let outcome = Outcome::Error(ErrorKind::StreamsExhausted);
            resolver.resolve(&handler.completion, handler.id, outcome);
        }
    }
}
