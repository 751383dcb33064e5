//! The edge: one HTTP request in, one HTTP response out, whole
//! ([`McpEndpoint::handle`]) or streamed as the handler writes it
//! ([`McpEndpoint::handle_streaming`]).
//!
//! Both entry points (Lambda and the local server) go through the same
//! checks and rewrites. Whole and streamed answers differ in one way: a
//! -32021 refusal that is the whole answer carries HTTP 400, while one that
//! ends a stream (after progress already sent with HTTP 200) is its last
//! message. The edge enforces the transport rules
//! rmcp leaves to the server (origin, body limits, JSON-RPC framing, the
//! per-request `_meta` and version headers), builds the [`CallContext`] once,
//! hands the request to rmcp's stateless Streamable HTTP service, and applies
//! the -32021 guard to whatever the handler answered.

use std::{convert::Infallible, sync::Arc, time::Instant};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use rmcp::{
    ServerHandler,
    transport::{StreamableHttpServerConfig, StreamableHttpService, streamable_http_server::session::never::NeverSessionManager},
};
use serde_json::{Value, json};

use crate::{
    deployment::Transport,
    edge::bearer::BearerVerifier,
    edge::error::{EdgeError, code},
    edge::policy::{EdgePolicy, MCP_PATH},
    edge::protected_resource::ResourceMetadata,
    edge::request_log::RequestLog,
    edge::stamp,
    edge::stream::{self, EdgeBody, Rewrite},
    metrics,
    protocol::SUPPORTED_VERSIONS,
    protocol::capability_guard::missing_capabilities,
    protocol::context::{CallContext, EntryFacts},
    subscriptions::{MAX_LISTEN_TASK_IDS, TaskIdsFilter},
};

pub struct McpEndpoint<S: ServerHandler> {
    rmcp: StreamableHttpService<S, NeverSessionManager>,
    policy: Arc<EdgePolicy>,
    /// The handler's `Implementation`, added to every result's `_meta`.
    server_info: Arc<Value>,
    /// The same, as JSON text, for answers stamped without being parsed.
    server_info_text: Arc<str>,
    resource_metadata: ResourceMetadata,
    /// Tokens verified here (`AuthMode=jwt` behind a REST API).
    bearer: Option<Arc<BearerVerifier>>,
}

impl<S: ServerHandler + Clone> McpEndpoint<S> {
    pub fn new(handler: S, policy: EdgePolicy) -> Self {
        // rmcp's own Host/Origin checks are off: the edge applies the policy,
        // which in Lambda depends on the event's domain.
        // Keep-alive comments hold an idle stream open through proxies
        // (API Gateway drops a REST stream idle for 5 minutes).
        let keep_alive = (policy.transport == Transport::Streaming).then_some(KEEP_ALIVE);
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_stateless_protocol_metadata_required(true)
            .with_sse_keep_alive(keep_alive)
            .with_sse_retry(None)
            .with_max_request_body_bytes(policy.max_body_bytes)
            .disable_allowed_hosts()
            .disable_allowed_origins();
        let server_info = Arc::new(serde_json::to_value(handler.get_info().server_info).unwrap_or_default());
        let rmcp = StreamableHttpService::new(move || Ok(handler.clone()), Arc::new(NeverSessionManager::default()), config);
        let server_info_text = Arc::from(server_info.to_string());
        Self {
            rmcp,
            policy: Arc::new(policy),
            server_info,
            server_info_text,
            resource_metadata: ResourceMetadata::from_env(),
            bearer: None,
        }
    }

    /// Replaces the protected resource metadata read from the environment.
    pub fn with_resource_metadata(mut self, metadata: ResourceMetadata) -> Self {
        self.resource_metadata = metadata;
        self
    }

    /// Verifies every MCP request's bearer token with `verifier`; the
    /// principal is the token's (`iss`, `sub`).
    pub fn with_bearer(mut self, verifier: BearerVerifier) -> Self {
        self.bearer = Some(Arc::new(verifier));
        self
    }

