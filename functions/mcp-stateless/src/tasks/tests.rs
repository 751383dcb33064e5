//! The task lifecycle on the in-memory store, driven through the request
//! side ([`Tasks`]) and the worker side ([`TaskWorker`]) directly, with a
//! queue that only records what was sent and a clock the tests move.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::future::BoxFuture;
use rmcp::model::{CallToolResult, ContentBlock, ErrorData, UpdateTaskParams};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    Disposition, TaskPolicy, TaskRun, TaskStep, TaskSupport, TaskTool, TaskTools, TaskWorker, Tasks,
    queue::{TaskMessage, TaskQueue},
    store::{TaskStore, memory::InMemoryTaskStore},
};
use crate::deadline::Deadline;
use crate::{
    clock::{Clock, ManualClock},
    protocol::context::{CallContext, Principal},
    protocol::elicitation::form_request,
    storage::StoreError,
};

#[derive(Default)]
struct RecordingQueue {
    sent: Mutex<Vec<TaskMessage>>,
    refuse: bool,
}

impl RecordingQueue {
    fn take(&self) -> Vec<TaskMessage> {
        std::mem::take(&mut self.sent.lock().unwrap())
    }
}

impl TaskQueue for RecordingQueue {
    fn enqueue<'a>(&'a self, message: &'a TaskMessage) -> BoxFuture<'a, Result<(), StoreError>> {
        let outcome = if self.refuse {
            Err(StoreError::Unavailable("queue down".into()))
        } else {
            self.sent.lock().unwrap().push(message.clone());
            Ok(())
        };
        Box::pin(async move { outcome })
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Seconds {
    seconds: u64,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Nothing {}

async fn wait(args: Seconds, run: TaskRun) -> Result<TaskStep, ErrorData> {
    run.set_status("waiting");
    tokio::select! {
        _ = run.cancelled() => Ok(TaskStep::text("stopped")),
        _ = tokio::time::sleep(Duration::from_secs(args.seconds)) => Ok(TaskStep::text(format!("waited {}", args.seconds))),
    }
}

async fn two_questions(_: Nothing, run: TaskRun) -> Result<TaskStep, ErrorData> {
    if run.response("a").is_some() && run.response("b").is_some() {
        let seen: i64 = run.continuation().unwrap_or_default();
        return Ok(TaskStep::text(format!("both answered after {seen}")));
    }
    let ask = || form_request("?", json!({"type": "object", "properties": {"x": {"type": "string"}}})).unwrap();
    Ok(TaskStep::ask([("a", ask()), ("b", ask())], json!(41)))
}

async fn asks_again(_: Nothing, _run: TaskRun) -> Result<TaskStep, ErrorData> {
    let ask = form_request("?", json!({"type": "object", "properties": {}})).unwrap();
    Ok(TaskStep::ask([("same", ask)], Value::Null))
}

async fn tool_error(_: Nothing, _run: TaskRun) -> Result<TaskStep, ErrorData> {
    Ok(CallToolResult::error(vec![ContentBlock::text("nope")]).into())
}

async fn protocol_error(_: Nothing, _run: TaskRun) -> Result<TaskStep, ErrorData> {
    Err(ErrorData::invalid_params("bad input", None))
}

async fn huge(_: Nothing, _run: TaskRun) -> Result<TaskStep, ErrorData> {
    Ok(TaskStep::text("x".repeat(400_000)))
}

async fn panics(_: Nothing, _run: TaskRun) -> Result<TaskStep, ErrorData> {
    panic!("a bug in a task tool")
}

/// Says which run it is and the key it was given; its first run never
/// ends (a worker that dies mid-run), a later one completes.
async fn says_its_attempt(_: Nothing, run: TaskRun) -> Result<TaskStep, ErrorData> {
    let said = format!("attempt {} key {}", run.attempt(), run.idempotency_key());
    if run.attempt() == 1 {
        run.set_status(said.clone());
        std::future::pending::<()>().await;
    }
    Ok(TaskStep::text(said))
}

fn tools() -> TaskTools {
    TaskTools::new()
        .with(TaskTool::new("says_its_attempt", "", TaskSupport::Required, says_its_attempt))
        .with(TaskTool::new("wait", "", TaskSupport::Optional, wait))
        .with(TaskTool::new("two_questions", "", TaskSupport::Required, two_questions))
        .with(TaskTool::new("asks_again", "", TaskSupport::Required, asks_again))
        .with(TaskTool::new("tool_error", "", TaskSupport::Required, tool_error))
        .with(TaskTool::new("protocol_error", "", TaskSupport::Required, protocol_error))
        .with(TaskTool::new("huge", "", TaskSupport::Required, huge))
        .with(TaskTool::new("panics", "", TaskSupport::Required, panics))
}

struct Fixture {
    tasks: Tasks,
    worker: TaskWorker,
    queue: Arc<RecordingQueue>,
    clock: ManualClock,
}

fn fixture_with(queue: RecordingQueue) -> Fixture {
    let clock = ManualClock::at(1_800_000_000);
    let queue = Arc::new(queue);
    let store: Arc<dyn TaskStore> = Arc::new(InMemoryTaskStore::default());
    let policy = TaskPolicy { heartbeat: Duration::from_millis(20), ..TaskPolicy::default() };
    let tasks = Tasks::new(store, queue.clone(), Arc::new(clock.clone()), tools()).with_policy(policy);
    Fixture { worker: TaskWorker::new(tasks.clone()), tasks, queue, clock }
}

fn fixture() -> Fixture {
    fixture_with(RecordingQueue::default())
}

fn caller(subject: &str, capabilities: Value) -> CallContext {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    CallContext::from_meta(Some(&meta), None, Principal::Verified { issuer: "i".into(), subject: subject.into() }).unwrap()
}

fn with_tasks(subject: &str) -> CallContext {
    caller(subject, json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}))
}

impl Fixture {
    async fn start(&self, ctx: &CallContext, tool: &str, arguments: Value) -> (String, TaskMessage) {
        let created = self.tasks.start(ctx, tool, arguments).await.unwrap();
        let mut sent = self.queue.take();
        assert_eq!(sent.len(), 1, "one message per created task");
        (created.task.task_id, sent.remove(0))
    }

