//! Ends a connection's requests and keeps the run's [`ResolutionLog`], if it has one: the
//! first resolution of a request wins (see [`Completion`]) and only the winner is logged,
//! whichever thread it runs on (the router, a caller, an engine's expiry thread).

use std::sync::Arc;
use std::time::Instant;

use crate::completion::{Completion, Outcome, Reply};
use crate::handler_map::RequestId;
use crate::resolution_log::{Event, ResolutionLog};

/// See the module documentation.
#[derive(Clone)]
pub(crate) struct Resolver {
    conn: usize,
    log: Option<Arc<ResolutionLog>>,
}

impl Resolver {
    /// The resolver of connection `conn`.
    pub(crate) fn new(conn: usize, log: Option<Arc<ResolutionLog>>) -> Resolver {
        Resolver { conn, log }
    }

    /// Logs that request `id` went out.
    pub(crate) fn issued(&self, id: RequestId, deadline: Option<Instant>, measured: bool) {
        if let Some(log) = &self.log {
            log.record(Event::Issued {
                conn: self.conn,
                id,
                deadline,
                measured,
            });
        }
    }

    /// Ends request `id` with `outcome` through `reply` unless it has ended already; returns
    /// whether this call ended it.
    pub(crate) fn resolve(&self, reply: Reply, id: RequestId, outcome: Outcome) -> bool {
        let won = reply.resolve(id, outcome);
        if won {
            self.resolved(id, outcome);
        }
        won
    }

    /// [`Resolver::resolve`] for a request that waits on `completion`.
    pub(crate) fn resolve_cell(
        &self,
        completion: &Completion,
        id: RequestId,
        outcome: Outcome,
    ) -> bool {
        let won = completion.resolve(id, outcome);
        if won {
            self.resolved(id, outcome);
        }
        won
    }

    /// Logs that request `id` ended with `outcome`; only its winning resolver calls this.
    pub(crate) fn resolved(&self, id: RequestId, outcome: Outcome) {
        if let Some(log) = &self.log {
            log.record(Event::Resolved {
                conn: self.conn,
                id,
                outcome,
                at: Instant::now(),
            });
        }
    }
}
