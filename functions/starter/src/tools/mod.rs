//! YOUR TOOLS GO HERE: one file per group of tools, each an
//! `impl Server` block under `#[tool_router(router = ...)]`, added to
//! `all` below. Start from whichever example is closest:
//!
//! - `basics.rs`: stateless tools with typed arguments, structured output,
//!   tool errors, and the caller's identity;
//! - `reminder.rs`: a multi-round flow that asks the user for input
//!   (MRTR elicitation) and carries its progress in a sealed `requestState`;
//! - `basket.rs`: state that spans calls behind an explicit handle (stored
//!   in DynamoDB in Lambda), with a confirmed, single-use checkout;
//! - `progress.rs`: a tool that reports progress while it works;
//! - `report.rs`: a long-running task (runs in the worker function) that
//!   reports progress and honours cancellation;
//! - `publish.rs`: a task that asks the user for input halfway;
//! - `writing.rs`: prompts, a plain one and one that asks the user first;
//! - `catalog.rs`: resources, a fixed one and a templated one, read with
//!   the server's state and the caller.
//!
//! Task tools are listed in [`task_tools`] instead of `all`: the worker
//! function runs them from the same list. Prompts are listed in
//! `prompts`; resources (fixed, templated, and handle kinds such as
//! baskets) in `resources`.
//!
//! Each example is one file and one line in each list it appears in:
//! deleting the file and its lines leaves a server that builds and passes
//! its tests (CI does exactly that, in `infra/fork-test.sh`).

mod basics;
pub mod basket;
mod catalog;
mod progress;
mod publish;
mod reminder;
mod report;
mod writing;

use mcp_stateless::prelude::{Resources, TaskTools};
use rmcp::handler::server::router::{prompt::PromptRouter, tool::ToolRouter};

use crate::Server;

/// Every tool the server exposes.
#[allow(unused_mut)] // once the last example is deleted
pub(crate) fn all() -> ToolRouter<Server> {
    let mut tools = ToolRouter::new();
    tools += Server::basics();
    tools += Server::basket_tools();
    tools += Server::reminder_tools();
    tools += Server::progress_tools();
    tools
}

/// Every task tool: served by the starter function, run by starter-worker.
#[allow(unused_mut)] // once the last example is deleted
pub fn task_tools() -> TaskTools {
    let mut tools = TaskTools::new();
    tools += report::report_tasks();
    tools += publish::publish_tasks();
    tools
}

/// Every prompt: `#[prompt_router]` groups and prompts that ask first
/// (`AskingPrompt`).
#[allow(unused_mut)] // once the last example is deleted
pub(crate) fn prompts() -> PromptRouter<Server> {
    let mut prompts = PromptRouter::new();
    prompts += writing::writing_prompts();
    prompts
}

/// Every resource: fixed and templated ones (`FixedResource`,
/// `TemplatedResource`), and handle kinds clients read and watch
/// (`HandleResource`).
#[allow(unused_mut)] // once the last example is deleted
pub(crate) fn resources() -> Resources<Server> {
    let mut resources = Resources::new();
    resources += basket::BASKET_RESOURCE;
    resources += catalog::catalog_resources();
    resources
}