    async fn get(&self, ctx: &CallContext, id: &str) -> Value {
        serde_json::to_value(self.tasks.get(ctx, id).await.unwrap()).unwrap()
    }
}

#[tokio::test]
async fn a_task_is_created_durably_runs_once_and_completes() {
    let f = fixture();
    let alice = with_tasks("alice");
    let created = f.tasks.start(&alice, "wait", json!({"seconds": 0})).await.unwrap();
    let wire = serde_json::to_value(&created).unwrap();
    assert_eq!(wire["resultType"], "task");
    assert_eq!(wire["status"], "working");
    assert!(wire["taskId"].as_str().unwrap().starts_with("tsk_"));
    assert!(wire.get("requestState").is_none() && wire.get("result").is_none());
    assert_eq!(wire["ttlMs"], 3_600_000);
    let id = created.task.task_id.clone();
    // Readable before any worker ran: tasks.md, "Task Creation".
    assert_eq!(f.get(&alice, &id).await["status"], "working");
    let message = f.queue.take().remove(0);
    assert_eq!(f.worker.process(&message).await, Disposition::Done);
    let done = f.get(&alice, &id).await;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["result"]["content"][0]["text"], "waited 0");
    assert_eq!(done["resultType"], "complete");
    // A second delivery of the same message changes nothing.
    assert_eq!(f.worker.process(&message).await, Disposition::Done);
    assert_eq!(f.get(&alice, &id).await, done);
}

#[tokio::test]
async fn two_deliveries_at_once_run_the_function_once() {
    let f = fixture();
    let alice = with_tasks("alice");
    let (id, message) = f.start(&alice, "wait", json!({"seconds": 1})).await;
    let (a, b) = tokio::join!(f.worker.process(&message), f.worker.process(&message));
    assert_eq!((a, b), (Disposition::Done, Disposition::Done));
    let record = f.tasks.store.get(&message.key(), f.clock.now()).await.unwrap().unwrap();
    assert_eq!(record.attempts, 1, "the second delivery found the task leased");
    assert_eq!(f.get(&alice, &id).await["status"], "completed");
}

