//! Every protocol rule of the edge, checked over HTTP against the everything
//! function's local server (basic/index, basic/versioning,
//! basic/transports/streamable-http, server/discover, server/utilities/caching,
//! server/tools, basic/patterns/mrtr).

use e2e::*;
use serde_json::json;

async fn server() -> std::net::SocketAddr {
    spawn(everything_endpoint()).await
}

fn error_code(reply: &Reply) -> i64 {
    reply.message()["error"]["code"].as_i64().unwrap_or_else(|| panic!("no error in {:?}", reply.body))
}

#[tokio::test]
async fn meta_must_carry_protocol_version_and_client_capabilities() {
    let addr = server().await;
    let mut no_meta = json!({"jsonrpc": "2.0", "id": 7, "method": "server/discover", "params": {}});
    let reply = post(addr, &no_meta).await;
    assert_eq!((reply.status, error_code(&reply)), (400, -32602));
    assert_eq!(reply.json()["id"], 7, "error echoes the request id");

    for missing in ["io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities"] {
        let mut body = request(8, "server/discover", json!({}), json!({}));
        body["params"]["_meta"].as_object_mut().unwrap().remove(missing);
        let reply = post(addr, &body).await;
        assert_eq!((reply.status, error_code(&reply)), (400, -32602), "without {missing}");
    }

    // clientInfo is optional.
    no_meta["params"]["_meta"] = meta(json!({}));
    no_meta["params"]["_meta"].as_object_mut().unwrap().remove("io.modelcontextprotocol/clientInfo");
    let reply = post(addr, &no_meta).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json()["result"]["resultType"], "complete");
}

#[tokio::test]
async fn version_header_is_required_and_must_match_meta() {
    let addr = server().await;
    let body = request(1, "tools/list", json!({}), json!({}));
    let missing = post_with(addr, &body, |h| remove_header(h, "mcp-protocol-version")).await;
    assert_eq!((missing.status, error_code(&missing)), (400, -32020));

    let mut mismatched = request(2, "tools/list", json!({}), json!({}));
    mismatched["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    let reply = post(addr, &mismatched).await;
    assert_eq!((reply.status, error_code(&reply)), (400, -32020));
}

#[tokio::test]
async fn unsupported_version_lists_what_is_supported() {
    let addr = server().await;
    let mut body = request(3, "tools/list", json!({}), json!({}));
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    let reply = post_with(addr, &body, |h| set_header(h, "MCP-Protocol-Version", "v999.0.0")).await;
    assert_eq!((reply.status, error_code(&reply)), (400, -32022));
    let data = &reply.json()["error"]["data"];
    assert_eq!(data["supported"], json!(["2026-07-28"]));
    assert_eq!(data["requested"], "v999.0.0");
}

#[tokio::test]
async fn method_and_name_headers_must_match_the_body() {
    let addr = server().await;
    let call = request(4, "tools/call", json!({"name": "test_simple_text"}), json!({}));
    for change in [
        (|h: &mut Vec<(String, String)>| remove_header(h, "mcp-method")) as fn(&mut Vec<(String, String)>),
        |h| set_header(h, "Mcp-Method", "tools/list"),
        |h| set_header(h, "Mcp-Method", "TOOLS/CALL"),
        |h| remove_header(h, "mcp-name"),
        |h| set_header(h, "Mcp-Name", "test_error_handling"),
    ] {
        let reply = post_with(addr, &call, change).await;
        assert_eq!((reply.status, error_code(&reply)), (400, -32020), "{:?}", reply.body);
    }
    // Header names are case-insensitive and values are trimmed.
    let reply = post_with(addr, &call, |h| {
        remove_header(h, "mcp-name");
        h.push(("MCP-NAME".into(), "  test_simple_text  ".into()));
    })
    .await;
    assert_eq!(reply.status, 200);
    assert!(reply.message()["result"]["content"][0]["text"].is_string());
}

#[tokio::test]
async fn x_mcp_header_parameters_are_validated_and_base64_decoded() {
    let addr = server().await;
    let call = request(5, "tools/call", json!({"name": "test_x_mcp_header", "arguments": {"region": "Hello"}}), json!({}));
    let ok = post_with(addr, &call, |h| set_header(h, "Mcp-Param-Region", "=?base64?SGVsbG8=?=")).await;
    assert_eq!(ok.status, 200, "{:?}", ok.body);
    assert_eq!(ok.message()["result"]["content"][0]["text"], "region: Hello");

    for bad in ["=?base64?SGVsbG8?=", "Goodbye"] {
        let reply = post_with(addr, &call, |h| set_header(h, "Mcp-Param-Region", bad)).await;
        assert_eq!((reply.status, error_code(&reply)), (400, -32020), "header {bad}");
    }
    let missing = post(addr, &call).await;
    assert_eq!((missing.status, error_code(&missing)), (400, -32020));
}

#[tokio::test]
async fn removed_and_unknown_methods_are_404_method_not_found() {
    let addr = server().await;
    // With the modern envelope: removed at 2026-07-28 (a 2025-era client,
    // without it, is served: tests/legacy.rs).
    for method in ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "unknown/method"] {
        let params = if method.starts_with("resources/") { json!({"uri": "test://static-text"}) } else { json!({}) };
        let reply = post(addr, &request(6, method, params, json!({}))).await;
        assert_eq!((reply.status, error_code(&reply)), (404, -32601), "{method}");
        assert_eq!(reply.json()["id"], 6);
    }
}

