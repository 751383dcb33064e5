//! The tool-author API: a task tool is an async function of its typed
//! arguments and a [`TaskRun`], returning a [`TaskStep`]. The same function
//! runs inline (a client without the tasks extension), in the in-process
//! worker of `cargo run`, and in the worker Lambda function.
//!
//! A function that needs input returns [`TaskStep::NeedInput`] with the
//! requests and a continuation; it is called again, from the start, once
//! every request is answered, with the answers and the continuation in its
//! [`TaskRun`]. Nothing waits in memory for a user who may take a day.

use std::{collections::BTreeMap, future::Future, sync::Arc};

use futures::future::BoxFuture;
use rmcp::{
    ErrorData,
    handler::server::common::schema_for_input,
    model::{CallToolResult, InputRequest, Tool, ToolAnnotations},
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tokio::sync::watch;

use crate::{
    protocol::context::CallContext,
    protocol::elicitation::{ElicitationReply, read_elicitation},
    random,
    storage::hex,
};

/// Whether a client without the tasks extension can call the tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Runs inline, to completion, for clients that did not declare tasks.
    Optional,
    /// Refused with -32021 for clients that did not declare tasks.
    Required,
}

/// What one run of a task function produced.
#[derive(Debug)]
#[non_exhaustive]
pub enum TaskStep {
    /// The tool's result (`isError` results included: the task is `completed`).
    Complete(CallToolResult),
    /// Park in `input_required` until every request is answered, then run
    /// again with the answers and `continuation`. Keys must be new for the
    /// task: a key is never reused once answered (tasks.md, "Task Update Requests").
    NeedInput {
        /// What to ask, by key.
        requests: BTreeMap<String, InputRequest>,
        /// Handed to the next run ([`TaskRun::continuation`]).
        continuation: Value,
    },
}

impl TaskStep {
    /// Park for the answers to `requests`, resuming with `continuation`.
    pub fn ask<K: Into<String>>(requests: impl IntoIterator<Item = (K, InputRequest)>, continuation: Value) -> Self {
        Self::NeedInput { requests: requests.into_iter().map(|(k, v)| (k.into(), v)).collect(), continuation }
    }

    /// A text result.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Complete(CallToolResult::success(vec![rmcp::model::ContentBlock::text(text.into())]))
    }
}

impl From<CallToolResult> for TaskStep {
    fn from(result: CallToolResult) -> Self {
        Self::Complete(result)
    }
}

/// What a running task function can see and do.
pub struct TaskRun {
    task_id: Option<String>,
    attempt: u32,
    idempotency_key: String,
    call: CallContext,
    responses: Map<String, Value>,
    continuation: Option<Value>,
    status: watch::Sender<Option<String>>,
    cancelled: watch::Receiver<bool>,
}

impl TaskRun {
    /// A run and the two channels its driver watches: status messages out,
    /// cancellation in. `attempt`: the task's runs started, this one
    /// included (the record's count, taken with the lease); 1 inline.
    pub fn new(
        task_id: Option<String>,
        attempt: u32,
        call: CallContext,
        responses: Map<String, Value>,
        continuation: Option<Value>,
    ) -> (Self, watch::Receiver<Option<String>>, watch::Sender<bool>) {
        let (status, status_updates) = watch::channel(None);
        let (cancel, cancelled) = watch::channel(false);
        let idempotency_key = task_id.as_deref().map_or_else(inline_call_key, task_key);
        let run = Self { task_id, attempt: attempt.max(1), idempotency_key, call, responses, continuation, status, cancelled };
        (run, status_updates, cancel)
    }

    /// `None` when running inline for a client without the tasks extension.
    pub fn task_id(&self) -> Option<&str> {
        self.task_id.as_deref()
    }

    /// The same on every run of this task: send it with each side effect
    /// (a payment, an email, a POST to another API; as an
    /// `Idempotency-Key` header, or the key of a conditional write) so the
    /// other side does it once. A task may run more than once: a worker
    /// that crashed or lost its lease, a message the queue delivered
    /// again, a run resumed after input (it starts from the beginning).
    /// A task with several effects suffixes it, one suffix per effect
    /// (`format!("{key}:charge")`). Derived from the task id by a hash, so
    /// it names the task to nobody it is sent to. Inline (no task), a
    /// fresh key per call: the server never runs an inline call twice.
    pub fn idempotency_key(&self) -> &str {
        &self.idempotency_key
    }

