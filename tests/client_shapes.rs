//! Clients as they really behave: the request shapes widely used clients
//! send that the strict rules refused (edge/tolerance.rs), each served, and
//! the stricter shapes around each still refused; and a 2025-era session
//! that a client which never initializes again keeps using past a day.
//! (A listen where streams are not served: tests/real_time.rs.)

use std::sync::Arc;

use e2e::{legacy::LegacyClient, post_with, remove_header, request, send, set_header, spawn};
use mcp_stateless::{Dependencies, EdgePolicy, McpEndpoint, Mode, clock::ManualClock, deployment::Transport};
use serde_json::json;

async fn serve(deps: Dependencies, transport: Transport) -> std::net::SocketAddr {
    let policy = {
        let mut value = EdgePolicy::new(Mode::Local);
        value.transport = transport;
        value
    };
    spawn(McpEndpoint::new(everything::EverythingServer::new(deps.clone()), policy).with_dependencies(&deps)).await
}

fn error_code(reply: &e2e::Reply) -> Option<i64> {
    reply.json()["error"]["code"].as_i64()
}

fn first_bytes(reply: &e2e::Reply) -> String {
    String::from_utf8_lossy(&reply.body[..reply.body.len().min(60)]).into_owned()
}

#[tokio::test]
async fn a_meta_version_this_server_speaks_wins_over_another_spoken_header() {
    let addr = serve(Dependencies::in_process(), Transport::Streaming).await;
    let list = request(1, "tools/list", json!({}), json!({}));
    // Claude's connectors: 2026-07-28 in _meta, 2025-11-25 in the header.
    for header in ["2025-11-25", "2025-06-18", "2025-03-26"] {
        let reply = post_with(addr, &list, |h| set_header(h, "mcp-protocol-version", header)).await;
        assert_eq!(reply.status, 200, "header {header}: {}", first_bytes(&reply));
        let message = reply.message();
        assert!(message["result"]["tools"].is_array(), "{message}");
        assert_eq!(message["result"]["resultType"], "complete", "served as 2026-07-28");
    }
    // Stricter around it: a version nobody speaks, in either place.
    let unspoken_header = post_with(addr, &list, |h| set_header(h, "mcp-protocol-version", "2024-11-05")).await;
    assert_eq!((unspoken_header.status, error_code(&unspoken_header)), (400, Some(-32020)));
    let mut unspoken_meta = list.clone();
    unspoken_meta["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    let reply = post_with(addr, &unspoken_meta, |_| {}).await;
    assert_eq!((reply.status, error_code(&reply)), (400, Some(-32020)), "the conformance suite's mismatch");
    let reply = post_with(addr, &unspoken_meta, |h| set_header(h, "mcp-protocol-version", "2025-11-25")).await;
    assert_eq!((reply.status, error_code(&reply)), (400, Some(-32020)), "_meta must name a version served");
    let reply = post_with(addr, &list, |h| remove_header(h, "mcp-protocol-version")).await;
    assert_eq!((reply.status, error_code(&reply)), (400, Some(-32020)), "the header is still required");
    // The other standard headers are checked as before.
    let call = request(2, "tools/call", json!({"name": "test_simple_text"}), json!({}));
    let reply = post_with(addr, &call, |h| {
        set_header(h, "mcp-protocol-version", "2025-11-25");
        set_header(h, "mcp-name", "another_tool");
    })
    .await;
    assert_eq!((reply.status, error_code(&reply)), (400, Some(-32020)), "Mcp-Name must match: {}", first_bytes(&reply));
    let reply = post_with(addr, &call, |h| {
        set_header(h, "mcp-protocol-version", "2025-11-25");
        set_header(h, "mcp-method", "tools/list");
    })
    .await;
    assert_eq!((reply.status, error_code(&reply)), (400, Some(-32020)), "Mcp-Method must match");
}

#[tokio::test]
async fn a_header_repeating_one_version_is_that_version() {
    let addr = serve(Dependencies::in_process(), Transport::Streaming).await;
    let list = request(1, "tools/list", json!({}), json!({}));
    let joined = post_with(addr, &list, |h| set_header(h, "mcp-protocol-version", "2026-07-28, 2026-07-28")).await;
    assert_eq!(joined.status, 200, "{}", first_bytes(&joined));
    assert!(joined.message()["result"]["tools"].is_array());
    let twice = post_with(addr, &list, |h| h.push(("mcp-protocol-version".into(), "2026-07-28".into()))).await;
    assert_eq!(twice.status, 200, "sent twice: {}", first_bytes(&twice));
    // Two different versions are not one, joined or sent twice, in either order.
    let differing = post_with(addr, &list, |h| set_header(h, "mcp-protocol-version", "2026-07-28, 2025-11-25")).await;
    assert_eq!((differing.status, error_code(&differing)), (400, Some(-32020)));
    let twice_differing = post_with(addr, &list, |h| h.push(("mcp-protocol-version".into(), "2025-11-25".into()))).await;
    assert_eq!((twice_differing.status, error_code(&twice_differing)), (400, Some(-32020)), "{}", first_bytes(&twice_differing));
    let legacy_twice = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}});
    let headers = vec![
        ("content-type".to_owned(), "application/json".to_owned()),
        ("accept".to_owned(), "application/json, text/event-stream".to_owned()),
        ("mcp-protocol-version".to_owned(), "2025-06-18".to_owned()),
        ("mcp-protocol-version".to_owned(), "2025-11-25".to_owned()),
    ];
    let reply = send(addr, "POST", &headers, legacy_twice.to_string().into_bytes()).await;
    assert_eq!((reply.status, error_code(&reply)), (400, Some(-32020)), "a 2025-era request too");
    let unspoken = post_with(addr, &list, |h| set_header(h, "mcp-protocol-version", "v9, v9")).await;
    assert_eq!((unspoken.status, error_code(&unspoken)), (400, Some(-32020)), "repeated, and still not _meta's");
}

