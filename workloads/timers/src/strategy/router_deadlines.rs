//! `deadline-tracker`: the scylla driver PR #564 design. The waiting task registers no
//! timer; its deadline goes into the connection's [`DeadlineTracker`](crate::deadline_tracker::DeadlineTracker)
//! under the handler-map lock it takes anyway, and one armable timer per connection, polled
//! by the connection's router task, is re-armed only when the earliest deadline changes.
//! When it fires the router pops the due deadlines and times their requests out.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use crate::armable_timer::ArmableTimer;
use crate::completion::{Completion, Outcome};
use crate::connection::Connection;
use crate::metrics::TimerCounts;
use crate::strategy::Request;

/// Issues `request` with its deadline tracked by the router, and waits for the outcome.
pub async fn execute(
    conn: &Connection,
    completion: &Arc<Completion>,
    request: Request,
    timeout: Duration,
    counts: &mut TimerCounts,
) -> Outcome {
    let id = match request.issue_with_timeout(conn, completion, timeout, counts) {
        Ok(id) => id,
        Err(outcome) => return outcome,
    };
    let outcome = completion.wait(id).await;
    match outcome {
        Outcome::Timeout => counts.fired += 1,
        _ => counts.cancelled += 1,
    }
    outcome
}

/// The router's half: waits for the armed deadline, times out what is due (which re-arms
/// the timer for the next deadline), and goes back to waiting. Polling the timer again
/// right after popping is what catches a next deadline that is already due.
pub async fn expiry_loop(conn: &Connection, timer: &mut ArmableTimer) -> Infallible {
    let mut ids = Vec::new();
    let mut expired = Vec::new();
    loop {
        timer.elapsed().await;
        conn.expire_due(&mut ids, &mut expired);
        conn.publish_rearms(timer.rearms());
    }
}
