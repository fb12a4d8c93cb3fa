//! `none`: the request waits for its answer however long it takes. The baseline: the cost
//! of the load loop and the connection router without any timer.

use crate::completion::Outcome;
use crate::connection::Connection;
use crate::strategy::Request;

/// Issues `request` and waits for its answer.
pub async fn execute(conn: &Connection, request: Request) -> Outcome {
    let answer = conn.request(None, request.key, request.measured).await;
    answer.await
}
