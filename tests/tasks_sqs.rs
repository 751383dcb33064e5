//! Tasks end to end against the emulator: the server in this process, the
//! worker in a process of its own (the `fixture-worker` binary, the same
//! entry point a worker Lambda function runs), DynamoDB for the records and
//! SQS (with a dead-letter queue) in between, all through the real AWS SDK.

use std::{sync::Arc, time::Duration};

use e2e::{
    emulator::{Queues, fresh_queues, fresh_table, sdk, start_task_server, start_task_server_with, unique},
    tasks::{WorkerProcess, get_task, is_terminal, rpc, start_task, wait_for},
};
use mcp_aws::AwsSettings;
use mcp_stateless::{
    Principal,
    clock::{Clock, ManualClock, SystemClock},
    storage::ItemKey,
    tasks::{
        TaskBackend, TaskPolicy,
        queue::{TaskMessage, TaskQueue},
        record::TASK_IDS,
        store::TaskStore,
        timings::retry_delay,
    },
};
use serde_json::json;

// What a minute-long task costs is measured in this binary, not one of
// its own: cargo runs test binaries one after another, and the minute that
// test waits on the real clock (a worker process and SQS, which no test
// clock reaches) then passes beside the other queue tests instead of after
// them. Its name sorts early, so it starts early: libtest starts tests in
// the order of their names.
#[path = "task_cost.rs"]
mod a_minute_long_task;

const PRINCIPAL: &str = "alice";

struct Stack {
    settings: AwsSettings,
    queues: Queues,
}

impl Stack {
    async fn new(visibility_seconds: u32, max_receives: u32) -> Self {
        let sdk = sdk().await;
        let table = fresh_table(&sdk).await;
        let queues = fresh_queues(&sdk, visibility_seconds, max_receives).await;
        let settings = {
            let mut value = AwsSettings::default();
            value.table_name = Some(table);
            value.audience = Some(unique("tasks"));
            value.task_queue_url = Some(queues.url.clone());
            value
        };
        Self { settings, queues }
    }

    /// A worker with a 2 s lease, so a dead worker's task is taken over soon.
    fn worker(&self) -> WorkerProcess {
        self.worker_with_lease("2")
    }

    /// A lease no heartbeat on a loaded machine misses: for tests where a
    /// lapse would be a failure, not the point.
    fn steady_worker(&self) -> WorkerProcess {
        self.worker_with_lease("20")
    }

    fn worker_with_lease(&self, seconds: &str) -> WorkerProcess {
        WorkerProcess::start(
            env!("CARGO_BIN_EXE_fixture-worker"),
            &[
                ("MCP_TABLE_NAME", self.settings.table_name.as_deref().unwrap()),
                ("MCP_TASK_QUEUE_URL", &self.queues.url),
                ("MCP_TASK_DEAD_LETTER_QUEUE_URL", &self.queues.dead_letter_url),
                ("MCP_TASK_LEASE_SECONDS", seconds),
            ],
        )
    }

    /// Messages in the task queue, visible or held by a worker.
    async fn messages_left(&self) -> u64 {
        use aws_sdk_sqs::types::QueueAttributeName::{ApproximateNumberOfMessages, ApproximateNumberOfMessagesNotVisible};
        let sqs = aws_sdk_sqs::Client::new(&sdk().await);
        let asked = sqs.get_queue_attributes().queue_url(&self.queues.url).attribute_names(ApproximateNumberOfMessages);
        let answer = asked.attribute_names(ApproximateNumberOfMessagesNotVisible).send().await.unwrap();
        answer.attributes.unwrap_or_default().values().map(|count| count.parse::<u64>().unwrap()).sum()
    }

    /// The stored record, read as the worker reads it.
    async fn record(&self, id: &str) -> mcp_stateless::tasks::record::TaskRecord {
        let store = mcp_aws::DynamoStore::new(aws_sdk_dynamodb::Client::new(&sdk().await), self.settings.table_name.as_deref().unwrap());
        TaskStore::get(&store, &key(id), SystemClock.now()).await.unwrap().expect("the record")
    }
}

