//! `tokio-timeout`, `tokio-timeout-alt`, `tokio-timeout-legacy`, `tokio-timeout-sharded`: the
//! waiting task wraps its wait in `tokio::time::timeout`, as the scylla driver wraps every
//! request (its `request_timeout`; PR #564's deadline tracker was never merged). The timer
//! is registered in the runtime's timer driver on the first pending poll and deregistered
//! when the answer wins, both under the driver's lock (a shard's, on the sharded wheel). On
//! expiry the task resolves its own request as timed out, unless the answer got in first,
//! and tells the router to orphan the stream, as the driver's dropped request future does
//! through its `OrphanhoodNotifier`.
//!
//! The four strategies run this same code; they differ in the runtime: the current tokio
//! (1.54: one timer wheel under one lock, as before 1.38), the current tokio with its
//! unstable per-worker alt timer, tokio 1.37 (the `timers-bench-legacy` binary: one wheel,
//! one lock) or tokio 1.44 (`timers-bench-sharded`: the sharded wheel of tokio 1.38 to 1.44,
//! one wheel and lock per worker, tokio #6534, reverted in 1.45 by #7226).

use std::time::Duration;

use crate::completion::Outcome;
use crate::connection::Connection;
use crate::metrics::TimerCounts;
use crate::strategy::Request;

/// Issues `request` and waits for its answer for at most `timeout`.
pub async fn execute(
    conn: &Connection,
    request: Request,
    timeout: Duration,
    counts: &mut TimerCounts,
) -> Outcome {
    let mut answer = request.issue_with_timeout(conn, timeout, counts).await;
    match tokio::time::timeout(timeout, &mut answer).await {
        Ok(outcome) => {
            counts.cancelled += 1;
            outcome
        }
        // The first resolution wins: this timeout, or an answer sent just before it.
        Err(_elapsed) => conn.time_out_answer(&mut answer).unwrap_or_else(|| {
            counts.fired += 1;
            Outcome::Timeout
        }),
    }
}

/// Switches `builder` to tokio's alt timer.
#[cfg(all(feature = "alt-timer", tokio_unstable))]
pub fn enable_alt_timer(builder: &mut tokio::runtime::Builder) -> Result<(), String> {
    builder.enable_alt_timer();
    Ok(())
}

/// The alt timer is not compiled in.
#[cfg(not(all(feature = "alt-timer", tokio_unstable)))]
pub fn enable_alt_timer(_builder: &mut tokio::runtime::Builder) -> Result<(), String> {
    Err(
        "strategy 'tokio-timeout-alt' needs the 'alt-timer' feature and RUSTFLAGS \
         '--cfg tokio_unstable' (set in workloads/timers/.cargo/config.toml)"
            .to_string(),
    )
}
