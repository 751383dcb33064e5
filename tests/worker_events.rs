//! The worker function's entry point fed SQS events shaped as Lambda
//! delivers them (`tests/fixtures/sqs-task-message.json`): which messages
//! it reports for redelivery (partial batch responses), and what a record
//! from the dead-letter queue does.

use std::sync::Arc;

use e2e::{caller, tasks::task_fixtures};
use mcp_aws::worker_entry::{BatchItemFailure, SqsEvent, handle_sqs_event};
use mcp_stateless::{
    clock::SystemClock,
    tasks::{TaskBackend, TaskWorker, Tasks, queue::InProcessQueue, store::memory::InMemoryTaskStore},
};
use serde_json::{Value, json};

const QUEUE_ARN: &str = "arn:aws:sqs:eu-west-1:123456789012:mcp-tasks";
const DEAD_LETTER_ARN: &str = "arn:aws:sqs:eu-west-1:123456789012:mcp-tasks-dlq";

fn event(body: &str, source_arn: &str) -> (SqsEvent, String) {
    let path = format!("{}/fixtures/sqs-task-message.json", env!("CARGO_MANIFEST_DIR"));
    let mut event: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    event["Records"][0]["body"] = json!(body);
    event["Records"][0]["eventSourceARN"] = json!(source_arn);
    let id = event["Records"][0]["messageId"].as_str().unwrap().to_owned();
    (serde_json::from_value(event).unwrap(), id)
}

/// The fixture's message names a task of this caller.
fn owner() -> mcp_stateless::CallContext {
    let mut ctx = caller("user-1");
    ctx.client_capabilities.insert("extensions".into(), json!({"io.modelcontextprotocol/tasks": {}}));
    ctx
}

/// A task created through the request side, and the message it enqueued.
async fn created(tool: &str, arguments: Value) -> (Tasks, TaskWorker, String, String) {
    let (queue, mut sent) = InProcessQueue::new();
    let backend = TaskBackend::new(Arc::new(InMemoryTaskStore::default()), Arc::new(queue), Arc::new(SystemClock));
    let tasks = backend.with_tools(task_fixtures());
    let task = tasks.start(&owner(), tool, arguments).await.unwrap();
    let message = serde_json::to_string(&sent.recv().await.unwrap()).unwrap();
    (tasks.clone(), TaskWorker::new(tasks), task.task.task_id, message)
}

#[tokio::test]
async fn the_fixture_is_read_and_an_unknown_task_is_not_retried() {
    let (_tasks, worker, _, _) = created("slow_compute", json!({"seconds": 0})).await;
    let (event, _) = event(&event_body_of_fixture(), QUEUE_ARN);
    assert_eq!(event.records[0].attributes["ApproximateReceiveCount"], "1");
    assert!(handle_sqs_event(&worker, event, Some(DEAD_LETTER_ARN), None, None).await.batch_item_failures.is_empty());
}

fn event_body_of_fixture() -> String {
    let path = format!("{}/fixtures/sqs-task-message.json", env!("CARGO_MANIFEST_DIR"));
    let event: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    event["Records"][0]["body"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_run_is_reported_done_and_the_answer_is_stored() {
    let (tasks, worker, id, message) = created("slow_compute", json!({"seconds": 0, "label": "event"})).await;
    let (event, _) = event(&message, QUEUE_ARN);
    assert!(handle_sqs_event(&worker, event, Some(DEAD_LETTER_ARN), None, None).await.batch_item_failures.is_empty());
    let done = serde_json::to_value(tasks.get(&owner(), &id).await.unwrap()).unwrap();
    assert_eq!(done["status"], "completed");
}

#[tokio::test]
async fn a_failed_run_is_reported_for_redelivery_and_a_dead_letter_fails_the_task() {
    let (tasks, worker, id, message) = created("always_panics", json!({})).await;
    let (event_, message_id) = event(&message, QUEUE_ARN);
    let response = handle_sqs_event(&worker, event_, Some(DEAD_LETTER_ARN), None, None).await;
    assert_eq!(response.batch_item_failures, vec![BatchItemFailure { item_identifier: message_id }]);
    assert_eq!(serde_json::to_value(&response).unwrap()["batchItemFailures"][0]["itemIdentifier"], "059f36b4-87a3-44ab-83d2-661975830a7d");
    let (dead, _) = event(&message, DEAD_LETTER_ARN);
    assert!(handle_sqs_event(&worker, dead, Some(DEAD_LETTER_ARN), None, None).await.batch_item_failures.is_empty());
    assert_eq!(serde_json::to_value(tasks.get(&owner(), &id).await.unwrap()).unwrap()["status"], "failed");
}

#[tokio::test]
async fn an_unreadable_body_is_dropped_not_retried() {
    let (_tasks, worker, _, _) = created("slow_compute", json!({"seconds": 0})).await;
    let (event, _) = event("not json", QUEUE_ARN);
    assert!(handle_sqs_event(&worker, event, Some(DEAD_LETTER_ARN), None, None).await.batch_item_failures.is_empty());
}
