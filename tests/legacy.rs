//! 2025-era clients on the same endpoint: the handshake, the sealed
//! session, results shaped for the era, and the server's own requests
//! answered on another instance (the emulator's table between them).

use std::{sync::Arc, time::Duration};

use e2e::{
    emulator::{fresh_key, fresh_table, sdk, settings, unique},
    legacy::{LegacyClient, initialize},
    post, request, send, spawn, standard_headers,
};
use mcp_stateless::{Dependencies, EdgePolicy, McpEndpoint, Mode, clock::SystemClock, deployment::Transport};
use serde_json::{Value, json};

fn everything(deps: Dependencies, transport: Transport) -> McpEndpoint<everything::EverythingServer> {
    let policy = {
        let mut value = EdgePolicy::new(Mode::Local);
        value.transport = transport;
        value
    };
    McpEndpoint::new(everything::EverythingServer::new(deps.clone()), policy).with_dependencies(&deps)
}

async fn local(transport: Transport) -> std::net::SocketAddr {
    spawn(everything(Dependencies::in_process(), transport)).await
}

/// Two instances on a fresh key and table of the emulator, sharing
/// nothing else: the one that will hold the calls, and another.
async fn two_instances() -> (std::net::SocketAddr, std::net::SocketAddr) {
    let sdk = sdk().await;
    let settings = settings(&fresh_key(&sdk).await, &fresh_table(&sdk).await, &unique("legacy"));
    let instance =
        || async { spawn(everything(mcp_aws::dependencies(&settings, Some(&sdk), Arc::new(SystemClock)), Transport::Streaming)).await };
    (instance().await, instance().await)
}

const MODERN_ONLY_RESULT_FIELDS: [&str; 3] = ["resultType", "ttlMs", "cacheScope"];

fn assert_shaped_for_2025(message: &Value) {
    let result = message.get("result").unwrap_or_else(|| panic!("a result: {message}"));
    for field in MODERN_ONLY_RESULT_FIELDS {
        assert!(result.get(field).is_none(), "{field} in {message}");
    }
}

#[tokio::test]
async fn initialize_negotiates_a_legacy_version_and_mints_a_visible_ascii_session() {
    let addr = local(Transport::Streaming).await;
    for (asked, answered) in
        [("2025-06-18", "2025-06-18"), ("2025-03-26", "2025-03-26"), ("2026-07-28", "2025-11-25"), ("1999-01-01", "2025-11-25")]
    {
        let reply = initialize(addr, "alice", asked, json!({})).await;
        assert_eq!(reply.status, 200);
        let result = &reply.json()["result"];
        assert_eq!(result["protocolVersion"], answered, "asked {asked}");
        assert_eq!(result["serverInfo"]["name"], "everything");
        assert_shaped_for_2025(&reply.json());
        // Where answers stream, a session has a notification stream.
        assert_eq!(result["capabilities"]["tools"], json!({"listChanged": true}));
        assert!(result["capabilities"].get("extensions").is_none() && result["capabilities"].get("tasks").is_none());
        let session = reply.headers["mcp-session-id"].to_str().unwrap();
        assert!(session.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{session}");
    }
    // An initialize that claims the modern envelope stays what it was.
    let modern = post(addr, &request(1, "initialize", json!({"protocolVersion": "2026-07-28"}), json!({}))).await;
    assert_eq!((modern.status, modern.json()["error"]["code"].as_i64()), (404, Some(-32601)));
}

#[tokio::test]
async fn legacy_results_carry_no_2026_fields_and_legacy_methods_are_served() {
    let addr = local(Transport::Streaming).await;
    let client = LegacyClient::initialize(addr, "alice", json!({})).await;
    for (method, params) in [
        ("tools/list", json!({})),
        ("tools/call", json!({"name": "test_simple_text"})),
        ("prompts/get", json!({"name": "test_simple_prompt"})),
        ("resources/read", json!({"uri": "test://static-text"})),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"}, "argument": {"name": "arg1", "value": "t"}}),
        ),
    ] {
        let reply = client.request(addr, method, params).await;
        assert_eq!(reply.status, 200, "{method}");
        assert_shaped_for_2025(&reply.message());
    }
    for (method, params) in
        [("ping", json!({})), ("logging/setLevel", json!({"level": "info"})), ("resources/subscribe", json!({"uri": "test://x"}))]
    {
        let reply = client.request(addr, method, params).await;
        assert_eq!(reply.json()["result"], json!({}), "{method}");
    }
    let bad_level = client.request(addr, "logging/setLevel", json!({"level": "loud"})).await;
    assert_eq!(bad_level.json()["error"]["code"], -32602);
    let modern_only = client.request(addr, "tasks/get", json!({"taskId": "x"})).await;
    assert!(modern_only.json()["error"].is_object(), "tasks/* are 2026-07-28's");
}

