//! A 2025-era call, answered here (`initialize`, `ping`,
//! `logging/setLevel`, `resources/subscribe`) or turned into the
//! 2026-07-28 request it means: the session's capabilities, client info
//! and log level in its `_meta`, and the standard headers rmcp checks.

use std::sync::Arc;

use base64::{Engine, prelude::BASE64_STANDARD};
use bytes::Bytes;
use http::{HeaderName, HeaderValue};
use rmcp::model::JsonObject;
use serde_json::{Map, Value, json};

use super::{
    LegacyInfo, ToolSchemas,
    classify::LegacyRequest,
    refusals::{invalid_params, result_response, session_error},
    session_routes::{open_session, session_token},
};
use crate::{
    edge::{
        error::{Refusal, code},
        request_log::RequestLog,
        tolerance::Tolerated,
    },
    protocol::{
        LEGACY_VERSIONS, SUPPORTED_VERSIONS,
        context::{Era, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION, Principal},
        methods::{self, Eras, ServedBy},
    },
    sessions::{LegacySessions, Session, SessionState},
};

/// The `_meta` key of the request's log level (server/utilities/logging).
const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// The levels `logging/setLevel` accepts (RFC 5424, as the schema lists them).
const LOG_LEVELS: &[&str] = &["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

/// What the legacy side does with a request.
// One per request, built and taken apart at once: boxing the request
// would cost an allocation per legacy call to save one move.
#[allow(clippy::large_enum_variant)]
pub(super) enum Step {
    /// Answered here.
    Answered(http::Response<Bytes>),
    /// For the handler: the modern request this one means and its message,
    /// the era its answer is shaped for, and the client's session if it
    /// named one.
    Serve(http::Request<Bytes>, Map<String, Value>, Era, Option<Session>),
}

/// The legacy side of one endpoint.
pub(super) struct Legacy<'a> {
    pub sessions: &'a LegacySessions,
    pub info: &'a LegacyInfo,
    /// The input schema of a tool, for the `Mcp-Param-*` headers its
    /// annotated arguments need.
    pub tool_schema: &'a ToolSchemas,
}