fn key(id: &str) -> ItemKey {
    let principal = Principal::Verified { issuer: mcp_stateless::edge::local::DEV_ISSUER.into(), subject: PRINCIPAL.into() };
    TASK_IDS.key(principal.binding_id(), id)
}

fn running(result: &serde_json::Value) -> bool {
    result["statusMessage"].as_str().is_some_and(|m| m.contains('%')) || is_terminal(result)
}

#[tokio::test]
async fn a_task_is_created_run_by_a_separate_worker_and_completed() {
    let stack = Stack::new(5, 3).await;
    let _worker = stack.worker();
    let addr = start_task_server(&stack.settings, Arc::new(SystemClock)).await;
    let id = start_task(addr, PRINCIPAL, "slow_compute", json!({"seconds": 1, "label": "e2e"})).await;
    // Durable before the answer: readable at once, from the table.
    assert_eq!(get_task(addr, PRINCIPAL, &id).await["result"]["taskId"], id.as_str());
    let done = wait_for(addr, PRINCIPAL, &id, Duration::from_secs(20), is_terminal).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "Computed e2e in 1s");
    assert_eq!(stack.record(&id).await.attempts, 1);
}

#[tokio::test]
async fn a_message_delivered_twice_gives_one_outcome() {
    let stack = Stack::new(5, 3).await;
    let _worker = stack.worker();
    let addr = start_task_server(&stack.settings, Arc::new(SystemClock)).await;
    let id = start_task(addr, PRINCIPAL, "slow_compute", json!({"seconds": 2, "label": "twice"})).await;
    // The same message again, as SQS's at-least-once delivery may do.
    let queue = mcp_aws::SqsTaskQueue::new(aws_sdk_sqs::Client::new(&sdk().await), &stack.queues.url);
    queue.enqueue(&TaskMessage::for_key(&key(&id))).await.unwrap();
    let done = wait_for(addr, PRINCIPAL, &id, Duration::from_secs(20), is_terminal).await;
    assert_eq!(done["status"], "completed");
    // Let the duplicate be seen, then check it started nothing.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(stack.record(&id).await.attempts, 1, "the duplicate found the task leased or finished");
    assert_eq!(get_task(addr, PRINCIPAL, &id).await["result"], done);
}

/// The second run is told it is the second, and carries the first run's
/// idempotency key: what lets a side effect the first run made be
/// recognised on the other side.
#[tokio::test]
async fn a_worker_killed_mid_task_is_taken_over_once_its_lease_lapses() {
    let stack = Stack::new(3, 3).await;
    let first = stack.worker();
    let addr = start_task_server(&stack.settings, Arc::new(SystemClock)).await;
    let id = start_task(addr, PRINCIPAL, "says_its_attempt", json!({"seconds": 3})).await;
    let said = |result: &serde_json::Value| result["statusMessage"].as_str().is_some_and(|m| m.starts_with("attempt "));
    let started = wait_for(addr, PRINCIPAL, &id, Duration::from_secs(20), |result| said(result) || is_terminal(result)).await;
    first.kill();
    let first_said = started["statusMessage"].as_str().unwrap_or_default().to_owned();
    let key = first_said.strip_prefix("attempt 1 key ").unwrap_or_else(|| panic!("the first run said {started}"));
    let _second = stack.worker();
    let done = wait_for(addr, PRINCIPAL, &id, Duration::from_secs(60), is_terminal).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], format!("attempt 2 key {key}"), "{done}");
    assert_eq!(stack.record(&id).await.attempts, 2, "run again from the start by the second worker");
}

