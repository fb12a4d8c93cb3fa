//! The router's reader: parses answers, takes their handlers out of the handler map and
//! resolves them. An answer that loses to a timeout resolved elsewhere counts as late.

use tokio::net::tcp::OwnedReadHalf;

use crate::completion::{ErrorKind, Outcome};
use crate::protocol::{self, Frame, FrameReader, ServerStats};
use crate::resolver::Resolver;
use crate::router::map::{MapGuard, RouterMap};

/// Initial size of the read buffer.
const READ_BUFFER: usize = 64 << 10;

/// Handles answers until the connection fails; returns why it failed.
pub(super) async fn reader(rd: &mut OwnedReadHalf, map: &RouterMap, resolver: &Resolver) -> String {
    let mut frames = FrameReader::with_capacity(READ_BUFFER);
    loop {
        match frames.fill(rd).await {
            Ok(0) if frames.has_partial_frame() => {
                return "server closed the connection mid-frame".to_string()
            }
            Ok(0) => return "server closed the connection".to_string(),
            Ok(_) => {}
            Err(e) => return format!("read failed: {e}"),
        }
        let mut map = map.lock();
        loop {
            match frames.next_frame() {
                Ok(Some(frame)) => {
                    if let Err(reason) = on_answer(&mut map, frame, resolver) {
                        return reason;
                    }
                }
                Ok(None) => break,
                Err(e) => return e.to_string(),
            }
        }
    }
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
            if !resolver.resolve(&handler.completion, handler.id, outcome) {
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
