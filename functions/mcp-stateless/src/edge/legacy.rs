//! 2025-era clients on the same endpoint (basic/versioning, "A dual-era
//! server MAY serve both eras concurrently on the same endpoint").
//!
//! A legacy request is served by the same handler as a modern one: the
//! edge answers what only the legacy era has (`initialize`, `ping`,
//! `logging/setLevel`, `resources/subscribe`, the session's `DELETE`),
//! and turns every other request into the 2026-07-28 request it means,
//! with the session's capabilities, client info and log level in its
//! `_meta` and the standard headers rmcp checks. The answer is shaped back
//! for the era on its way out ([`shape`]): no 2026-only fields, and a
//! clean refusal where a tool asks for input the connection cannot carry.
//! Nothing is kept in the process: the session travels sealed in
//! `Mcp-Session-Id` (`crate::sessions`).

use std::sync::{Arc, OnceLock};

use base64::{Engine, prelude::BASE64_STANDARD};
use bytes::Bytes;
use http::{HeaderName, HeaderValue, StatusCode, header};
use rmcp::model::JsonObject;
use serde_json::{Map, Value, json};

use crate::{
    edge::{
        error::{code, jsonrpc_error_response},
        request_log::RequestLog,
        stream::Guard,
        tolerance::Tolerated,
    },
    protocol::{
        LEGACY_VERSIONS, SUPPORTED_VERSIONS,
        capability_guard::missing_capabilities,
        context::{Era, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION, Principal},
        methods::{self, Eras, ServedBy},
    },
    sessions::{
        LegacySessions, Session, SessionError, SessionState,
        mailbox::{ASK_IDS, AnswerRefusal},
    },
    subscriptions::OnOpen,
};

