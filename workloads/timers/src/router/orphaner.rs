//! The router's orphaner, as the scylla driver's `Connection::orphaner` (scylla 1.9.0,
//! `src/network/connection.rs`): takes the notices of requests that ended without their
//! answer (a caller's or an engine's timeout resolved them) and orphans their streams,
//! which their late answers free; gives up on every live request when the drain asks it
//! to; and once every [`OLD_ORPHAN_AGE`] counts the orphans older than that, breaking the
//! connection when there are more than [`OLD_ORPHAN_LIMIT`], as the driver does.

use std::time::Instant;

use tokio::sync::mpsc;

use crate::completion::Outcome;
use crate::handler_map::OLD_ORPHAN_AGE;
use crate::resolver::Resolver;
use crate::router::map::RouterMap;
use crate::router::Notice;

/// More old orphans than this break the connection (the driver's
/// `OLD_ORPHAN_COUNT_THRESHOLD`).
pub const OLD_ORPHAN_LIMIT: usize = 1024;

/// Handles notices until every sender of the channel is gone (`Ok`) or the connection has
/// too many old orphans (`Err`, why).
pub(super) async fn orphaner(
    notices: &mut mpsc::UnboundedReceiver<Notice>,
    map: &RouterMap,
    resolver: &Resolver,
) -> Result<(), String> {
    let mut abandoned = Vec::new();
    let mut check = tokio::time::interval(OLD_ORPHAN_AGE);
    loop {
        tokio::select! {
            _ = check.tick() => {
                let old = map.lock().old_orphans(Instant::now());
                if old > OLD_ORPHAN_LIMIT {
                    return Err(format!("too many old orphaned stream ids: {old}"));
                }
            }
            notice = notices.recv() => {
                let Some(notice) = notice else { return Ok(()) };
                let mut map = map.lock();
                match notice {
                    // Whoever sent it resolved the request already. A request the writer
                    // has not allocated yet is not found; it stays live until its late
                    // answer.
                    Notice::Orphan(id) => drop(map.orphan(id)),
                    Notice::AbandonAll => {
                        map.orphan_all(&mut abandoned);
                        for handler in abandoned.drain(..) {
                            resolver.resolve(handler.reply, handler.id, Outcome::Abandoned);
                        }
                    }
                }
            }
        }
    }
}