/// docs/reference.md's rules table says so: an `Accept` that does not name
/// both media types of the transport gets 406 from rmcp (none at all is
/// answered as JSON: tests/client_shapes.rs).
#[tokio::test]
async fn a_request_without_the_transports_accept_header_is_406() {
    let addr = server().await;
    let call = request(3, "tools/list", json!({}), json!({}));
    for accept in ["application/json", "text/event-stream", "text/html"] {
        let mut headers: Vec<(String, String)> = standard_headers(&call).into_iter().filter(|(name, _)| name != "accept").collect();
        headers.push(("accept".into(), accept.into()));
        let reply = send(addr, "POST", &headers, call.to_string().into_bytes()).await;
        assert_eq!(reply.status, 406, "{accept}");
    }
}

#[tokio::test]
async fn only_post_is_served_and_notifications_get_202() {
    let addr = server().await;
    for method in ["GET", "PUT"] {
        let reply = send(addr, method, &standard_headers(&json!({})), Vec::new()).await;
        assert_eq!(reply.status, 405, "{method}");
        assert_eq!(reply.headers["allow"], "POST, DELETE");
    }
    // DELETE ends a 2025-era session, and names which.
    assert_eq!(send(addr, "DELETE", &standard_headers(&json!({})), Vec::new()).await.status, 400);
    let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    let reply = post(addr, &note).await;
    assert_eq!(reply.status, 202);
    assert!(reply.body.is_empty());
}

/// `/mcp/`, typed with its slash, is the endpoint too; nothing else under
/// it is.
#[tokio::test]
async fn the_endpoint_typed_with_a_trailing_slash_is_served_and_nothing_below_it() {
    let addr = server().await;
    let list = request(3, "tools/list", json!({}), json!({}));
    let headers = standard_headers(&list);
    let reply = send_to(addr, "POST", "/mcp/", &headers, serde_json::to_vec(&list).unwrap()).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.message()["id"], 3);
    for path in ["/mcp//", "/mcp/x", "/mcpx", "/MCP/"] {
        assert_eq!(send_to(addr, "POST", path, &headers, serde_json::to_vec(&list).unwrap()).await.status, 404, "{path}");
    }
}

#[tokio::test]
async fn foreign_hosts_and_origins_are_forbidden() {
    let addr = server().await;
    let body = request(1, "server/discover", json!({}), json!({}));
    let evil_host = post_with(addr, &body, |h| set_header(h, "host", "evil.example.com")).await;
    assert_eq!(evil_host.status, 403);
    let evil_origin = post_with(addr, &body, |h| set_header(h, "origin", "http://evil.example.com")).await;
    assert_eq!(evil_origin.status, 403);
    let local_origin = post_with(addr, &body, |h| set_header(h, "origin", "http://localhost:6274")).await;
    assert_eq!(local_origin.status, 200);
}

