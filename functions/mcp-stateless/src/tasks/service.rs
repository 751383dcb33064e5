//! [`Tasks`]: what the request function does with tasks. `tools/call` on a
//! task tool creates the record and enqueues it; `tasks/get`,
//! `tasks/update` and `tasks/cancel` read and change the record on
//! whichever instance they reach. Nothing here runs task work.

use std::{sync::Arc, time::Duration};

use rmcp::{
    ErrorData,
    handler::server::{router::tool::{ToolRoute, ToolRouter}, tool::ToolCallContext},
    model::{
        CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock, CreateTaskResult, GetTaskResult, JsonObject,
        TASKS_EXTENSION_ID, TaskStatus, UpdateTaskParams,
    },
};
use serde_json::{Map, Value};

use super::{
    queue::{TaskMessage, TaskQueue},
    record::{MAX_RECORD_BYTES, TASK_KIND, TaskRecord},
    store::{Decision, TaskStore, transition},
    tool::{TaskRun, TaskStep, TaskSupport, TaskTool, TaskTools},
};
use crate::{
    clock::Clock,
    handles::HandleKey,
    protocol::context::CallContext,
    quota::{CreationQuota, InMemoryQuota, QuotaKey},
    storage::StoreError,
};

/// Lifetimes and pacing, the same for every task of a function.
#[derive(Debug, Clone)]
pub struct TaskPolicy {
    /// From creation; never extended. The record is unreadable after it.
    pub ttl: Duration,
    /// Suggested to clients as `pollIntervalMs`.
    pub poll_interval: Duration,
    /// A runnable task no worker started within this is failed: its queue
    /// message was lost (a crash between the write and the send).
    pub start_deadline: Duration,
    /// How long a worker's claim on a task lasts unless renewed; keep it
    /// under the queue's visibility timeout so a retry can take over.
    pub lease: Duration,
    /// How often a running worker stores progress and checks for a cancel.
    pub heartbeat: Duration,
    /// Tasks one owner may create per `ttl` (see [`crate::quota`]).
    pub max_per_owner: u32,
}

impl Default for TaskPolicy {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(3_600),
            poll_interval: Duration::from_millis(1_000),
            start_deadline: Duration::from_secs(300),
            lease: Duration::from_secs(30),
            heartbeat: Duration::from_millis(500),
            max_per_owner: 100,
        }
    }
}

impl TaskPolicy {
    /// The defaults, with `MCP_TASK_TTL_SECONDS`, `MCP_TASK_START_DEADLINE_SECONDS`
    /// and `MCP_TASK_LEASE_SECONDS` applied when set.
    pub fn from_env() -> Self {
        let seconds = |name: &str| std::env::var(name).ok().and_then(|v| v.parse().ok()).map(Duration::from_secs);
        let defaults = Self::default();
        Self {
            ttl: seconds("MCP_TASK_TTL_SECONDS").unwrap_or(defaults.ttl),
            start_deadline: seconds("MCP_TASK_START_DEADLINE_SECONDS").unwrap_or(defaults.start_deadline),
            lease: seconds("MCP_TASK_LEASE_SECONDS").unwrap_or(defaults.lease),
            max_per_owner: std::env::var("MCP_TASK_MAX_PER_OWNER").ok().and_then(|v| v.parse().ok()).unwrap_or(defaults.max_per_owner),
            ..defaults
        }
    }
}

pub(crate) fn missing_tasks_capability() -> ErrorData {
    ErrorData::missing_required_client_capability(ClientCapabilities::builder().enable_tasks().build())
}

/// tasks.md, "Protocol Errors": unknown, expired, malformed and somebody
/// else's task ids all get this one answer.
fn not_found() -> ErrorData {
    ErrorData::invalid_params("Failed to retrieve task: Task not found", None)
}

pub(crate) fn store_failed(error: StoreError) -> ErrorData {
    tracing::error!(%error, "task store failed");
    ErrorData::internal_error("task storage unavailable", None)
}

fn declares_tasks(ctx: &CallContext) -> bool {
    ctx.declares("extensions", Some(TASKS_EXTENSION_ID))
}

#[derive(Clone)]
pub struct Tasks {
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) queue: Arc<dyn TaskQueue>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) policy: TaskPolicy,
    pub(crate) tools: TaskTools,
    pub(crate) quota: Arc<dyn CreationQuota>,
}

/// What a caller over its task quota is told.
const TOO_MANY_TASKS: &str = "You have too many tasks open. Wait for one to finish, or cancel one you no longer need.";

impl Tasks {
    /// With a per-process quota; [`with_quota`](Self::with_quota) for Lambda.
    pub fn new(store: Arc<dyn TaskStore>, queue: Arc<dyn TaskQueue>, clock: Arc<dyn Clock>, tools: TaskTools) -> Self {
        Self { store, queue, clock, policy: TaskPolicy::default(), tools, quota: Arc::new(InMemoryQuota::default()) }
    }