    pub fn policy(&self) -> &EdgePolicy {
        &self.policy
    }

    /// The whole answer, for the buffered transport (and tests): event
    /// streams are collected first.
    pub async fn handle(&self, request: http::Request<Bytes>) -> http::Response<Bytes> {
        let started = Instant::now();
        let mut log = RequestLog::default();
        let (reply, counts) = metrics::scope(self.respond(request, &mut log, false)).await;
        let Reply::Whole(mut response) = reply else { unreachable!("a buffered answer is whole") };
        log.finish(self.policy.mode, response.status(), started.elapsed(), &counts);
        no_store(response.headers_mut());
        response
    }

    /// The answer as the handler writes it: progress and log messages
    /// leave as they are sent, and `subscriptions/listen` streams stay
    /// open. Answers without an event stream are sent whole.
    pub async fn handle_streaming(&self, request: http::Request<Bytes>) -> http::Response<EdgeBody> {
        let started = Instant::now();
        let mut log = RequestLog::default();
        let (reply, counts) = metrics::scope(self.respond(request, &mut log, true)).await;
        match reply {
            Reply::Whole(mut response) => {
                log.finish(self.policy.mode, response.status(), started.elapsed(), &counts);
                no_store(response.headers_mut());
                response.map(stream::whole)
            }
            Reply::Stream { mut parts, body, mut finish, deadline } => {
                no_store(&mut parts.headers);
                parts.headers.remove(header::CONTENT_LENGTH);
                finish.log = Some(Finished { log, mode: self.policy.mode, status: parts.status, started, counts });
                let id = finish.request_id.clone();
                let deadline = deadline.map(|at| (at.checked_sub(STREAM_MARGIN).unwrap_or(at), id));
                http::Response::from_parts(parts, stream::rewritten(body, finish, deadline))
            }
        }
    }

    async fn respond(&self, mut request: http::Request<Bytes>, log: &mut RequestLog, stream: bool) -> Reply {
        if let Some(verifier) = &self.bearer
            && request.uri().path() == MCP_PATH
        {
            // Boxed: the check's future (key fetches over https included)
            // is large, and every request's future would carry it inline.
            match Box::pin(verifier.verify(request.headers())).await {
                Ok(principal) => {
                    let facts = request.extensions_mut().get_or_insert_default::<EntryFacts>();
                    facts.principal = principal;
                    facts.unidentified = false;
                }
                Err(refusal) => {
                    let host = request
                        .extensions()
                        .get::<EntryFacts>()
                        .and_then(|f| f.api_domain.clone())
                        .or_else(|| request.headers().get(header::HOST).and_then(|h| h.to_str().ok()).map(str::to_owned))
                        .unwrap_or_default();
                    return Reply::Whole(refusal.into_response(&self.resource_metadata.url(&host), &verifier.policy().scopes));
                }
            }
        }
        match self.admit(request, log, stream) {
            Ok(Admitted::Request(request, ctx, id)) => self.dispatch(request, Some(ctx), id, log, stream).await,
            Ok(Admitted::Other(request, id)) => self.dispatch(request, None, id, log, stream).await,
            Ok(Admitted::Answered(response)) => Reply::Whole(response),
            Err((error, id)) => {
                log.error_code = Some(error.code());
                Reply::Whole(error.into_response(id))
            }
        }
    }

