//! The Lambda entry point fed real API Gateway HTTP API (payload v2), REST
//! API (payload v1) and Function URL events, kept as fixtures in
//! `tests/fixtures/`: the same answers as the local server, buffered or
//! streamed, and a principal taken from the authorizer only.

use e2e::fixture_server::FixtureServer;
use e2e::*;
use lambda_http::{Body, request::LambdaRequest};
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
    let metadata = ResourceMetadata::new(vec!["https://issuer.example.com/".into()], vec!["mcp".into()]);
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

/// Behind a custom domain's base path mapping (`PublicBaseUrl`
/// `https://mcp.example.com/tools`), API Gateway leaves the mapping's key in
/// the path; `MCP_BASE_PATH` names it, and the function serves its paths
/// under it, naming the metadata where clients reach it.
#[tokio::test]
async fn behind_a_base_path_mapping_the_function_serves_under_it() {
    use mcp_stateless::edge::protected_resource::ResourceMetadata;
    let resource = "https://mcp.example.com/tools/mcp";
    let mut metadata = ResourceMetadata::new(vec!["https://mcp.example.com/tools".into()], vec!["mcp".into()]).with_base_path("/tools");
    metadata.resource = Some(resource.into());
    let endpoint = fixtures(Mode::Lambda).with_resource_metadata(metadata);
    let (mut request, _) = fixture("apigw-v2-tools-list.json");
    *request.uri_mut() = "/tools/mcp".parse().unwrap();
    assert_eq!(mcp_stateless::edge::lambda::handle_event(&endpoint, request).await.status(), 200);
    let (mut request, _) = fixture("apigw-v2-tools-list.json");
    *request.method_mut() = http::Method::GET;
    *request.uri_mut() = "/tools/.well-known/oauth-protected-resource/mcp".parse().unwrap();
    let response = mcp_stateless::edge::lambda::handle_event(&endpoint, request).await;
    assert_eq!(response.status(), 200);
    let Body::Text(text) = response.body() else { panic!("no body") };
    let document: Value = serde_json::from_str(text).unwrap();
    assert_eq!(
        (document["resource"].as_str(), document["authorization_servers"][0].as_str()),
        (Some(resource), Some("https://mcp.example.com/tools"))
    );
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

#[tokio::test]
async fn a_rest_event_takes_its_principal_from_the_cognito_claims_only() {
    // The fixture also sends `x-mcp-dev-principal: mallory`, and its path
    // carries the stage (`/api/mcp`) as lambda_http builds it.
    let (request, _) = fixture("apigw-rest-whoami.json");
    let response = mcp_stateless::edge::lambda::handle_event(&fixtures(Mode::Lambda), request).await;
    assert_eq!(response.status(), 200);
    let Body::Text(text) = response.body() else { panic!("a JSON body") };
    let message: Value = serde_json::from_str(text).unwrap();
    let issuer = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Example";
    assert_eq!(message["result"]["content"][0]["text"], verified(issuer, "user-7"));

    // Streamed, the same answer.
    let (request, _) = fixture("apigw-rest-whoami.json");
    let response = mcp_stateless::edge::lambda::handle_event_streaming(&fixtures(Mode::Lambda), request).await;
    assert_eq!(response.status(), 200);
    let body = http_body_util::BodyExt::collect(response.into_body()).await.unwrap().to_bytes();
    let streamed: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(streamed, message);

    // Claims without a subject: refused, never the anonymous caller.
    let path = format!("{}/fixtures/apigw-rest-whoami.json", env!("CARGO_MANIFEST_DIR"));
    let mut event: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    event["requestContext"]["authorizer"]["claims"].as_object_mut().unwrap().remove("sub");
    let request: lambda_http::Request = serde_json::from_value::<LambdaRequest>(event.clone()).unwrap().into();
    assert_eq!(mcp_stateless::edge::lambda::handle_event(&fixtures(Mode::Lambda), request).await.status(), 401);

    // No authorizer (AuthMode none): anonymous.
    event["requestContext"].as_object_mut().unwrap().remove("authorizer");
    let request: lambda_http::Request = serde_json::from_value::<LambdaRequest>(event).unwrap().into();
    let response = mcp_stateless::edge::lambda::handle_event(&fixtures(Mode::Lambda), request).await;
    let Body::Text(text) = response.body() else { panic!("a JSON body") };
    assert_eq!(serde_json::from_str::<Value>(text).unwrap()["result"]["content"][0]["text"], "\"Anonymous\"");
}

#[tokio::test]
async fn a_streamed_empty_answer_is_never_an_empty_body() {
    // A notification's 202 has no body; streamed through API Gateway an
    // empty body would hang until the function's timeout.
    let path = format!("{}/fixtures/apigw-rest-whoami.json", env!("CARGO_MANIFEST_DIR"));
    let mut event: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    event["body"] = json!(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}).to_string());
    for headers in ["headers", "multiValueHeaders"] {
        let headers = event[headers].as_object_mut().unwrap();
        headers.remove("Mcp-Name");
        let method = if headers.contains_key("Mcp-Method") && headers["Mcp-Method"].is_array() {
            json!(["notifications/cancelled"])
        } else {
            json!("notifications/cancelled")
        };
        headers.insert("Mcp-Method".into(), method);
    }
    let request: lambda_http::Request = serde_json::from_value::<LambdaRequest>(event).unwrap().into();
    let response = mcp_stateless::edge::lambda::handle_event_streaming(&fixtures(Mode::Lambda), request).await;
    let status = response.status();
    let body = http_body_util::BodyExt::collect(response.into_body()).await.unwrap().to_bytes();
    assert_eq!(status, 202, "{body:?}");
    assert_eq!(&body[..], b"\n");
}