/// A 2025-era client reads a templated resource as a modern client does,
/// and is told the same of a URI nothing serves.
#[tokio::test]
async fn a_2025_client_reads_templated_resources_and_is_told_of_unknown_ones() {
    let addr = local(Transport::Streaming).await;
    let client = LegacyClient::initialize(addr, "alice", json!({})).await;
    let read = client.request(addr, "resources/read", json!({"uri": "test://template/7/data"})).await.message();
    assert_eq!(read["result"]["contents"][0]["text"], "Data for resource id 7", "{read}");
    let unknown = client.request(addr, "resources/read", json!({"uri": "test://nothing"})).await.message();
    assert_eq!(unknown["error"]["message"], "Resource not found", "{unknown}");
    assert_eq!(unknown["error"]["data"], json!({"uri": "test://nothing"}));
}

#[tokio::test]
async fn the_version_header_decides_a_request_without_the_envelope() {
    let addr = local(Transport::Streaming).await;
    let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}});
    let with = |version: Option<&str>| {
        let mut headers = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("accept".to_owned(), "application/json, text/event-stream".to_owned()),
        ];
        if let Some(version) = version {
            headers.push(("mcp-protocol-version".to_owned(), version.to_owned()));
        }
        headers
    };
    let none = send(addr, "POST", &with(None), list.to_string().into_bytes()).await;
    assert_eq!(none.status, 200, "served as 2025-03-26");
    assert!(none.message()["result"]["tools"].is_array());
    let unsupported = send(addr, "POST", &with(Some("2024-11-05")), list.to_string().into_bytes()).await;
    assert_eq!((unsupported.status, unsupported.json()["error"]["code"].as_i64()), (400, Some(-32022)));
    assert_eq!(unsupported.json()["error"]["data"]["supported"], json!(["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]));
    let modern = send(addr, "POST", &with(Some("2026-07-28")), list.to_string().into_bytes()).await;
    assert_eq!((modern.status, modern.json()["error"]["code"].as_i64()), (400, Some(-32602)), "the envelope is missing");
    // A modern request is untouched: its own headers are still required.
    let discover = request(4, "server/discover", json!({}), json!({}));
    let mut headers = standard_headers(&discover);
    headers.retain(|(name, _)| name != "mcp-protocol-version");
    assert_eq!(send(addr, "POST", &headers, discover.to_string().into_bytes()).await.status, 400);
}

#[tokio::test]
async fn sessions_that_do_not_open_are_404_and_delete_ends_one() {
    let addr = local(Transport::Streaming).await;
    let client = LegacyClient::initialize(addr, "alice", json!({})).await;
    assert_eq!(client.request(addr, "tools/list", json!({})).await.status, 200);

    let foreign = LegacyClient { principal: "bob".into(), ..LegacyClient::initialize(addr, "alice", json!({})).await };
    assert_eq!(foreign.request(addr, "tools/list", json!({})).await.status, 404, "another caller's session");
    // A character in the middle carries ciphertext, not padding bits.
    let mut token = client.session.clone().unwrap().into_bytes();
    let middle = token.len() / 2;
    token[middle] = if token[middle] == b'A' { b'B' } else { b'A' };
    let token = String::from_utf8(token).unwrap();
    let tampered = LegacyClient { session: Some(token), principal: "alice".into(), version: client.version.clone() };
    let reply = tampered.request(addr, "tools/list", json!({})).await;
    assert_eq!((reply.status, reply.json()["error"]["code"].as_i64()), (404, Some(-32001)));

    assert_eq!(client.delete(addr).await.status, 200);
    assert_eq!(client.request(addr, "tools/list", json!({})).await.status, 404, "ended");
    assert_eq!(client.delete(addr).await.status, 404, "already ended");
    // Without a session a legacy request is still served, with no capabilities.
    let sessionless = LegacyClient { session: None, ..client };
    assert_eq!(sessionless.request(addr, "tools/list", json!({})).await.status, 200);
}

#[tokio::test]
async fn a_log_level_set_once_reaches_the_sessions_later_calls() {
    let addr = local(Transport::Streaming).await;
    let client = LegacyClient::initialize(addr, "alice", json!({})).await;
    let logs = |reply: &e2e::Reply| reply.messages().iter().filter(|m| m["method"] == "notifications/message").count();
    let before = client.request(addr, "tools/call", json!({"name": "test_tool_with_logging"})).await;
    assert_eq!(logs(&before), 0, "no level set: no log messages");
    client.request(addr, "logging/setLevel", json!({"level": "debug"})).await;
    let after = client.request(addr, "tools/call", json!({"name": "test_tool_with_logging"})).await;
    assert_eq!(logs(&after), 3);
}

/// Where no stream can carry the server's question, or the client did not
/// declare it can answer, the call is refused by name, never left hanging.
#[tokio::test]
async fn a_tool_that_asks_is_refused_cleanly_where_it_cannot_ask() {
    let ask = json!({"name": "test_elicitation", "arguments": {}});
    let buffered = local(Transport::Buffered).await;
    let client = LegacyClient::initialize(buffered, "alice", json!({"elicitation": {}})).await;
    assert_eq!(client.notifications(buffered).await.status, 405, "no notification stream where answers are whole");
    let refused = client.request(buffered, "tools/call", ask.clone()).await.message();
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(refused["result"]["content"][0]["text"].as_str().unwrap().contains("elicitation/create"), "{refused}");

    let streaming = local(Transport::Streaming).await;
    let undeclared = LegacyClient::initialize(streaming, "alice", json!({})).await;
    let refused = undeclared.request(streaming, "tools/call", ask.clone()).await.message();
    assert!(refused["result"]["content"][0]["text"].as_str().unwrap().contains("did not declare"), "{refused}");
    let prompt = undeclared.request(streaming, "prompts/get", json!({"name": "test_input_required_result_prompt"})).await.message();
    assert_eq!(prompt["error"]["code"], -32600, "a prompt is refused with an error: {prompt}");
}

/// A session's `GET` stream reports a change made through another
/// instance (the emulator's change feed between them), and nothing else:
/// no listen acknowledgement, no final result.
#[tokio::test]
async fn a_sessions_notification_stream_reports_changes_made_anywhere() {
    let (holder, other) = two_instances().await;
    let client = LegacyClient::initialize(other, "alice", json!({})).await;
    let mut stream = client.notifications(holder).await;
    assert_eq!((stream.status, stream.content_type.as_str()), (200, "text/event-stream"));
    // The stream drops listen's acknowledgement, so the client cannot tell
    // when its first read of the feed is done: a change is made until one
    // is reported, which takes one round unless the machine is slow.
    let mut notified = None;
    for _ in 0..20 {
        let changed = client.request(other, "tools/call", json!({"name": "test_trigger_tool_change"})).await;
        assert_eq!(changed.status, 200);
        notified = stream.next_within(Duration::from_secs(3)).await;
        if notified.is_some() {
            break;
        }
    }
    let notified = notified.expect("a notification");
    assert_eq!(notified["method"], "notifications/tools/list_changed", "{notified}");
    assert!(notified.get("id").is_none());
    assert!(notified["params"]["_meta"].get("io.modelcontextprotocol/subscriptionId").is_none(), "{notified}");
    let stranger = LegacyClient { principal: "bob".into(), session: client.session.clone(), version: client.version.clone() };
    assert_eq!(stranger.notifications(holder).await.status, 404);
}

/// 2025-11-25 transport: the server "MUST NOT broadcast the same message
/// across multiple streams". A session has one notification stream, across
/// instances: a newer `GET` replaces the older, which ends (what it may
/// send before the newer takes over is not checked here: the table is new,
/// and its first stream records the build's lists, which the other may
/// report; that a replaced stream sends nothing more is `edge/stream.rs`'s
/// test); changes then reach the newer only, and `DELETE` ends it.
#[tokio::test]
async fn a_newer_notification_stream_replaces_the_older_and_delete_ends_it() {
    let (holder, other) = two_instances().await;
    let client = LegacyClient::initialize(other, "alice", json!({})).await;
    let mut older = client.notifications(holder).await;
    // A stream becomes the session's once it is open (after its response
    // began): a change reaching it says it is, so the newer comes after.
    until_notified(&mut older, &client, other).await;
    let mut newer = client.notifications(other).await;
    assert_eq!((older.status, newer.status), (200, 200));
    // Replaced, the older ends at its next check (every 5 s), long before
    // its lifetime (300 s) would end it.
    tokio::time::timeout(e2e::streams::PATIENCE, older.rest()).await.expect("the older stream ended");
    let notified = until_notified(&mut newer, &client, other).await;
    assert_eq!(notified["method"], "notifications/tools/list_changed");
    assert_eq!(client.delete(holder).await.status, 200);
    // DELETE ends it at its next check too.
    let after_delete = tokio::time::timeout(e2e::streams::PATIENCE, newer.rest()).await.expect("ended by DELETE");
    assert!(after_delete.iter().all(|(_, m)| m["method"].as_str().unwrap().ends_with("/list_changed")), "{after_delete:?}");
}

/// Changes the tools until `stream` reports one: it is open and watching.
async fn until_notified(stream: &mut e2e::EventStream, client: &LegacyClient, addr: std::net::SocketAddr) -> Value {
    for _ in 0..20 {
        assert_eq!(client.request(addr, "tools/call", json!({"name": "test_trigger_tool_change"})).await.status, 200);
        if let Some(notified) = stream.next_within(Duration::from_secs(3)).await {
            return notified;
        }
    }
    panic!("no notification on the stream");
}

/// A notification stream over the caller's bound of open streams is not
/// an empty 200: the client is told why, as a log message it can show; and
/// the session's stream that was open goes on.
#[tokio::test]
async fn a_notification_stream_over_the_callers_bound_says_why_and_replaces_nothing() {
    let addr = local(Transport::Streaming).await;
    let mut clients = Vec::new();
    let mut open = Vec::new();
    for _ in 0..5 {
        let client = LegacyClient::initialize(addr, "alice", json!({})).await;
        let mut stream = client.notifications(addr).await;
        assert_eq!(stream.status, 200);
        until_notified(&mut stream, &client, addr).await;
        clients.push(client);
        open.push(stream);
    }
    // The sixth, on the first session: refused at the bound.
    let mut refused = clients[0].notifications(addr).await;
    let (_, told) = refused.next().await.expect("a message before the stream ends");
    assert_eq!((told["method"].as_str(), told["params"]["level"].as_str()), (Some("notifications/message"), Some("error")), "{told}");
    assert!(told["params"]["data"].as_str().unwrap().contains("too many"), "{told}");
    assert!(told.get("id").is_none(), "a notification, not a response to a request the client never sent");
    assert!(refused.next().await.is_none(), "then the stream ends");
    // The first session's stream is still its one: past its next check
    // (5 s), it still reports a change.
    let notified = until_notified(&mut open[0], &clients[1], addr).await;
    assert!(notified["method"].as_str().unwrap().ends_with("/list_changed"), "{notified}");
}

/// Concurrent changes to one session's item on two instances: each is
/// written, or answered 503 with Retry-After (the client sends it again),
/// never a bare 500, and none is half-written.
#[tokio::test]
async fn contention_on_a_session_is_retryable_never_a_500() {
    let (one, two) = two_instances().await;
    let client = Arc::new(LegacyClient::initialize(one, "alice", json!({})).await);
    let subscribes = (0..mcp_stateless::sessions::MAX_SUBSCRIPTIONS).map(|i| {
        let client = client.clone();
        let addr = if i % 2 == 0 { one } else { two };
        tokio::spawn(async move { client.request(addr, "resources/subscribe", json!({"uri": format!("test://r{i}")})).await })
    });
    let mut written = 0;
    for reply in futures::future::join_all(subscribes).await {
        let reply = reply.unwrap();
        match reply.status {
            200 => {
                assert_eq!(reply.json()["result"], json!({}), "{:?}", reply.body);
                written += 1;
            }
            503 => assert_eq!(reply.headers["retry-after"], "1"),
            other => panic!("HTTP {other}: {:?}", reply.body),
        }
    }
    // What was answered 200 is there, and nothing else: the session takes
    // exactly the rest of its bound.
    for i in written..mcp_stateless::sessions::MAX_SUBSCRIPTIONS {
        let reply = client.request(one, "resources/subscribe", json!({"uri": format!("test://more{i}")})).await;
        assert_eq!(reply.json()["result"], json!({}), "{i}: {:?}", reply.body);
    }
    let over = client.request(two, "resources/subscribe", json!({"uri": "test://one-too-many"})).await;
    assert_eq!(over.json()["error"]["code"], -32602, "the bound reached: {:?}", over.body);
    // A DELETE among changes: each answer is one a client can act on.
    let mut racing: Vec<_> = (0..10)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move { client.request(two, "resources/unsubscribe", json!({"uri": format!("test://r{i}")})).await.status })
        })
        .collect();
    let deleting = client.clone();
    racing.push(tokio::spawn(async move { deleting.delete(one).await.status }));
    for status in futures::future::join_all(racing).await {
        assert!([200, 404, 503].contains(&status.unwrap()), "never a 500");
    }
}