#[tokio::test]
async fn cancel_reaches_the_running_function_and_the_outcome_is_cancelled() {
    let f = fixture();
    let alice = with_tasks("alice");
    let (id, message) = f.start(&alice, "wait", json!({"seconds": 60})).await;
    let worker = f.worker.clone();
    let run = tokio::spawn(async move { worker.process(&message).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(f.get(&alice, &id).await["statusMessage"], "waiting", "progress is stored");
    f.tasks.cancel(&alice, &id).await.unwrap();
    let finished = tokio::time::timeout(Duration::from_secs(5), run).await.expect("worker stops soon after a cancel");
    assert_eq!(finished.unwrap(), Disposition::Done);
    let after = f.get(&alice, &id).await;
    assert_eq!(after["status"], "cancelled");
    assert!(after.get("result").is_none(), "the function's late answer is not written");
    // Idempotent on a terminal task, and a completed task stays completed.
    f.tasks.cancel(&alice, &id).await.unwrap();
    let (done, message) = f.start(&alice, "wait", json!({"seconds": 0})).await;
    f.worker.process(&message).await;
    f.tasks.cancel(&alice, &done).await.unwrap();
    assert_eq!(f.get(&alice, &done).await["status"], "completed");
}

#[tokio::test]
async fn input_is_gathered_across_updates_then_the_task_resumes() {
    let f = fixture();
    let alice = with_tasks("alice");
    let (id, message) = f.start(&alice, "two_questions", json!({})).await;
    f.worker.process(&message).await;
    let parked = f.get(&alice, &id).await;
    assert_eq!(parked["status"], "input_required");
    assert_eq!(parked["inputRequests"].as_object().unwrap().len(), 2);
    let answer = |pairs: Value| UpdateTaskParams::new(&id, serde_json::from_value(pairs).unwrap());
    // Unknown keys are ignored; a partial answer keeps the rest pending.
    f.tasks.update(&alice, &answer(json!({"zzz": {}, "a": {"action": "accept", "content": {"x": "1"}}}))).await.unwrap();
    let partial = f.get(&alice, &id).await;
    assert_eq!(partial["status"], "input_required");
    assert_eq!(partial["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(), ["b"]);
    assert!(f.queue.take().is_empty(), "not runnable until every answer is in");
    // An answer to an answered key is ignored too.
    f.tasks.update(&alice, &answer(json!({"a": {"action": "decline"}}))).await.unwrap();
    f.tasks.update(&alice, &answer(json!({"b": {"action": "accept", "content": {"x": "2"}}}))).await.unwrap();
    assert_eq!(f.get(&alice, &id).await["status"], "working");
    let resumed = f.queue.take();
    assert_eq!(resumed.len(), 1, "re-enqueued once");
    f.worker.process(&resumed[0]).await;
    let done = f.get(&alice, &id).await;
    assert_eq!(done["result"]["content"][0]["text"], "both answered after 41", "the continuation came back");
    let record = f.tasks.store.get(&resumed[0].key(), f.clock.now()).await.unwrap().unwrap();
    assert_eq!(record.input_responses["a"]["action"], "accept", "the first answer was kept");
}

#[tokio::test]
async fn foreign_expired_malformed_and_unknown_ids_get_one_answer() {
    let f = fixture();
    let alice = with_tasks("alice");
    let (id, _) = f.start(&alice, "wait", json!({"seconds": 0})).await;
    let errors = async |ctx: &CallContext, id: &str| {
        let get = f.tasks.get(ctx, id).await.unwrap_err();
        let cancel = f.tasks.cancel(ctx, id).await.unwrap_err();
        let update = f.tasks.update(ctx, &UpdateTaskParams::new(id, Default::default())).await.unwrap_err();
        (get, cancel, update)
    };
    let unknown = errors(&alice, &super::record::TASK_IDS.mint()).await;
    assert_eq!(unknown.0.code.0, -32602);
    assert_eq!(errors(&with_tasks("mallory"), &id).await, unknown, "somebody else's task");
    assert_eq!(errors(&alice, "tsk_not-an-id").await, unknown, "malformed");
    f.clock.advance(3_601);
    assert_eq!(errors(&alice, &id).await, unknown, "expired");
}

#[tokio::test]
async fn a_task_nobody_started_is_sent_again_after_its_start_deadline_and_never_failed_for_waiting() {
    let f = fixture();
    let alice = with_tasks("alice");
    // The message is lost (a crash between the write and the send), or
    // waits in a busy queue: the record exists, no worker has started it.
    let (id, waiting) = f.start(&alice, "wait", json!({"seconds": 0})).await;
    f.clock.advance(299);
    assert_eq!(f.get(&alice, &id).await["status"], "working");
    assert!(f.queue.take().is_empty(), "nothing sent again before the deadline");
    f.clock.advance(2);
    assert_eq!(f.get(&alice, &id).await["status"], "working", "not failed for waiting");
    let again = f.queue.take();
    assert_eq!(again.len(), 1, "sent to a worker again");
    assert_eq!(f.get(&alice, &id).await["status"], "working");
    assert!(f.queue.take().is_empty(), "once per deadline, not once per poll");
    // The queued message finally reaches a worker: it runs the task.
    assert_eq!(f.worker.process(&waiting).await, Disposition::Done);
    assert_eq!(f.get(&alice, &id).await["status"], "completed");
    assert_eq!(f.worker.process(&again[0]).await, Disposition::Done, "the second message finds it done");
}

/// A worker that dies mid-run (killed, or a panic that aborts the process)
/// gives nothing up: its lease lapses, the next poll sends the task again,
/// and after `max_attempts` unfinished runs the task is failed.
#[tokio::test]
async fn a_run_whose_worker_died_is_sent_again_when_its_lease_lapses_then_failed_after_its_attempts() {
    let f = fixture();
    let alice = with_tasks("alice");
    let (id, mut message) = f.start(&alice, "wait", json!({"seconds": 3_600})).await;
    for attempt in 1..=f.tasks.policy.max_attempts {
        let run = tokio::spawn({
            let (worker, message) = (f.worker.clone(), message.clone());
            async move { worker.process(&message).await }
        });
        let key = super::record::TASK_IDS.key(alice.principal.binding_id(), &id);
        while f.tasks.store.get(&key, f.clock.now()).await.unwrap().unwrap().attempts < attempt {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        run.abort();
        let _ = run.await;
        assert_eq!(f.get(&alice, &id).await["status"], "working", "attempt {attempt}: held until the lease lapses");
        assert!(f.queue.take().is_empty());
        f.clock.advance(f.tasks.policy.lease.as_secs() + 1);
        if attempt == f.tasks.policy.max_attempts {
            break;
        }
        assert_eq!(f.get(&alice, &id).await["status"], "working");
        message = f.queue.take().pop().unwrap_or_else(|| panic!("attempt {attempt}: sent again once the lease lapsed"));
    }
    // The last run's lease lapsed: the next poll fails the task.
    let failed = f.get(&alice, &id).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(failed["statusMessage"].as_str().unwrap().contains("after 3 attempt"), "{failed}");
    assert_eq!(f.worker.process(&message).await, Disposition::Done, "nothing left to run");
}

/// What makes a retried side effect safe: the retry is told it is one, and
/// carries the first run's idempotency key.
#[tokio::test]
async fn a_retried_run_sees_the_next_attempt_and_the_same_idempotency_key() {
    let f = fixture();
    let alice = with_tasks("alice");
    let (id, message) = f.start(&alice, "says_its_attempt", json!({})).await;
    let first_run = tokio::spawn({
        let worker = f.worker.clone();
        async move { worker.process(&message).await }
    });
    let first = loop {
        if let Some(said) = f.get(&alice, &id).await["statusMessage"].as_str().filter(|m| m.starts_with("attempt")) {
            break said.to_owned();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    // The worker dies; its lease lapses; the next poll sends the task again.
    first_run.abort();
    let _ = first_run.await;
    f.clock.advance(f.tasks.policy.lease.as_secs() + 1);
    assert_eq!(f.get(&alice, &id).await["status"], "working");
    let again = f.queue.take().pop().expect("sent again once the lease lapsed");
    // A second run told it is the first would never end.
    let second_run = tokio::time::timeout(Duration::from_secs(10), f.worker.process(&again)).await;
    assert_eq!(second_run.expect("the second run was told it is the first"), Disposition::Done);
    let done = f.get(&alice, &id).await;
    let key = first.strip_prefix("attempt 1 key ").unwrap_or_else(|| panic!("the first run said {first}"));
    assert_eq!(done["result"]["content"][0]["text"], format!("attempt 2 key {key}"), "{done}");
    assert!(key.starts_with("task-") && !key.contains(&id[4..]), "the key {key} does not show the task id {id}");
}

#[tokio::test]
async fn a_queue_that_refuses_fails_the_task_and_the_call() {
    let f = fixture_with(RecordingQueue { refuse: true, ..Default::default() });
    let error = f.tasks.start(&with_tasks("alice"), "wait", json!({"seconds": 0})).await.unwrap_err();
    assert_eq!(error.code.0, -32603);
}

#[tokio::test]
async fn outcomes_map_to_statuses_as_the_extension_says() {
    let f = fixture();
    let alice = with_tasks("alice");
    let run = async |tool: &str| {
        let (id, message) = f.start(&alice, tool, json!({})).await;
        assert_eq!(f.worker.process(&message).await, Disposition::Done);
        f.get(&alice, &id).await
    };
    let tool_error = run("tool_error").await;
    assert_eq!((tool_error["status"].as_str(), tool_error["result"]["isError"].as_bool()), (Some("completed"), Some(true)));
    let protocol_error = run("protocol_error").await;
    assert_eq!(protocol_error["status"], "failed");
    assert_eq!(protocol_error["error"]["code"], -32602);
    assert!(protocol_error.get("result").is_none());
    let huge = run("huge").await;
    assert_eq!(huge["status"], "failed", "a result over the item limit is not half-written");
    // A tool that reuses an answered key is a bug, reported as such.
    let (id, message) = f.start(&alice, "asks_again", json!({})).await;
    f.worker.process(&message).await;
    f.tasks
        .update(&alice, &UpdateTaskParams::new(&id, serde_json::from_value(json!({"same": {"action": "accept", "content": {}}})).unwrap()))
        .await
        .unwrap();
    f.worker.process(&f.queue.take()[0]).await;
    assert_eq!(f.get(&alice, &id).await["status"], "failed");
}

#[tokio::test]
async fn input_the_client_cannot_give_fails_with_its_missing_capability() {
    let f = fixture();
    let no_elicitation = caller("alice", json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}));
    let (id, message) = f.start(&no_elicitation, "two_questions", json!({})).await;
    f.worker.process(&message).await;
    let failed = f.get(&no_elicitation, &id).await;
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["error"]["code"], -32021);
    assert!(failed["error"]["data"]["requiredCapabilities"]["elicitation"].is_object());
}

#[tokio::test]
async fn a_panicking_tool_is_retried_then_dead_lettered_as_failed() {
    let f = fixture();
    let alice = with_tasks("alice");
    let (id, message) = f.start(&alice, "panics", json!({})).await;
    assert_eq!(f.worker.process(&message).await, Disposition::Retry);
    assert_eq!(f.worker.process(&message).await, Disposition::Retry, "the lease was released for the retry");
    assert_eq!(f.get(&alice, &id).await["status"], "working");
    assert_eq!(f.worker.dead_letter(&message, 2).await, Disposition::Done);
    let failed = f.get(&alice, &id).await;
    assert_eq!(failed["status"], "failed");
    assert!(failed["statusMessage"].as_str().unwrap().contains("2 attempt"));
}

#[tokio::test]
async fn clients_without_the_extension_run_optional_tools_inline_and_are_refused_required_ones() {
    let f = fixture();
    let plain = caller("alice", json!({}));
    assert_eq!(f.tasks.start(&plain, "wait", json!({"seconds": 0})).await.unwrap_err().code.0, -32021);
    let arguments = |v: Value| v.as_object().cloned();
    let inline = f.tasks.call("wait", plain.clone(), arguments(json!({"seconds": 0}))).await.unwrap();
    let rmcp::model::CallToolResponse::Complete(result) = inline else { panic!("inline runs complete") };
    assert_eq!(serde_json::to_value(&result).unwrap()["content"][0]["text"], "waited 0");
    assert!(f.queue.take().is_empty(), "nothing was enqueued");
    let required = f.tasks.call("two_questions", plain.clone(), None).await.unwrap_err();
    assert_eq!(required.code.0, -32021);
    assert_eq!(required.data.unwrap()["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"], json!({}));
    // Arguments that do not fit the schema are a tool error, before any task exists.
    let bad = f.tasks.call("wait", with_tasks("alice"), arguments(json!({"seconds": "soon"}))).await.unwrap();
    let rmcp::model::CallToolResponse::Complete(bad) = bad else { panic!("a tool error") };
    assert_eq!(bad.is_error, Some(true));
    assert!(f.queue.take().is_empty());
}

#[tokio::test]
async fn a_run_that_would_overrun_the_invocation_is_stopped_and_failed() {
    let f = fixture();
    let alice = with_tasks("alice");
    let (id, message) = f.start(&alice, "wait", json!({"seconds": 60})).await;
    let deadline = Deadline::after(f.tasks.policy.deadline_margin + Duration::from_millis(200));
    let disposition = tokio::time::timeout(Duration::from_secs(5), f.worker.process_until(&message, Some(deadline))).await;
    assert_eq!(disposition.expect("stopped before the deadline"), Disposition::Done, "not redelivered to overrun again");
    let failed = f.get(&alice, &id).await;
    assert_eq!(failed["status"], "failed");
    assert!(failed["error"]["message"].as_str().unwrap().contains("time limit"), "{failed}");
}

#[tokio::test]
async fn an_owner_over_its_task_quota_gets_a_tool_error_and_nothing_is_queued() {
    use rmcp::model::CallToolResponse;
    let f = fixture();
    let tasks = f.tasks.clone().with_policy(TaskPolicy { max_per_owner: 2, ..f.tasks.policy.clone() });
    let alice = with_tasks("alice");
    let one_second = || Some(json!({"seconds": 1}).as_object().unwrap().clone());
    for _ in 0..2 {
        assert!(matches!(tasks.call("wait", alice.clone(), one_second()).await.unwrap(), CallToolResponse::Task(_)));
    }
    f.queue.take();
    let CallToolResponse::Complete(refused) = tasks.call("wait", alice.clone(), one_second()).await.unwrap() else {
        panic!("a tool error, not a task");
    };
    assert_eq!(refused.is_error, Some(true));
    assert!(serde_json::to_string(&refused.content).unwrap().contains("You have too many tasks open"));
    assert!(f.queue.take().is_empty(), "nothing was created or queued");
    assert_eq!(tasks.start(&alice, "wait", json!({"seconds": 1})).await.unwrap_err().code.0, -32602, "start() says so too");
    assert!(tasks.start(&with_tasks("bob"), "wait", json!({"seconds": 1})).await.is_ok(), "per owner");
}

/// The cap counts open tasks: a task gives its place back when it ends,
/// so the refusal's advice (wait for one, or cancel one) works.
#[tokio::test]
async fn a_task_that_ends_gives_its_owners_place_back() {
    let f = fixture();
    let tasks = f.tasks.clone().with_policy(TaskPolicy { max_per_owner: 3, ..f.tasks.policy.clone() });
    let worker = TaskWorker::new(tasks.clone());
    let alice = with_tasks("alice");
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(tasks.start(&alice, "wait", json!({"seconds": 0})).await.unwrap().task.task_id);
    }
    let messages = f.queue.take();
    assert!(tasks.start(&alice, "wait", json!({"seconds": 0})).await.is_err(), "three open");
    for id in &ids {
        tasks.cancel(&alice, id).await.unwrap();
        tasks.cancel(&alice, id).await.unwrap();
    }
    for _ in 0..3 {
        assert!(tasks.start(&alice, "wait", json!({"seconds": 0})).await.is_ok(), "each cancel gave one place back, once");
    }
    assert!(tasks.start(&alice, "wait", json!({"seconds": 0})).await.is_err(), "and no more than one each");
    // Finishing gives a place back too, once, however often its message comes.
    let running = f.queue.take();
    assert_eq!(worker.process(&running[0]).await, Disposition::Done);
    assert_eq!(worker.process(&running[0]).await, Disposition::Done);
    assert_eq!(worker.process(&messages[0]).await, Disposition::Done, "a cancelled task's message");
    assert!(tasks.start(&alice, "wait", json!({"seconds": 0})).await.is_ok());
    assert!(tasks.start(&alice, "wait", json!({"seconds": 0})).await.is_err());
}

#[tokio::test]
async fn an_inline_run_is_stopped_at_the_inline_limit_and_told_to_use_a_task() {
    let f = fixture();
    let tasks = f.tasks.clone().with_policy(TaskPolicy { inline_limit: Duration::from_millis(200), ..f.tasks.policy.clone() });
    let started = std::time::Instant::now();
    let refused = tasks.call("wait", caller("alice", json!({})), json!({"seconds": 60}).as_object().cloned()).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(30), "stopped, not run for a minute");
    assert_eq!(refused.code.0, -32021, "{refused:?}");
    assert!(refused.message.contains("as a task"), "{}", refused.message);
    assert!(refused.data.unwrap()["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object());
}

#[tokio::test]
async fn stored_arguments_keep_only_what_the_schema_names_and_are_capped() {
    let f = fixture();
    let alice = with_tasks("alice");
    let (id, _) = f.start(&alice, "wait", json!({"seconds": 0, "unnamed": "x".repeat(300_000)})).await;
    let key = super::record::TASK_IDS.key(alice.principal.binding_id(), &id);
    let stored = f.tasks.store.input(&key).await.unwrap().unwrap();
    assert_eq!(stored.arguments, json!({"seconds": 0}), "the unnamed property was not stored");
    assert!(stored.encoded_len() < 2_000, "{}", stored.encoded_len());
    let record = f.tasks.store.get(&key, f.clock.now()).await.unwrap().unwrap();
    assert!(record.encoded_len() < 1_024, "the often-written part stays small: {}", record.encoded_len());
    let published = f.tasks.tools().get("wait").unwrap().tool.input_schema.clone();
    assert_eq!(published["additionalProperties"], false, "and the published schema refuses it");
    let error = f.tasks.start(&alice, "wait", json!({"seconds": "9".repeat(20_000)})).await.unwrap_err();
    assert_eq!(error.code.0, -32602, "over the stored-arguments cap");
}

#[tokio::test]
async fn answers_that_do_not_fit_the_requested_schema_are_refused_and_unasked_fields_are_not_stored() {
    let f = fixture();
    let alice = with_tasks("alice");
    let (id, message) = f.start(&alice, "two_questions", json!({})).await;
    f.worker.process(&message).await;
    let update = |responses: Value| UpdateTaskParams::new(&id, serde_json::from_value(responses).unwrap());
    let wrong_type = update(json!({"a": {"action": "accept", "content": {"x": 5}}}));
    assert_eq!(f.tasks.update(&alice, &wrong_type).await.unwrap_err().code.0, -32602);
    let oversized = update(json!({"a": {"action": "decline", "note": "z".repeat(10_000)}}));
    assert_eq!(f.tasks.update(&alice, &oversized).await.unwrap_err().code.0, -32602);
    let parked = f.get(&alice, &id).await;
    assert_eq!(parked["status"], "input_required", "nothing was recorded");
    assert!(parked["inputRequests"]["a"].is_object());
    // A fitting answer is taken, without what the form did not ask for.
    f.tasks.update(&alice, &update(json!({"a": {"action": "accept", "content": {"x": "ok", "extra": "y".repeat(2_000)}}}))).await.unwrap();
    assert!(f.get(&alice, &id).await["inputRequests"]["a"].is_null());
    let key = super::record::TASK_IDS.key(alice.principal.binding_id(), &id);
    let stored = f.tasks.store.get(&key, f.clock.now()).await.unwrap().unwrap();
    assert_eq!(stored.input_responses["a"], json!({"action": "accept", "content": {"x": "ok"}}), "the unasked field was not stored");
}