    /// Every check that needs no handler, in the order the spec's errors
    /// take precedence.
    fn admit(&self, mut request: http::Request<Bytes>, log: &mut RequestLog, stream: bool) -> Result<Admitted, (EdgeError, Option<Value>)> {
        let facts = request.extensions().get::<EntryFacts>().cloned().unwrap_or_default();
        log.trace_id = request.headers().get("traceparent").and_then(|v| v.to_str().ok()).and_then(trace_id);
        if request.uri().path() != MCP_PATH {
            if request.method() == Method::GET && ResourceMetadata::is_published_at(request.uri().path()) {
                // In Lambda the event's own domain, not a header, names the API.
                let host = facts.api_domain.as_deref().or_else(|| request.headers().get(header::HOST).and_then(|h| h.to_str().ok()));
                if let Some(document) = self.resource_metadata.response(host.unwrap_or_default()) {
                    return Ok(Admitted::Answered(document));
                }
            }
            return Err((EdgeError::WrongPath, None));
        }
        self.check_host_and_origin(&request, facts.api_domain.as_deref()).map_err(|e| (e, None))?;
        if facts.unidentified {
            return Err((EdgeError::Unidentified, None));
        }
        if request.method() != Method::POST {
            return Err((EdgeError::MethodNotAllowed, None));
        }
        if !is_json(request.headers()) {
            return Err((EdgeError::UnsupportedMediaType, None));
        }
        if request.body().len() > self.policy.max_body_bytes {
            return Err((EdgeError::BodyTooLarge { limit: self.policy.max_body_bytes }, None));
        }
        let message: Value = serde_json::from_slice(request.body()).map_err(|_| (EdgeError::Parse, None))?;
        let object = match &message {
            Value::Object(object) => object,
            Value::Array(_) => return Err((EdgeError::Batch, None)),
            _ => return Err((EdgeError::NotAnObject, None)),
        };
        let id = object.get("id").cloned();
        let Some(method) = object.get("method").and_then(Value::as_str) else {
            // A JSON-RPC response or error: rmcp refuses it on a stateless server.
            return Ok(Admitted::Other(request, id));
        };
        log.method = Some(method.to_owned());
        log.target = object.get("params").and_then(|p| p.get("name").or_else(|| p.get("uri"))).and_then(Value::as_str).map(str::to_owned);
        if id.is_none() {
            // Notifications carry no `_meta` requirement; rmcp answers 202.
            return Ok(Admitted::Other(request, None));
        }
        if method == "initialize" {
            // Before the `_meta` check a legacy client's handshake would fail
            // with a message that says nothing about versions.
            let requested = object.get("params").and_then(|p| p.get("protocolVersion")).and_then(Value::as_str).map(str::to_owned);
            return Err((EdgeError::Initialize { requested }, id));
        }

        let ctx = CallContext::from_meta(
            object.get("params").and_then(|p| p.get("_meta")),
            request.headers().get("traceparent").and_then(|v| v.to_str().ok()).map(str::to_owned),
            facts.principal,
        )
        .map_err(|e| (EdgeError::from(e), id.clone()))?;
        if let Some(trace) = ctx.traceparent.as_deref().and_then(trace_id) {
            log.trace_id = Some(trace);
        }
        check_version_header(request.headers(), &ctx).map_err(|e| (e, id.clone()))?;
        if let Some(reason) = crate::protocol::params_misfit(method, object.get("params")) {
            return Err((EdgeError::Params(reason), id));
        }
        if method == "subscriptions/listen" {
            // A whole answer cannot hold a stream open, whatever the
            // handler advertises.
            if !stream {
                return Err((EdgeError::ListenNeedsStreaming, id));
            }
            let task_ids = listen_task_ids(object.get("params"), &ctx).map_err(|e| (e, id.clone()))?;
            request.extensions_mut().insert(task_ids);
        }
        request.extensions_mut().insert(ctx.clone());
        Ok(Admitted::Request(request, ctx, id))
    }

    fn check_host_and_origin(&self, request: &http::Request<Bytes>, api_domain: Option<&str>) -> Result<(), EdgeError> {
        let host =
            request.headers().get(header::HOST).and_then(|v| v.to_str().ok()).or_else(|| request.uri().authority().map(|a| a.as_str()));
        if !host.is_some_and(|host| self.policy.host_allowed(host, api_domain)) {
            return Err(EdgeError::HostNotAllowed);
        }
        // A missing Origin is a non-browser client; a present one must match.
        match request.headers().get(header::ORIGIN).map(|v| v.to_str()) {
            None => Ok(()),
            Some(Ok(origin)) if self.policy.origin_allowed(origin, api_domain) => Ok(()),
            Some(_) => Err(EdgeError::OriginNotAllowed),
        }
    }