#[tokio::test]
async fn a_sessions_request_is_served_at_its_version_whatever_newer_header_it_names() {
    let addr = serve(Dependencies::in_process(), Transport::Streaming).await;
    let mut client = LegacyClient::initialize(addr, "alice", json!({})).await;
    assert_eq!(client.version, "2025-11-25");
    // The claude.ai connector's header after negotiating 2025-11-25.
    client.version = "2026-07-28".into();
    let reply = client.request(addr, "tools/list", json!({})).await;
    assert_eq!(reply.status, 200, "{}", first_bytes(&reply));
    let result = &reply.message()["result"];
    assert!(result["tools"].is_array() && result.get("resultType").is_none(), "shaped for 2025: {result}");
    assert_eq!(client.request(addr, "ping", json!({})).await.json()["result"], json!({}));
    // The standard headers it sent itself are held to its body, as a
    // modern request's are.
    let call = json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "test_simple_text"}});
    for (name, value, refused) in
        [("mcp-name", "test_simple_text", false), ("mcp-name", "another_tool", true), ("mcp-method", "tools/list", true)]
    {
        let mut headers = client.headers();
        headers.push((name.to_owned(), value.to_owned()));
        let reply = send(addr, "POST", &headers, call.to_string().into_bytes()).await;
        // Refused as its era's errors are: a JSON-RPC error with HTTP 200.
        assert_eq!(reply.status, 200, "{name}: {value}: {}", first_bytes(&reply));
        let expected = if refused { Some(-32020) } else { None };
        assert_eq!(error_code(&reply), expected, "{name}: {value}: {}", first_bytes(&reply));
    }
    // Stricter around it: without a session it is a 2026 request without
    // its _meta, and a session that does not open is 404.
    let as_client =
        |principal: &str, session: Option<String>| LegacyClient { principal: principal.into(), session, version: "2026-07-28".into() };
    let sessionless = as_client("alice", None);
    let reply = sessionless.request(addr, "tools/list", json!({})).await;
    assert_eq!((reply.status, error_code(&reply)), (400, Some(-32602)));
    let forged = as_client("alice", Some("v1.AAAA".into()));
    assert_eq!(forged.request(addr, "tools/list", json!({})).await.status, 404);
    let foreign = as_client("mallory", client.session.clone());
    assert_eq!(foreign.request(addr, "tools/list", json!({})).await.status, 404, "another caller's");
}

#[tokio::test]
async fn a_post_without_accept_is_answered_as_json() {
    for transport in [Transport::Streaming, Transport::Buffered] {
        let addr = serve(Dependencies::in_process(), transport).await;
        let mut call = request(1, "tools/call", json!({"name": "test_tool_with_progress"}), json!({}));
        call["params"]["_meta"]["progressToken"] = json!("p1");
        let reply = post_with(addr, &call, |h| remove_header(h, "accept")).await;
        assert_eq!(reply.status, 200, "{transport:?}: {}", first_bytes(&reply));
        assert_eq!(reply.headers["content-type"], "application/json", "{transport:?}");
        let message = reply.json();
        assert_eq!((message["id"].as_i64(), message["result"]["resultType"].as_str()), (Some(1), Some("complete")));
        // A 2025-era client without Accept too.
        let client = LegacyClient::initialize(addr, "alice", json!({})).await;
        let mut headers = client.headers();
        remove_header(&mut headers, "accept");
        let body = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {}});
        let reply = send(addr, "POST", &headers, body.to_string().into_bytes()).await;
        assert_eq!((reply.status, reply.headers["content-type"].to_str().unwrap()), (200, "application/json"));
        assert!(reply.json()["result"]["tools"].is_array());
        // Stricter around it: an Accept that names neither type is 406.
        let reply = post_with(addr, &call, |h| set_header(h, "accept", "text/html")).await;
        assert_eq!(reply.status, 406, "{transport:?}");
    }
}

#[tokio::test]
async fn a_client_that_never_initializes_again_keeps_its_session_for_30_days() {
    let clock = Arc::new(ManualClock::at(1_000_000));
    let addr = serve(Dependencies::in_process_with_clock(clock.clone()), Transport::Streaming).await;
    let client = LegacyClient::initialize(addr, "alice", json!({"elicitation": {}})).await;
    assert_eq!(client.request(addr, "logging/setLevel", json!({"level": "debug"})).await.status, 200);
    // What the session held before its first day was out.
    let day = 24 * 3600;
    let mut elapsed = 0;
    for after in [day + 1, 7 * day, 30 * day - 1] {
        clock.advance(after - elapsed);
        elapsed = after;
        let reply = client.request(addr, "tools/list", json!({})).await;
        assert_eq!(reply.status, 200, "{after} s after initialize: {}", first_bytes(&reply));
    }
    clock.advance(1);
    let expired = client.request(addr, "tools/list", json!({})).await;
    assert_eq!((expired.status, error_code(&expired)), (404, Some(-32001)), "bounded: 30 days");
    // An ended session stays ended, whatever the clock says.
    let again = LegacyClient::initialize(addr, "alice", json!({})).await;
    assert_eq!(again.delete(addr).await.status, 200);
    clock.advance(day + 1);
    assert_eq!(again.request(addr, "tools/list", json!({})).await.status, 404);
}