/// The call is held by one instance, the answer reaches the other: the
/// two share only the emulator's key and table.
#[tokio::test]
async fn an_answer_that_reaches_another_instance_resumes_the_call() {
    let (holder, other) = two_instances().await;
    // Minted on one instance, used on the other.
    let client = LegacyClient::initialize(other, "alice", json!({"elicitation": {}})).await;
    let mut call = client.stream(holder, "tools/call", json!({"name": "test_elicitation", "arguments": {}})).await;
    assert_eq!(call.status, 200);
    let asked = call.until_method("elicitation/create").await;
    let id = asked["id"].clone();
    assert!(id.as_str().unwrap().starts_with("ask_"), "{asked}");
    assert_eq!(asked["params"]["requestedSchema"]["properties"]["username"]["type"], "string");

    let stranger = LegacyClient { principal: "bob".into(), session: client.session.clone(), version: client.version.clone() };
    assert_eq!(stranger.answer(other, &id, json!({"action": "accept"})).await.status, 404, "another caller");
    let answer = json!({"action": "accept", "content": {"username": "testuser", "email": "test@example.com"}});
    assert_eq!(client.answer(other, &id, answer.clone()).await.status, 202);
    assert_eq!(client.answer(other, &id, answer).await.status, 400, "written once");

    let (_, last) = call.next().await.expect("the call's answer");
    assert_eq!(last["id"], 7);
    let text = last["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{last}"));
    assert!(text.contains("testuser"), "{text}");
    assert!(last["result"].get("resultType").is_none());

    // A malformed answer is refused to its sender and ends the call at once.
    let mut call = client.stream(holder, "tools/call", json!({"name": "test_elicitation", "arguments": {}})).await;
    let asked = call.until_method("elicitation/create").await;
    assert_eq!(client.answer(other, &asked["id"], json!({"action": "perhaps"})).await.status, 400, "checked against the method's shape");
    let (_, ended) = call.next().await.expect("the call's answer");
    assert_eq!(ended["result"]["isError"], true, "{ended}");
    assert!(ended["result"]["content"][0]["text"].as_str().unwrap().contains("refused"), "{ended}");

    // Ended on one instance, refused on the other.
    assert_eq!(client.delete(holder).await.status, 200);
    assert_eq!(client.request(other, "tools/list", json!({})).await.status, 404);
}

