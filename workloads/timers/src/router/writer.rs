//! The router's writer, as the scylla driver's `Connection::writer` (scylla 1.9.0,
//! `src/network/connection.rs`): takes one request at a time off the connection's bounded
//! queue, allocates its stream id under the handler map's lock and writes its frame with
//! `write_all` into an 8 KiB `BufWriter`, which sends what it holds whenever it fills.
//! Once the queue is empty it yields once, the driver's default write coalescing
//! (`WriteCoalescingDelay::SmallNondeterministic`), and flushes if nothing came meanwhile.

use tokio::io::{AsyncWriteExt, BufWriter};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::mpsc;

use crate::completion::{ErrorKind, Outcome};
use crate::params::Mode;
use crate::protocol;
use crate::resolver::Resolver;
use crate::router::map::RouterMap;
use crate::router::{Body, Task};

/// The write buffer's size (the driver's `BufWriter::with_capacity(8192, ..)`).
pub(super) const WRITE_BUFFER: usize = 8 << 10;

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
    wr: &mut BufWriter<OwnedWriteHalf>,
    tasks: &mut mpsc::Receiver<Task>,
    map: &RouterMap,
    encoder: &Encoder,
    resolver: &Resolver,
) -> Result<(), String> {
    let mut frame = Vec::new();
    let mut received = 0;
    while let Some(mut task) = tasks.recv().await {
        loop {
            received += 1;
            if !route(task, map, encoder, resolver, &mut frame, received) {
                // As the driver does: a request without a stream id ends this batch.
                break;
            }
            wr.write_all(&frame)
                .await
                .map_err(|e| format!("write failed: {e}"))?;
            task = match tasks.try_recv() {
                Ok(task) => task,
                Err(_) => {
                    // The callers woken meanwhile may queue their requests into this batch.
                    tokio::task::yield_now().await;
                    match tasks.try_recv() {
                        Ok(task) => task,
                        Err(_) => break,
                    }
                }
            };
        }
        wr.flush().await.map_err(|e| format!("write failed: {e}"))?;
    }
    Ok(())
}

/// Allocates `task`'s stream under the map's lock and encodes its frame into `frame`;
/// fails the request and returns `false` if no stream id is free. `received` counts the
/// requests taken off the queue, this one included.
fn route(
    task: Task,
    map: &RouterMap,
    encoder: &Encoder,
    resolver: &Resolver,
    frame: &mut Vec<u8>,
    received: u64,
) -> bool {
    let Task { handler, body } = task;
    let measured = handler.measured;
    let allocated = map.lock().allocate(handler);
    // After the guard has published the map that holds this request.
    map.published().received(received);
    match allocated {
        Ok(stream) => {
            frame.clear();
            encoder.encode(stream, measured, body, frame);
            true
        }
        Err(handler) => {
            let outcome = Outcome::Error(ErrorKind::StreamsExhausted);
            resolver.resolve(handler.reply, handler.id, outcome);
            false
        }
    }
}
