//! The starter function's example tools, called over HTTP.

use e2e::*;
use mcp_stateless::{Dependencies, EdgePolicy, McpEndpoint, Mode};
use serde_json::json;

async fn server() -> std::net::SocketAddr {
    spawn(McpEndpoint::new(starter::StarterServer::new(Dependencies::in_process()), EdgePolicy::new(Mode::Local))).await
}

#[tokio::test]
async fn text_stats_returns_structured_content_matching_its_output_schema() {
    let addr = server().await;
    let list = post(addr, &request(1, "tools/list", json!({}), json!({}))).await.json();
    let tool = list["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "text_stats").unwrap().clone();
    assert_eq!(tool["inputSchema"]["properties"]["text"]["type"], "string");
    assert!(tool["outputSchema"]["properties"]["words"].is_object());

    let call = request(2, "tools/call", json!({"name": "text_stats", "arguments": {"text": "one two\nthree"}}), json!({}));
    let result = post(addr, &call).await.json()["result"].clone();
    assert_eq!(result["structuredContent"], json!({"characters": 13, "words": 3, "lines": 2}));
}

#[tokio::test]
async fn bad_arguments_and_impossible_inputs_are_tool_errors() {
    let addr = server().await;
    let missing = request(1, "tools/call", json!({"name": "convert_temperature", "arguments": {"value": 1}}), json!({}));
    // server/tools: input validation failures are tool execution errors, so
    // the model sees them and can correct its call.
    let result = post(addr, &missing).await.json()["result"].clone();
    assert_eq!(result["isError"], true);
    assert!(result["content"][0]["text"].as_str().unwrap().contains("from"));

    let below_zero = request(
        2,
        "tools/call",
        json!({"name": "convert_temperature", "arguments": {"value": -500, "from": "celsius", "to": "kelvin"}}),
        json!({}),
    );
    let result = post(addr, &below_zero).await.json()["result"].clone();
    assert_eq!(result["isError"], true);

    let boiling = request(
        3,
        "tools/call",
        json!({"name": "convert_temperature", "arguments": {"value": 100, "from": "celsius", "to": "fahrenheit"}}),
        json!({}),
    );
    assert_eq!(post(addr, &boiling).await.json()["result"]["content"][0]["text"], "212.00");
}

#[tokio::test]
async fn unknown_tool_is_an_error_not_a_panic() {
    let addr = server().await;
    let reply = post(addr, &request(1, "tools/call", json!({"name": "nope"}), json!({}))).await;
    assert_eq!(reply.json()["error"]["code"], -32602);
}

#[tokio::test]
async fn echo_answers_with_its_text() {
    let addr = server().await;
    let call = request(1, "tools/call", json!({"name": "echo", "arguments": {"text": "hello"}}), json!({}));
    assert_eq!(post(addr, &call).await.json()["result"]["content"][0]["text"], "echo: hello");
}