/// `DELETE` ends the calls of the session that wait for its answers, on
/// any instance (at their next check, every 5 s).
#[tokio::test]
async fn delete_ends_a_call_waiting_for_the_sessions_answers() {
    let (holder, other) = two_instances().await;
    let client = LegacyClient::initialize(other, "alice", json!({"elicitation": {}})).await;
    let mut call = client.stream(holder, "tools/call", json!({"name": "test_elicitation", "arguments": {}})).await;
    let asked = call.until_method("elicitation/create").await;
    assert_eq!(client.delete(other).await.status, 200);
    let (_, ended) = call.next().await.expect("the call's answer");
    assert_eq!(ended["result"]["isError"], true, "{ended}");
    assert!(ended["result"]["content"][0]["text"].as_str().unwrap().contains("session ended"), "{ended}");
    assert!(call.next().await.is_none(), "the call's stream ended");
    // The session is gone, so is its question.
    assert_eq!(client.answer(holder, &asked["id"], json!({"action": "decline"})).await.status, 404);
}

/// A 2025-era client cannot poll a task: the call's stream follows it
/// (durable in the store, run by the worker loop here), asks its question
/// on the stream and answers the call with the task's outcome.
#[tokio::test]
async fn a_task_tool_is_followed_to_its_outcome_on_the_calls_stream() {
    let addr = local(Transport::Streaming).await;
    let client = LegacyClient::initialize(addr, "alice", json!({"elicitation": {}})).await;
    let mut call = client.stream(addr, "tools/call", json!({"name": "confirm_delete", "arguments": {"filename": "a.txt"}})).await;
    let asked = call.until_method("elicitation/create").await;
    assert!(asked["params"]["message"].as_str().unwrap().contains("a.txt"), "{asked}");
    assert_eq!(client.answer(addr, &asked["id"], json!({"action": "accept", "content": {"confirm": true}})).await.status, 202);
    let (_, last) = call.next().await.expect("the call's answer");
    assert_eq!(last["id"], 7, "{last}");
    assert_eq!(last["result"]["content"][0]["text"], "Deleted a.txt", "{last}");
    assert!(last["result"].get("resultType").is_none(), "{last}");
}