    async fn dispatch(
        &self,
        request: http::Request<Bytes>,
        ctx: Option<CallContext>,
        request_id: Option<Value>,
        log: &mut RequestLog,
        stream: bool,
    ) -> Reply {
        let (parts, body) = request.into_parts();
        let deadline = parts.extensions.get::<EntryFacts>().and_then(|facts| facts.deadline);
        let task_ids = parts.extensions.get::<TaskIdsFilter>().cloned().unwrap_or_default();
        let request_id = request_id.unwrap_or(Value::Null);
        // A handler that has sent nothing by the deadline is stopped (the
        // response future is dropped, which cancels it) and the client gets
        // an error rather than the gateway's 502 or 504.
        let handled = self.rmcp.handle(http::Request::from_parts(parts, Full::new(body)));
        let response = match deadline.and_then(|at| at.checked_sub(STREAM_MARGIN)) {
            Some(cut) => match tokio::time::timeout_at(cut.into(), handled).await {
                Ok(response) => response,
                Err(_) => {
                    tracing::warn!("call stopped at the invocation's deadline");
                    let message = stream::out_of_time(request_id.clone());
                    log.record_outcome(&message);
                    let mut response = http::Response::new(Bytes::from(message.to_string()));
                    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
                    return Reply::Whole(response);
                }
            },
            None => handled.await,
        };
        let (mut parts, body) = response.into_parts();
        let mut finish = FinalRewrite { ctx, server_info: self.server_info.clone(), task_ids, request_id, log: None, outcome: None };
        if stream && is_event_stream(&parts.headers) {
            return Reply::Stream { parts, body, finish, deadline };
        }
        // The stateless stream ends with the final response, so buffering it
        // is bounded by the handler's own run.
        let body = match body.collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(never) => match never {},
        };
        parts.headers.remove(header::CONTENT_LENGTH);
        if is_json(&parts.headers)
            && let Some((body, outcome)) = stamp::stamped(&body, SERVER_INFO_META, &self.server_info_text)
        {
            log.adopt(outcome);
            return Reply::Whole(http::Response::from_parts(parts, body));
        }
        let Some(mut messages) = Messages::parse(&parts.headers, &body) else {
            return Reply::Whole(http::Response::from_parts(parts, body));
        };
        for message in &mut messages.messages {
            finish.message(message);
        }
        let (outcome, refused) = finish.outcome.take().unwrap_or_default();
        log.adopt(outcome);
        if refused {
            // Whole, a refusal is the answer alone, with HTTP 400 as the
            // edge's own errors have.
            messages.sse = false;
            messages.messages.retain(|message| message.get("id").is_some());
            parts.status = StatusCode::BAD_REQUEST;
            parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        Reply::Whole(http::Response::from_parts(parts, messages.render()))
    }
}

/// Answers carry handles, sealed state and per-caller data: nothing
/// between client and server may keep them, streamed ones included (rmcp
/// marks its event streams `no-cache`, which still lets a cache store
/// them). Only a lifetime the edge gave on purpose (the public metadata's
/// `max-age`) stays. MCP's own caching hints, ttlMs and cacheScope, are in
/// the result for the client.
fn no_store(headers: &mut HeaderMap) {
    let public = headers.get(header::CACHE_CONTROL).is_some_and(|value| value.as_bytes().starts_with(b"max-age"));
    if !public {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
}

fn is_event_stream(headers: &HeaderMap) -> bool {
    headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("text/event-stream"))
}

/// How often an idle stream sends a keep-alive comment.
const KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(15);
/// A streamed call is cut this long before the invocation's deadline, so
/// its final error still reaches the client.
const STREAM_MARGIN: std::time::Duration = std::time::Duration::from_secs(1);