    /// Which run of the task this is: 1 for the first, and one more for
    /// every run started since (a retry after a crash or a lapsed lease, a
    /// resumption after input), counted by the same conditional write that
    /// gives this run the task, so a retried write does not count twice.
    /// Above 1, an effect may have happened already: check before redoing
    /// what [`Self::idempotency_key`] cannot make safe. Always 1 inline.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The request that created the task: its caller (verified principal),
    /// protocol version and declared capabilities.
    pub fn caller(&self) -> &CallContext {
        &self.call
    }

    /// Sets the task's `statusMessage` (progress for the client). Writes are
    /// coalesced: only the latest message is stored, about once a second.
    pub fn set_status(&self, message: impl Into<String>) {
        self.status.send_replace(Some(message.into()));
    }

    /// Whether the client has cancelled the task (never, inline): for a
    /// function that checks between steps.
    pub fn is_cancelled(&self) -> bool {
        *self.cancelled.borrow()
    }

    /// Resolves once the client cancels the task; never, inline.
    pub async fn cancelled(&self) {
        let mut cancelled = self.cancelled.clone();
        if cancelled.wait_for(|cancelled| *cancelled).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// The answer to input request `key`, once given (elicitation results
    /// are `{action, content}` objects).
    pub fn response(&self, key: &str) -> Option<&Value> {
        self.responses.get(key)
    }

    /// The answer to the form elicitation asked under `key`.
    pub fn elicitation(&self, key: &str) -> ElicitationReply<'_> {
        read_elicitation(self.responses.get(key))
    }

    /// What the previous run handed over in [`TaskStep::NeedInput`].
    pub fn continuation<T: DeserializeOwned>(&self) -> Option<T> {
        self.continuation.clone().and_then(|value| serde_json::from_value(value).ok())
    }
}

/// `task-` and 128 bits of SHA-256 over the task id: stable for the task,
/// and no handle on it for whoever receives it (a task id is a capability
/// its owner polls with; a third party's logs should not hold it).
fn task_key(task_id: &str) -> String {
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, format!("mcp-task-idempotency-key\0{task_id}").as_bytes());
    format!("task-{}", hex(&digest.as_ref()[..16]))
}

fn inline_call_key() -> String {
    format!("call-{}", hex(&random::bytes::<16>()))
}

type TaskFn = Arc<dyn Fn(Value, TaskRun) -> BoxFuture<'static, Result<TaskStep, ErrorData>> + Send + Sync>;

/// One task tool: its definition for `tools/list` and its function.
///
/// ```
/// use mcp_stateless::prelude::{TaskRun, TaskStep, TaskSupport, TaskTool, TaskTools};
/// use rmcp::ErrorData;
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Count {
///     /// Where to stop.
///     to: u32,
/// }
///
/// // Runs in the worker function, not in the request that started it.
/// async fn count(args: Count, run: TaskRun) -> Result<TaskStep, ErrorData> {
///     for n in 1..=args.to {
///         if run.is_cancelled() {
///             return Ok(TaskStep::text("Cancelled."));
///         }
///         run.set_status(format!("{n} of {}", args.to));
///     }
///     Ok(TaskStep::text(format!("Counted to {}.", args.to)))
/// }
///
/// let tools = TaskTools::new().with(TaskTool::new("count", "Counts; runs as a task", TaskSupport::Optional, count));
/// assert_eq!(tools.iter().map(TaskTool::name).collect::<Vec<_>>(), ["count"]);
/// ```
#[derive(Clone)]
pub struct TaskTool {
    pub(crate) tool: Tool,
    pub(crate) support: TaskSupport,
    /// Listed tools get a route; unlisted ones are started by another tool
    /// (after a multi-round exchange, for example) through `Tasks::start`.
    pub(crate) listed: bool,
    pub(crate) check: fn(&Value) -> Result<(), String>,
    pub(crate) run: TaskFn,
}

fn check_as<A: DeserializeOwned>(arguments: &Value) -> Result<(), String> {
    A::deserialize(arguments).map(|_| ()).map_err(|error| error.to_string())
}

impl TaskTool {
    /// A listed task tool whose input schema is derived from `A`.
    pub fn new<A, F, Fut>(name: &'static str, description: &'static str, support: TaskSupport, function: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(A, TaskRun) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<TaskStep, ErrorData>> + Send + 'static,
    {
        let mut schema = schema_for_input::<A>().unwrap_or_else(|error| panic!("input schema of task tool {name}: {error}"));
        // A task's arguments are stored with it: the schema says only the
        // named properties are accepted, and the argument checker holds
        // callers to it.
        if schema.contains_key("properties") {
            Arc::make_mut(&mut schema).entry("additionalProperties").or_insert(Value::Bool(false));
        }
        let function = Arc::new(function);
        let run: TaskFn = Arc::new(move |arguments, run| {
            let function = function.clone();
            Box::pin(async move {
                let arguments = A::deserialize(arguments).map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
                function(arguments, run).await
            })
        });
        Self { tool: Tool::new(name, description, schema), support, listed: true, check: check_as::<A>, run }
    }

    /// The tool's display `title`, as `#[tool(title = ...)]` gives one.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.tool = self.tool.with_title(title);
        self
    }

    /// Hints for clients (read-only, destructive, idempotent, open world),
    /// as `#[tool(annotations(...))]` gives them.
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.tool = self.tool.with_annotations(annotations);
        self
    }

    /// Not in `tools/list`: only started by another tool.
    pub fn unlisted(mut self) -> Self {
        self.listed = false;
        self
    }

    /// The tool's name, as listed and called.
    pub fn name(&self) -> &str {
        &self.tool.name
    }

    /// `arguments` without the top-level properties the tool's published
    /// schema does not name (serde would ignore them; stored, they would
    /// only cost).
    pub(crate) fn declared_only(&self, mut arguments: Value) -> Value {
        if let (Value::Object(map), Some(Value::Object(declared))) = (&mut arguments, self.tool.input_schema.get("properties")) {
            map.retain(|name, _| declared.contains_key(name));
        }
        arguments
    }
}

