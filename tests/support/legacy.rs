//! A 2025-era client, as the official SDKs' clients speak to a server:
//! `initialize`, then every request with `Mcp-Session-Id` and the
//! negotiated `MCP-Protocol-Version`, no `_meta` envelope and no
//! `Mcp-Method`.

use std::net::SocketAddr;

use serde_json::{Value, json};

use crate::{EventStream, Reply, send};

/// One client's session on a server (any instance of it).
#[derive(Clone)]
pub struct LegacyClient {
    pub principal: String,
    pub session: Option<String>,
    pub version: String,
}

impl LegacyClient {
    /// Initializes against `addr` as `principal`, declaring `capabilities`;
    /// panics unless the server answers with a session.
    pub async fn initialize(addr: SocketAddr, principal: &str, capabilities: Value) -> Self {
        let reply = initialize(addr, principal, "2025-11-25", capabilities).await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        let session = reply.headers.get("mcp-session-id").map(|v| v.to_str().unwrap().to_owned());
        assert!(session.is_some(), "a session id");
        Self { principal: principal.into(), session, version: reply.json()["result"]["protocolVersion"].as_str().unwrap().into() }
    }

    /// The headers of every later request.
    pub fn headers(&self) -> Vec<(String, String)> {
        let mut headers = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("accept".to_owned(), "application/json, text/event-stream".to_owned()),
            ("mcp-protocol-version".to_owned(), self.version.clone()),
            ("x-mcp-dev-principal".to_owned(), self.principal.clone()),
        ];
        if let Some(session) = &self.session {
            headers.push(("mcp-session-id".to_owned(), session.clone()));
        }
        headers
    }

    /// POSTs `method` with `params` (id 2) to `addr`.
    pub async fn request(&self, addr: SocketAddr, method: &str, params: Value) -> Reply {
        self.post(addr, &json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params})).await
    }

    /// POSTs any message to `addr`.
    pub async fn post(&self, addr: SocketAddr, body: &Value) -> Reply {
        send(addr, "POST", &self.headers(), serde_json::to_vec(body).unwrap()).await
    }

    /// Opens a call's event stream on `addr`.
    pub async fn stream(&self, addr: SocketAddr, method: &str, params: Value) -> EventStream {
        EventStream::open_with(addr, &json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}), self.headers()).await
    }

    /// Answers the server's request `id` on `addr`.
    pub async fn answer(&self, addr: SocketAddr, id: &Value, result: Value) -> Reply {
        self.post(addr, &json!({"jsonrpc": "2.0", "id": id, "result": result})).await
    }

    /// Opens the session's notification stream (`GET`) on `addr`.
    pub async fn notifications(&self, addr: SocketAddr) -> EventStream {
        EventStream::get_with(addr, self.headers()).await
    }

    /// Ends the session, on `addr`.
    pub async fn delete(&self, addr: SocketAddr) -> Reply {
        send(addr, "DELETE", &self.headers(), Vec::new()).await
    }
}

/// A raw `initialize` asking for `version`.
pub async fn initialize(addr: SocketAddr, principal: &str, version: &str, capabilities: Value) -> Reply {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": capabilities, "clientInfo": {"name": "e2e-legacy", "version": "1"}}});
    let headers = vec![
        ("content-type".to_owned(), "application/json".to_owned()),
        ("accept".to_owned(), "application/json, text/event-stream".to_owned()),
        ("x-mcp-dev-principal".to_owned(), principal.to_owned()),
    ];
    send(addr, "POST", &headers, serde_json::to_vec(&body).unwrap()).await
}
