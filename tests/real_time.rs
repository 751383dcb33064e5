//! Real time: progress that leaves as it is sent, `subscriptions/listen`
//! streams fed by whatever instance made the change, task status
//! notifications for their owner only, streams that close gracefully at
//! their bound, and the buffered transport as it was.

use std::{sync::Arc, time::Duration};

use e2e::{emulator::*, streams::*, tasks::*, *};
use mcp_stateless::{
    Dependencies, EdgePolicy, McpEndpoint, Mode,
    clock::{Clock, SystemClock},
    deployment::Transport,
    subscriptions::{
        ListDigests, ListenPolicy, Subscriptions,
        feed::{self, InMemoryFeed},
    },
};
use serde_json::{Value, json};

fn everything_with(deps: Dependencies, transport: Transport) -> McpEndpoint<everything::EverythingServer> {
    let policy = {
        let mut value = EdgePolicy::new(Mode::Local);
        value.transport = transport;
        value
    };
    McpEndpoint::new(everything::EverythingServer::new(deps.clone()), policy).with_dependencies(&deps)
}

fn quick(enabled: bool) -> ListenPolicy {
    {
        let mut value = ListenPolicy::new(enabled);
        value.poll_interval = Duration::from_millis(50);
        value
    }
}

/// In-process dependencies whose streams use `policy` and `feed`.
fn deps_with(policy: ListenPolicy, feed: Arc<InMemoryFeed>) -> Dependencies {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let mut deps = Dependencies::in_process_with_clock(clock.clone());
    deps.subscriptions = Subscriptions::new(feed, Arc::new(mcp_stateless::quota::InMemoryQuota::default()), clock, policy);
    deps
}

async fn local_everything() -> std::net::SocketAddr {
    spawn(everything_with(deps_with(quick(true), Arc::default()), Transport::Streaming)).await
}

fn subscription_id(message: &Value) -> &Value {
    &message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"]
}

#[tokio::test]
async fn progress_frames_arrive_while_the_tool_still_runs() {
    let addr = local_everything().await;
    let interval = Duration::from_millis(300);
    let frames =
        stream_call(addr, "test_tool_with_slow_progress", json!({"steps": 3, "intervalMs": 300}), json!({"progressToken": "p"})).await;
    let progress: Vec<_> = frames.iter().filter(|(_, m)| m["method"] == "notifications/progress").collect();
    assert_eq!(progress.len(), 3, "{frames:?}");
    assert_eq!(progress.iter().map(|(_, m)| m["params"]["progress"].as_f64().unwrap()).collect::<Vec<_>>(), [1.0, 2.0, 3.0]);
    let (answered_at, answer) = frames.last().unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "Finished 3 steps.");
    // The tool sleeps an interval between notifications, so frames that
    // left as they were sent are at least two intervals apart from the
    // answer; frames buffered until the end would all arrive together.
    assert!(answered_at.duration_since(progress[0].0) >= interval * 2, "{frames:?}");
    assert!(progress[1].0.duration_since(progress[0].0) >= interval, "{frames:?}");
}

#[tokio::test]
async fn without_a_progress_token_no_progress_is_sent() {
    let addr = local_everything().await;
    let reply = post(
        addr,
        &request(1, "tools/call", json!({"name": "test_tool_with_slow_progress", "arguments": {"steps": 2, "intervalMs": 0}}), json!({})),
    )
    .await;
    assert!(reply.headers[http::header::CONTENT_TYPE].to_str().unwrap().starts_with("application/json"), "a whole answer");
    assert_eq!(reply.json()["result"]["content"][0]["text"], "Finished 2 steps.");
}

