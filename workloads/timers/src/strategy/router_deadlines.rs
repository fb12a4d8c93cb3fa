//! `deadline-tracker`: the scylla driver PR #564 design. The waiting task registers no
//! timer: its deadline travels with the request to the connection's router, whose writer
//! puts it into the [`DeadlineTracker`](crate::deadline_tracker::DeadlineTracker) inside
//! the handler map when it allocates the stream. The router's timeouter future waits on
//! the connection's one armable timer, which is re-armed only when the earliest deadline
//! changes, pops the due deadlines and times their requests out. Everything happens in the
//! router task: no caller touches the tracker or the timer.

use std::convert::Infallible;
use std::time::{Duration, Instant};

use crate::armable_timer::ArmableTimer;
use crate::completion::Outcome;
use crate::connection::Connection;
use crate::metrics::TimerCounts;
use crate::resolver::Resolver;
use crate::router::map::RouterMap;
use crate::strategy::Request;

/// Issues `request` with its deadline tracked by the router, and waits for the outcome.
pub async fn execute(
    conn: &Connection,
    request: Request,
    timeout: Duration,
    counts: &mut TimerCounts,
) -> Outcome {
    let answer = request.issue_with_timeout(conn, timeout, counts).await;
    let outcome = answer.await;
    match outcome {
        Outcome::Timeout => counts.fired += 1,
        _ => counts.cancelled += 1,
    }
    outcome
}

/// The router's timeouter: waits for the armed deadline, times out what is due (which
/// re-arms the timer for the next deadline), and goes back to waiting. Polling the timer
/// again right after popping is what catches a next deadline that is already due.
pub(crate) async fn timeouter(
    map: &RouterMap,
    timer: &mut ArmableTimer,
    resolver: &Resolver,
) -> Infallible {
    let mut ids = Vec::new();
    let mut expired = Vec::new();
    loop {
        timer.elapsed().await;
        let mut map = map.lock();
        map.expire_due(Instant::now(), &mut ids, &mut expired);
        for handler in expired.drain(..) {
            resolver.resolve(handler.reply, handler.id, Outcome::Timeout);
        }
        map.published().rearmed(timer.rearms());
    }
}