/// Each run outlasts the queue's 1 s visibility timeout (as a panic's
/// backtrace does on a loaded machine), so a message the worker did not
/// hold invisible itself would come back mid-run, be deleted as a
/// duplicate, and take the retry with it.
#[tokio::test]
async fn a_message_that_keeps_failing_lands_in_the_dead_letter_queue_and_the_task_fails() {
    const RECEIVES: u32 = 2;
    let stack = Stack::new(1, RECEIVES).await;
    let _worker = stack.steady_worker();
    let addr = start_task_server(&stack.settings, Arc::new(SystemClock)).await;
    let id = start_task(addr, PRINCIPAL, "always_panics", json!({"after_ms": 2_500})).await;
    // Each run retried after its delay, then the dead-letter queue.
    let schedule: Duration = (1..=RECEIVES).map(retry_delay).sum();
    let failed = wait_for(addr, PRINCIPAL, &id, schedule + Duration::from_secs(90), is_terminal).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["code"], -32603);
    assert!(failed["statusMessage"].as_str().unwrap().contains("did not finish it"), "{failed}");
    assert!(failed.get("result").is_none());
    assert!(stack.record(&id).await.attempts >= 2, "it was retried before it was dead-lettered");
}

#[tokio::test]
async fn a_cancel_ends_the_task_cancelled_and_stops_the_worker() {
    let stack = Stack::new(5, 3).await;
    let _worker = stack.worker();
    let addr = start_task_server(&stack.settings, Arc::new(SystemClock)).await;
    let id = start_task(addr, PRINCIPAL, "slow_compute", json!({"seconds": 60, "label": "cancel"})).await;
    wait_for(addr, PRINCIPAL, &id, Duration::from_secs(20), running).await;
    let ack = rpc(addr, PRINCIPAL, "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    assert_eq!(get_task(addr, PRINCIPAL, &id).await["result"]["status"], "cancelled");
    // The worker notices within a heartbeat, stops the run (60 s if left
    // alone) and deletes its message; nothing it finishes later overwrites
    // the outcome.
    let started = std::time::Instant::now();
    while stack.messages_left().await > 0 {
        assert!(started.elapsed() < Duration::from_secs(30), "the worker did not stop the cancelled run");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(get_task(addr, PRINCIPAL, &id).await["result"]["status"], "cancelled");
}

#[tokio::test]
async fn input_required_then_update_then_completed() {
    let stack = Stack::new(5, 3).await;
    let _worker = stack.worker();
    let addr = start_task_server(&stack.settings, Arc::new(SystemClock)).await;
    let id = start_task(addr, PRINCIPAL, "confirm_delete", json!({"filename": "notes.txt"})).await;
    let parked = wait_for(addr, PRINCIPAL, &id, Duration::from_secs(20), |r| r["status"] != "working").await;
    assert_eq!(parked["status"], "input_required", "{parked}");
    assert_eq!(parked["inputRequests"]["confirm"]["method"], "elicitation/create");
    let answer = json!({"taskId": id, "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}});
    assert_eq!(rpc(addr, PRINCIPAL, "tasks/update", answer).await["result"]["resultType"], "complete");
    let done = wait_for(addr, PRINCIPAL, &id, Duration::from_secs(20), is_terminal).await;
    assert_eq!(done["result"]["content"][0]["text"], "Deleted notes.txt", "{done}");
    assert_eq!(stack.record(&id).await.attempts, 2, "one run to ask, one to finish");
}

#[tokio::test]
async fn a_foreign_principal_and_an_expired_task_look_like_an_unknown_id() {
    let stack = Stack::new(5, 3).await;
    let clock = ManualClock::at(SystemClock.now());
    let addr = start_task_server(&stack.settings, Arc::new(clock.clone())).await;
    let id = start_task(addr, PRINCIPAL, "slow_compute", json!({"seconds": 60, "label": "mine"})).await;
    let unknown = get_task(addr, PRINCIPAL, &TASK_IDS.mint()).await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    for method in ["tasks/get", "tasks/cancel"] {
        let foreign = rpc(addr, "mallory", method, json!({"taskId": id})).await;
        assert_eq!(foreign["error"], unknown["error"], "{method} by somebody else");
    }
    clock.advance(3_601);
    assert_eq!(get_task(addr, PRINCIPAL, &id).await["error"], unknown["error"], "expired");
}

/// Drops the first message (the process died between writing the task and
/// enqueueing it) and sends the others.
struct LoseFirstSend {
    inner: mcp_aws::SqsTaskQueue,
    lost: std::sync::atomic::AtomicBool,
}

impl TaskQueue for LoseFirstSend {
    fn enqueue<'a>(&'a self, message: &'a TaskMessage) -> futures::future::BoxFuture<'a, Result<(), mcp_stateless::storage::StoreError>> {
        if !self.lost.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return Box::pin(async { Ok(()) });
        }
        self.inner.enqueue(message)
    }
}

#[tokio::test]
async fn a_message_lost_between_the_write_and_the_send_is_sent_again_and_the_task_runs() {
    let stack = Stack::new(5, 3).await;
    let _worker = stack.steady_worker();
    let sdk = sdk().await;
    let mut deps = mcp_aws::dependencies(&stack.settings, Some(&sdk), Arc::new(SystemClock));
    let store = Arc::new(mcp_aws::DynamoStore::new(aws_sdk_dynamodb::Client::new(&sdk), stack.settings.table_name.as_deref().unwrap()));
    let queue =
        LoseFirstSend { inner: mcp_aws::SqsTaskQueue::new(aws_sdk_sqs::Client::new(&sdk), &stack.queues.url), lost: Default::default() };
    let policy = {
        let mut value = TaskPolicy::default();
        value.start_deadline = Duration::from_secs(2);
        value
    };
    deps.tasks = TaskBackend::new(store, Arc::new(queue), Arc::new(SystemClock)).with_policy(policy);
    let addr = start_task_server_with(deps).await;
    let id = start_task(addr, PRINCIPAL, "slow_compute", json!({"seconds": 1, "label": "lost"})).await;
    // Polling past the start deadline sends it again; the worker runs it.
    let done = wait_for(addr, PRINCIPAL, &id, Duration::from_secs(60), is_terminal).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(stack.record(&id).await.attempts, 1);
}

/// Issue 16, finding 8: a message put on the dead-letter queue by hand,
/// naming a task a worker is running, does not end it.
#[tokio::test]
async fn a_dead_letter_naming_a_running_task_leaves_it_alone() {
    let stack = Stack::new(5, 3).await;
    let _worker = stack.steady_worker();
    let addr = start_task_server(&stack.settings, Arc::new(SystemClock)).await;
    let id = start_task(addr, PRINCIPAL, "slow_compute", json!({"seconds": 4, "label": "healthy"})).await;
    wait_for(addr, PRINCIPAL, &id, Duration::from_secs(20), running).await;
    let forged = serde_json::to_string(&TaskMessage::for_key(&key(&id))).unwrap();
    let sqs = aws_sdk_sqs::Client::new(&sdk().await);
    sqs.send_message().queue_url(&stack.queues.dead_letter_url).message_body(forged).send().await.unwrap();
    let done = wait_for(addr, PRINCIPAL, &id, Duration::from_secs(30), is_terminal).await;
    assert_eq!(done["status"], "completed", "{done}");
}

/// Issue 16, finding 9: with `panic = "abort"` (the release profile) a
/// panicking run ends the worker process; the task is still settled: its
/// lease lapses, a poll sends it again, and after its attempts it fails.
#[tokio::test]
async fn a_run_that_aborts_its_worker_process_is_retried_then_failed() {
    let stack = Stack::new(5, 10).await;
    let mut worker = stack.worker();
    let addr = start_task_server(&stack.settings, Arc::new(SystemClock)).await;
    let id = start_task(addr, PRINCIPAL, "always_aborts", json!({})).await;
    let started = std::time::Instant::now();
    let mut restarts = 0;
    let failed = loop {
        let got = get_task(addr, PRINCIPAL, &id).await["result"].clone();
        if is_terminal(&got) {
            break got;
        }
        if worker.exited() {
            // Lambda starts a new sandbox for the next event.
            worker = stack.worker();
            restarts += 1;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "not settled: {got}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(failed["statusMessage"].as_str().unwrap().contains("after 3 attempt(s)"), "{failed}");
    assert!(restarts >= 2, "each run took its worker down ({restarts} restarts)");
    assert_eq!(stack.record(&id).await.attempts, 3, "three runs, no more");
}
