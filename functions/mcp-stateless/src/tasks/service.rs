//! [`Tasks`]: what the request function does with tasks. `tools/call` on a
//! task tool creates the record and enqueues it; `tasks/get`,
//! `tasks/update` and `tasks/cancel` read and change the record on
//! whichever instance they reach. Nothing here runs task work.

use std::sync::Arc;

use rmcp::{
    ErrorData,
    handler::server::{
        router::tool::{ToolRoute, ToolRouter},
        tool::ToolCallContext,
    },
    model::{
        CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock, CreateTaskResult, GetTaskResult, JsonObject,
        TASKS_EXTENSION_ID, TaskStatus, UpdateTaskParams,
    },
};
use serde_json::{Map, Value};

use super::{
    policy::TaskPolicy,
    queue::{TaskMessage, TaskQueue},
    record::{TASK_IDS, TaskInput, TaskRecord},
    store::{Decision, TaskStore, transition},
    tool::{TaskRun, TaskStep, TaskSupport, TaskTool, TaskTools},
};
use crate::{
    clock::Clock,
    protocol::context::CallContext,
    protocol::elicitation::answer_as_asked,
    quota::{CreationQuota, InMemoryQuota, QuotaKey},
    storage::ItemKey,
    storage::StoreError,
};

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

/// The request side of one function's task tools: `tools/call` creates a
/// task, and `tasks/get`, `tasks/update` and `tasks/cancel` are answered
/// from its record. Cheap to clone.
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

    /// Counts open tasks per owner in `quota` (the table, in Lambda) rather
    /// than in this process.
    pub fn with_quota(mut self, quota: Arc<dyn CreationQuota>) -> Self {
        self.quota = quota;
        self
    }

    /// Runs tasks under `policy`.
    pub fn with_policy(mut self, policy: TaskPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// [`transition`] on this store and clock. The write that ends a task
    /// (exactly one, by the compare-and-set) gives its owner's place back:
    /// in that very write where the store counts places, else here.
    pub(crate) async fn transition(
        &self,
        key: &ItemKey,
        change: impl FnMut(&mut TaskRecord) -> Decision,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let outcome = transition(&*self.store, &*self.clock, key, change).await?;
        if let Some(partition_key) = outcome.ended.filter(|_| !self.store.counts_places()).and_then(|ended| ended.quota_key) {
            let quota = QuotaKey { partition_key, expires_at: 0 };
            if let Err(error) = self.quota.give_back(&quota).await {
                // The place comes back when the window ends.
                tracing::warn!(%error, "could not give back a task's place");
            }
        }
        Ok(outcome.record)
    }

    /// The task tools these tasks run.
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
            TaskSupport::Optional => self.run_inline(tool, ctx, arguments).await,
        }
    }

    /// A client without the tasks extension: the same function, here and
    /// now, within the inline limit (under the request function's timeout:
    /// a run that would outlast it must run as a task).
    async fn run_inline(&self, tool: &TaskTool, ctx: CallContext, arguments: Value) -> Result<CallToolResponse, ErrorData> {
        let (run, _status, _cancel) = TaskRun::new(None, 1, ctx, Map::new(), None);
        let limit = self.policy.inline_limit;
        match tokio::time::timeout(limit, (tool.run)(arguments, run)).await {
            Ok(step) => match step? {
                TaskStep::Complete(result) => Ok(result.into()),
                // Input mid-run needs tasks/update, which this client cannot send.
                TaskStep::NeedInput { .. } => Err(missing_tasks_capability()),
            },
            Err(_) => {
                tracing::info!(tool = tool.name(), "inline task run stopped at its limit");
                let mut error = missing_tasks_capability();
                error.message =
                    format!("This call takes longer than {} s; call it as a task (the tasks extension).", limit.as_secs()).into();
                Err(error)
            }
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
        let Some(task_tool) = self.tools.get(tool) else {
            return Err(ErrorData::internal_error(format!("no task tool named {tool}"), None));
        };
        // Stored is what the tool reads: properties its schema does not
        // name would only be kept, and paid for, on every write.
        let input = TaskInput {
            principal: ctx.principal.clone(),
            tool: tool.to_owned(),
            arguments: task_tool.declared_only(arguments),
            protocol_version: ctx.protocol_version.clone(),
            client_capabilities: ctx.client_capabilities.clone(),
        };
        if input.encoded_len() > MAX_INPUT_BYTES {
            return Err(ErrorData::invalid_params(format!("the arguments are too large for a task (over {MAX_INPUT_BYTES} bytes)"), None));
        }
        let now_ms = self.clock.now_ms();
        let record = TaskRecord {
            task_id: TASK_IDS.mint(),
            owner: ctx.principal.binding_id(),
            tool: tool.to_owned(),
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
            quota_key: None,
            version: 1,
            attempts: 0,
            unfinished_runs: 0,
            lease: None,
            runnable_since_ms: Some(now_ms),
        };
        let quota = self.policy.quota_key(&record.owner, now_ms);
        let record = TaskRecord { quota_key: Some(quota.partition_key.clone()), ..record };
        let key = TASK_IDS.key(ctx.principal.binding_id(), &record.task_id);
        if self.store.counts_places() {
            // The task, its input and its place in one write: both or neither.
            match self.store.create_counted(&key, &record, &input, &quota, self.policy.max_per_owner).await {
                Ok(true) => {}
                Ok(false) => return Ok(None),
                // The store settled whether a write whose every answer was
                // lost landed (`TaskStore::create_counted`): an error here
                // is a task that is not, and will not be, there.
                Err(error) => return Err(store_failed(error)),
            }
            self.dispatch_new(&key).await?;
            return Ok(Some(record.create_result()));
        }
        if !self.quota.take(&quota, self.policy.max_per_owner).await.map_err(store_failed)? {
            return Ok(None);
        }
        if let Err(error) = self.store.create(&key, &record, &input).await {
            // The store's per-call id makes a retry of a landed write
            // succeed, so an error here almost always means nothing landed;
            // if a record did land unseen, it is never sent to a worker and
            // simply expires.
            if let Err(error) = self.quota.give_back(&quota).await {
                tracing::warn!(%error, "could not give back a task quota count");
            }
            return Err(store_failed(error));
        }
        self.dispatch_new(&key).await?;
        Ok(Some(record.create_result()))
    }

    /// Enqueues a task just created; if that fails, the task is failed now
    /// (and the call answers -32603) rather than left `working` for a
    /// client that was told it does not exist.
    async fn dispatch_new(&self, key: &ItemKey) -> Result<(), ErrorData> {
        let Err(error) = self.queue.enqueue(&TaskMessage::for_key(key)).await else { return Ok(()) };
        tracing::error!(%error, "task queue send failed");
        if let Err(error) = self.fail_now(key, "The task could not be scheduled.").await {
            // Left runnable: tasks/get sends it once its start deadline passes.
            tracing::error!(%error, "could not mark an unscheduled task failed");
        }
        Err(ErrorData::internal_error("the task could not be scheduled", None))
    }

    /// Ends the task under `key` failed with `message`, unless it ended
    /// already or is not there; the write gives its place back.
    async fn fail_now(&self, key: &ItemKey, message: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.transition(key, |record| {
            if record.is_terminal() {
                return Decision::Keep;
            }
            record.fail(rmcp::model::ErrorCode::INTERNAL_ERROR.0, message);
            Decision::Write
        })
        .await
    }

    fn key(&self, ctx: &CallContext, task_id: &str) -> Result<ItemKey, ErrorData> {
        if !TASK_IDS.is_well_formed(task_id) {
            return Err(not_found());
        }
        Ok(TASK_IDS.key(ctx.principal.binding_id(), task_id))
    }

    /// `tasks/get`. A `working` task nobody works on is sent to a worker
    /// again: one nobody started within the start deadline (a lost message
    /// or a busy queue), or one whose worker's lease lapsed (it died). A
    /// task whose runs keep ending unfinished is failed instead.
    pub async fn get(&self, ctx: &CallContext, task_id: &str) -> Result<GetTaskResult, ErrorData> {
        let key = self.key(ctx, task_id)?;
        let now_ms = self.clock.now_ms();
        let policy = &self.policy;
        let mut resend = false;
        let record = self
            .transition(&key, |record| {
                resend = false;
                match stalled(record, policy, now_ms) {
                    Stall::No => Decision::Keep,
                    Stall::OutOfAttempts => {
                        record.fail(rmcp::model::ErrorCode::INTERNAL_ERROR.0, &out_of_attempts(record.unfinished_runs));
                        Decision::Write
                    }
                    Stall::Resend => {
                        record.lease = None;
                        record.runnable_since_ms = Some(now_ms);
                        resend = true;
                        Decision::Write
                    }
                }
            })
            .await
            .map_err(store_failed)?
            .ok_or_else(not_found)?;
        if resend {
            tracing::info!(task = %record.task_id, "task nobody works on: sent to a worker again");
            if let Err(error) = self.queue.enqueue(&TaskMessage::for_key(&key)).await {
                // Runnable still: a later poll sends it again.
                tracing::error!(%error, "task queue send failed");
            }
        }
        Ok(record.get_result())
    }

    /// `tasks/update`: records answers to outstanding requests (others are
    /// ignored, as tasks.md allows) and, once none is outstanding, makes the
    /// task runnable again and enqueues it.
    pub async fn update(&self, ctx: &CallContext, params: &UpdateTaskParams) -> Result<(), ErrorData> {
        let key = self.key(ctx, &params.task_id)?;
        let now_ms = self.clock.now_ms();
        let mut resumed = false;
        let mut refused = None;
        self.transition(&key, |record| {
            resumed = false;
            refused = None;
            if record.status != TaskStatus::InputRequired {
                return Decision::Keep;
            }
            let answered: Vec<String> = params.input_responses.keys().filter(|k| record.input_requests.contains_key(*k)).cloned().collect();
            if answered.is_empty() {
                return Decision::Keep;
            }
            for k in answered {
                let request = record.input_requests.remove(&k).unwrap_or_default();
                match answer_as_asked(&request, params.input_responses[&k].clone()) {
                    Ok(answer) => record.input_responses.insert(k, answer),
                    Err(reason) => {
                        refused = Some(format!("Invalid input response {k}: {reason}"));
                        return Decision::Keep;
                    }
                };
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
        if let Some(reason) = refused {
            return Err(ErrorData::invalid_params(reason, None));
        }
        // The answers are recorded and the task is runnable: if the send
        // fails, the next tasks/get after the start deadline sends it.
        if resumed && let Err(error) = self.queue.enqueue(&TaskMessage::for_key(&key)).await {
            tracing::error!(%error, "task queue send failed");
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

/// A task's stored input at most (arguments, after properties the tool's
/// schema does not name are dropped, and the declared capabilities): what
/// a caller may make the server store is kept small.
pub const MAX_INPUT_BYTES: usize = 16 * 1024;

enum Stall {
    No,
    Resend,
    OutOfAttempts,
}

/// Whether a task is `working` with nobody working on it.
fn stalled(record: &TaskRecord, policy: &TaskPolicy, now_ms: u64) -> Stall {
    if record.status != TaskStatus::Working {
        return Stall::No;
    }
    let waited_out = record.runnable_since_ms.is_some_and(|since| now_ms > since + policy.start_deadline.as_millis() as u64);
    let lapsed = record.lease.as_ref().is_some_and(|lease| lease.until_ms <= now_ms);
    if !waited_out && !lapsed {
        return Stall::No;
    }
    if record.unfinished_runs >= policy.max_attempts {
        return Stall::OutOfAttempts;
    }
    Stall::Resend
}

pub(crate) fn out_of_attempts(runs: u32) -> String {
    format!("The task failed: its worker did not finish it after {runs} attempt(s).")
}
