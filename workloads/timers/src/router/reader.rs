//! The router's reader, as the scylla driver's `Connection::reader` (scylla 1.9.0,
//! `src/network/connection.rs`): reads one answer at a time from an 8 KiB `BufReader`, its
//! header and then its body into a buffer of its own, takes the answer's handler out of the
//! handler map under the map's lock and resolves it. An answer that loses to a timeout
//! resolved elsewhere counts as late.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt, BufReader};
use tokio::net::tcp::OwnedReadHalf;

use crate::completion::{ErrorKind, Outcome};
use crate::protocol::{self, Frame, Header, ServerStats};
use crate::resolver::Resolver;
use crate::router::map::{MapGuard, RouterMap};

/// The read buffer's size (the driver's `BufReader::with_capacity(8192, ..)`).
pub(super) const READ_BUFFER: usize = 8 << 10;

/// Handles answers until the connection fails; returns why it failed.
pub(super) async fn reader(
    rd: &mut BufReader<OwnedReadHalf>,
    map: &RouterMap,
    resolver: &Resolver,
) -> String {
    loop {
        let (header, body) = match read_frame(rd).await {
            Ok(Some(frame)) => frame,
            Ok(None) => return "server closed the connection".to_string(),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return "server closed the connection mid-frame".to_string()
            }
            Err(e) => return format!("read failed: {e}"),
        };
        let frame = Frame {
            header,
            body: &body,
        };
        if let Err(reason) = on_answer(&mut map.lock(), frame, resolver) {
            return reason;
        }
    }
}

/// Reads one frame: its header, then its body into a new buffer, as the driver's
/// `read_response_frame` does; `None` if the connection ended between frames.
async fn read_frame<R: AsyncRead + Unpin>(rd: &mut R) -> io::Result<Option<(Header, Vec<u8>)>> {
    let mut raw = [0; protocol::HEADER_LEN];
    let first = rd.read(&mut raw).await?;
    if first == 0 {
        return Ok(None);
    }
    rd.read_exact(&mut raw[first..]).await?;
    let header = Header::decode(&raw)?.expect("a whole header was read");
    let mut body = vec![0; header.len as usize];
    rd.read_exact(&mut body).await?;
    Ok(Some((header, body)))
}

fn on_answer(map: &mut MapGuard<'_>, frame: Frame<'_>, resolver: &Resolver) -> Result<(), String> {
    let outcome = match frame.header.opcode {
        protocol::OP_DONE | protocol::OP_VALUE => Outcome::Ok,
        protocol::OP_ERROR => Outcome::Error(ErrorKind::Server),
        protocol::OP_STATS_RESULT => {
            let stats = ServerStats::from_bytes(frame.body).map_err(|e| e.to_string())?;
            map.published().server_answered(stats);
            Outcome::Ok
        }
        other => return Err(format!("unexpected answer opcode {other:#04x}")),
    };
    match map.take_answered(frame.header.stream) {
        Ok(Some(handler)) => {
            // Lost: a timeout resolved it first and its orphan notice is still on the way.
            if !resolver.resolve(handler.reply, handler.id, outcome) {
                map.count_late_answer(handler.measured);
            }
            Ok(())
        }
        Ok(None) => Ok(()),
        Err(unknown) => Err(format!(
            "answer on stream {} which carries no request",
            unknown.0
        )),
    }
}
