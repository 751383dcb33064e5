//! Example: a long-running task. `build_report` takes a few seconds per
//! section: longer than one request should hold a connection (API Gateway
//! cuts a request at 30 s), so it runs as a task in the worker function,
//! reports progress through its status message, and stops when cancelled.
//! A client without the tasks extension gets the result inline instead.

use std::time::Duration;

use mcp_stateless::prelude::{TaskRun, TaskStep, TaskSupport, TaskTool, TaskTools};
use rmcp::{ErrorData, model::ToolAnnotations};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Deserialize, JsonSchema)]
struct BuildReport {
    /// What the report is about.
    #[schemars(length(min = 1, max = 200))]
    topic: String,
    /// How many sections to write (1 to 20); each takes about two seconds.
    #[schemars(range(min = 1, max = 20))]
    sections: u32,
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
    TaskTools::new().with(
        TaskTool::new(
            "build_report",
            "Writes a report on a topic, a section at a time (about 2 s per section); runs as a task",
            TaskSupport::Optional,
            build_report,
        )
        .with_title("Build a report")
        .with_annotations(ToolAnnotations::new().read_only(true)),
    )
}

#[cfg(test)]
mod tests {
    use mcp_stateless::prelude::TaskRun;
    use serde_json::json;

    use super::*;

    fn run() -> (TaskRun, tokio::sync::watch::Receiver<Option<String>>, tokio::sync::watch::Sender<bool>) {
        let test = mcp_stateless::testing::task_run(json!({}), None);
        (test.run, test.status, test.cancel)
    }

    fn text(step: TaskStep) -> String {
        let TaskStep::Complete(result) = step else { panic!("expected a result") };
        serde_json::to_value(result).unwrap()["content"][0]["text"].as_str().unwrap().to_owned()
    }

    #[tokio::test(start_paused = true)]
    async fn writes_every_section_and_reports_progress() {
        let (run, status, _cancel) = run();
        let report = build_report(BuildReport { topic: "Tides".into(), sections: 3 }, run).await.unwrap();
        let report = text(report);
        assert!(report.starts_with("# Tides") && report.contains("## Section 3"), "{report}");
        assert_eq!(status.borrow().as_deref(), Some("Writing section 3 of 3"));
    }

    #[tokio::test(start_paused = true)]
    async fn stops_when_cancelled() {
        let (run, _status, cancel) = run();
        let report = tokio::spawn(build_report(BuildReport { topic: "Tides".into(), sections: 20 }, run));
        tokio::time::sleep(SECONDS_PER_SECTION * 2).await;
        cancel.send_replace(true);
        let started = tokio::time::Instant::now();
        assert_eq!(text(report.await.unwrap().unwrap()), "Cancelled.");
        assert!(started.elapsed() < SECONDS_PER_SECTION, "it did not wait for the section to end");
    }
}
