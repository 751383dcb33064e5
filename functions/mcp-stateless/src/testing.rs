//! For tool authors' unit tests: a request's context and a task run,
//! without a server. (End-to-end tests over HTTP use the `e2e` crate.)

use serde_json::{Map, Value, json};
use tokio::sync::watch;

use crate::{
    protocol::context::{CallContext, Principal},
    tasks::TaskRun,
};

/// The context of a 2026-07-28 request from `principal` whose client
/// declared `capabilities` (`json!({})` for none).
pub fn call_context(principal: Principal, capabilities: Value) -> CallContext {
    CallContext::with_capabilities(principal, capabilities)
}

/// A task run and the two ends its driver holds.
#[non_exhaustive]
pub struct TestRun {
    /// What the task function is given.
    pub run: TaskRun,
    /// Its latest `statusMessage`.
    pub status: watch::Receiver<Option<String>>,
    /// `send(true)` cancels it.
    pub cancel: watch::Sender<bool>,
}

/// A run of task `tsk_test` for an anonymous caller, with the answers
/// `responses` (an object keyed as the requests were) and the
/// `continuation` an earlier run handed over.
pub fn task_run(responses: Value, continuation: Option<Value>) -> TestRun {
    task_rerun(responses, continuation, 1)
}

/// As [`task_run`], run `attempt` times so far (2 for the first retry):
/// the same task, so the same [`TaskRun::idempotency_key`].
pub fn task_rerun(responses: Value, continuation: Option<Value>, attempt: u32) -> TestRun {
    let responses: Map<String, Value> = match responses {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        other => panic!("responses must be an object keyed by request, not {other}"),
    };
    let call = call_context(Principal::Anonymous, json!({}));
    let (run, status, cancel) = TaskRun::new(Some("tsk_test".into()), attempt, call, responses, continuation);
    TestRun { run, status, cancel }
}
