//! The router's orphaner: takes the notices of requests that ended without their answer
//! (a caller's or an engine's timeout resolved them) and orphans their streams, which their
//! late answers free; and gives up on every live request when the drain asks it to.

use tokio::sync::mpsc;

use crate::completion::Outcome;
use crate::resolver::Resolver;
use crate::router::map::RouterMap;
use crate::router::Notice;

/// Notices taken off the channel per wake-up.
const BATCH_NOTICES: usize = 512;

/// Handles notices until every sender of the channel is gone.
pub(super) async fn orphaner(
    notices: &mut mpsc::UnboundedReceiver<Notice>,
    map: &RouterMap,
    resolver: &Resolver,
) {
    let mut batch = Vec::with_capacity(BATCH_NOTICES);
    let mut abandoned = Vec::new();
    while notices.recv_many(&mut batch, BATCH_NOTICES).await > 0 {
        let mut map = map.lock();
        for notice in batch.drain(..) {
            match notice {
                // Whoever sent it resolved the request already. A request the writer has
                // not allocated yet is not found; it stays live until its late answer.
                Notice::Orphan(id) => drop(map.orphan(id)),
                Notice::AbandonAll => {
                    map.orphan_all(&mut abandoned);
                    for handler in abandoned.drain(..) {
                        resolver.resolve(&handler.completion, handler.id, Outcome::Abandoned);
                    }
                }
            }
        }
    }
}