#[tokio::test]
async fn a_translated_call_is_held_to_the_body_limit_its_added_meta_may_cross() {
    const LIMIT: usize = 4096;
    let policy = {
        let mut value = EdgePolicy::new(Mode::Local);
        value.max_body_bytes = LIMIT;
        value
    };
    let deps = Dependencies::in_process();
    let addr = spawn(McpEndpoint::new(everything::EverythingServer::new(deps.clone()), policy).with_dependencies(&deps)).await;
    let client = LegacyClient::initialize(addr, "alice", json!({})).await;
    // The id pads the call: the translation keeps it, and adds its `_meta`.
    let call = |padding: usize| json!({"jsonrpc": "2.0", "id": "x".repeat(padding), "method": "tools/call", "params": {"name": "test_simple_text"}});
    let bare = call(0).to_string().len();
    let near = call(LIMIT - bare - 8);
    assert!(near.to_string().len() <= LIMIT, "sent within the limit");
    let refused = client.post(addr, &near).await;
    assert_eq!((refused.status, refused.json()["error"]["code"].as_i64()), (413, Some(-32600)), "{:?}", refused.body);
    let served = client.post(addr, &call(LIMIT - bare - 1024)).await;
    assert_eq!(served.status, 200, "{:?}", served.body);
    assert_eq!(served.json()["result"]["isError"], json!(false));
}

