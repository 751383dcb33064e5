//! The edge: one HTTP request in, one buffered HTTP response out.
//!
//! Both entry points (Lambda and the local server) call [`McpEndpoint::handle`],
//! so they behave byte for byte alike. The edge enforces the transport rules
//! rmcp leaves to the server (origin, body limits, JSON-RPC framing, the
//! per-request `_meta` and version headers), builds the [`CallContext`] once,
//! hands the request to rmcp's stateless Streamable HTTP service, and applies
//! the -32021 guard to whatever the handler answered.

use std::{sync::Arc, time::Instant};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use http_body_util::{BodyExt, Full};
use rmcp::{
    ServerHandler,
    transport::{
        StreamableHttpServerConfig, StreamableHttpService,
        streamable_http_server::session::never::NeverSessionManager,
    },
};
use serde_json::{Value, json};

use crate::{
    protocol::capability_guard::missing_capabilities,
    protocol::context::{CallContext, Principal},
    edge::error::{EdgeError, code, jsonrpc_error_response},
    edge::policy::{EdgePolicy, MCP_PATH},
    edge::protected_resource::ResourceMetadata,
    protocol::SUPPORTED_VERSIONS,
    edge::request_log::RequestLog,
    metrics,
};

/// Facts an entry point established outside the JSON body, attached to the
/// HTTP request as an extension before it reaches the edge.
#[derive(Debug, Clone)]
pub struct EntryFacts {
    pub principal: Principal,
    /// The API's own domain, from the Lambda event's request context.
    pub api_domain: Option<String>,
    /// Verified credentials that name no caller: the request is refused.
    pub unidentified: bool,
}

impl Default for EntryFacts {
    fn default() -> Self {
        Self { principal: Principal::Anonymous, api_domain: None, unidentified: false }
    }
}

pub struct McpEndpoint<S: ServerHandler> {
    rmcp: StreamableHttpService<S, NeverSessionManager>,
    policy: Arc<EdgePolicy>,
    /// The handler's `Implementation`, added to every result's `_meta`.
    server_info: Value,
    resource_metadata: ResourceMetadata,
}

impl<S: ServerHandler + Clone> McpEndpoint<S> {
    pub fn new(handler: S, policy: EdgePolicy) -> Self {
        // rmcp's own Host/Origin checks are off: the edge applies the policy,
        // which in Lambda depends on the event's domain.
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_stateless_protocol_metadata_required(true)
            .with_sse_keep_alive(None)
            .with_sse_retry(None)
            .with_max_request_body_bytes(policy.max_body_bytes)
            .disable_allowed_hosts()
            .disable_allowed_origins();
        let server_info = serde_json::to_value(handler.get_info().server_info).unwrap_or_default();
        let rmcp = StreamableHttpService::new(
            move || Ok(handler.clone()),
            Arc::new(NeverSessionManager::default()),
            config,
        );
        Self { rmcp, policy: Arc::new(policy), server_info, resource_metadata: ResourceMetadata::from_env() }
    }

    /// Replaces the protected resource metadata read from the environment.
    pub fn with_resource_metadata(mut self, metadata: ResourceMetadata) -> Self {
        self.resource_metadata = metadata;
        self
    }

    pub fn policy(&self) -> &EdgePolicy {
        &self.policy
    }

    pub async fn handle(&self, request: http::Request<Bytes>) -> http::Response<Bytes> {
        let started = Instant::now();
        let mut log = RequestLog::default();
        let (mut response, counts) = metrics::scope(self.respond(request, &mut log)).await;
        log.finish(self.policy.mode, response.status(), started.elapsed(), &counts);
        // Answers carry handles, sealed state and per-caller data: nothing
        // between client and server may keep them, streamed ones included
        // (rmcp marks its event streams `no-cache`, which still lets a cache
        // store them). Only a lifetime the edge gave on purpose (the public
        // metadata's `max-age`) stays. MCP's own caching hints, ttlMs and
        // cacheScope, are in the result for the client.
        let headers = response.headers_mut();
        let public = headers.get(header::CACHE_CONTROL).is_some_and(|value| value.as_bytes().starts_with(b"max-age"));
        if !public {
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        }
        response
    }