#[tokio::test]
async fn malformed_bodies_get_json_rpc_errors() {
    let addr = server().await;
    let headers = standard_headers(&request(1, "tools/list", json!({}), json!({})));
    let cases: [(&[u8], u16, i64); 4] = [
        (b"{not json", 400, -32700),
        (br#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#, 400, -32600),
        (b"42", 400, -32600),
        (b"\"tools/list\"", 400, -32600),
    ];
    for (body, status, code) in cases {
        let reply = send(addr, "POST", &headers, body.to_vec()).await;
        assert_eq!((reply.status, reply.json()["error"]["code"].as_i64().unwrap()), (status, code));
    }

    let mut too_big = request(1, "tools/call", json!({"name": "test_simple_text"}), json!({}));
    too_big["params"]["arguments"] = json!({"padding": "x".repeat(1024 * 1024)});
    let reply = post(addr, &too_big).await;
    assert_eq!(reply.status, 413);
    assert_eq!(reply.json()["error"]["code"], -32600);

    let mut wrong_type = headers.clone();
    set_header(&mut wrong_type, "content-type", "text/plain");
    let reply = send(addr, "POST", &wrong_type, b"{}".to_vec()).await;
    assert_eq!(reply.status, 415);
}

#[tokio::test]
async fn no_answer_may_be_stored_by_an_http_cache() {
    let addr = server().await;
    let called = post(addr, &request(1, "tools/call", json!({"name": "test_simple_text", "arguments": {}}), json!({}))).await;
    assert_eq!(called.headers[http::header::CACHE_CONTROL], "no-store");
    let refused = send(addr, "POST", &[], b"{}".to_vec()).await;
    assert!(refused.status >= 400);
    assert_eq!(refused.headers[http::header::CACHE_CONTROL], "no-store", "errors too");
}

#[tokio::test]
async fn results_carry_result_type_cache_hints_and_server_info() {
    let addr = server().await;
    let cached = ["server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list"];
    for method in cached {
        let result = post(addr, &request(1, method, json!({}), json!({}))).await.message()["result"].clone();
        assert_eq!(result["resultType"], "complete", "{method}");
        assert!(result["ttlMs"].as_u64().is_some(), "{method} lacks ttlMs");
        assert!(matches!(result["cacheScope"].as_str(), Some("public" | "private")), "{method}");
        assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "everything", "{method}");
    }
    let read = post(addr, &request(2, "resources/read", json!({"uri": "test://static-text"}), json!({}))).await;
    let result = &read.message()["result"];
    assert!(result["ttlMs"].is_u64() && result["cacheScope"].is_string());
    assert_eq!(result["resultType"], "complete");
}

/// The conformance suite's resource fixtures, fixed and templated:
/// listed, read through their template, and a URI that nothing serves
/// answered "resource not found" with the URI echoed (-32002, which rmcp
/// answers as -32602 to a 2026-07-28 client, SEP-2164).
#[tokio::test]
async fn fixed_and_templated_resources_are_listed_and_read() {
    let addr = server().await;
    let listed = post(addr, &request(1, "resources/list", json!({}), json!({}))).await.message();
    let uris: Vec<&str> = listed["result"]["resources"].as_array().unwrap().iter().map(|r| r["uri"].as_str().unwrap()).collect();
    assert_eq!(uris, ["test://static-text", "test://static-binary"]);
    let templates = post(addr, &request(2, "resources/templates/list", json!({}), json!({}))).await.message();
    assert_eq!(
        templates["result"]["resourceTemplates"],
        json!([{"uriTemplate": "test://template/{id}/data", "name": "template-data", "mimeType": "text/plain"}])
    );
    let read = post(addr, &request(3, "resources/read", json!({"uri": "test://template/123/data"}), json!({}))).await.message();
    assert_eq!(read["result"]["contents"][0]["text"], "Data for resource id 123", "{read}");
    for unknown in ["test://nothing", "test://template/1/2/data", "test://template//data", "test://template/%zz/data"] {
        let reply = post(addr, &request(4, "resources/read", json!({"uri": unknown}), json!({}))).await;
        assert_eq!(error_code(&reply), -32602, "{unknown}");
        assert_eq!(reply.message()["error"]["data"], json!({"uri": unknown}), "{unknown}");
    }
}