#[tokio::test]
async fn the_buffered_transport_answers_whole_and_advertises_no_listen() {
    let addr = spawn(everything_with(deps_with(quick(false), Arc::default()), Transport::Buffered)).await;
    let discover = post(addr, &request(1, "server/discover", json!({}), json!({}))).await.json();
    let capabilities = &discover["result"]["capabilities"];
    assert!(capabilities["tools"].get("listChanged").is_none(), "{capabilities}");
    assert!(capabilities["prompts"].get("listChanged").is_none(), "{capabilities}");

    assert_listen_is_ended_at_once(addr).await;

    // Progress still reaches the client, with the answer, in one body.
    let body =
        request(3, "tools/call", json!({"name": "test_tool_with_slow_progress", "arguments": {"steps": 2, "intervalMs": 10}}), json!({}));
    let mut with_token = body.clone();
    with_token["params"]["_meta"]["progressToken"] = json!("p");
    let reply = post(addr, &with_token).await;
    assert_eq!(reply.status, 200);
    let text = std::str::from_utf8(&reply.body).unwrap();
    assert_eq!(text.matches("notifications/progress").count(), 2, "{text}");
    assert_eq!(reply.message()["result"]["content"][0]["text"], "Finished 2 steps.");
}

#[tokio::test]
async fn listen_turned_off_where_answers_stream_advertises_nothing_and_ends_a_listen_at_once() {
    // MCP_LISTEN=off (the template's Listen=off) on the streaming transport.
    let addr = spawn(everything_with(deps_with(quick(false), Arc::default()), Transport::Streaming)).await;
    let discover = post(addr, &request(1, "server/discover", json!({}), json!({}))).await.json();
    let capabilities = &discover["result"]["capabilities"];
    for list in ["tools", "prompts", "resources"] {
        assert!(capabilities[list].get("listChanged").is_none(), "{capabilities}");
    }
    assert!(capabilities["resources"].get("subscribe").is_none(), "{capabilities}");
    assert_listen_is_ended_at_once(addr).await;
}

