//! Example: a task that asks the user for input halfway. `publish_article`
//! drafts the article, then parks the task in `input_required` with an
//! elicitation; the worker's invocation ends there. When the client answers
//! with `tasks/update` (on any instance), the task is enqueued again and the
//! function runs once more, from the start, with the answer and the draft
//! it handed over as its continuation.

use std::time::Duration;

use mcp_stateless::prelude::{ElicitationReply, TaskRun, TaskStep, TaskSupport, TaskTool, TaskTools, form_request};
use rmcp::{ErrorData, model::ToolAnnotations};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Debug, Deserialize, JsonSchema)]
struct PublishArticle {
    /// The article's title.
    #[schemars(length(min = 1, max = 200))]
    title: String,
}

/// What the first run hands to the second.
#[derive(Serialize, Deserialize)]
struct Draft {
    body: String,
}

async fn publish_article(args: PublishArticle, run: TaskRun) -> Result<TaskStep, ErrorData> {
    let Some(draft) = run.continuation::<Draft>() else {
        run.set_status("Drafting");
        tokio::time::sleep(Duration::from_secs(1)).await;
        let draft = Draft { body: format!("{}: a short article.", args.title) };
        let ask = form_request(
            &format!("Publish \"{}\" now?", args.title),
            json!({"type": "object", "properties": {"publish": {"type": "boolean"}}, "required": ["publish"]}),
        )?;
        return Ok(TaskStep::ask([("publish", ask)], serde_json::to_value(&draft).unwrap_or_default()));
    };
    Ok(match run.elicitation("publish") {
        ElicitationReply::Accepted(content) if content.get("publish") == Some(&json!(true)) => {
            run.set_status("Publishing");
            tokio::time::sleep(Duration::from_secs(1)).await;
            TaskStep::text(format!("Published: {}", draft.body))
        }
        _ => TaskStep::text("Not published; the draft was discarded."),
    })
}

pub(crate) fn publish_tasks() -> TaskTools {
    TaskTools::new().with(
        TaskTool::new(
            "publish_article",
            "Drafts an article, asks the user to approve it, then publishes it; runs as a task",
            TaskSupport::Required,
            publish_article,
        )
        .with_title("Publish an article")
        // Publishing is visible to others and cannot be taken back.
        .with_annotations(ToolAnnotations::new().read_only(false).destructive(true)),
    )
}

#[cfg(test)]
mod tests {
    use mcp_stateless::prelude::TaskRun;
    use serde_json::{Value, json};

    use super::*;

    fn run(responses: Value, continuation: Option<Value>) -> TaskRun {
        mcp_stateless::testing::task_run(responses, continuation).run
    }

    fn text(step: TaskStep) -> String {
        let TaskStep::Complete(result) = step else { panic!("expected a result") };
        serde_json::to_value(result).unwrap()["content"][0]["text"].as_str().unwrap().to_owned()
    }

    #[tokio::test(start_paused = true)]
    async fn drafts_asks_then_publishes_what_it_drafted() {
        let args = || PublishArticle { title: "Tides".into() };
        let TaskStep::NeedInput { requests, continuation } = publish_article(args(), run(json!({}), None)).await.unwrap() else {
            panic!("the first run asks")
        };
        assert!(requests.contains_key("publish"));
        let yes = json!({"publish": {"action": "accept", "content": {"publish": true}}});
        let published = publish_article(args(), run(yes, Some(continuation.clone()))).await.unwrap();
        assert_eq!(text(published), "Published: Tides: a short article.");
        let no = json!({"publish": {"action": "decline"}});
        assert!(text(publish_article(args(), run(no, Some(continuation))).await.unwrap()).starts_with("Not published"));
    }
}
