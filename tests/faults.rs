//! Faults between the server and its AWS dependencies, injected by a proxy
//! in front of the emulator (`support/fault_proxy.rs`): throttling, 500s,
//! dropped connections and endpoints that never answer, for KMS, DynamoDB
//! and SQS. Each must give a clean JSON-RPC error within a bound (the SDK
//! limits, here shortened), leave nothing half-written, and recover once
//! the fault clears.

use std::{
    net::SocketAddr,
    sync::Arc,
    time::{Duration, Instant},
};

use e2e::{
    call_tool,
    emulator::{fresh_key, fresh_queues, fresh_table, scan, sdk, settings, start_fixtures_with, start_task_server_with, unique},
    fault_proxy::{Fault, FaultProxy, Service},
    tasks::{WorkerProcess, is_terminal, rpc, start_task, wait_for},
    text_of,
};
use mcp_aws::{AwsSettings, CallLimits};
use mcp_stateless::{clock::SystemClock, tasks::TaskPolicy};
use serde_json::{Value, json};

/// The Lambda limits scaled down so the suite stays quick.
const FAST: CallLimits = CallLimits {
    connect: Duration::from_millis(300),
    attempt: Duration::from_millis(400),
    operation: Duration::from_millis(1_200),
    max_attempts: 3,
    initial_backoff: Duration::from_millis(10),
    max_backoff: Duration::from_millis(50),
};

const FAULTS: [Fault; 4] = [Fault::Throttling, Fault::ServerError, Fault::Reset, Fault::Stall];

/// Far above what any request may take under `FAST` (a few calls of at
/// most 1.2 s each); without the limits a stalled endpoint hangs forever.
const ANSWER_WITHIN: Duration = Duration::from_secs(15);

fn elicit() -> Value {
    json!({"elicitation": {}})
}

struct Rig {
    proxy: FaultProxy,
    settings: AwsSettings,
    direct: aws_config::SdkConfig,
}

impl Rig {
    async fn new() -> Self {
        let direct = sdk().await;
        let proxy = FaultProxy::in_front_of_emulator().await;
        let settings = settings(&fresh_key(&direct).await, &fresh_table(&direct).await, &unique("faults"));
        Self { proxy, settings, direct }
    }

    /// An SDK configuration that reaches the emulator through the proxy.
    async fn faulty_sdk(&self) -> aws_config::SdkConfig {
        self.sdk_with(&FAST).await
    }

    async fn sdk_with(&self, limits: &CallLimits) -> aws_config::SdkConfig {
        // Set on the loader, an endpoint overrides AWS_ENDPOINT_URL (set on a
        // built SdkConfig, it would not).
        e2e::emulator::loader(limits).endpoint_url(&self.proxy.url).load().await
    }

    /// A server instance of its own (its own key cache) behind the proxy.
    async fn server(&self) -> SocketAddr {
        let deps = mcp_aws::dependencies(&self.settings, Some(&self.faulty_sdk().await), Arc::new(SystemClock));
        start_fixtures_with(deps).await
    }

    /// The task server behind the proxy, with at most `cap` open tasks per
    /// owner, and a worker in a process of its own (straight to the
    /// emulator: the faults are the request function's).
    async fn task_server(&self, cap: u32) -> (SocketAddr, WorkerProcess) {
        let queues = fresh_queues(&self.direct, 5, 3).await;
        let settings = {
            let mut value = self.settings.clone();
            value.task_queue_url = Some(queues.url.clone());
            value
        };
        // The emulator's latency, not Lambda's: losing an answer must cost
        // a retry, not a timeout.
        let limits = CallLimits { attempt: Duration::from_secs(10), operation: Duration::from_secs(30), ..FAST };
        let mut deps = mcp_aws::dependencies(&settings, Some(&self.sdk_with(&limits).await), Arc::new(SystemClock));
        deps.tasks = deps.tasks.with_policy({
            let mut value = TaskPolicy::default();
            value.max_per_owner = cap;
            value
        });
        let worker = WorkerProcess::start(
            env!("CARGO_BIN_EXE_fixture-worker"),
            &[
                ("MCP_TABLE_NAME", settings.table_name.as_deref().unwrap()),
                ("MCP_TASK_QUEUE_URL", &queues.url),
                ("MCP_TASK_LEASE_SECONDS", "20"),
            ],
        );
        (start_task_server_with(deps).await, worker)
    }
}

