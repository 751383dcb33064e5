//! The load's requests, each judged as it comes back (`verdict`).

use std::net::SocketAddr;

use e2e::{post_with, request, set_header, tasks::tasks_capable};
use serde_json::{Value, json};

use crate::verdict::{Outcome, Tally};

/// `method` with `params` from `caller`, counted under `class`; the client
/// declares elicitation and the tasks extension.
pub(crate) async fn rpc(class: &str, addr: SocketAddr, caller: &str, method: &str, params: Value, tally: &Tally) -> Outcome {
    let body = request(1, method, params, tasks_capable());
    let reply = post_with(addr, &body, |h| set_header(h, "x-mcp-dev-principal", caller)).await;
    tally.judge(class, &reply)
}

/// `tools/call` of `tool`, with `extra` params (requestState, inputResponses).
pub(crate) async fn call(
    class: &str,
    addr: SocketAddr,
    caller: &str,
    tool: &str,
    arguments: Value,
    extra: Value,
    tally: &Tally,
) -> Outcome {
    let mut params = json!({"name": tool, "arguments": arguments});
    if let Value::Object(extra) = extra {
        params.as_object_mut().unwrap().extend(extra);
    }
    rpc(class, addr, caller, "tools/call", params, tally).await
}
