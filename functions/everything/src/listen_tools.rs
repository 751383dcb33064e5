//! Fixtures for real time: the list-change triggers the suite's
//! `subscriptions/listen` checks call, and a tool whose progress arrives
//! while it still runs.

use std::time::Duration;

use mcp_stateless::prelude::{ListKind, Reporter};
use rmcp::{
    ErrorData,
    handler::server::wrapper::Parameters,
    model::{CallToolResult, ContentBlock},
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::EverythingServer;

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SlowProgress {
    /// Progress notifications to send, one after each interval.
    #[schemars(range(min = 1, max = 100))]
    steps: u32,
    /// Milliseconds between them.
    #[schemars(range(min = 0, max = 5000))]
    interval_ms: u64,
}

#[tool_router(router = listen_tools, vis = "pub(crate)")]
impl EverythingServer {
    #[tool(description = "Sends notifications/tools/list_changed to every listen stream that asked for it, on any instance")]
    async fn test_trigger_tool_change(&self) -> Result<CallToolResult, ErrorData> {
        self.trigger(ListKind::Tools).await
    }

    #[tool(description = "Sends notifications/prompts/list_changed to every listen stream that asked for it, on any instance")]
    async fn test_trigger_prompt_change(&self) -> Result<CallToolResult, ErrorData> {
        self.trigger(ListKind::Prompts).await
    }

    #[tool(description = "Given a progress token, sends one progress notification after each interval, then answers")]
    async fn test_tool_with_slow_progress(
        &self,
        Parameters(SlowProgress { steps, interval_ms }): Parameters<SlowProgress>,
        mut report: Reporter,
    ) -> CallToolResult {
        for step in 1..=steps {
            tokio::time::sleep(Duration::from_millis(interval_ms)).await;
            report.progress(f64::from(step), Some(f64::from(steps)), format!("step {step} of {steps}")).await;
        }
        CallToolResult::success(vec![ContentBlock::text(format!("Finished {steps} steps."))])
    }
}

impl EverythingServer {
    async fn trigger(&self, kind: ListKind) -> Result<CallToolResult, ErrorData> {
        self.registry.subscriptions().list_changed(kind).await?;
        Ok(CallToolResult::success(vec![ContentBlock::text(format!("{} list change sent.", kind.name()))]))
    }
}