fn created(reply: &Value) -> bool {
    reply["result"]["resultType"] == "task"
}

async fn create(addr: SocketAddr, seconds: u64) -> Value {
    rpc(addr, "alice", "tools/call", json!({"name": "slow_compute", "arguments": {"seconds": seconds, "label": "cap"}})).await
}

/// Issue 16, finding 6: the update lands, its answer is lost, the SDK's
/// retry finds its own write; the task resumes with the user's answer.
#[tokio::test]
async fn a_task_update_whose_answer_was_lost_still_resumes_the_task() {
    let rig = Rig::new().await;
    let (addr, _worker) = rig.task_server(20).await;
    let id = start_task(addr, "alice", "confirm_delete", json!({"filename": "notes.txt"})).await;
    let parked = wait_for(addr, "alice", &id, Duration::from_secs(30), |r| r["status"] != "working").await;
    assert_eq!(parked["status"], "input_required", "{parked}");
    rig.proxy.set_on(Service::DynamoDb, "PutItem", Fault::LoseAnswer, 0);
    let answer = json!({"taskId": id, "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}});
    let ack = rpc(addr, "alice", "tasks/update", answer).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let done = wait_for(addr, "alice", &id, Duration::from_secs(60), is_terminal).await;
    assert_eq!(done["result"]["content"][0]["text"], "Deleted notes.txt", "{done}");
}

/// Issue 16, finding 7, and issue 44: a create (the input, the record and
/// the owner's place, one transaction) whose answer was lost still gives
/// the client its task, and the task runs; so does one whose every answer
/// was lost (the store settles that it landed); one whose every attempt
/// failed before landing is no task, and its first attempt, landing
/// late, takes no place.
#[tokio::test]
async fn a_task_create_whose_answer_was_lost_still_creates_and_runs_it() {
    let rig = Rig::new().await;
    let (addr, _worker) = rig.task_server(2).await;
    for faults in [&[Fault::LoseAnswer][..], &[Fault::LoseAnswer, Fault::ServerError, Fault::ServerError]] {
        rig.proxy.in_turn(Service::DynamoDb, "TransactWriteItems", faults);
        let reply = create(addr, 0).await;
        assert!(created(&reply), "{faults:?}: {reply}");
        let id = reply["result"]["taskId"].as_str().unwrap();
        assert_eq!(wait_for(addr, "alice", id, Duration::from_secs(60), is_terminal).await["status"], "completed", "{faults:?}");
    }
    rig.proxy.in_turn(Service::DynamoDb, "TransactWriteItems", &[Fault::LandLate, Fault::ServerError, Fault::ServerError]);
    let reply = create(addr, 60).await;
    assert_eq!(reply["error"]["code"], -32603, "every attempt failed, none landed: {reply}");
    assert_eq!(rig.proxy.land_held().await, (1, 1), "the late first attempt was refused whole");
    // Both places free: the two finished tasks gave theirs back, and the
    // failed create took none.
    assert!(created(&create(addr, 60).await) && created(&create(addr, 60).await), "two places");
    assert!(!created(&create(addr, 60).await), "and two only");
}

/// Issue 16, findings 7 and 10: a lost answer on the cap's counter counts
/// (or gives back) once; a cancelled task gives its place back.
#[tokio::test]
async fn the_open_task_cap_counts_each_task_once_through_lost_answers() {
    let rig = Rig::new().await;
    let (addr, _worker) = rig.task_server(2).await;
    rig.proxy.set_on(Service::DynamoDb, "TransactWriteItems", Fault::LoseAnswer, 0);
    let first = create(addr, 60).await;
    assert!(created(&first), "{first}");
    let second = create(addr, 60).await;
    assert!(created(&second), "the lost answer counted once: {second}");
    assert!(!created(&create(addr, 60).await), "two open: the cap");
    // Cancelling gives the place back, once, though its answer is lost.
    rig.proxy.set_on(Service::DynamoDb, "TransactWriteItems", Fault::LoseAnswer, 0);
    let cancel = rpc(addr, "alice", "tasks/cancel", json!({"taskId": first["result"]["taskId"]})).await;
    assert_eq!(cancel["result"]["resultType"], "complete", "{cancel}");
    assert!(created(&create(addr, 60).await), "the cancelled task's place came back");
    assert!(!created(&create(addr, 60).await), "and only one place");
}

/// The reply to `call`, and how long it took; fails the test if it took
/// longer than [`ANSWER_WITHIN`].
async fn timed(call: impl Future<Output = Value>) -> (Value, Duration) {
    let started = Instant::now();
    let reply = tokio::time::timeout(ANSWER_WITHIN, call).await.expect("a faulted request still answers");
    (reply, started.elapsed())
}

fn assert_server_error(reply: &Value, message: &str, what: &str) {
    assert_eq!(reply["error"]["code"], -32603, "{what}: {reply}");
    assert_eq!(reply["error"]["message"], message, "{what}: nothing about the dependency leaks");
}

async fn entries(addr: SocketAddr, list: &str) -> Value {
    let shown = call_tool(addr, "alice", "show_list", json!({"list": list}), json!({}), json!({})).await;
    shown["result"]["structuredContent"]["entries"].clone()
}

#[tokio::test]
async fn dynamodb_faults_fail_cleanly_change_nothing_and_recover() {
    for fault in FAULTS {
        let rig = Rig::new().await;
        let addr = rig.server().await;
        let list = text_of(&call_tool(addr, "alice", "open_list", json!({}), json!({}), json!({})).await);
        call_tool(addr, "alice", "append", json!({"list": list, "entry": "kept"}), json!({}), json!({})).await;

        rig.proxy.set(Service::DynamoDb, fault);
        let (appended, took) =
            timed(call_tool(addr, "alice", "append", json!({"list": list, "entry": "lost"}), json!({}), json!({}))).await;
        assert_server_error(&appended, "storage unavailable", &format!("append under {fault:?}"));
        let (shown, _) = timed(call_tool(addr, "alice", "show_list", json!({"list": list}), json!({}), json!({}))).await;
        assert_server_error(&shown, "storage unavailable", &format!("show_list under {fault:?}"));
        eprintln!("DynamoDB {fault:?}: -32603 after {took:?}");

        rig.proxy.clear();
        assert_eq!(entries(addr, &list).await, json!(["kept"]), "{fault:?}: the failed append wrote nothing");
        let after = call_tool(addr, "alice", "append", json!({"list": list, "entry": "after"}), json!({}), json!({})).await;
        assert_eq!(text_of(&after), "2 entries", "{fault:?}: recovered");
    }
}

#[tokio::test]
async fn an_append_whose_answer_was_lost_is_not_applied_twice_by_the_retry() {
    let rig = Rig::new().await;
    let addr = rig.server().await;
    let list = text_of(&call_tool(addr, "alice", "open_list", json!({}), json!({}), json!({})).await);
    rig.proxy.set(Service::DynamoDb, Fault::LoseAnswer);
    let seen_before = rig.proxy.seen(Service::DynamoDb);
    let appended = call_tool(addr, "alice", "append", json!({"list": list, "entry": "once"}), json!({}), json!({})).await;
    assert_eq!(text_of(&appended), "1 entries", "the retry found its own first attempt: {appended}");
    assert!(rig.proxy.seen(Service::DynamoDb) >= seen_before + 2, "the SDK did retry");
    assert_eq!(entries(addr, &list).await, json!(["once"]));
}

#[tokio::test]
async fn a_compare_and_set_whose_answer_was_lost_is_not_applied_twice() {
    use e2e::fixture_server::LIST;
    use mcp_stateless::Handles;

    let rig = Rig::new().await;
    let store = Arc::new(mcp_aws::DynamoStore::new(
        aws_sdk_dynamodb::Client::new(&rig.faulty_sdk().await),
        rig.settings.table_name.clone().unwrap(),
    ));
    let handles = Handles::new(store, Arc::new(SystemClock));
    let alice = e2e::caller("alice");
    let list = handles.create(&alice, &LIST, json!({"count": 0})).await.unwrap();
    // The read passes; the conditional write lands and its answer is lost.
    rig.proxy.set_after(Service::DynamoDb, Fault::LoseAnswer, 1);
    let updated = handles.update(&alice, &LIST, &list, |data| data["count"] = json!(data["count"].as_u64().unwrap() + 1)).await.unwrap();
    assert_eq!(updated.data["count"], 1, "incremented once, though the SDK sent the write twice");
    assert_eq!(handles.read(&alice, &LIST, &list).await.unwrap().data["count"], 1);
}

#[tokio::test]
async fn a_slow_but_answering_dependency_is_waited_for() {
    let rig = Rig::new().await;
    // A delay far inside the limits, so a loaded machine's emulator (which
    // answers in seconds then) cannot push it over: patience is what is
    // tested here, not the bound.
    let patient = CallLimits { attempt: Duration::from_secs(10), operation: Duration::from_secs(30), ..FAST };
    let deps = mcp_aws::dependencies(&rig.settings, Some(&rig.sdk_with(&patient).await), Arc::new(SystemClock));
    let addr = start_fixtures_with(deps).await;
    rig.proxy.set(Service::DynamoDb, Fault::Slow(Duration::from_millis(300)));
    let list = text_of(&call_tool(addr, "alice", "open_list", json!({}), json!({}), json!({})).await);
    assert!(list.starts_with("lst_"), "{list}");
    assert_eq!(entries(addr, &list).await, json!([]));
}

#[tokio::test]
async fn kms_faults_fail_cleanly_and_a_valid_state_still_opens_afterwards() {
    for fault in FAULTS {
        let rig = Rig::new().await;
        let sealer = rig.server().await;

        rig.proxy.set(Service::Kms, fault);
        let (round1, took) = timed(call_tool(sealer, "alice", "two_questions", json!({}), elicit(), json!({}))).await;
        assert_server_error(&round1, "request state service unavailable", &format!("GenerateDataKey under {fault:?}"));
        eprintln!("KMS GenerateDataKey {fault:?}: -32603 after {took:?}");
        rig.proxy.clear();
        let round1 = call_tool(sealer, "alice", "two_questions", json!({}), elicit(), json!({})).await;
        assert_eq!(round1["result"]["resultType"], "input_required", "{fault:?}: sealing recovered: {round1}");

        // Another instance has not seen the data key: it must call Decrypt.
        let opener = rig.server().await;
        let answer = json!({
            "requestState": round1["result"]["requestState"],
            "inputResponses": {"first": {"action": "accept", "content": {"first": "one"}}},
        });
        rig.proxy.set(Service::Kms, fault);
        let (round2, took) = timed(call_tool(opener, "alice", "two_questions", json!({}), elicit(), answer.clone())).await;
        assert_server_error(&round2, "request state service unavailable", &format!("Decrypt under {fault:?}"));
        eprintln!("KMS Decrypt {fault:?}: -32603 after {took:?}");
        rig.proxy.clear();
        // An unavailable KMS is not a refusal: the key was not remembered as bad.
        let round2 = call_tool(opener, "alice", "two_questions", json!({}), elicit(), answer).await;
        assert_eq!(round2["result"]["inputRequests"]["second"]["method"], "elicitation/create", "{fault:?}: {round2}");
    }
}

#[tokio::test]
async fn a_single_use_confirmation_interrupted_by_a_fault_leaves_the_list_and_a_way_forward() {
    let rig = Rig::new().await;
    let addr = rig.server().await;
    let list = text_of(&call_tool(addr, "alice", "open_list", json!({}), json!({}), json!({})).await);
    call_tool(addr, "alice", "append", json!({"list": list, "entry": "kept"}), json!({}), json!({})).await;
    let confirm =
        |state: &Value| json!({"requestState": state, "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}});

    // The redemption record fails: nothing was redeemed, the same state works.
    let round1 = call_tool(addr, "alice", "discard_list", json!({"list": list}), elicit(), json!({})).await;
    let state = round1["result"]["requestState"].clone();
    rig.proxy.set(Service::DynamoDb, Fault::ServerError);
    let (failed, _) = timed(call_tool(addr, "alice", "discard_list", json!({"list": list}), elicit(), confirm(&state))).await;
    assert_server_error(&failed, "request state service unavailable", "redemption under a DynamoDB fault");
    rig.proxy.clear();
    assert_eq!(entries(addr, &list).await, json!(["kept"]));

    // The redemption lands and the delete after it fails: the list is kept,
    // the spent confirmation is refused, and a new one completes.
    rig.proxy.set_after(Service::DynamoDb, Fault::ServerError, 1);
    let (failed, _) = timed(call_tool(addr, "alice", "discard_list", json!({"list": list}), elicit(), confirm(&state))).await;
    assert_server_error(&failed, "storage unavailable", "delete under a DynamoDB fault");
    rig.proxy.clear();
    assert_eq!(entries(addr, &list).await, json!(["kept"]), "half a checkout deleted nothing");
    let replay = call_tool(addr, "alice", "discard_list", json!({"list": list}), elicit(), confirm(&state)).await;
    assert_eq!(replay["error"]["code"], -32602, "{replay}");
    let round1 = call_tool(addr, "alice", "discard_list", json!({"list": list}), elicit(), json!({})).await;
    let done = call_tool(addr, "alice", "discard_list", json!({"list": list}), elicit(), confirm(&round1["result"]["requestState"])).await;
    assert_eq!(text_of(&done), "Discarded 1 entries.", "{done}");
}

/// Alice's `open_list` call, as it was answered.
async fn open_list(addr: SocketAddr) -> Value {
    call_tool(addr, "alice", "open_list", json!({}), json!({}), json!({})).await
}

fn assert_opened(reply: &Value, what: &str) {
    assert!(reply.get("error").is_none() && reply["result"]["isError"] != json!(true), "{what}: {reply}");
}

fn assert_refused(reply: &Value, what: &str) {
    assert!(reply["result"]["isError"] == json!(true) || reply.get("error").is_some(), "{what}: {reply}");
}

/// Issue 44: writes whose answers are lost mean what they did. The
/// confirmation's redemption lands and its answer is lost (the SDK's retry
/// finds its own record, not a replay); the delete lands and its answer is
/// lost (the retry finds its own tombstone and reports what it deleted, not
/// "unknown list"); its quota place comes back once; and the deleted list
/// stays deleted.
#[tokio::test]
async fn writes_whose_answers_were_lost_report_what_they_did() {
    let rig = Rig::new().await;
    let addr = rig.server().await;
    let confirm =
        |state: &Value| json!({"requestState": state, "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}});
    let open = || async { text_of(&open_list(addr).await) };
    let lists = [open().await, open().await, open().await, open().await, open().await];
    call_tool(addr, "alice", "append", json!({"list": lists[0], "entry": "kept"}), json!({}), json!({})).await;
    assert_refused(&open_list(addr).await, "the cap of five");

    for (operation, what) in [("PutItem", "the redemption's"), ("TransactWriteItems", "the delete's")] {
        let list = if operation == "PutItem" { &lists[0] } else { &lists[1] };
        let round1 = call_tool(addr, "alice", "discard_list", json!({"list": list}), elicit(), json!({})).await;
        rig.proxy.set_on(Service::DynamoDb, operation, Fault::LoseAnswer, 0);
        let (done, _) =
            timed(call_tool(addr, "alice", "discard_list", json!({"list": list}), elicit(), confirm(&round1["result"]["requestState"])))
                .await;
        rig.proxy.clear();
        let expected = if operation == "PutItem" { "Discarded 1 entries." } else { "Discarded 0 entries." };
        assert_eq!(text_of(&done), expected, "{what} answer lost: {done}");
        let gone = call_tool(addr, "alice", "show_list", json!({"list": list}), json!({}), json!({})).await;
        assert!(text_of(&gone).contains("Unknown list"), "deleted, and stays deleted: {gone}");
    }
    // Two places came back, each once: two lists open, the third does not.
    for _ in 0..2 {
        assert_opened(&open_list(addr).await, "a place that came back");
    }
    assert_refused(&open_list(addr).await, "only two places");
}

/// Issue 44: adding writes (an append, the owner's counter) apply once
/// under one call, even when its first attempt reaches DynamoDB late: after
/// its own retry, and after another call's write.
#[tokio::test]
async fn adding_writes_that_land_late_apply_once() {
    let rig = Rig::new().await;
    let addr = rig.server().await;
    let list = text_of(&open_list(addr).await);
    rig.proxy.set_on(Service::DynamoDb, "UpdateItem", Fault::LandLate, 0);
    let appended = call_tool(addr, "alice", "append", json!({"list": list, "entry": "late"}), json!({}), json!({})).await;
    assert!(appended.get("error").is_none(), "the retry applied it: {appended}");
    call_tool(addr, "alice", "append", json!({"list": list, "entry": "next"}), json!({}), json!({})).await;
    assert_eq!(rig.proxy.land_held().await, (1, 1), "the late first attempt reached DynamoDB and was refused");
    assert_eq!(entries(addr, &list).await, json!(["late", "next"]));

    // The counter of open lists (cap 5), written with the list in one
    // transaction: a create that lands late counts once.
    rig.proxy.set_on(Service::DynamoDb, "TransactWriteItems", Fault::LandLate, 0);
    assert_opened(&open_list(addr).await, "a late take's retry");
    open_list(addr).await;
    assert_eq!(rig.proxy.land_held().await, (1, 1), "the late take was refused");
    for _ in 0..2 {
        assert_opened(&open_list(addr).await, "three of five so far");
    }
    assert_refused(&open_list(addr).await, "five open, each counted once");
}

#[tokio::test]
async fn an_sqs_fault_fails_the_new_task_instead_of_leaving_it_working() {
    for fault in FAULTS {
        let rig = Rig::new().await;
        let queues = fresh_queues(&rig.direct, 30, 3).await;
        let settings = {
            let mut value = rig.settings.clone();
            value.task_queue_url = Some(queues.url.clone());
            value
        };
        let deps = mcp_aws::dependencies(&settings, Some(&rig.faulty_sdk().await), Arc::new(SystemClock));
        let addr = start_task_server_with(deps).await;

        rig.proxy.set(Service::Sqs, fault);
        let call = rpc(addr, "alice", "tools/call", json!({"name": "slow_compute", "arguments": {"seconds": 1, "label": "faulted"}}));
        let (created, took) = timed(call).await;
        assert_server_error(&created, "the task could not be scheduled", &format!("SendMessage under {fault:?}"));
        eprintln!("SQS SendMessage {fault:?}: -32603 after {took:?}");
        let statuses: Vec<String> = scan(&rig.direct, settings.table_name.as_deref().unwrap())
            .await
            .iter()
            .filter_map(|item| item.get("status").and_then(|s| s.as_s().ok()).cloned())
            .collect();
        assert_eq!(statuses, vec!["failed".to_owned()], "{fault:?}: the unscheduled task is failed, not working");

        rig.proxy.clear();
        let created =
            rpc(addr, "alice", "tools/call", json!({"name": "slow_compute", "arguments": {"seconds": 1, "label": "after"}})).await;
        assert_eq!(created["result"]["resultType"], "task", "{fault:?}: recovered: {created}");
    }
}

#[tokio::test]
async fn opens_do_not_queue_behind_a_stalled_generate_data_key() {
    use mcp_aws::{KeyWindow, KmsDataKeys};
    use mcp_stateless::sealed::request_state::DataKeySource;

    let rig = Rig::new().await;
    // One seal per data key: the second seal must call GenerateDataKey.
    let window = {
        let mut value = KeyWindow::default();
        value.max_seals = 1;
        value
    };
    let client = aws_sdk_kms::Client::new(&rig.faulty_sdk().await);
    let keys = Arc::new(KmsDataKeys::new(client, rig.settings.state_key_id.clone().unwrap(), "faults", window));
    let first = keys.sealing_key().await.expect("the first data key");

    rig.proxy.set(Service::Kms, Fault::Stall);
    let sealing = tokio::spawn({
        let keys = keys.clone();
        async move { keys.sealing_key().await.map(|_| ()) }
    });
    while rig.proxy.seen(Service::Kms) < 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let opened = keys.opening_key(&first.key_ref, "alice").await;
    assert!(opened.is_ok(), "the current key opens without KMS");
    assert!(!sealing.is_finished(), "and without waiting for the stalled GenerateDataKey");
    assert!(sealing.await.unwrap().is_err(), "the stalled seal ends in an error, bounded by the operation timeout");
}

/// Issue 44: a handle create whose every attempt failed is settled before
/// it answers. Landed, its answers lost: the caller gets its handle. Not
/// landed: an error, and its first attempt, landing late, is refused whole
/// (no handle, no place).
#[tokio::test]
async fn a_create_whose_every_attempt_failed_is_settled_before_it_answers() {
    let rig = Rig::new().await;
    let addr = rig.server().await;
    rig.proxy.in_turn(Service::DynamoDb, "TransactWriteItems", &[Fault::LoseAnswer, Fault::ServerError, Fault::ServerError]);
    let landed = open_list(addr).await;
    assert_opened(&landed, "landed, every answer lost");
    let appended = call_tool(addr, "alice", "append", json!({"list": text_of(&landed), "entry": "x"}), json!({}), json!({})).await;
    assert_eq!(text_of(&appended), "1 entries", "the handle it was given works");
    rig.proxy.in_turn(Service::DynamoDb, "TransactWriteItems", &[Fault::LandLate, Fault::ServerError, Fault::ServerError]);
    assert_server_error(&open_list(addr).await, "storage unavailable", "every attempt failed, none landed");
    assert_eq!(rig.proxy.land_held().await, (1, 1), "the late first attempt was refused whole");
    // One list and its one place: four more open, the sixth does not.
    for _ in 0..4 {
        assert_opened(&open_list(addr).await, "a place of five");
    }
    assert_refused(&open_list(addr).await, "five open, each counted once");
}

/// Issue 44, part 5 (docs/operations.md, "hot keys"): one item throttled,
/// as DynamoDB throttles a partition past its 1,000 write units a second.
/// The calls on that item fail cleanly (-32603 within the bound, nothing
/// written); every other item, the same owner's other list and another
/// owner's, is served; once the partition cools, the list is as it was.
#[tokio::test]
async fn a_throttled_hot_key_fails_only_the_calls_on_it() {
    use e2e::fixture_server::LIST;

    let rig = Rig::new().await;
    let addr = rig.server().await;
    let hot = text_of(&open_list(addr).await);
    call_tool(addr, "alice", "append", json!({"list": hot, "entry": "before"}), json!({}), json!({})).await;
    let items = scan(&rig.direct, rig.settings.table_name.as_deref().unwrap()).await;
    let key = items
        .iter()
        .filter_map(|item| item.get("pk")?.as_s().ok())
        .find(|pk| pk.starts_with("handle#lst#"))
        .expect("the hot list's item")
        .clone();

    rig.proxy.set_on_key(Service::DynamoDb, &key, Fault::Throttling);
    let (appended, _) = timed(call_tool(addr, "alice", "append", json!({"list": hot, "entry": "hot"}), json!({}), json!({}))).await;
    assert_server_error(&appended, "storage unavailable", "an append to the throttled item");
    let cool = text_of(&open_list(addr).await);
    let appended = call_tool(addr, "alice", "append", json!({"list": cool, "entry": "cool"}), json!({}), json!({})).await;
    assert_eq!(text_of(&appended), "1 entries", "the same owner's other list: {appended}");
    assert_opened(&call_tool(addr, "bob", "open_list", json!({}), json!({}), json!({})).await, "another owner");

    rig.proxy.clear();
    assert_eq!(entries(addr, &hot).await, json!(["before"]), "the throttled append wrote nothing");

    // The owner's counter, the key every create and delete of alice's
    // writes (in a transaction, which DynamoDB cancels for the throttled
    // item and the store sends again a few times): her creates fail
    // cleanly, her lists and bob's creates are served.
    let items = scan(&rig.direct, rig.settings.table_name.as_deref().unwrap()).await;
    let alices_owner = items.iter().find(|item| item.get("pk").and_then(|pk| pk.as_s().ok()) == Some(&key)).unwrap()["owner"].clone();
    let counter = mcp_stateless::quota::QuotaKey::new(alices_owner.as_s().unwrap(), "lst", LIST.max_lifetime, now_seconds()).partition_key;
    rig.proxy.set_on_key(Service::DynamoDb, &counter, Fault::Throttling);
    let (opened, _) = timed(open_list(addr)).await;
    assert_server_error(&opened, "storage unavailable", "a create on the throttled counter");
    let appended = call_tool(addr, "alice", "append", json!({"list": hot, "entry": "still"}), json!({}), json!({})).await;
    assert_eq!(text_of(&appended), "2 entries", "her list is served: {appended}");
    let bob = call_tool(addr, "bob", "open_list", json!({}), json!({}), json!({})).await;
    assert_opened(&bob, "bob's counter is another key");
    rig.proxy.clear();
    assert_opened(&open_list(addr).await, "the counter cooled: three of alice's five");
}

fn now_seconds() -> u64 {
    use mcp_stateless::clock::Clock;
    SystemClock.now()
}
