//! Which requests are 2025-era, and the route each takes, decided in one
//! place: a session's `DELETE` and `GET`, a client's answer to a request
//! the server sent it, and the era rule for every other request.
//!
//! The era rule, decided once per request
//! (basic/versioning, "Eras"): a request whose `params._meta` claims a
//! protocol version is modern, and the edge holds it to 2026-07-28's
//! rules; one without the claim is a 2025-era client's, served as the
//! version its `MCP-Protocol-Version` header names (2025-03-26 without
//! one, as the 2025-11-25 transport says). A modern header on a request
//! without the envelope stays modern, so it is refused as malformed
//! (-32602), never half-served as legacy, unless it names a session: a
//! 2025-era session's requests are served at the session's version
//! whatever newer version the header names (`tolerance.rs`,
//! [`Tolerated::SessionVersion`](crate::edge::tolerance::Tolerated)).

use bytes::Bytes;
use http::{HeaderMap, Method};
use serde_json::{Map, Value};

use super::SESSION_HEADER;
use crate::{
    edge::{error::EdgeError, stream::Delivery},
    protocol::{
        LEGACY_DEFAULT_VERSION, LEGACY_VERSIONS, SUPPORTED_VERSIONS,
        context::{META_PROTOCOL_VERSION, Principal},
        methods::{self, Eras},
    },
    sessions::mailbox::ASK_IDS,
};

/// Where a 2025-era request goes; the endpoint's one branch serves it
/// (`serve.rs`).
// One per request, built and taken apart at once: boxing the request
// would cost an allocation per legacy call to save one move.
#[allow(clippy::large_enum_variant)]
pub(in crate::edge) enum Route {
    /// `DELETE`: the client ends its session.
    EndSession(http::Request<Bytes>, Principal),
    /// `GET` with a session where answers stream: its notification stream.
    Notifications(http::Request<Bytes>, Principal),
    /// A client's answer to a request the server sent it.
    Answer(http::Request<Bytes>, Map<String, Value>, Principal),
    /// A 2025-era call.
    Call(LegacyRequest),
}

/// A 2025-era request, as admission found it.
pub(in crate::edge) struct LegacyRequest {
    pub request: http::Request<Bytes>,
    pub message: Map<String, Value>,
    pub id: Value,
    pub method: String,
    /// From `MCP-Protocol-Version`, or the 2025-03-26 default.
    pub version: &'static str,
    pub principal: Principal,
}

impl Route {
    /// A request whose body the edge does not read: `DELETE` ends a
    /// session, and `GET` naming one (where answers stream) is its
    /// notification stream; any other comes back.
    // The request comes back whole: boxing it would allocate on every
    // modern request to save a move.
    #[allow(clippy::result_large_err)]
    pub(in crate::edge) fn without_body(
        request: http::Request<Bytes>,
        principal: &Principal,
        delivery: Delivery,
    ) -> Result<Self, http::Request<Bytes>> {
        if request.method() == Method::DELETE {
            return Ok(Self::EndSession(request, principal.clone()));
        }
        if request.method() == Method::GET && delivery == Delivery::Streamed && request.headers().contains_key(SESSION_HEADER) {
            return Ok(Self::Notifications(request, principal.clone()));
        }
        Err(request)
    }

    /// A message that names no method: a client's answer to one of the
    /// server's own requests, if its id has their shape; else it comes back.
    #[allow(clippy::result_large_err)]
    pub(in crate::edge) fn answer(
        request: http::Request<Bytes>,
        message: Map<String, Value>,
        principal: &Principal,
    ) -> Result<Self, (http::Request<Bytes>, Map<String, Value>)> {
        match message.get("id").and_then(Value::as_str).is_some_and(|id| ASK_IDS.is_well_formed(id)) {
            true => Ok(Self::Answer(request, message, principal.clone())),
            false => Err((request, message)),
        }
    }

    /// A request naming `method`: a 2025-era call by the era rule, the
    /// request back if it is modern, or the refusal of a version header
    /// this server does not speak at all.
    #[allow(clippy::result_large_err, clippy::type_complexity)]
    pub(in crate::edge) fn call(
        request: http::Request<Bytes>,
        message: Map<String, Value>,
        row: Option<&methods::Method>,
        id: &Option<Value>,
        principal: &Principal,
    ) -> Result<Result<Self, (http::Request<Bytes>, Map<String, Value>)>, EdgeError> {
        let method = message.get("method").and_then(Value::as_str).unwrap_or_default();
        match of(method, row, &message, request.headers())? {
            Claimed::Modern => Ok(Err((request, message))),
            Claimed::Legacy(version) => {
                let method = method.to_owned();
                let id = id.clone().unwrap_or(Value::Null);
                Ok(Ok(Self::Call(LegacyRequest { request, message, id, method, version, principal: principal.clone() })))
            }
        }
    }
}

