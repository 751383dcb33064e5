//! Example: a long-running task. `build_report` takes a few seconds per
//! section: longer than one request should hold a connection (API Gateway
//! cuts a request at 30 s), so it runs as a task in the worker function,
//! reports progress through its status message, and stops when cancelled.
//! A client without the tasks extension gets the result inline instead.

use std::time::Duration;

use mcp_stateless::tasks::{TaskRun, TaskStep, TaskSupport, TaskTool, TaskTools};
use rmcp::ErrorData;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct BuildReport {
    /// What the report is about.
    #[schemars(length(min = 1, max = 200))]
    pub topic: String,
    /// How many sections to write (1 to 20); each takes about two seconds.
    #[schemars(range(min = 1, max = 20))]
    pub sections: u32,
}

const SECONDS_PER_SECTION: Duration = Duration::from_secs(2);

async fn build_report(args: BuildReport, run: TaskRun) -> Result<TaskStep, ErrorData> {
    let sections = args.sections.clamp(1, 20);
    let mut report = format!("# {}\n", args.topic);
    for section in 1..=sections {
        run.set_status(format!("Writing section {section} of {sections}"));
        // Stop promptly when the client cancels: the task is already
        // `cancelled` in the store, and whatever this returns is discarded.
        tokio::select! {
            _ = run.cancelled() => return Ok(TaskStep::text("Cancelled.")),
            _ = tokio::time::sleep(SECONDS_PER_SECTION) => {}
        }
        report.push_str(&format!("\n## Section {section}\nNotes on {} ({section}/{sections}).\n", args.topic));
    }
    Ok(TaskStep::text(report))
}

pub(crate) fn report_tasks() -> TaskTools {
    TaskTools::new().with(TaskTool::new(
        "build_report",
        "Writes a report on a topic, a section at a time (about 2 s per section); runs as a task",
        TaskSupport::Optional,
        build_report,
    ))
}
