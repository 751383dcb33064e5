//! Shared by the end-to-end tests: start a function's local server on an
//! ephemeral port and talk to it over real HTTP/1.1, the way a client would.

pub mod document_host;
pub mod emulator;
pub mod fault_proxy;
pub mod fixture_server;
pub mod issuer;
pub mod legacy;
pub mod openid_provider;
pub mod streams;
pub mod tasks;

use std::{net::SocketAddr, sync::Arc};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use mcp_stateless::{Dependencies, EdgePolicy, McpEndpoint, Mode, edge::sse};
use serde_json::{Value, json};

pub use streams::{EventStream, stream_call};

pub const VERSION: &str = "2026-07-28";

pub fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "e2e", "version": "0"},
    })
}

/// A JSON-RPC request with `_meta` declaring `capabilities`.
pub fn request(id: i64, method: &str, mut params: Value, capabilities: Value) -> Value {
    params["_meta"] = meta(capabilities);
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

pub fn everything_endpoint() -> McpEndpoint<everything::EverythingServer> {
    let deps = Dependencies::in_process();
    McpEndpoint::new(everything::EverythingServer::new(deps.clone()), EdgePolicy::new(Mode::Local)).with_dependencies(&deps)
}

/// The machinery's fixture tools (see [`fixture_server`]) behind `mode`'s edge.
pub fn fixture_endpoint(deps: Dependencies, mode: Mode) -> McpEndpoint<fixture_server::FixtureServer> {
    McpEndpoint::new(fixture_server::FixtureServer::new(deps.clone()), EdgePolicy::new(mode)).with_dependencies(&deps)
}

pub async fn spawn<S: rmcp::ServerHandler + Clone>(endpoint: McpEndpoint<S>) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mcp_stateless::edge::local::serve_local(Arc::new(endpoint), listener));
    addr
}

/// The headers a conforming client sends for `body` (streamable-http,
/// "Standard Headers"), which tests then override or remove.
pub fn standard_headers(body: &Value) -> Vec<(String, String)> {
    let mut headers = vec![
        ("content-type".to_owned(), "application/json".to_owned()),
        ("accept".to_owned(), "application/json, text/event-stream".to_owned()),
        ("mcp-protocol-version".to_owned(), VERSION.to_owned()),
    ];
    if let Some(method) = body["method"].as_str() {
        headers.push(("mcp-method".to_owned(), method.to_owned()));
        let params = &body["params"];
        if let Some(name) = params["name"].as_str().or(params["uri"].as_str()).or(params["taskId"].as_str()) {
            headers.push(("mcp-name".to_owned(), name.to_owned()));
        }
    }
    headers
}

pub struct Reply {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }

    /// The final JSON-RPC message, from a JSON body or the last SSE event.
    pub fn message(&self) -> Value {
        if self.headers[http::header::CONTENT_TYPE].to_str().unwrap().starts_with("text/event-stream") {
            self.messages().into_iter().rfind(|m| m.get("id").is_some()).expect("an SSE event with the response")
        } else {
            self.json()
        }
    }

    /// The JSON-RPC messages of an event stream's events, in order.
    pub fn messages(&self) -> Vec<Value> {
        sse::events(std::str::from_utf8(&self.body).unwrap()).filter_map(sse::message).collect()
    }
}

/// Sends one raw HTTP/1.1 request to `/mcp`.
pub async fn send(addr: SocketAddr, method: &str, headers: &[(String, String)], body: Vec<u8>) -> Reply {
    send_to(addr, method, "/mcp", headers, body).await
}

/// Sends one raw HTTP/1.1 request to `path`.
pub async fn send_to(addr: SocketAddr, method: &str, path: &str, headers: &[(String, String)], body: Vec<u8>) -> Reply {
    send_from(None, addr, method, path, headers, body).await
}

/// [`send_to`] from the loopback address `source` (any of 127.0.0.0/8),
/// where a test needs callers the server tells apart by address.
pub async fn send_from(
    source: Option<std::net::IpAddr>,
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    body: Vec<u8>,
) -> Reply {
    let stream = match source {
        None => tokio::net::TcpStream::connect(addr).await.unwrap(),
        Some(source) => {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.bind(SocketAddr::new(source, 0)).unwrap();
            socket.connect(addr).await.unwrap()
        }
    };
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
    tokio::spawn(connection);
    let mut builder = http::Request::builder().method(method).uri(path);
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        builder = builder.header("host", addr.to_string());
    }
    for (name, value) in headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    let response = sender.send_request(builder.body(Full::new(Bytes::from(body))).unwrap()).await.unwrap();
    let (parts, body) = response.into_parts();
    Reply { status: parts.status.as_u16(), headers: parts.headers, body: body.collect().await.unwrap().to_bytes() }
}

/// POSTs `body` with the standard headers, after applying `change` to them.
pub async fn post_with(addr: SocketAddr, body: &Value, change: impl FnOnce(&mut Vec<(String, String)>)) -> Reply {
    let mut headers = standard_headers(body);
    change(&mut headers);
    send(addr, "POST", &headers, serde_json::to_vec(body).unwrap()).await
}

pub async fn post(addr: SocketAddr, body: &Value) -> Reply {
    post_with(addr, body, |_| {}).await
}

pub fn set_header(headers: &mut Vec<(String, String)>, name: &str, value: &str) {
    headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
    headers.push((name.to_owned(), value.to_owned()));
}

pub fn remove_header(headers: &mut Vec<(String, String)>, name: &str) {
    headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
}

/// Calls tool `name` with `arguments` as `principal` (local development
/// header), with `extra` params (requestState, inputResponses) merged in.
pub async fn call_tool(addr: SocketAddr, principal: &str, name: &str, arguments: Value, capabilities: Value, extra: Value) -> Value {
    let mut body = request(1, "tools/call", json!({"name": name, "arguments": arguments}), capabilities);
    if let Value::Object(extra) = extra {
        for (k, v) in extra {
            body["params"][k] = v;
        }
    }
    post_with(addr, &body, |h| set_header(h, "x-mcp-dev-principal", principal)).await.message()
}

/// The text of a tool result's first content block.
pub fn text_of(message: &Value) -> String {
    message["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text in {message}")).to_owned()
}

/// A request context for a verified caller, for tests that drive the ports
/// directly rather than over HTTP.
pub fn caller(subject: &str) -> mcp_stateless::CallContext {
    let principal = mcp_stateless::Principal::Verified { issuer: "https://issuer".into(), subject: subject.into() };
    mcp_stateless::testing::call_context(principal, json!({}))
}