impl Legacy<'_> {
    /// Answers `call`, or turns it into the modern request the handler
    /// serves.
    pub(super) async fn step(&self, call: LegacyRequest, log: &mut RequestLog) -> Step {
        let LegacyRequest { request, mut message, id, method, version, principal } = call;
        if method == "initialize" {
            return Step::Answered(self.initialize(&principal, &message, id).await);
        }
        let opened = match session_token(request.headers()) {
            None => None,
            Some(token) => match open_session(self.sessions, &request, &principal, token).await {
                Ok(opened) => Some(opened),
                Err(error) => return Step::Answered(session_error(error, Some(id))),
            },
        };
        if let Some((session, _)) = &opened
            && SUPPORTED_VERSIONS.contains(&version)
        {
            // Its header named a newer version than the session's, which
            // is what it is served at (classify.rs).
            let client = session.client_info.as_ref().and_then(|info| info.get("name")).and_then(Value::as_str);
            log.forgiven.add(Tolerated::SessionVersion, client);
        }
        let version = opened.as_ref().map_or(version.to_owned(), |(session, _)| session.protocol_version.clone());
        let params = message.get("params").cloned().unwrap_or_else(|| json!({}));
        let changed = match method.as_str() {
            "ping" => Ok(()),
            "logging/setLevel" => {
                let Some(level) = params.get("level").and_then(Value::as_str).filter(|level| LOG_LEVELS.contains(level)) else {
                    return Step::Answered(invalid_params(id, format!("level must be one of {}", LOG_LEVELS.join(", "))));
                };
                // Without a session there is nowhere to keep it: the
                // client's later requests are logged at no level.
                match &opened {
                    Some((session, _)) => self.sessions.set_log_level(&principal, session, level).await,
                    None => Ok(()),
                }
            }
            "resources/subscribe" | "resources/unsubscribe" => {
                let Some(uri) = params.get("uri").and_then(Value::as_str) else {
                    return Step::Answered(invalid_params(id, "uri is required".into()));
                };
                match &opened {
                    Some((session, _)) => self.sessions.subscribe(&principal, session, uri, method == "resources/subscribe").await,
                    None => Ok(()),
                }
            }
            // What the handler serves for both eras.
            served if methods::method(served).is_some_and(|row| row.served_by == ServedBy::Handler && row.eras == Eras::Both) => {
                let headers = standard_headers(&method, &params, self.tool_schema);
                message.insert("params".into(), with_modern_meta(params, opened.as_ref()));
                let session = opened.map(|(session, _)| session);
                return Step::Serve(modern_request(request, &message, headers), message, Era::Legacy { version }, session);
            }
            _ => {
                let refusal = Refusal::new(code::METHOD_NOT_FOUND, format!("Method not found: {method}"));
                return Step::Answered(refusal.of_legacy_call().into_response(Some(id)));
            }
        };
        match changed {
            Ok(()) => Step::Answered(result_response(id, json!({}), None)),
            Err(error) => Step::Answered(session_error(error, Some(id))),
        }
    }

    /// The handshake: the version asked for if it is a legacy one this
    /// server speaks, else the newest legacy one (never 2026-07-28, which
    /// has no handshake), and a new sealed session.
    async fn initialize(&self, principal: &Principal, message: &Map<String, Value>, id: Value) -> http::Response<Bytes> {
        let params = message.get("params");
        let requested = params.and_then(|p| p.get("protocolVersion")).and_then(Value::as_str);
        let version = requested.and_then(|asked| LEGACY_VERSIONS.iter().find(|known| **known == asked)).unwrap_or(&LEGACY_VERSIONS[0]);
        let capabilities = params.and_then(|p| p.get("capabilities")).and_then(Value::as_object).cloned().unwrap_or_default();
        let client_info = params.and_then(|p| p.get("clientInfo"));
        let token = match self.sessions.mint(principal, version, &capabilities, client_info).await {
            Ok(token) => token,
            Err(error) => return session_error(error, Some(id)),
        };
        let mut result = json!({
            "protocolVersion": version,
            "capabilities": self.info.capabilities,
            "serverInfo": self.info.server_info,
        });
        if let Some(instructions) = &self.info.instructions {
            result["instructions"] = Value::String(instructions.clone());
        }
        result_response(id, result, Some(&token))
    }
}

/// `params` with the per-request fields 2026-07-28 carries in `_meta`,
/// taken from the session (none without one), beside what the client put
/// there itself (its `progressToken`).
pub(super) fn with_modern_meta(params: Value, opened: Option<&(Session, SessionState)>) -> Value {
    let mut params = match params {
        Value::Object(params) => params,
        _ => Map::new(),
    };
    let meta = params.entry("_meta").or_insert_with(|| json!({}));
    if !meta.is_object() {
        *meta = json!({});
    }
    let meta = meta.as_object_mut().expect("made an object");
    meta.insert(META_PROTOCOL_VERSION.into(), Value::String(SUPPORTED_VERSIONS[0].to_owned()));
    let (capabilities, info, level) = match opened {
        Some((session, state)) => {
            (Value::Object(session.client_capabilities.clone()), session.client_info.clone(), state.log_level.clone())
        }
        None => (json!({}), None, None),
    };
    meta.insert(META_CLIENT_CAPABILITIES.into(), capabilities);
    if let Some(info) = info {
        meta.insert(META_CLIENT_INFO.into(), info);
    }
    match level {
        Some(level) => meta.insert(META_LOG_LEVEL.into(), Value::String(level)),
        None => meta.remove(META_LOG_LEVEL),
    };
    Value::Object(params)
}

