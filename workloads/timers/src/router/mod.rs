//! A connection's router, organised like the scylla driver's `Connection::router`: one
//! task per connection runs joined futures, and only they touch the connection's state
//! (the handler map, with the deadline tracker inside it, and the armable timer).
//!
//! - `writer`: takes requests off the connection's bounded queue, allocates their stream
//!   ids and writes their frames one by one into an 8 KiB write buffer;
//! - `reader`: reads answers one by one from an 8 KiB read buffer and resolves their
//!   requests;
//! - `orphaner`: orphans the streams of requests that a caller's or an engine's timeout
//!   resolved (their notices come through a channel of their own, like the driver's
//!   `OrphanhoodNotifier`), abandons live requests when the drain gives up, and breaks the
//!   connection when too many orphans have waited too long for their answers;
//! - the timeouter of `deadline-tracker`
//!   ([`router_deadlines`]): waits on the armable
//!   timer and times out the requests whose tracked deadlines are due.
//!
//! The first future to end ends the router: the socket failed, the connection has too many
//! old orphans, or the connection's handle was dropped. The router then closes the map and fails every live and every queued
//! request with [`ErrorKind::ConnectionClosed`], and raises the run's [`FailureSignal`] if
//! the connection broke.

pub(crate) mod map;
mod orphaner;
pub(crate) mod published;
mod reader;
mod scope;
mod writer;

use std::convert::Infallible;
use std::sync::Arc;

use tokio::io::{BufReader, BufWriter};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::mpsc;

use crate::armable_timer::ArmableTimer;
use crate::completion::{ErrorKind, Outcome};
use crate::connection::FailureSignal;
use crate::handler_map::{Handler, HandlerMap, RequestId};
use crate::resolver::Resolver;
use crate::strategy::router_deadlines;
use map::RouterMap;
pub use orphaner::OLD_ORPHAN_LIMIT;
use published::Published;
pub(crate) use writer::Encoder;

/// A request on its way to the router.
pub struct Task {
    pub(crate) handler: Handler,
    pub(crate) body: Body,
}

impl Task {
    /// The request's id.
    pub fn id(&self) -> RequestId {
        self.handler.id
    }
}

/// What a request asks the server for.
#[derive(Clone, Copy)]
pub(crate) enum Body {
    Data { key: u64 },
    Stats,
}

/// Tells the router about requests that ended without their answer.
pub(crate) enum Notice {
    /// The request was resolved without its answer: orphan its stream.
    Orphan(RequestId),
    /// Resolve every live request as abandoned and orphan its stream.
    AbandonAll,
}

/// Everything a router task owns.
pub(crate) struct Router {
    pub(crate) index: usize,
    pub(crate) rd: OwnedReadHalf,
    pub(crate) wr: OwnedWriteHalf,
    pub(crate) tasks: mpsc::Receiver<Task>,
    pub(crate) notices: mpsc::UnboundedReceiver<Notice>,
    pub(crate) map: HandlerMap,
    /// The armable timer of `deadline-tracker`, whose tracker is in `map`.
    pub(crate) timer: Option<ArmableTimer>,
    pub(crate) encoder: Encoder,
    pub(crate) resolver: Resolver,
    pub(crate) published: Arc<Published>,
    pub(crate) failure: Arc<FailureSignal>,
}

impl Router {
    /// Runs the router until the socket fails or the connection's handle is dropped.
    pub(crate) async fn run(self) {
        let Router {
            index,
            rd,
            wr,
            mut tasks,
            mut notices,
            map,
            mut timer,
            encoder,
            resolver,
            published,
            failure,
        } = self;
        let map = RouterMap::new(map, published);
        let mut rd = BufReader::with_capacity(reader::READ_BUFFER, rd);
        let mut wr = BufWriter::with_capacity(writer::WRITE_BUFFER, wr);
        scope::run_as(map.key(), async {
            let failed = tokio::select! {
                biased;
                reason = reader::reader(&mut rd, &map, &resolver) => Some(reason),
                orphaned = orphaner::orphaner(&mut notices, &map, &resolver) => orphaned.err(),
                never = timeouter(&map, timer.as_mut(), &resolver) => match never {},
                written = writer::writer(&mut wr, &mut tasks, &map, &encoder, &resolver) => {
                    written.err()
                }
            };
            close(&map, &mut tasks, &resolver).await;
            if let Some(reason) = failed {
                failure.raise(format!("connection {index}: {reason}"));
            }
        })
        .await
    }
}

async fn timeouter(
    map: &RouterMap,
    timer: Option<&mut ArmableTimer>,
    resolver: &Resolver,
) -> Infallible {
    match timer {
        Some(timer) => router_deadlines::timeouter(map, timer, resolver).await,
        None => std::future::pending().await,
    }
}

/// Fails every live request and every request still queued; the queue takes no more.
async fn close(map: &RouterMap, tasks: &mut mpsc::Receiver<Task>, resolver: &Resolver) {
    let mut handlers = Vec::new();
    map.lock().close(&mut handlers);
    tasks.close();
    while let Some(task) = tasks.recv().await {
        handlers.push(task.handler);
    }
    let outcome = Outcome::Error(ErrorKind::ConnectionClosed);
    for handler in handlers {
        resolver.resolve(handler.reply, handler.id, outcome);
    }
}
