//! `none`: the request waits for its answer however long it takes. The baseline: the cost
//! of the load loop and the connection router without any timer.

use std::sync::Arc;

use crate::completion::{Completion, Outcome};
use crate::connection::Connection;
use crate::strategy::Request;

/// Issues `request` and waits for its answer.
pub async fn execute(conn: &Connection, completion: &Arc<Completion>, request: Request) -> Outcome {
    let id = conn
        .issue(completion, None, request.key, request.measured)
        .await;
    completion.wait(id).await
}