/// What the edge does to the messages the handler sends, whole or streamed.
struct FinalRewrite {
    ctx: Option<CallContext>,
    server_info: Arc<Value>,
    task_ids: TaskIdsFilter,
    request_id: Value,
    /// Set for a stream: the log line it writes when it ends.
    log: Option<Finished>,
    /// What the final response said, and whether it became a refusal.
    outcome: Option<(RequestLog, bool)>,
}

struct Finished {
    log: RequestLog,
    mode: crate::deployment::Mode,
    status: StatusCode,
    started: Instant,
    counts: Arc<metrics::Counts>,
}

impl Rewrite for FinalRewrite {
    fn message(&mut self, message: &mut Value) {
        if message.get("method").and_then(Value::as_str) == Some("notifications/subscriptions/acknowledged") {
            // ext-tasks: the acknowledgement names the task ids agreed to.
            if !self.task_ids.0.is_empty()
                && let Some(filter) = message.pointer_mut("/params/notifications").and_then(Value::as_object_mut)
            {
                filter.insert("taskIds".into(), json!(self.task_ids.0));
            }
            return;
        }
        if message.get("id").is_none() || (message.get("result").is_none() && message.get("error").is_none()) {
            return;
        }
        let mut outcome = RequestLog::default();
        outcome.record_outcome(message);
        if let Some(error) = self.ctx.as_ref().and_then(|ctx| capability_refusal(ctx, message)) {
            outcome.result_type = None;
            outcome.error_code = Some(code::MISSING_REQUIRED_CLIENT_CAPABILITY);
            *message = json!({"jsonrpc": "2.0", "id": message.get("id").cloned(), "error": error});
            self.outcome = Some((outcome, true));
            return;
        }
        // basic/index, "Per-response protocol fields": every result SHOULD
        // identify the server in its _meta; rmcp does so only for discover.
        if let Some(meta) =
            message.get_mut("result").and_then(Value::as_object_mut).map(|result| result.entry("_meta").or_insert_with(|| json!({})))
            && let Some(meta) = meta.as_object_mut()
            && !meta.contains_key(SERVER_INFO_META)
        {
            meta.insert(SERVER_INFO_META.to_owned(), Value::clone(&self.server_info));
        }
        self.outcome = Some((outcome, false));
    }

    fn ended(&mut self) {
        if let Some(mut finished) = self.log.take() {
            if let Some((outcome, _)) = self.outcome.take() {
                finished.log.adopt(outcome);
            }
            finished.log.finish(finished.mode, finished.status, finished.started.elapsed(), &finished.counts);
        }
    }
}

/// The `notifications.taskIds` of a listen request: strings, a bounded
/// number, and only from a client that declared the tasks extension
/// (ext-tasks, "Task Status Notifications": -32021 otherwise).
fn listen_task_ids(params: Option<&Value>, ctx: &CallContext) -> Result<TaskIdsFilter, EdgeError> {
    let Some(ids) = params.and_then(|p| p.pointer("/notifications/taskIds")) else {
        return Ok(TaskIdsFilter::default());
    };
    let ids: Vec<String> = ids
        .as_array()
        .and_then(|ids| ids.iter().map(|id| id.as_str().map(str::to_owned)).collect())
        .ok_or_else(|| EdgeError::Params("notifications.taskIds must be an array of strings".into()))?;
    if ids.len() > MAX_LISTEN_TASK_IDS {
        return Err(EdgeError::Params(format!("notifications.taskIds may name at most {MAX_LISTEN_TASK_IDS} tasks")));
    }
    if !ids.is_empty() && !ctx.declares("extensions", Some(rmcp::model::TASKS_EXTENSION_ID)) {
        return Err(EdgeError::MissingCapability(json!({"extensions": {rmcp::model::TASKS_EXTENSION_ID: {}}})));
    }
    Ok(TaskIdsFilter(ids))
}

const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";