    async fn respond(&self, request: http::Request<Bytes>, log: &mut RequestLog) -> http::Response<Bytes> {
        match self.admit(request, log) {
            Ok(Admitted::Request(request, ctx)) => self.dispatch(request, Some(&ctx), log).await,
            Ok(Admitted::Other(request)) => self.dispatch(request, None, log).await,
            Ok(Admitted::Answered(response)) => response,
            Err((error, id)) => {
                log.error_code = Some(error.code());
                error.into_response(id)
            }
        }
    }

    /// Every check that needs no handler, in the order the spec's errors
    /// take precedence.
    fn admit(
        &self,
        mut request: http::Request<Bytes>,
        log: &mut RequestLog,
    ) -> Result<Admitted, (EdgeError, Option<Value>)> {
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
            return Ok(Admitted::Other(request));
        };
        log.method = Some(method.to_owned());
        log.target = object
            .get("params")
            .and_then(|p| p.get("name").or_else(|| p.get("uri")))
            .and_then(Value::as_str)
            .map(str::to_owned);
        if id.is_none() {
            // Notifications carry no `_meta` requirement; rmcp answers 202.
            return Ok(Admitted::Other(request));
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
        request.extensions_mut().insert(ctx.clone());
        Ok(Admitted::Request(request, ctx))
    }

    fn check_host_and_origin(&self, request: &http::Request<Bytes>, api_domain: Option<&str>) -> Result<(), EdgeError> {
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .or_else(|| request.uri().authority().map(|a| a.as_str()));
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
        ctx: Option<&CallContext>,
        log: &mut RequestLog,
    ) -> http::Response<Bytes> {
        let (parts, body) = request.into_parts();
        let response = self.rmcp.handle(http::Request::from_parts(parts, Full::new(body))).await;
        let (mut parts, body) = response.into_parts();
        // The stateless stream ends with the final response, so buffering it
        // is bounded by the handler's own run; Lambda needs it buffered anyway.
        let body = match body.collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(never) => match never {},
        };
        let Some(mut messages) = Messages::parse(&parts.headers, &body) else {
            return http::Response::from_parts(parts, body);
        };
        let Some(last) = messages.final_response() else {
            return http::Response::from_parts(parts, body);
        };
        log.record_outcome(last);
        if let Some(refusal) = ctx.and_then(|ctx| capability_refusal(ctx, last)) {
            log.result_type = None;
            log.error_code = Some(code::MISSING_REQUIRED_CLIENT_CAPABILITY);
            return refusal;
        }
        // basic/index, "Per-response protocol fields": every result SHOULD
        // identify the server in its _meta; rmcp does so only for discover.
        if let Some(meta) = last.get_mut("result").and_then(Value::as_object_mut).map(|result| {
            result.entry("_meta").or_insert_with(|| json!({}))
        }) && let Some(meta) = meta.as_object_mut()
            && !meta.contains_key(SERVER_INFO_META)
        {
            meta.insert(SERVER_INFO_META.to_owned(), self.server_info.clone());
            parts.headers.remove(header::CONTENT_LENGTH);
            return http::Response::from_parts(parts, messages.render());
        }
        http::Response::from_parts(parts, body)
    }
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

    /// The response that ends the exchange: the last message with an `id`.
    fn final_response(&mut self) -> Option<&mut Value> {
        self.messages.iter_mut().rev().find(|message| message.get("id").is_some())
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

enum Admitted {
    /// A JSON-RPC request with a valid context.
    Request(http::Request<Bytes>, CallContext),
    /// A notification or a stray response: rmcp decides.
    Other(http::Request<Bytes>),
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

/// -32021 instead of an `InputRequiredResult` the client cannot fulfil.
fn capability_refusal(ctx: &CallContext, message: &Value) -> Option<http::Response<Bytes>> {
    let result = message.get("result")?;
    if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
        return None;
    }
    let requests = result.get("inputRequests")?.as_object()?;
    let required = missing_capabilities(&ctx.client_capabilities, requests)?;
    Some(jsonrpc_error_response(
        StatusCode::BAD_REQUEST,
        message.get("id").cloned(),
        json!({
            "code": code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            "message": "Missing required client capability",
            "data": {"requiredCapabilities": required},
        }),
    ))
}