/// The header a legacy session travels in.
pub(super) const SESSION_HEADER: &str = "mcp-session-id";
/// The `_meta` key of the request's log level (server/utilities/logging).
const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// The levels `logging/setLevel` accepts (RFC 5424, as the schema lists them).
const LOG_LEVELS: &[&str] = &["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];
/// Result fields 2026-07-28 added, which no 2025-era schema has.
const MODERN_ONLY_RESULT_FIELDS: &[&str] = &["resultType", "ttlMs", "cacheScope"];
/// Whether `message`, which names no method, is a client's answer to one
/// of the server's own requests (its id has their shape).
pub(super) fn is_answer(message: &Map<String, Value>) -> bool {
    message.get("id").and_then(Value::as_str).is_some_and(|id| ASK_IDS.is_well_formed(id))
}

/// JSON-RPC code of an unknown or ended session, as the official SDKs
/// answer it.
const SESSION_NOT_FOUND: i32 = -32001;

/// A 2025-era request, as admission found it.
pub(super) struct LegacyRequest {
    pub request: http::Request<Bytes>,
    pub message: Map<String, Value>,
    pub id: Value,
    pub method: String,
    /// From `MCP-Protocol-Version`, or the 2025-03-26 default.
    pub version: &'static str,
    pub principal: Principal,
}

/// What the legacy side does with a request.
// One per request, built and taken apart at once: boxing the request
// would cost an allocation per legacy call to save one move.
#[allow(clippy::large_enum_variant)]
pub(super) enum Step {
    /// Answered here.
    Answered(http::Response<Bytes>),
    /// For the handler: the modern request this one means, the era its
    /// answer is shaped for, and the client's session if it named one.
    Serve(http::Request<Bytes>, Era, Option<Session>),
}

/// What `initialize` answers besides the version: computed once per cold
/// start from what the handler advertises.
pub(super) struct LegacyInfo {
    capabilities: Value,
    server_info: Value,
    instructions: Option<String>,
    /// Whether sessions get a notification stream (`GET`): where listen
    /// streams exist.
    pub notifies: bool,
}

impl LegacyInfo {
    /// From the handler's own info. Only what the legacy side delivers on
    /// this deployment is advertised: `listChanged` and resource
    /// `subscribe` where the handler advertises them, which is where listen
    /// streams exist and so a session's notification stream too; nothing of
    /// 2026-07-28's extensions or tasks.
    pub(super) fn new(info: &rmcp::model::ServerConfig) -> Self {
        let modern = serde_json::to_value(&info.capabilities).unwrap_or_default();
        let mut capabilities = Map::new();
        let mut notifies = false;
        for kind in ["tools", "prompts", "resources"] {
            let Some(advertised) = modern.get(kind) else { continue };
            let mut legacy = Map::new();
            for flag in ["listChanged", "subscribe"] {
                if advertised.get(flag) == Some(&Value::Bool(true)) {
                    legacy.insert(flag.into(), Value::Bool(true));
                    notifies = true;
                }
            }
            capabilities.insert(kind.into(), Value::Object(legacy));
        }
        if modern.get("completions").is_some() {
            capabilities.insert("completions".into(), json!({}));
        }
        // logging/setLevel is served for every session.
        capabilities.insert("logging".into(), json!({}));
        Self {
            capabilities: Value::Object(capabilities),
            server_info: serde_json::to_value(&info.server_info).unwrap_or_default(),
            instructions: info.instructions.clone(),
            notifies,
        }
    }
}

/// The legacy side of one endpoint.
pub(super) struct Legacy<'a> {
    pub sessions: &'a LegacySessions,
    pub info: &'a LegacyInfo,
    /// The input schema of a tool, for the `Mcp-Param-*` headers its
    /// annotated arguments need.
    pub tool_schema: &'a (dyn Fn(&str) -> Option<Arc<JsonObject>> + Send + Sync),
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
            Some(token) => match self.sessions.open(&principal, token).await {
                Ok(opened) => Some(opened),
                Err(error) => return Step::Answered(session_error(error, Some(id))),
            },
        };
        if let Some((session, _)) = &opened
            && SUPPORTED_VERSIONS.contains(&version)
        {
            // Its header named a newer version than the session's, which
            // is what it is served at (era.rs).
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
                return Step::Serve(modern_request(request, &message, headers), Era::Legacy { version }, session);
            }
            _ => {
                let error = json!({"code": code::METHOD_NOT_FOUND, "message": format!("Method not found: {method}")});
                return Step::Answered(jsonrpc_error_response(StatusCode::OK, Some(id), error));
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

/// `DELETE` with a session: ends it, on every instance. 404 if it was not
/// a live session of this caller (already ended included).
pub(super) async fn end_session(sessions: &LegacySessions, request: &http::Request<Bytes>, principal: &Principal) -> http::Response<Bytes> {
    let Some(token) = session_token(request.headers()) else {
        let error =
            json!({"code": code::INVALID_REQUEST, "message": "Bad Request: DELETE needs the Mcp-Session-Id header of the session to end"});
        return jsonrpc_error_response(StatusCode::BAD_REQUEST, None, error);
    };
    let ended = match sessions.open(principal, token).await {
        Ok((session, _)) => sessions.end(principal, &session).await,
        Err(error) => Err(error),
    };
    match ended {
        Ok(()) => http::Response::new(Bytes::new()),
        Err(error) => session_error(error, None),
    }
}

/// Marks the modern request a session's `GET` became: its stream carries
/// notifications only, so the listen acknowledgement and the final result
/// are left out; and it goes on only while it is the session's one.
#[derive(Clone)]
pub(super) struct NotificationStream(pub Guard);

/// A session's notification stream, and its id once it made itself the
/// session's one.
struct HeldStream {
    sessions: LegacySessions,
    principal: Principal,
    session: Session,
    id: OnceLock<String>,
}

impl HeldStream {
    /// Makes this stream the session's one (`subscriptions::OnOpen`).
    async fn claim(&self) -> Result<(), String> {
        let id = self.sessions.hold_stream(&self.principal, &self.session).await.map_err(|error| error.to_string())?;
        let _ = self.id.set(id);
        Ok(())
    }

    /// Whether it may go on: it is still the session's one, or it has not
    /// claimed yet (and so sends nothing).
    async fn holds(&self) -> bool {
        match self.id.get() {
            Some(id) => self.sessions.holds_stream(&self.principal, &self.session, id).await,
            None => true,
        }
    }
}

/// `GET` with a session: the session's notification stream, served as the
/// listen stream it means (every list the server has, and the resources
/// the session subscribed to when it opened), bounded and counted per
/// caller as listen streams are.
pub(super) async fn notification_stream(
    sessions: &LegacySessions,
    request: http::Request<Bytes>,
    principal: &Principal,
) -> Result<(http::Request<Bytes>, Era), http::Response<Bytes>> {
    let token = session_token(request.headers()).unwrap_or_default();
    let opened = sessions.open(principal, token).await.map_err(|error| session_error(error, None))?;
    // One stream per session, across instances: once admitted (within the
    // caller's bound), this one replaces any other, which ends at its next
    // check; until then it has replaced nothing and delivers nothing.
    let held =
        Arc::new(HeldStream { sessions: sessions.clone(), principal: principal.clone(), session: opened.0.clone(), id: OnceLock::new() });
    let on_open = {
        let held = held.clone();
        OnOpen(Arc::new(move || {
            let held = held.clone();
            Box::pin(async move { held.claim().await })
        }))
    };
    let guard: Guard = Arc::new(move || {
        let held = held.clone();
        Box::pin(async move { held.holds().await })
    });
    let mut notifications = json!({"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true});
    if !opened.1.subscriptions.is_empty() {
        notifications["resourceSubscriptions"] = json!(opened.1.subscriptions);
    }
    let mut message = Map::new();
    message.insert("jsonrpc".into(), json!("2.0"));
    message.insert("id".into(), json!("notifications"));
    message.insert("method".into(), json!("subscriptions/listen"));
    message.insert("params".into(), with_modern_meta(json!({"notifications": notifications}), Some(&opened)));
    let (mut parts, _) = request.into_parts();
    parts.method = http::Method::POST;
    parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    parts.headers.insert(header::ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
    parts.extensions.insert(NotificationStream(guard));
    parts.extensions.insert(on_open);
    let headers = standard_headers("subscriptions/listen", &Value::Null, &|_: &str| None);
    let era = Era::Legacy { version: opened.0.protocol_version.clone() };
    Ok((modern_request(http::Request::from_parts(parts, Bytes::new()), &message, headers), era))
}

/// A client's answer to a request the server sent mid-call: taken into
/// the session's mailbox, for the invocation holding the call (202), or
/// refused (400; 404 for a session that does not open).
pub(super) async fn take_answer(
    sessions: &LegacySessions,
    request: &http::Request<Bytes>,
    message: &Map<String, Value>,
    principal: &Principal,
) -> http::Response<Bytes> {
    let id = message.get("id").and_then(Value::as_str).unwrap_or_default();
    let Some(token) = session_token(request.headers()) else {
        return answer_refused(AnswerRefusal::NotWaiting);
    };
    let session = match sessions.open(principal, token).await {
        Ok((session, _)) => session,
        Err(error) => return session_error(error, None),
    };
    match sessions.answer(principal, &session, id, message).await {
        Ok(()) => {
            let mut accepted = http::Response::new(Bytes::new());
            *accepted.status_mut() = StatusCode::ACCEPTED;
            accepted
        }
        Err(refusal) => answer_refused(refusal),
    }
}

fn answer_refused(refusal: AnswerRefusal) -> http::Response<Bytes> {
    match refusal {
        AnswerRefusal::Session(error) => session_error(error, None),
        other => jsonrpc_error_response(
            StatusCode::BAD_REQUEST,
            None,
            json!({"code": code::INVALID_PARAMS, "message": format!("Invalid params: {other}")}),
        ),
    }
}

/// Shapes a message the handler sent a legacy client: a result loses the
/// fields 2026-07-28 added, and one that asks for input (the MRTR
/// `input_required`) becomes a refusal naming what was asked, since this
/// connection has no way to ask the client mid-call: a tool result with
/// `isError` for `tools/call` (the model can read it), a JSON-RPC error
/// otherwise.
pub(super) fn shape(message: &mut Value, method: Option<&str>, client_capabilities: &Map<String, Value>) {
    if let Some(meta) = message.get_mut("params").and_then(|p| p.get_mut("_meta")).and_then(Value::as_object_mut) {
        // A notification names the listen stream it belongs to, which a
        // 2025-era client never opened.
        meta.remove("io.modelcontextprotocol/subscriptionId");
    }
    if let Some(required) = message
        .get("error")
        .filter(|error| error.get("code").and_then(Value::as_i64) == Some(code::MISSING_REQUIRED_CLIENT_CAPABILITY.into()))
        .map(|error| error.get("data").and_then(|d| d.get("requiredCapabilities")).cloned().unwrap_or_default())
    {
        // -32021 is 2026-07-28's; a 2025-era client gets the refusal its
        // era has, naming what to declare.
        let reason = format!(
            "This needs a capability the client did not declare ({required}). Use a client that declares it, or one that \
             speaks MCP {}.",
            SUPPORTED_VERSIONS[0]
        );
        *message = refusal(message.get("id").cloned().unwrap_or(Value::Null), method, reason);
        return;
    }
    let Some(result) = message.get_mut("result").and_then(Value::as_object_mut) else {
        return;
    };
    if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
        let asked = result.get("inputRequests").and_then(Value::as_object);
        let missing = asked.and_then(|requests| missing_capabilities(client_capabilities, requests));
        let what = asked.map(asked_methods).unwrap_or_default();
        let reason = match missing {
            Some(missing) => format!(
                "This needs the client to answer {what} mid-call, and the client did not declare the capability ({missing}). \
                 Use a client that declares it, or one that speaks MCP {}.",
                SUPPORTED_VERSIONS[0]
            ),
            None => format!(
                "This needs the client to answer {what} mid-call, which this server cannot send on a 2025-era connection \
                 here. Use a client that speaks MCP {}.",
                SUPPORTED_VERSIONS[0]
            ),
        };
        *message = refusal(message.get("id").cloned().unwrap_or(Value::Null), method, reason);
        return;
    }
    for field in MODERN_ONLY_RESULT_FIELDS {
        result.remove(*field);
    }
}

/// A refusal a 2025-era client can read: a tool result with `isError`
/// for `tools/call` (the model reads it), a JSON-RPC error otherwise.
pub(super) fn refusal(id: Value, method: Option<&str>, reason: String) -> Value {
    if method == Some("tools/call") {
        json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": reason}], "isError": true}})
    } else {
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": code::INVALID_REQUEST, "message": reason}})
    }
}

/// `elicitation/create, sampling/createMessage`: the methods an
/// `inputRequests` map asks the client to answer.
fn asked_methods(requests: &Map<String, Value>) -> String {
    let mut methods: Vec<&str> = requests.values().filter_map(|request| request.get("method").and_then(Value::as_str)).collect();
    methods.sort_unstable();
    methods.dedup();
    methods.join(", ")
}

fn session_token(headers: &http::HeaderMap) -> Option<&str> {
    headers.get(SESSION_HEADER).map(|value| value.to_str().unwrap_or_default())
}

/// `params` with the per-request fields 2026-07-28 carries in `_meta`,
/// taken from the session (none without one), beside what the client put
/// there itself (its `progressToken`).
fn with_modern_meta(params: Value, opened: Option<&(Session, SessionState)>) -> Value {
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
fn standard_headers(
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
fn modern_request(
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

fn result_response(id: Value, result: Value, session: Option<&str>) -> http::Response<Bytes> {
    let body = json!({"jsonrpc": "2.0", "id": id, "result": result});
    let mut response = http::Response::new(Bytes::from(body.to_string()));
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(value) = session.and_then(|token| HeaderValue::from_str(token).ok()) {
        response.headers_mut().insert(SESSION_HEADER, value);
    }
    response
}

fn invalid_params(id: Value, reason: String) -> http::Response<Bytes> {
    jsonrpc_error_response(StatusCode::OK, Some(id), json!({"code": code::INVALID_PARAMS, "message": format!("Invalid params: {reason}")}))
}

/// A session that does not open is 404, which tells a 2025-era client to
/// initialize again; a session other requests kept changing is 503 with
/// `Retry-After` (the same request, sent again, is served); the keys or the
/// table failing is the server's 500.
fn session_error(error: SessionError, id: Option<Value>) -> http::Response<Bytes> {
    let (status, code, message) = match &error {
        SessionError::NotFound => {
            (StatusCode::NOT_FOUND, SESSION_NOT_FOUND, "Session not found: it ended or expired; initialize again".to_owned())
        }
        // A JSON-RPC error, as 2025-era answers have them: HTTP 200.
        SessionError::Refused(reason) => (StatusCode::OK, code::INVALID_PARAMS, format!("Invalid params: {reason}")),
        SessionError::Unavailable(_) => {
            tracing::error!(%error, "legacy session");
            (StatusCode::INTERNAL_SERVER_ERROR, code::INTERNAL_ERROR, "session service unavailable".to_owned())
        }
        SessionError::Busy => (StatusCode::SERVICE_UNAVAILABLE, code::INTERNAL_ERROR, format!("Busy: {error}")),
    };
    let mut response = jsonrpc_error_response(status, id, json!({"code": code, "message": message}));
    if status == StatusCode::SERVICE_UNAVAILABLE {
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_legacy_result_loses_modern_fields_and_input_requests_become_refusals() {
        let mut listed =
            json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "ttlMs": 5, "cacheScope": "x", "tools": []}});
        shape(&mut listed, Some("tools/list"), &Map::new());
        assert_eq!(listed["result"], json!({"tools": []}));

        let asking = json!({"jsonrpc": "2.0", "id": 2, "result": {"resultType": "input_required",
            "inputRequests": {"a": {"method": "elicitation/create", "params": {}}}}});
        let mut tool = asking.clone();
        shape(&mut tool, Some("tools/call"), &Map::new());
        assert_eq!(tool["result"]["isError"], true);
        let text = tool["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("elicitation/create") && text.contains("did not declare"), "{text}");

        let mut prompt = asking.clone();
        let declared = json!({"elicitation": {}}).as_object().cloned().unwrap();
        shape(&mut prompt, Some("prompts/get"), &declared);
        assert_eq!(prompt["error"]["code"], code::INVALID_REQUEST);
        assert!(prompt["error"]["message"].as_str().unwrap().contains("cannot send"), "{prompt}");
        assert_eq!(prompt["id"], 2);
    }

    #[test]
    fn a_missing_capability_error_becomes_the_eras_refusal() {
        let error = json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32021, "message": "Missing required client capability",
            "data": {"requiredCapabilities": {"elicitation": {"form": {}}}}}});
        let mut tool = error.clone();
        shape(&mut tool, Some("tools/call"), &Map::new());
        assert_eq!(tool["result"]["isError"], true);
        assert!(tool["result"]["content"][0]["text"].as_str().unwrap().contains(r#"{"elicitation":{"form":{}}}"#), "{tool}");
        let mut prompt = error;
        shape(&mut prompt, Some("prompts/get"), &Map::new());
        assert_eq!((prompt["id"].as_i64(), prompt["error"]["code"].as_i64()), (Some(3), Some(-32600)));
    }

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