/// The JSON-RPC messages of a response body: one JSON object, or the data
/// of each SSE event (rmcp writes one `data:` line per event).
struct Messages {
    sse: bool,
    messages: Vec<Value>,
}

impl Messages {
    fn parse(headers: &HeaderMap, body: &Bytes) -> Option<Self> {
        let content_type = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
        if content_type.starts_with("application/json") {
            return Some(Self { sse: false, messages: vec![serde_json::from_slice(body).ok()?] });
        }
        if !content_type.starts_with("text/event-stream") {
            return None;
        }
        let messages = std::str::from_utf8(body)
            .ok()?
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(|data| serde_json::from_str(data.trim_start()))
            .collect::<Result<_, _>>()
            .ok()?;
        Some(Self { sse: true, messages })
    }

    fn render(&self) -> Bytes {
        if !self.sse {
            return Bytes::from(self.messages.first().map(Value::to_string).unwrap_or_default());
        }
        let mut out = String::new();
        for message in &self.messages {
            out.push_str("data: ");
            out.push_str(&message.to_string());
            out.push_str("\n\n");
        }
        Bytes::from(out)
    }
}

/// What the edge answers: whole, or rmcp's event stream still being written.
// One per request, built and taken apart once: boxing the stream's parts
// would add an allocation to every streamed answer to save a few hundred
// bytes of one move.
#[allow(clippy::large_enum_variant)]
enum Reply {
    Whole(http::Response<Bytes>),
    Stream { parts: http::response::Parts, body: BoxBody<Bytes, Infallible>, finish: FinalRewrite, deadline: Option<Instant> },
}

enum Admitted {
    /// A JSON-RPC request with a valid context, and its id.
    Request(http::Request<Bytes>, CallContext, Option<Value>),
    /// A notification or a stray response: rmcp decides.
    Other(http::Request<Bytes>, Option<Value>),
    /// Not MCP: answered at the edge (protected resource metadata).
    Answered(http::Response<Bytes>),
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or_default().trim())
        .is_some_and(|essence| essence.eq_ignore_ascii_case("application/json"))
}

/// basic/transports/streamable-http, "Protocol Version Header": the header is
/// required and must agree with `_meta`; only then is support checked, so a
/// mismatch is -32020 and an agreed but unknown version is -32022.
fn check_version_header(headers: &HeaderMap, ctx: &CallContext) -> Result<(), EdgeError> {
    let header = headers.get("mcp-protocol-version").map(|v| v.to_str().unwrap_or_default());
    match header {
        None => Err(EdgeError::HeaderMismatch("MCP-Protocol-Version header is required")),
        Some(h) if h != ctx.protocol_version => {
            Err(EdgeError::HeaderMismatch("MCP-Protocol-Version header does not match _meta protocolVersion"))
        }
        Some(_) if !SUPPORTED_VERSIONS.contains(&ctx.protocol_version.as_str()) => {
            Err(EdgeError::UnsupportedVersion { requested: ctx.protocol_version.clone() })
        }
        Some(_) => Ok(()),
    }
}

/// The trace id of a W3C `traceparent` (`00-<trace-id>-<span-id>-<flags>`).
fn trace_id(traceparent: &str) -> Option<String> {
    let trace = traceparent.split('-').nth(1)?;
    (trace.len() == 32 && trace.bytes().all(|b| b.is_ascii_hexdigit())).then(|| trace.to_owned())
}

/// The -32021 error sent instead of an `InputRequiredResult` the client
/// cannot fulfil.
fn capability_refusal(ctx: &CallContext, message: &Value) -> Option<Value> {
    let result = message.get("result")?;
    if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
        return None;
    }
    let requests = result.get("inputRequests")?.as_object()?;
    let required = missing_capabilities(&ctx.client_capabilities, requests)?;
    Some(json!({
        "code": code::MISSING_REQUIRED_CLIENT_CAPABILITY,
        "message": "Missing required client capability",
        "data": {"requiredCapabilities": required},
    }))
}