/// Where streams are not served, a listen is acknowledged with nothing
/// honoured and ended at once with its completion result, both in one
/// answer, so a client that listens before it lists (Antigravity) goes on
/// to its tools: what such a client does, listen then `tools/list`.
async fn assert_listen_is_ended_at_once(addr: std::net::SocketAddr) {
    let asked = json!({"toolsListChanged": true, "resourceSubscriptions": ["test://x"], "taskIds": ["tsk_x"]});
    let listened = post(addr, &listen(2, asked, json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}))).await;
    assert_eq!(listened.status, 200);
    let messages = listened.messages();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[0]["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(messages[0]["params"]["notifications"], json!({}), "nothing honoured: {}", messages[0]);
    assert_eq!((messages[1]["id"].as_i64(), messages[1]["result"]["resultType"].as_str()), (Some(2), Some("complete")));
    assert_eq!(messages[1]["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 2);
    let listed = post(addr, &request(3, "tools/list", json!({}), json!({}))).await;
    assert!(listed.message()["result"]["tools"].is_array());
}

#[tokio::test]
async fn a_stream_acknowledges_first_tags_every_frame_and_honours_its_filter() {
    let addr = local_everything().await;
    let mut prompts_only = EventStream::open(addr, &listen(41, json!({"promptsListChanged": true}), json!({})), None).await;
    let mut tools = EventStream::open(addr, &listen(42, json!({"toolsListChanged": true}), json!({})), None).await;
    for (stream, id) in [(&mut prompts_only, 41), (&mut tools, 42)] {
        let (_, ack) = stream.next().await.unwrap();
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "the first frame");
        assert_eq!(*subscription_id(&ack), json!(id));
    }
    call_tool(addr, "anyone", "test_trigger_tool_change", json!({}), json!({}), json!({})).await;
    let changed = tools.until_method("notifications/tools/list_changed").await;
    assert_eq!(*subscription_id(&changed), json!(42));
    call_tool(addr, "anyone", "test_trigger_prompt_change", json!({}), json!({}), json!({})).await;
    // The prompts-only stream's next frame is the prompts change: the
    // tools change before it was not sent to it.
    let (_, next) = prompts_only.next().await.unwrap();
    assert_eq!(next["method"], "notifications/prompts/list_changed", "{next}");
    assert_eq!(*subscription_id(&next), json!(41));
}

/// A server whose listen streams last a second, and a stream open on it
/// (request id 9).
async fn listening_for_a_second() -> (std::net::SocketAddr, EventStream) {
    let policy = {
        let mut value = quick(true);
        value.lifetime = Duration::from_secs(1);
        value
    };
    let addr = spawn(everything_with(deps_with(policy, Arc::default()), Transport::Streaming)).await;
    (addr, EventStream::open(addr, &listen(9, json!({"toolsListChanged": true}), json!({})), None).await)
}

#[tokio::test]
async fn a_stream_closes_gracefully_at_its_bound() {
    let (_, mut stream) = listening_for_a_second().await;
    let rest = stream.rest().await;
    let (_, last) = rest.last().unwrap();
    assert_eq!(last["id"], 9, "the final result answers the listen request: {rest:?}");
    assert_eq!(last["result"]["resultType"], "complete");
    assert_eq!(last["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 9);
}

/// Every line logged while it is the subscriber, read back.
#[derive(Clone, Default)]
struct Logged(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Logged {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().map_err(|_| std::io::Error::other("poisoned"))?.extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Logged {
    type Writer = Logged;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// A listen stream that ends at its bound, and one its client leaves,
/// log no error.
#[tokio::test]
async fn a_stream_that_ends_normally_logs_no_error() {
    use tracing_subscriber::layer::SubscriberExt;

    let logged = Logged::default();
    // With the layer `logging::init` adds that drops rmcp's drain error
    // after a client left (docs/rmcp-workarounds.md, row 18).
    let subscriber =
        tracing_subscriber::fmt().with_writer(logged.clone()).with_ansi(false).finish().with(mcp_stateless::logging::ClientLeftDuringDrain);
    let _default = tracing::subscriber::set_default(subscriber);
    let (addr, mut stream) = listening_for_a_second().await;
    let rest = stream.rest().await;
    assert_eq!(rest.last().map(|(_, last)| last["id"].clone()), Some(json!(9)), "{rest:?}");
    // A client that leaves: the usual end of a listen stream.
    let mut left = EventStream::open(addr, &listen(10, json!({"toolsListChanged": true}), json!({})), None).await;
    assert!(left.next().await.is_some(), "acknowledged");
    drop(left);
    // rmcp's service drains after the stream's end.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let text = String::from_utf8_lossy(&logged.0.lock().unwrap()).into_owned();
    assert!(!text.contains("ERROR"), "{text}");
}

#[tokio::test]
async fn a_newer_deployment_notifies_older_streams_and_closes_them() {
    let feed = Arc::new(InMemoryFeed::default());
    let addr = spawn(everything_with(deps_with(quick(true), feed.clone()), Transport::Streaming)).await;
    let mut stream =
        EventStream::open(addr, &listen(5, json!({"toolsListChanged": true, "promptsListChanged": true}), json!({})), None).await;
    stream.until_method("notifications/subscriptions/acknowledged").await;
    // Another build goes live with other tools and the same prompts: the
    // build serving this stream did not record its lists (no cold start
    // here), so every list it serves differs from the new one.
    let newer = ListDigests::of(&json!(["a newer tool"]), &json!(["p"]), &json!([]));
    feed::record_live(feed.as_ref(), &newer, SystemClock.now_ms()).await.unwrap();
    let rest = stream.rest().await;
    let methods: Vec<_> = rest.iter().map(|(_, m)| m["method"].as_str().unwrap_or("result").to_owned()).collect();
    assert!(methods.contains(&"notifications/tools/list_changed".to_owned()), "{methods:?}");
    assert_eq!(methods.last().unwrap(), "result", "then the graceful close: {methods:?}");
}

#[tokio::test]
async fn task_notifications_reach_the_owner_only() {
    let addr = local_everything().await;
    let id = start_task(addr, "alice", "slow_compute", json!({"seconds": 1})).await;
    let mut owner = EventStream::open(addr, &listen(1, json!({"taskIds": [id]}), tasks_capable()), Some("alice")).await;
    let mut other = EventStream::open(addr, &listen(2, json!({"taskIds": [id]}), tasks_capable()), Some("mallory")).await;
    for stream in [&mut owner, &mut other] {
        let ack = stream.until_method("notifications/subscriptions/acknowledged").await;
        // Unknown and somebody else's ids are acknowledged alike.
        assert_eq!(ack["params"]["notifications"]["taskIds"], json!([id]), "{ack}");
    }
    let done = loop {
        let notification = owner.until_method("notifications/tasks").await;
        assert_eq!(*subscription_id(&notification), json!(1));
        assert_eq!(notification["params"]["taskId"], json!(id));
        if notification["params"]["status"] == "completed" {
            break notification;
        }
    };
    // The full task, as tasks/get gives it.
    let got = get_task(addr, "alice", &id).await;
    assert_eq!(done["params"]["result"], got["result"]["result"], "{done} vs {got}");
    // Mallory's stream has polled the task as often as alice's: nothing.
    assert_eq!(other.next_within(Duration::from_millis(500)).await, None);
}

#[tokio::test]
async fn task_ids_need_the_tasks_extension() {
    let addr = local_everything().await;
    let reply = post(addr, &listen(3, json!({"taskIds": ["tsk_x"]}), json!({}))).await;
    assert_eq!(reply.status, 400);
    let error = &reply.json()["error"];
    assert_eq!(error["code"], -32021);
    assert!(error["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object(), "{error}");
}

#[tokio::test]
async fn open_streams_per_caller_are_bounded() {
    let policy = {
        let mut value = quick(true);
        value.max_per_owner = 1;
        value
    };
    let addr = spawn(everything_with(deps_with(policy, Arc::default()), Transport::Streaming)).await;
    let mut first = EventStream::open(addr, &listen(1, json!({"toolsListChanged": true}), json!({})), Some("alice")).await;
    first.until_method("notifications/subscriptions/acknowledged").await;
    let mut second = EventStream::open(addr, &listen(2, json!({"toolsListChanged": true}), json!({})), Some("alice")).await;
    let rest = second.rest().await;
    let (_, last) = rest.last().unwrap();
    assert_eq!(last["error"]["code"], -32600, "{rest:?}");
    assert!(last["error"]["message"].as_str().unwrap().contains("too many"), "{last}");
    // Another caller is not affected.
    let mut bob = EventStream::open(addr, &listen(3, json!({"toolsListChanged": true}), json!({})), Some("bob")).await;
    bob.until_method("notifications/subscriptions/acknowledged").await;
    call_tool(addr, "anyone", "test_trigger_tool_change", json!({}), json!({}), json!({})).await;
    bob.until_method("notifications/tools/list_changed").await;
}

/// Two instances with their own SDK clients share only the emulator's
/// table: the trigger on one reaches the stream held by the other.
#[tokio::test]
async fn a_trigger_on_one_instance_reaches_a_stream_held_by_another() {
    let sdk = sdk().await;
    let table = fresh_table(&sdk).await;
    let key = fresh_key(&sdk).await;
    let instance = |sdk: aws_config::SdkConfig| {
        let settings = settings(&key, &table, "e2e");
        let mut deps = mcp_aws::dependencies(&settings, Some(&sdk), Arc::new(SystemClock));
        deps.subscriptions = deps.subscriptions.with_policy(quick(true));
        everything_with(deps, Transport::Streaming)
    };
    let holder = spawn(instance(emulator::sdk().await)).await;
    let other = spawn(instance(emulator::sdk().await)).await;
    let mut stream = EventStream::open(holder, &listen(8, json!({"toolsListChanged": true}), json!({})), None).await;
    stream.until_method("notifications/subscriptions/acknowledged").await;
    let triggered = call_tool(other, "anyone", "test_trigger_tool_change", json!({}), json!({}), json!({})).await;
    assert_eq!(triggered["result"]["isError"], false, "{triggered}");
    let changed = stream.until_method("notifications/tools/list_changed").await;
    assert_eq!(*subscription_id(&changed), json!(8));
    // And a later one, long after the stream's first read of the feed.
    call_tool(other, "anyone", "test_trigger_tool_change", json!({}), json!({}), json!({})).await;
    let (_, again) = stream.next().await.unwrap();
    assert_eq!(again["method"], "notifications/tools/list_changed", "{again}");
    // The feed is one item of the table.
    let items = scan(&sdk, &table).await;
    assert!(items.iter().any(|item| item["pk"].as_s().is_ok_and(|pk| pk == mcp_aws::dynamo::feed::FEED_KEY)), "{items:?}");
}

#[tokio::test]
async fn a_call_silent_until_the_deadline_is_stopped_with_an_error() {
    let endpoint = everything_with(deps_with(quick(true), Arc::default()), Transport::Streaming);
    let body =
        request(4, "tools/call", json!({"name": "test_tool_with_slow_progress", "arguments": {"steps": 1, "intervalMs": 5000}}), json!({}));
    for streamed in [false, true] {
        let mut http_request = http::Request::post("/mcp").header("host", "127.0.0.1");
        for (name, value) in standard_headers(&body) {
            http_request = http_request.header(name, value);
        }
        let mut http_request = http_request.body(bytes::Bytes::from(body.to_string())).unwrap();
        // As Lambda gives it: a second and a half left, the tool needs five.
        let mut facts = mcp_stateless::EntryFacts::default();
        facts.deadline = Some(mcp_stateless::deadline::Deadline::after(Duration::from_millis(1500)));
        http_request.extensions_mut().insert(facts);
        let text = if streamed {
            let response = endpoint.handle_streaming(http_request).await;
            String::from_utf8(http_body_util::BodyExt::collect(response.into_body()).await.unwrap().to_bytes().to_vec()).unwrap()
        } else {
            String::from_utf8(endpoint.handle(http_request).await.into_body().to_vec()).unwrap()
        };
        let message: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        assert_eq!(message["id"], 4, "{message}");
        assert_eq!(message["error"]["code"], -32603, "{message}");
        assert!(message["error"]["message"].as_str().unwrap().contains("time limit"), "{message}");
    }
}

#[tokio::test]
async fn a_whole_answer_ends_a_listen_at_once_whatever_the_handler_advertises() {
    // Listening is on in these dependencies; the edge answers whole.
    let endpoint = everything_with(deps_with(quick(true), Arc::default()), Transport::Buffered);
    let addr = spawn(endpoint).await;
    assert_listen_is_ended_at_once(addr).await;
}

#[tokio::test]
async fn an_older_deployment_still_in_the_feed_does_not_close_a_newer_builds_streams() {
    // The feed holds another build's lists, recorded before this instance
    // started (its own record at cold start failed, say): a stream records
    // this build's lists as it opens, and an older record never counts as
    // a newer deployment. Its streams stay open.
    let feed = Arc::new(InMemoryFeed::default());
    let older = ListDigests::of(&json!(["an older tool"]), &json!([]), &json!([]));
    feed::record_live(feed.as_ref(), &older, SystemClock.now_ms() - 60_000).await.unwrap();
    let addr = spawn(everything_with(deps_with(quick(true), feed.clone()), Transport::Streaming)).await;
    let mut stream = EventStream::open(addr, &listen(7, json!({"toolsListChanged": true}), json!({})), None).await;
    stream.until_method("notifications/subscriptions/acknowledged").await;
    // Several polls later the stream is still there to take a change.
    tokio::time::sleep(Duration::from_millis(300)).await;
    call_tool(addr, "anyone", "test_trigger_tool_change", json!({}), json!({}), json!({})).await;
    let (_, next) = stream.next().await.unwrap();
    assert_eq!(next["method"], "notifications/tools/list_changed", "{next}");
}
