//! Tasks-extension fixtures (SEP-2663): the tools the suite's tasks-*
//! scenarios call. `greet` is an ordinary tool; the others are task tools,
//! run by the in-process worker locally or by `everything-worker` against
//! the queue; `test_tool_with_task` gathers a name by MRTR first and then
//! starts a task.

use std::time::Duration;

use mcp_stateless::prelude::{CallContext, ElicitationReply, TaskRun, TaskStep, TaskSupport, TaskTool, TaskTools};
use rmcp::{
    ErrorData,
    handler::server::{tool::InputResponses, wrapper::Parameters},
    model::{CallToolResponse, CallToolResult, ContentBlock, InputRequiredResult},
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{
    EverythingServer,
    mrtr_tools::{answered, elicit, elicit_name},
};

#[derive(Deserialize, JsonSchema)]
pub(crate) struct Greet {
    /// Who to greet.
    pub name: String,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct SlowCompute {
    /// How long the computation takes.
    pub seconds: f64,
    /// A label echoed in the result.
    #[serde(default)]
    pub label: String,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct ConfirmDelete {
    /// The file to delete once the user confirms.
    pub filename: String,
}

#[derive(Deserialize, JsonSchema, Default)]
pub(crate) struct NoArguments {}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct Named {
    pub name: String,
}

async fn slow_compute(args: SlowCompute, run: TaskRun) -> Result<TaskStep, ErrorData> {
    let total = Duration::from_secs_f64(args.seconds.clamp(0.0, 900.0));
    let started = tokio::time::Instant::now();
    while started.elapsed() < total {
        let left = total - started.elapsed();
        run.set_status(format!("{:.0}% of {}", 100.0 * started.elapsed().as_secs_f64() / total.as_secs_f64(), args.label));
        tokio::select! {
            _ = run.cancelled() => return Ok(TaskStep::text("cancelled")),
            _ = tokio::time::sleep(left.min(Duration::from_secs(1))) => {}
        }
    }
    Ok(TaskStep::text(format!("Computed {} in {}s", args.label, args.seconds)))
}

async fn failing_job(_: NoArguments, _run: TaskRun) -> Result<TaskStep, ErrorData> {
    tokio::time::sleep(Duration::from_millis(500)).await;
    Ok(CallToolResult::error(vec![ContentBlock::text("failing_job failed, as it always does")]).into())
}

async fn protocol_error_job(_: NoArguments, _run: TaskRun) -> Result<TaskStep, ErrorData> {
    Err(ErrorData::internal_error("protocol_error_job raised a protocol error, as it always does", None))
}

async fn confirm_delete(args: ConfirmDelete, run: TaskRun) -> Result<TaskStep, ErrorData> {
    Ok(match run.elicitation("confirm") {
        ElicitationReply::Missing => TaskStep::ask(
            [("confirm", elicit(&format!("Delete {}?", args.filename), json!({"confirm": {"type": "boolean"}}), &["confirm"]))],
            Value::Null,
        ),
        ElicitationReply::Accepted(content) if content.get("confirm") == Some(&Value::Bool(true)) => {
            TaskStep::text(format!("Deleted {}", args.filename))
        }
        _ => TaskStep::text(format!("Kept {}", args.filename)),
    })
}

async fn multi_input(_: NoArguments, run: TaskRun) -> Result<TaskStep, ErrorData> {
    let name = |key: &str| match run.elicitation(key) {
        ElicitationReply::Accepted(content) => content.get("name").and_then(Value::as_str).map(str::to_owned),
        _ => None,
    };
    if run.response("first").is_none() {
        let ask = |n: &str| elicit(&format!("Name {n}?"), json!({"name": {"type": "string"}}), &["name"]);
        return Ok(TaskStep::ask([("first", ask("one")), ("second", ask("two"))], Value::Null));
    }
    Ok(TaskStep::text(format!("Got {} and {}", name("first").unwrap_or_default(), name("second").unwrap_or_default())))
}

async fn greet_later(args: Named, _run: TaskRun) -> Result<TaskStep, ErrorData> {
    tokio::time::sleep(Duration::from_millis(200)).await;
    Ok(TaskStep::text(format!("Hello, {}!", args.name)))
}

/// The fixtures' task tools, for the server and for `everything-worker`.
pub fn task_tools() -> TaskTools {
    TaskTools::new()
        .with(TaskTool::new("slow_compute", "Sleeps `seconds`, then answers; honours cancellation", TaskSupport::Optional, slow_compute))
        .with(TaskTool::new("failing_job", "Ends with a tool error (isError: true)", TaskSupport::Required, failing_job))
        .with(TaskTool::new("protocol_error_job", "Ends with a JSON-RPC error", TaskSupport::Required, protocol_error_job))
        .with(TaskTool::new("confirm_delete", "Asks for confirmation mid-task", TaskSupport::Required, confirm_delete))
        .with(TaskTool::new("multi_input", "Asks two questions at once mid-task", TaskSupport::Required, multi_input))
        .with(TaskTool::new("test_tool_with_task", "Greets, as a task", TaskSupport::Required, greet_later).unlisted())
}

#[tool_router(router = task_fixture_tools, vis = "pub(crate)")]
impl EverythingServer {
    #[tool(description = "Greets someone; never a task")]
    async fn greet(&self, Parameters(args): Parameters<Greet>) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::text(format!("Hello, {}!", args.name))])
    }

    #[tool(description = "Asks for a name by MRTR, then greets as a task")]
    async fn test_tool_with_task(
        &self,
        ctx: CallContext,
        InputResponses(responses): InputResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = answered(&responses, "user_name").and_then(|reply| reply.get("content")?.get("name")?.as_str().map(str::to_owned));
        match name {
            // tasks.md: MRTR exchanges resolve before the task is created.
            None => Ok(InputRequiredResult::from_input_requests([("user_name".to_owned(), elicit_name())].into()).into()),
            Some(name) => Ok(self.registry.tasks().start(&ctx, "test_tool_with_task", json!({"name": name})).await?.into()),
        }
    }
}