/// A session id as a forger writes one: the token's shape (`v1.`, a
/// data key reference, a nonce, ciphertext), with a data key this
/// deployment never made.
fn forged_session_id() -> String {
    use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
    let key_ref: Vec<u8> = (0..150).map(|_| rand_byte()).collect();
    let mut raw = (key_ref.len() as u16).to_be_bytes().to_vec();
    raw.extend_from_slice(&key_ref);
    raw.extend((0..12 + 64).map(|_| rand_byte()));
    format!("v1.{}", URL_SAFE_NO_PAD.encode(raw))
}

fn rand_byte() -> u8 {
    mcp_stateless::random::bytes::<1>()[0]
}

/// One caller's forged session ids, each with a data key no instance
/// made, cost KMS `Decrypt`s on an instance that never saw them: they
/// spend that caller's own budget, get the session-not-found answer, and
/// beyond the budget a retryable 503 (never a 500); another caller's
/// genuine session, minted on another instance, still opens there.
#[tokio::test]
async fn one_callers_forged_session_ids_cannot_make_anothers_session_look_ended() {
    let (minted_on, forged_on) = two_instances().await;
    let carol = LegacyClient::initialize(minted_on, "carol", json!({})).await;
    let window = mcp_aws::KeyWindow::default();
    let mut statuses = Vec::new();
    for _ in 0..window.max_decrypts_per_caller_per_minute + 5 {
        let forged = LegacyClient { session: Some(forged_session_id()), principal: "mallory".into(), version: carol.version.clone() };
        let reply = forged.request(forged_on, "tools/list", json!({})).await;
        if reply.status == 503 {
            assert!(reply.headers.contains_key("retry-after"), "{:?}", reply.headers);
        }
        statuses.push(reply.status);
    }
    let budget = window.max_decrypts_per_caller_per_minute as usize;
    assert!(statuses[..budget].iter().all(|status| *status == 404), "{statuses:?}");
    assert!(statuses[budget..].iter().all(|status| *status == 503), "beyond mallory's budget: retryable, never 500: {statuses:?}");
    // Carol's session, sealed under the other instance's data key, opens here.
    let reply = carol.request(forged_on, "tools/list", json!({})).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
}

