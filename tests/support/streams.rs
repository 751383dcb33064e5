//! Event streams read as a client reads them: each JSON-RPC message with
//! the moment it arrived, so tests can tell frames sent as they happened
//! from frames sent together at the end.

use std::{net::SocketAddr, time::Duration};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use mcp_stateless::edge::sse;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::{request, standard_headers};

/// How long a test waits for a frame that must come before it fails; a
/// guard against hanging, never a claim about speed.
pub const PATIENCE: Duration = Duration::from_secs(60);

pub struct EventStream {
    pub status: u16,
    pub content_type: String,
    body: Incoming,
    buffer: Vec<u8>,
}

impl EventStream {
    /// POSTs `body` as `principal` (the local development header) and
    /// returns once the response headers are in.
    pub async fn open(addr: SocketAddr, body: &Value, principal: Option<&str>) -> Self {
        let mut headers = standard_headers(body);
        if let Some(principal) = principal {
            headers.push(("x-mcp-dev-principal".into(), principal.into()));
        }
        Self::open_with(addr, body, headers).await
    }

    /// POSTs `body` with exactly `headers` (a 2025-era client's, say).
    pub async fn open_with(addr: SocketAddr, body: &Value, headers: Vec<(String, String)>) -> Self {
        Self::send(addr, "POST", serde_json::to_vec(body).unwrap(), headers).await
    }

    /// `GET` with exactly `headers`: a 2025-era session's notification stream.
    pub async fn get_with(addr: SocketAddr, headers: Vec<(String, String)>) -> Self {
        Self::send(addr, "GET", Vec::new(), headers).await
    }

    async fn send(addr: SocketAddr, method: &str, body: Vec<u8>, headers: Vec<(String, String)>) -> Self {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
        tokio::spawn(connection);
        let mut builder = http::Request::builder().method(method).uri("/mcp").header("host", addr.to_string());
        for (name, value) in headers {
            builder = builder.header(name, value);
        }
        let request = builder.body(Full::new(Bytes::from(body))).unwrap();
        let response = sender.send_request(request).await.unwrap();
        let status = response.status().as_u16();
        let content_type = response.headers().get(http::header::CONTENT_TYPE).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
        Self { status, content_type, body: response.into_body(), buffer: Vec::new() }
    }

    /// The next JSON-RPC message and when it arrived; None once the
    /// stream ended. Keep-alive comments are skipped.
    pub async fn next(&mut self) -> Option<(Instant, Value)> {
        loop {
            if let Some(event) = sse::take_event(&mut self.buffer) {
                let Some(data) = sse::data(&event) else { continue };
                return Some((Instant::now(), serde_json::from_str(&data).unwrap()));
            }
            let frame = tokio::time::timeout(PATIENCE, self.body.frame()).await.expect("a frame within PATIENCE")?;
            if let Ok(data) = frame.unwrap().into_data() {
                self.buffer.extend_from_slice(&data);
            }
        }
    }

    /// The next message, or None if none comes within `wait`.
    pub async fn next_within(&mut self, wait: Duration) -> Option<Value> {
        tokio::time::timeout(wait, self.next()).await.ok().flatten().map(|(_, message)| message)
    }

    /// Messages until one with `method`, which is returned; panics if the
    /// stream ends first.
    pub async fn until_method(&mut self, method: &str) -> Value {
        loop {
            let (_, message) = self.next().await.unwrap_or_else(|| panic!("stream ended before {method}"));
            if message["method"] == method {
                return message;
            }
        }
    }

    /// Every remaining message.
    pub async fn rest(&mut self) -> Vec<(Instant, Value)> {
        let mut messages = Vec::new();
        while let Some(message) = self.next().await {
            messages.push(message);
        }
        messages
    }
}

/// Calls tool `name` with `meta` merged into `_meta`, and reads its
/// response stream to the end.
pub async fn stream_call(addr: SocketAddr, name: &str, arguments: Value, meta: Value) -> Vec<(Instant, Value)> {
    let mut body = request(1, "tools/call", json!({"name": name, "arguments": arguments}), json!({}));
    if let Value::Object(meta) = meta {
        for (key, value) in meta {
            body["params"]["_meta"][key] = value;
        }
    }
    let mut stream = EventStream::open(addr, &body, None).await;
    assert_eq!(stream.status, 200);
    assert!(stream.content_type.starts_with("text/event-stream"), "{}", stream.content_type);
    stream.rest().await
}

/// A `subscriptions/listen` request with `notifications` as its filter.
pub fn listen(id: i64, notifications: Value, capabilities: Value) -> Value {
    request(id, "subscriptions/listen", json!({"notifications": notifications}), capabilities)
}