#[tokio::test]
async fn tools_list_is_sorted_and_stable() {
    let addr = server().await;
    let names = |reply: Reply| -> Vec<String> {
        reply.message()["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
    };
    let first = names(post(addr, &request(1, "tools/list", json!({}), json!({}))).await);
    let second = names(post(addr, &request(2, "tools/list", json!({}), json!({}))).await);
    assert!(first.len() >= 20, "{first:?}");
    assert_eq!(first, second);
    let mut sorted = first.clone();
    sorted.sort();
    assert_eq!(first, sorted);
}

#[tokio::test]
async fn undeclared_capability_is_refused_with_32021() {
    let addr = server().await;
    let call = request(9, "tools/call", json!({"name": "test_missing_capability"}), json!({}));
    let reply = post(addr, &call).await;
    assert_eq!((reply.status, error_code(&reply)), (400, -32021));
    assert_eq!(reply.json()["error"]["data"]["requiredCapabilities"], json!({"sampling": {}}));
    assert_eq!(reply.json()["id"], 9);

    // Declared: the same tool asks through an InputRequiredResult.
    let declared = request(10, "tools/call", json!({"name": "test_missing_capability"}), json!({"sampling": {}}));
    let result = post(addr, &declared).await.message()["result"].clone();
    assert_eq!(result["resultType"], "input_required");

    // A client with only sampling never receives an elicitation request.
    let caps = request(11, "tools/call", json!({"name": "test_input_required_result_capabilities"}), json!({"sampling": {}}));
    let result = post(addr, &caps).await.message()["result"].clone();
    let methods: Vec<&str> = result["inputRequests"].as_object().unwrap().values().map(|r| r["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["sampling/createMessage"]);
}

#[tokio::test]
async fn progress_is_streamed_before_the_result() {
    let addr = server().await;
    let mut call = request(12, "tools/call", json!({"name": "test_tool_with_progress"}), json!({}));
    call["params"]["_meta"]["progressToken"] = json!("p-1");
    let reply = post(addr, &call).await;
    assert_eq!(reply.headers["content-type"], "text/event-stream");
    assert_eq!(reply.headers[http::header::CACHE_CONTROL], "no-store", "a stream is not stored either");
    let messages = reply.messages();
    let progress: Vec<f64> =
        messages.iter().filter(|m| m["method"] == "notifications/progress").map(|m| m["params"]["progress"].as_f64().unwrap()).collect();
    assert_eq!(progress, [0.0, 50.0, 100.0]);
    assert_eq!(messages.last().unwrap()["id"], 12);
}

/// Round two must come from the same caller, for the same tool and arguments.
#[tokio::test]
async fn request_state_is_bound_to_the_caller_and_rejects_tampering() {
    let addr = server().await;
    let name = "test_input_required_result_request_state";
    let as_alice = |h: &mut Vec<(String, String)>| set_header(h, "x-mcp-dev-principal", "alice");
    let round1 =
        post_with(addr, &request(1, "tools/call", json!({"name": name, "arguments": {}}), json!({"elicitation": {}})), as_alice).await;
    let state = round1.message()["result"]["requestState"].as_str().unwrap().to_owned();

    let mut round2 = request(2, "tools/call", json!({"name": name, "arguments": {}}), json!({"elicitation": {}}));
    round2["params"]["inputResponses"] = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    round2["params"]["requestState"] = json!(state);
    let ok = post_with(addr, &round2, as_alice).await;
    assert_eq!(ok.message()["result"]["resultType"], "complete");

    let as_bob = post_with(addr, &round2, |h| set_header(h, "x-mcp-dev-principal", "bob")).await;
    let anonymous = post(addr, &round2).await;
    round2["params"]["requestState"] = json!(format!("{state}-TAMPERED"));
    let tampered = post_with(addr, &round2, as_alice).await;
    for reply in [as_bob, anonymous, tampered] {
        assert_eq!(reply.status, 200);
        let error = &reply.message()["error"];
        assert_eq!(error["code"], -32602);
        assert_eq!(error["message"], "requestState is invalid or expired; retry the request without it");
    }
}

#[tokio::test]
async fn misshapen_params_of_a_known_method_are_invalid_params_not_an_unknown_method() {
    let addr = spawn(everything_endpoint()).await;
    let body = request(9, "tools/call", json!({"name": "test_simple_text", "arguments": "string"}), json!({}));
    let reply = post(addr, &body).await;
    assert_eq!(reply.status, 400);
    let message = reply.json();
    assert_eq!(message["error"]["code"], -32602, "{message}");
    assert_eq!(message["id"], 9);
}