/// The same without sign-in (every caller anonymous): callers are told
/// apart by the address they come from, so forged ids from one address
/// spend that address's budget, and an anonymous caller elsewhere still
/// opens its genuine session.
#[tokio::test]
async fn without_sign_in_forged_session_ids_spend_their_senders_budget_only() {
    let (minted_on, forged_on) = two_instances().await;
    let (carol_at, mallory_at) = ("127.0.0.1".parse().ok(), "127.0.0.2".parse().ok());
    let anonymous = |client: &LegacyClient| -> Vec<(String, String)> {
        client.headers().into_iter().filter(|(name, _)| name != "x-mcp-dev-principal").collect()
    };
    let body = |method: &str| serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": {}})).unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "e2e-legacy", "version": "1"}}});
    let blank = LegacyClient { session: None, principal: String::new(), version: "2025-11-25".into() };
    let reply = e2e::send_from(carol_at, minted_on, "POST", "/mcp", &anonymous(&blank), serde_json::to_vec(&init).unwrap()).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let session = reply.headers["mcp-session-id"].to_str().unwrap().to_owned();
    let carol = LegacyClient { session: Some(session), ..blank.clone() };
    let budget = mcp_aws::KeyWindow::default().max_decrypts_per_caller_per_minute as usize;
    let mut statuses = Vec::new();
    for _ in 0..budget + 3 {
        let forged = LegacyClient { session: Some(forged_session_id()), ..blank.clone() };
        statuses.push(e2e::send_from(mallory_at, forged_on, "POST", "/mcp", &anonymous(&forged), body("tools/list")).await.status);
    }
    assert!(
        statuses[..budget].iter().all(|status| *status == 404) && statuses[budget..].iter().all(|status| *status == 503),
        "{statuses:?}"
    );
    let reply = e2e::send_from(carol_at, forged_on, "POST", "/mcp", &anonymous(&carol), body("tools/list")).await;
    assert_eq!(reply.status, 200, "another address's anonymous caller: {:?}", reply.body);
}