/// The era a request is served in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Claimed {
    Modern,
    /// With the version its header names (the session's, once opened,
    /// takes precedence: a modern version here is only ever a session's
    /// request with a newer header).
    Legacy(&'static str),
}

/// The era of a request with `method` (its `row`, when known) and
/// `message`'s params, or the refusal of a version header this server does
/// not speak at all.
fn of(method: &str, row: Option<&methods::Method>, message: &Map<String, Value>, headers: &HeaderMap) -> Result<Claimed, EdgeError> {
    let claims_version = message.get("params").and_then(|p| p.get("_meta")).and_then(|m| m.get(META_PROTOCOL_VERSION)).is_some();
    // Methods only 2026-07-28 has: whatever they carry, their own checks
    // answer them.
    if claims_version || row.is_some_and(|row| row.eras == Eras::Modern) {
        return Ok(Claimed::Modern);
    }
    if method == "initialize" {
        // The handshake negotiates in its body; the header is not yet set.
        return Ok(Claimed::Legacy(LEGACY_VERSIONS[0]));
    }
    let header = headers.get("mcp-protocol-version").map(|v| v.to_str().unwrap_or_default());
    match header {
        None => Ok(Claimed::Legacy(LEGACY_DEFAULT_VERSION)),
        Some(h) => {
            if let Some(known) = LEGACY_VERSIONS.iter().find(|known| **known == h) {
                return Ok(Claimed::Legacy(known));
            }
            match SUPPORTED_VERSIONS.iter().find(|known| **known == h) {
                // Tolerated: the session's version is served (inbound.rs).
                Some(newer) if headers.contains_key(SESSION_HEADER) => Ok(Claimed::Legacy(newer)),
                Some(_) => Ok(Claimed::Modern),
                None => Err(EdgeError::UnsupportedVersion { requested: h.to_owned(), legacy: true }),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn era(method: &str, params: Value, header: Option<&str>) -> Result<Claimed, EdgeError> {
        let message = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut headers = HeaderMap::new();
        if let Some(h) = header {
            headers.insert("mcp-protocol-version", h.parse().unwrap());
        }
        of(method, methods::method(method), message.as_object().unwrap(), &headers)
    }

    #[test]
    fn the_envelope_decides_and_the_header_names_the_legacy_version() {
        let modern = json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}});
        assert_eq!(era("tools/list", modern.clone(), Some("2026-07-28")).unwrap(), Claimed::Modern);
        assert_eq!(era("tools/list", modern.clone(), None).unwrap(), Claimed::Modern, "its own checks refuse the missing header");
        assert_eq!(era("initialize", modern, None).unwrap(), Claimed::Modern, "a modern initialize stays -32601");
        assert_eq!(era("initialize", json!({"protocolVersion": "2025-06-18"}), None).unwrap(), Claimed::Legacy("2025-11-25"));
        assert_eq!(era("tools/list", json!({}), None).unwrap(), Claimed::Legacy("2025-03-26"));
        assert_eq!(era("tools/list", json!({}), Some("2025-06-18")).unwrap(), Claimed::Legacy("2025-06-18"));
        assert_eq!(era("tools/list", json!({}), Some("2026-07-28")).unwrap(), Claimed::Modern, "no envelope: -32602");
        let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
        let mut in_session = HeaderMap::new();
        in_session.insert("mcp-protocol-version", "2026-07-28".parse().unwrap());
        in_session.insert(SESSION_HEADER, "v1.x".parse().unwrap());
        assert_eq!(
            of("tools/list", methods::method("tools/list"), message.as_object().unwrap(), &in_session).unwrap(),
            Claimed::Legacy("2026-07-28"),
            "the session's"
        );
        assert_eq!(era("server/discover", json!({}), None).unwrap(), Claimed::Modern);
        assert!(matches!(era("tools/list", json!({}), Some("2024-11-05")), Err(EdgeError::UnsupportedVersion { .. })));
    }
}
