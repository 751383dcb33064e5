//! The Lambda entry point fed real API Gateway HTTP API (payload v2) and
//! Function URL events, kept as fixtures in `tests/fixtures/`: the same
//! answers as the local server, and a principal taken from the authorizer
//! only.

use e2e::*;
use lambda_http::{Body, request::LambdaRequest};
use e2e::fixture_server::FixtureServer;
use mcp_stateless::{Dependencies, McpEndpoint, Mode};
use serde_json::{Value, json};

fn fixtures(mode: Mode) -> McpEndpoint<FixtureServer> {
    fixture_endpoint(Dependencies::in_process(), mode)
}

/// What the fixtures' `whoami` answers for a verified caller.
fn verified(issuer: &str, subject: &str) -> String {
    json!({"Verified": {"issuer": issuer, "subject": subject}}).to_string()
}

fn fixture(name: &str) -> (lambda_http::Request, Value) {
    let path = format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let event: LambdaRequest = serde_json::from_str(&text).unwrap();
    let request: lambda_http::Request = event.into();
    let body: Value = match request.body() {
        Body::Text(text) => serde_json::from_str(text).unwrap(),
        Body::Binary(bytes) => serde_json::from_slice(bytes).unwrap(),
        Body::Empty => panic!("fixture has no body"),
        _ => unreachable!(),
    };
    (request, body)
}

async fn invoke(name: &str) -> (u16, Value, Value) {
    let (request, body) = fixture(name);
    let response = mcp_stateless::edge::lambda::handle_event(&fixtures(Mode::Lambda), request).await;
    let status = response.status().as_u16();
    let message: Value = match response.body() {
        Body::Text(text) => serde_json::from_str(text).unwrap(),
        other => panic!("expected a text body, got {other:?}"),
    };
    (status, message, body)
}

#[tokio::test]
async fn api_gateway_and_function_url_answer_like_the_local_server() {
    let local = spawn(fixtures(Mode::Local)).await;
    for name in ["apigw-v2-tools-list.json", "function-url-tools-list.json"] {
        let (status, from_lambda, body) = invoke(name).await;
        assert_eq!(status, 200, "{name}: {from_lambda}");
        let from_local = post(local, &body).await;
        assert_eq!(from_local.status, 200);
        assert_eq!(from_lambda, from_local.json(), "{name}");
        assert!(from_lambda["result"]["tools"].as_array().unwrap().len() >= 4);
    }
}

#[tokio::test]
async fn principal_comes_from_the_jwt_authorizer_only() {
    // The fixture also sends `x-mcp-dev-principal: mallory`, which Lambda ignores.
    let (status, message, _) = invoke("apigw-v2-whoami.json").await;
    assert_eq!(status, 200);
    assert_eq!(message["result"]["content"][0]["text"], verified("https://issuer.example.com/", "user-1"));

    let (status, message, _) = invoke("function-url-whoami.json").await;
    assert_eq!(status, 200);
    assert_eq!(message["result"]["content"][0]["text"], "\"Anonymous\"");
}

#[tokio::test]
async fn local_mode_honours_the_development_principal() {
    let local = spawn(fixtures(Mode::Local)).await;
    let call = request(1, "tools/call", json!({"name": "whoami", "arguments": {}}), json!({}));
    let as_dev = post_with(local, &call, |h| set_header(h, "x-mcp-dev-principal", "alice")).await;
    assert_eq!(as_dev.json()["result"]["content"][0]["text"], verified("local-dev", "alice"));
    let anonymous = post(local, &call).await;
    assert_eq!(anonymous.json()["result"]["content"][0]["text"], "\"Anonymous\"");
}

#[tokio::test]
async fn lambda_rejects_hosts_other_than_the_api_domain() {
    let (mut request, _) = fixture("apigw-v2-tools-list.json");
    request.headers_mut().insert("host", "evil.example.com".parse().unwrap());
    let response = mcp_stateless::edge::lambda::handle_event(&fixtures(Mode::Lambda), request).await;
    assert_eq!(response.status(), 403);
}

#[tokio::test]
async fn protected_resource_metadata_is_served_without_auth_at_both_paths() {
    use mcp_stateless::edge::protected_resource::ResourceMetadata;
    let metadata = ResourceMetadata {
        authorization_servers: vec!["https://issuer.example.com/".into()],
        scopes_supported: vec!["mcp".into()],
        resource: None,
    };
    let endpoint = fixtures(Mode::Lambda).with_resource_metadata(metadata);
    for path in ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"] {
        let (mut request, _) = fixture("function-url-tools-list.json");
        *request.method_mut() = http::Method::GET;
        *request.uri_mut() = path.parse().unwrap();
        let response = mcp_stateless::edge::lambda::handle_event(&endpoint, request).await;
        assert_eq!(response.status(), 200, "{path}");
        let Body::Text(text) = response.body() else { panic!("{path}: no body") };
        let document: Value = serde_json::from_str(text).unwrap();
        assert_eq!(document["resource"], "https://abcdefghijklmnopqrstuvwxyz0123.lambda-url.eu-west-1.on.aws/mcp");
        assert_eq!(document["authorization_servers"], json!(["https://issuer.example.com/"]));
        assert_eq!(document["scopes_supported"], json!(["mcp"]));
    }
    // Auth off (no authorization server configured): nothing is published.
    let (mut request, _) = fixture("function-url-tools-list.json");
    *request.method_mut() = http::Method::GET;
    *request.uri_mut() = "/.well-known/oauth-protected-resource".parse().unwrap();
    assert_eq!(mcp_stateless::edge::lambda::handle_event(&fixtures(Mode::Lambda), request).await.status(), 404);
}

#[tokio::test]
async fn a_verified_token_without_a_subject_or_issuer_is_refused_not_anonymous() {
    let path = format!("{}/fixtures/apigw-v2-tools-list.json", env!("CARGO_MANIFEST_DIR"));
    for missing in ["sub", "iss"] {
        let mut event: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        event["requestContext"]["authorizer"]["jwt"]["claims"].as_object_mut().unwrap().remove(missing);
        let request: lambda_http::Request = serde_json::from_value::<LambdaRequest>(event).unwrap().into();
        let response = mcp_stateless::edge::lambda::handle_event(&fixtures(Mode::Lambda), request).await;
        assert_eq!(response.status().as_u16(), 401, "without {missing}");
        let Body::Text(text) = response.body() else { panic!("a JSON-RPC error body") };
        assert!(text.contains("iss and sub are required"), "{text}");
    }
}