/// The task tools a function serves, by name. The request function and the
/// worker function are built from the same set.
#[derive(Clone, Default)]
pub struct TaskTools {
    /// Shared: rmcp clones the server (and so this) for every request.
    tools: Arc<BTreeMap<String, TaskTool>>,
}

impl TaskTools {
    /// No tools yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `tool`, in place of any of the same name.
    pub fn with(mut self, tool: TaskTool) -> Self {
        Arc::make_mut(&mut self.tools).insert(tool.name().to_owned(), tool);
        self
    }

    /// Adds every tool of `other` (one set per tools file, merged in one place).
    pub fn merge(mut self, other: TaskTools) -> Self {
        Arc::make_mut(&mut self.tools).extend(other.tools.iter().map(|(name, tool)| (name.clone(), tool.clone())));
        self
    }

    /// The tool called `name`, listed or not.
    pub fn get(&self, name: &str) -> Option<&TaskTool> {
        self.tools.get(name)
    }

    /// Every tool, listed or not, in name order.
    pub fn iter(&self) -> impl Iterator<Item = &TaskTool> {
        self.tools.values()
    }
}

/// `tools += more;`, one line per group in a server's list.
impl std::ops::AddAssign for TaskTools {
    fn add_assign(&mut self, other: TaskTools) {
        *self = std::mem::take(self).merge(other);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::context::Principal;

    fn run(task_id: Option<&str>, attempt: u32) -> TaskRun {
        let call = CallContext::with_capabilities(Principal::Anonymous, serde_json::json!({}));
        TaskRun::new(task_id.map(str::to_owned), attempt, call, Map::new(), None).0
    }

    #[test]
    fn a_task_keeps_its_idempotency_key_from_run_to_run_and_shares_it_with_no_other() {
        let (first, retry) = (run(Some("tsk_a"), 1), run(Some("tsk_a"), 2));
        assert_eq!(first.idempotency_key(), retry.idempotency_key());
        assert_eq!((first.attempt(), retry.attempt()), (1, 2));
        assert_ne!(first.idempotency_key(), run(Some("tsk_b"), 1).idempotency_key());
        assert_eq!(first.idempotency_key().len(), "task-".len() + 32);
        assert!(!first.idempotency_key().contains("tsk_a"), "the key shows the task id: {}", first.idempotency_key());
    }

    #[test]
    fn an_inline_call_gets_a_key_of_its_own_and_is_a_first_attempt() {
        let (one, two) = (run(None, 1), run(None, 1));
        assert_ne!(one.idempotency_key(), two.idempotency_key());
        assert!(one.idempotency_key().starts_with("call-"));
        assert_eq!(run(None, 0).attempt(), 1);
    }
}