/// The standard request headers 2026-07-28 requires (basic/transports,
/// "Standard Request Headers"), which rmcp checks against the body:
/// `Mcp-Method`, `Mcp-Name`, and an `Mcp-Param-*` for each argument the
/// tool's schema annotates with `x-mcp-header`. Values are always sent
/// in the Base64 form, which holds any string.
pub(super) fn standard_headers(
    method: &str,
    params: &Value,
    tool_schema: &(dyn Fn(&str) -> Option<Arc<JsonObject>> + Send + Sync),
) -> Vec<(HeaderName, HeaderValue)> {
    let encoded = header_value;
    let mut headers = vec![(HeaderName::from_static("mcp-method"), HeaderValue::from_str(method).unwrap_or(HeaderValue::from_static("")))];
    let name_key = methods::method(method).and_then(|row| row.name_key);
    let name = name_key.and_then(|key| params.get(key)).and_then(Value::as_str);
    if let Some(value) = name.and_then(encoded) {
        headers.push((HeaderName::from_static("mcp-name"), value));
    }
    if method == "tools/call"
        && let Some(schema) = name.and_then(tool_schema)
    {
        let mut annotated = Vec::new();
        annotated_arguments(schema.get("properties"), params.get("arguments"), &mut annotated);
        for (header, value) in annotated {
            if let (Ok(name), Some(value)) = (HeaderName::from_bytes(format!("mcp-param-{header}").as_bytes()), encoded(&value)) {
                headers.push((name, value));
            }
        }
    }
    headers
}

/// `value` as a standard header's value, in the Base64 form that holds
/// any string (`=?base64?…?=`).
pub(super) fn header_value(value: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(&format!("=?base64?{}?=", BASE64_STANDARD.encode(value))).ok()
}

/// The `(x-mcp-header, argument)` pairs of primitive arguments whose
/// property the schema annotates, along `properties` chains.
fn annotated_arguments(properties: Option<&Value>, arguments: Option<&Value>, out: &mut Vec<(String, String)>) {
    let (Some(Value::Object(properties)), Some(arguments)) = (properties, arguments) else {
        return;
    };
    for (name, schema) in properties {
        let argument = arguments.get(name);
        if let (Some(Value::String(header)), Some(value)) = (schema.get("x-mcp-header"), argument) {
            let value = match value {
                Value::String(s) => Some(s.clone()),
                Value::Bool(_) | Value::Number(_) => Some(value.to_string()),
                _ => None,
            };
            if let Some(value) = value {
                out.push((header.clone(), value));
            }
        }
        annotated_arguments(schema.get("properties"), argument, out);
    }
}

/// `request` with `message` as its body and the modern headers. A standard
/// header the client sent itself is kept, so the modern checks hold it to
/// the body as they hold a modern request's (-32020 on a mismatch): an
/// intermediary may have routed on it.
pub(super) fn modern_request(
    request: http::Request<Bytes>,
    message: &Map<String, Value>,
    headers: Vec<(HeaderName, HeaderValue)>,
) -> http::Request<Bytes> {
    let (mut parts, _) = request.into_parts();
    parts.headers.insert("mcp-protocol-version", HeaderValue::from_static(SUPPORTED_VERSIONS[0]));
    for (name, value) in headers {
        if !parts.headers.contains_key(&name) {
            parts.headers.insert(name, value);
        }
    }
    http::Request::from_parts(parts, Bytes::from(serde_json::to_vec(message).unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_modern_meta_comes_from_the_session_and_keeps_the_progress_token() {
        let params = with_modern_meta(json!({"name": "t", "_meta": {"progressToken": 7, META_LOG_LEVEL: "debug"}}), None);
        assert_eq!(params["_meta"]["progressToken"], 7);
        assert_eq!(params["_meta"][META_PROTOCOL_VERSION], SUPPORTED_VERSIONS[0]);
        assert_eq!(params["_meta"][META_CLIENT_CAPABILITIES], json!({}));
        assert!(params["_meta"].get(META_LOG_LEVEL).is_none(), "a level only comes from logging/setLevel");
    }

    #[test]
    fn annotated_arguments_get_their_headers() {
        let schema: Arc<JsonObject> = Arc::new(
            json!({"properties": {"region": {"type": "string", "x-mcp-header": "Region"}, "n": {"type": "integer"}}})
                .as_object()
                .cloned()
                .unwrap(),
        );
        let lookup = move |name: &str| (name == "t").then(|| schema.clone());
        let headers = standard_headers("tools/call", &json!({"name": "t", "arguments": {"region": "eu", "n": 1}}), &lookup);
        let find = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.to_str().unwrap().to_owned());
        assert_eq!(find("mcp-method").as_deref(), Some("tools/call"));
        assert_eq!(find("mcp-name").as_deref(), Some("=?base64?dA==?="));
        assert_eq!(find("mcp-param-region").as_deref(), Some("=?base64?ZXU=?="));
        assert_eq!(headers.len(), 3);
    }
}