    pub fn with_quota(mut self, quota: Arc<dyn CreationQuota>) -> Self {
        self.quota = quota;
        self
    }

    pub fn with_policy(mut self, policy: TaskPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// [`transition`] on this store and clock.
    pub(crate) async fn transition(
        &self,
        key: &HandleKey,
        change: impl FnMut(&mut TaskRecord) -> Decision,
    ) -> Result<Option<TaskRecord>, StoreError> {
        transition(&*self.store, &*self.clock, key, change).await
    }

    pub fn tools(&self) -> &TaskTools {
        &self.tools
    }

    /// Routes for the listed task tools, to add to a server's `ToolRouter`
    /// beside its `#[tool_router]` tools.
    pub fn router<S: Send + Sync + 'static>(&self) -> ToolRouter<S> {
        let mut router = ToolRouter::new();
        for tool in self.tools.iter().filter(|tool| tool.listed) {
            let (tasks, name) = (self.clone(), tool.name().to_owned());
            router.add_route(ToolRoute::new_dyn(tool.tool.clone(), move |call: ToolCallContext<'_, S>| {
                let (tasks, name) = (tasks.clone(), name.clone());
                let ctx = CallContext::of(call.request_context());
                let arguments = call.arguments;
                Box::pin(async move { tasks.call(&name, ctx?, arguments).await })
            }));
        }
        router
    }

    pub(crate) async fn call(&self, name: &str, ctx: CallContext, arguments: Option<JsonObject>) -> Result<CallToolResponse, ErrorData> {
        let tool = self.tools.get(name).ok_or_else(|| ErrorData::invalid_params("tool not found", None))?;
        let arguments = Value::Object(arguments.unwrap_or_default());
        if let Err(reason) = (tool.check)(&arguments) {
            // As rmcp does for #[tool] methods: the model can correct it.
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!("Invalid arguments: {reason}"))]).into());
        }
        if declares_tasks(&ctx) {
            return match self.start_within_quota(&ctx, name, arguments).await? {
                Some(created) => Ok(created.into()),
                // The model can act on it (wait, or cancel a task).
                None => Ok(CallToolResult::error(vec![ContentBlock::text(TOO_MANY_TASKS)]).into()),
            };
        }
        match tool.support {
            TaskSupport::Required => Err(missing_tasks_capability()),
            TaskSupport::Optional => Self::run_inline(tool, ctx, arguments).await,
        }
    }

    /// A client without the tasks extension: the same function, here and now.
    async fn run_inline(tool: &TaskTool, ctx: CallContext, arguments: Value) -> Result<CallToolResponse, ErrorData> {
        let (run, _status, _cancel) = TaskRun::new(None, ctx, Map::new(), None);
        match (tool.run)(arguments, run).await? {
            TaskStep::Complete(result) => Ok(result.into()),
            // Input mid-run needs tasks/update, which this client cannot send.
            TaskStep::NeedInput { .. } => Err(missing_tasks_capability()),
        }
    }

    /// Creates a task running `tool` (a task tool of this function, listed
    /// or not) and hands it to a worker. Answers once `tasks/get` for it
    /// resolves. Callable from any tool, for example after a multi-round
    /// exchange gathered what the task needs.
    /// Over the caller's quota, -32602 with a message saying so.
    pub async fn start(&self, ctx: &CallContext, tool: &str, arguments: Value) -> Result<CreateTaskResult, ErrorData> {
        self.start_within_quota(ctx, tool, arguments).await?.ok_or_else(|| ErrorData::invalid_params(TOO_MANY_TASKS, None))
    }

    /// [`start`](Self::start), with `None` for a caller over its quota.
    async fn start_within_quota(&self, ctx: &CallContext, tool: &str, arguments: Value) -> Result<Option<CreateTaskResult>, ErrorData> {
        if !declares_tasks(ctx) {
            return Err(missing_tasks_capability());
        }
        if self.tools.get(tool).is_none() {
            return Err(ErrorData::internal_error(format!("no task tool named {tool}"), None));
        }
        let now_ms = self.clock.now_ms();
        let record = TaskRecord {
            task_id: TASK_KIND.mint(),
            owner: ctx.principal.binding_id(),
            principal: ctx.principal.clone(),
            tool: tool.to_owned(),
            arguments,
            protocol_version: ctx.protocol_version.clone(),
            client_capabilities: ctx.client_capabilities.clone(),
            status: TaskStatus::Working,
            status_message: None,
            result: None,
            error: None,
            input_requests: Map::new(),
            input_responses: Map::new(),
            continuation: None,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
            ttl_ms: self.policy.ttl.as_millis() as u64,
            poll_interval_ms: self.policy.poll_interval.as_millis() as u64,
            expires_at: now_ms / 1_000 + self.policy.ttl.as_secs(),
            version: 1,
            attempts: 0,
            lease: None,
            runnable_since_ms: Some(now_ms),
        };
        if record.encoded_len() > MAX_RECORD_BYTES {
            return Err(ErrorData::invalid_params("the arguments are too large for a task", None));
        }
        let quota = QuotaKey::new(&record.owner, TASK_KIND.prefix, self.policy.ttl, now_ms / 1_000);
        if !self.quota.take(&quota, self.policy.max_per_owner).await.map_err(store_failed)? {
            return Ok(None);
        }
        let key = record.key();
        if let Err(error) = self.store.create(&key, &record).await {
            if let Err(error) = self.quota.give_back(&quota).await {
                tracing::warn!(%error, "could not give back a task quota count");
            }
            return Err(store_failed(error));
        }
        self.dispatch(&key).await?;
        Ok(Some(record.create_result()))
    }

    /// Enqueues a runnable task; if that fails, the task is failed now
    /// rather than left `working` with no worker coming.
    async fn dispatch(&self, key: &HandleKey) -> Result<(), ErrorData> {
        let Err(error) = self.queue.enqueue(&TaskMessage::for_key(key)).await else { return Ok(()) };
        tracing::error!(%error, "task queue send failed");
        let failed = self.transition(key, |record| {
            if record.is_terminal() {
                return Decision::Keep;
            }
            record.fail(rmcp::model::ErrorCode::INTERNAL_ERROR.0, "The task could not be scheduled.");
            Decision::Write
        })
        .await;
        if let Err(error) = failed {
            // Left runnable: tasks/get fails it once its start deadline passes.
            tracing::error!(%error, "could not mark an unscheduled task failed");
        }
        Err(ErrorData::internal_error("the task could not be scheduled", None))
    }

    fn key(&self, ctx: &CallContext, task_id: &str) -> Result<HandleKey, ErrorData> {
        if !TASK_KIND.is_well_formed(task_id) {
            return Err(not_found());
        }
        Ok(HandleKey::new(&ctx.principal, &TASK_KIND, task_id))
    }

    /// `tasks/get`.
    pub async fn get(&self, ctx: &CallContext, task_id: &str) -> Result<GetTaskResult, ErrorData> {
        let key = self.key(ctx, task_id)?;
        let now_ms = self.clock.now_ms();
        let deadline = self.policy.start_deadline.as_millis() as u64;
        let record = self.transition(&key, |record| {
            let stalled = record.runnable_since_ms.is_some_and(|since| now_ms > since + deadline);
            if record.is_terminal() || !stalled {
                return Decision::Keep;
            }
            record.fail(rmcp::model::ErrorCode::INTERNAL_ERROR.0, "No worker started the task in time.");
            Decision::Write
        })
        .await
        .map_err(store_failed)?
        .ok_or_else(not_found)?;
        Ok(record.get_result())
    }

    /// `tasks/update`: records answers to outstanding requests (others are
    /// ignored, as tasks.md allows) and, once none is outstanding, makes the
    /// task runnable again and enqueues it.
    pub async fn update(&self, ctx: &CallContext, params: &UpdateTaskParams) -> Result<(), ErrorData> {
        let key = self.key(ctx, &params.task_id)?;
        let now_ms = self.clock.now_ms();
        let mut resumed = false;
        self.transition(&key, |record| {
            resumed = false;
            if record.status != TaskStatus::InputRequired {
                return Decision::Keep;
            }
            let answered: Vec<String> =
                params.input_responses.keys().filter(|k| record.input_requests.contains_key(*k)).cloned().collect();
            if answered.is_empty() {
                return Decision::Keep;
            }
            for k in answered {
                record.input_requests.remove(&k);
                record.input_responses.insert(k.clone(), params.input_responses[&k].clone());
            }
            if record.input_requests.is_empty() {
                record.status = TaskStatus::Working;
                record.status_message = None;
                record.runnable_since_ms = Some(now_ms);
                resumed = true;
            }
            Decision::Write
        })
        .await
        .map_err(store_failed)?
        .ok_or_else(not_found)?;
        if resumed {
            self.dispatch(&key).await?;
        }
        Ok(())
    }

    /// `tasks/cancel`: a live task ends `cancelled` now; its worker sees it
    /// at its next heartbeat and stops. A terminal task is left as it is.
    pub async fn cancel(&self, ctx: &CallContext, task_id: &str) -> Result<(), ErrorData> {
        let key = self.key(ctx, task_id)?;
        self.transition(&key, |record| {
            if record.is_terminal() {
                return Decision::Keep;
            }
            record.finish(TaskStatus::Cancelled, Some("Cancelled at the client's request.".into()));
            Decision::Write
        })
        .await
        .map_err(store_failed)?
        .ok_or_else(not_found)?;
        Ok(())
    }
}
