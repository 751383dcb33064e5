//! The edge: one HTTP request in, one HTTP response out, whole
//! ([`McpEndpoint::handle`]) or streamed as the handler writes it
//! ([`McpEndpoint::handle_streaming`]).
//!
//! Both entry points (Lambda and the local server) take the same path: the
//! bearer check where tokens are verified here (`bearer/`), admission
//! (`admission.rs`: the transport rules rmcp leaves to the server, and the
//! [`CallContext`] built once), rmcp's stateless Streamable HTTP service,
//! then the response rewrite (`rewrite.rs`) on every message, read and
//! written by one SSE codec (`sse.rs`). Whole and streamed answers differ
//! in how bytes leave (`stream.rs`: a whole one keeps only its messages),
//! and in one rule: a -32021 refusal
//! that is the whole answer carries HTTP 400, while one that ends a stream
//! (after progress already sent with HTTP 200) is its last message.

use std::{convert::Infallible, sync::Arc, time::Instant};

use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use rmcp::{
    ServerHandler,
    transport::{StreamableHttpServerConfig, StreamableHttpService, streamable_http_server::session::never::NeverSessionManager},
};
use serde_json::Value;

use crate::{
    deadline::Deadline,
    deployment::Transport,
    edge::{
        admission::{Admission, Admitted, is_json},
        bearer::BearerVerifier,
        error::{EdgeError, code},
        legacy::{self, LegacySide},
        policy::{EdgePolicy, is_mcp_path},
        protected_resource::ResourceMetadata,
        request_log::RequestLog,
        rewrite::{FinalRewrite, Finished, Messages, SERVER_INFO_META, no_store},
        stamp,
        stream::{self, Delivery, EdgeBody, Rewrite, STREAM_MARGIN, is_event_stream},
        tolerance,
    },
    metrics,
    protocol::{
        context::{CallContext, EntryFacts, Era},
        scope::RequestScope,
    },
    server::dependencies::Dependencies,
    subscriptions::TaskIdsFilter,
};

/// The edge around one server: every request an entry point receives goes
/// through [`handle`](Self::handle) or
/// [`handle_streaming`](Self::handle_streaming). Built once per cold start;
/// the handler is cloned for each request.
pub struct McpEndpoint<S: ServerHandler> {
    rmcp: StreamableHttpService<S, NeverSessionManager>,
    policy: Arc<EdgePolicy>,
    /// The handler's `Implementation`, added to every result's `_meta`.
    pub(super) server_info: Arc<Value>,
    /// The same, as JSON text, for answers stamped without being parsed.
    server_info_text: Arc<str>,
    resource_metadata: ResourceMetadata,
    /// Tokens verified here (`AuthMode=jwt` behind a REST API).
    bearer: Option<Arc<BearerVerifier>>,
    /// Whether the handler serves listen streams (it advertises list
    /// changes; not where `Listen=off`).
    listens: bool,
    /// The 2025 era (`legacy/`), served once the endpoint is given its
    /// sessions (`with_dependencies`).
    pub(super) legacy: LegacySide,
}

impl<S: ServerHandler + Clone> McpEndpoint<S> {
    /// Serves `handler` as `policy` says, publishing no protected-resource
    /// metadata and checking no bearer token until the `with_` methods add
    /// them.
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
        let info = handler.get_info();
        let server_info = Arc::new(serde_json::to_value(&info.server_info).unwrap_or_default());
        let capabilities = serde_json::to_value(&info.capabilities).unwrap_or_default();
        let listens = !crate::protocol::announced_changes(&capabilities).is_empty();
        let factory = handler.clone();
        let rmcp = StreamableHttpService::new(move || Ok(factory.clone()), Arc::new(NeverSessionManager::default()), config);
        let legacy = LegacySide::new(&handler, &info, &capabilities, &rmcp, listens);
        let server_info_text = Arc::from(server_info.to_string());
        Self {
            rmcp,
            policy: Arc::new(policy),
            server_info,
            server_info_text,
            resource_metadata: ResourceMetadata::default(),
            bearer: None,
            listens,
            legacy,
        }
    }

    /// Gives the edge its share of `deps`, the ones the handler was built
    /// from: 2025-era clients' sessions (the deployment's keys and table).
    /// Until then, and always without the `legacy` feature, the endpoint
    /// serves 2026-07-28 only.
    pub fn with_dependencies(mut self, deps: &Dependencies) -> Self {
        self.legacy = self.legacy.with_dependencies(deps);
        self
    }

    /// Publishes `metadata` (none by default: auth off).
    pub fn with_resource_metadata(mut self, metadata: ResourceMetadata) -> Self {
        self.resource_metadata = metadata;
        self
    }

    /// What clients see before the function's own paths (`MCP_BASE_PATH`).
    pub(crate) fn base_path(&self) -> &str {
        &self.resource_metadata.base_path
    }

    /// Verifies every MCP request's bearer token with `verifier`; the
    /// principal is the token's (`iss`, `sub`).
    pub fn with_bearer(mut self, verifier: BearerVerifier) -> Self {
        self.bearer = Some(Arc::new(verifier));
        self
    }

    pub(crate) fn policy(&self) -> &EdgePolicy {
        &self.policy
    }

    /// The whole answer, for the buffered transport (and tests): event
    /// streams are collected first.
    pub async fn handle(&self, request: http::Request<Bytes>) -> http::Response<Bytes> {
        let started = Instant::now();
        let mut log = RequestLog::default();
        let (reply, counts) = metrics::scope(self.respond(request, &mut log, Delivery::Whole)).await;
        let Reply::Whole(mut response) = reply else { unreachable!("a buffered answer is whole: only streams converse") };
        log.finish(self.policy.log_format, response.status(), started.elapsed(), &counts);
        no_store(response.headers_mut());
        response
    }

    /// The answer as the handler writes it: progress and log messages
    /// leave as they are sent, and `subscriptions/listen` streams stay
    /// open. Answers without an event stream are sent whole.
    pub async fn handle_streaming(&self, request: http::Request<Bytes>) -> http::Response<EdgeBody> {
        let started = Instant::now();
        let mut log = RequestLog::default();
        let (reply, counts) = metrics::scope(self.respond(request, &mut log, Delivery::Streamed)).await;
        match reply {
            Reply::Whole(mut response) => {
                log.finish(self.policy.log_format, response.status(), started.elapsed(), &counts);
                no_store(response.headers_mut());
                response.map(stream::whole)
            }
            Reply::Converse(conversation) => legacy::conversation_response(conversation, log, self.policy.log_format, started, counts),
            Reply::Stream { mut parts, body, mut finish, deadline, guard } => {
                no_store(&mut parts.headers);
                parts.headers.remove(header::CONTENT_LENGTH);
                finish.log = Some(Finished { log, format: self.policy.log_format, status: parts.status, started, counts });
                let id = finish.request_id.clone();
                let deadline = deadline.map(|at| (at.cut(STREAM_MARGIN), id));
                http::Response::from_parts(parts, stream::rewritten(body, finish, deadline, guard))
            }
        }
    }

    async fn respond(&self, mut request: http::Request<Bytes>, log: &mut RequestLog, delivery: Delivery) -> Reply {
        // A client that sent no Accept is answered whole, in JSON
        // (tolerance.rs): it may not read an event stream.
        let reply = if tolerance::accept_when_unsaid(&mut request) {
            match self.route(request, log, Delivery::Whole).await {
                Reply::Whole(response) => Reply::Whole(tolerance::answered_as_json(response)),
                other => other,
            }
        } else {
            self.route(request, log, delivery).await
        };
        // What the edge forgave counts once the request was served: not
        // refused at the edge or by rmcp (a 4xx, or for a 2025-era client a
        // header or version refusal with HTTP 200), whatever its result says.
        let status = match &reply {
            Reply::Whole(response) => response.status(),
            Reply::Stream { parts, .. } => parts.status,
            Reply::Converse(_) => StatusCode::OK,
        };
        let refused_headers = matches!(log.error_code, Some(code::HEADER_MISMATCH | code::UNSUPPORTED_PROTOCOL_VERSION));
        log.forgiven.count_if(status.is_success() && !refused_headers);
        reply
    }

    async fn route(&self, mut request: http::Request<Bytes>, log: &mut RequestLog, delivery: Delivery) -> Reply {
        // From here on, what the entry point established travels in the
        // request's one scope, beside what admission adds.
        let entry = request.extensions_mut().remove::<EntryFacts>().unwrap_or_default();
        request.extensions_mut().insert(RequestScope::new(entry));
        if let Some(verifier) = &self.bearer
            && is_mcp_path(request.uri().path())
        {
            // Boxed: the check's future (key fetches over https included)
            // is large, and every request's future would carry it inline.
            match Box::pin(verifier.verify(request.headers())).await {
                Ok(principal) => {
                    let scope = request.extensions_mut().get_or_insert_default::<RequestScope>();
                    scope.entry.principal = principal;
                    scope.entry.unidentified = false;
                }
                Err(refusal) => {
                    let host = request
                        .extensions()
                        .get::<RequestScope>()
                        .and_then(|scope| scope.entry.api_domain.clone())
                        .or_else(|| request.headers().get(header::HOST).and_then(|h| h.to_str().ok()).map(str::to_owned))
                        .unwrap_or_default();
                    // The scopes a client should ask for (basic/authorization,
                    // "Scope Selection Strategy"): those a token must hold,
                    // else those the metadata lists.
                    let required = &verifier.policy().scopes;
                    let scopes = if required.is_empty() { &self.resource_metadata.scopes_supported } else { required };
                    return Reply::Whole(refusal.into_response(&self.resource_metadata.url(&host, request.uri().path()), scopes));
                }
            }
        }
        let admission =
            Admission { policy: &self.policy, metadata: &self.resource_metadata, listens: self.listens, legacy: self.legacy.serves() };
        match admission.admit(request, log, delivery) {
            Ok(Admitted::Request(request, ctx, id)) => self.dispatch(request, Some(ctx), id, log, delivery, None).await,
            Ok(Admitted::Other(request, id)) => self.dispatch(request, None, id, log, delivery, None).await,
            Ok(Admitted::Answered(response)) => Reply::Whole(response),
            Ok(Admitted::Legacy(route)) => self.serve_legacy(route, &admission, log, delivery).await,
            Err((error, id)) => Reply::Whole(refused(log, error, id)),
        }
    }

    pub(super) async fn dispatch(
        &self,
        request: http::Request<Bytes>,
        ctx: Option<CallContext>,
        request_id: Option<Value>,
        log: &mut RequestLog,
        delivery: Delivery,
        guard: Option<stream::Guard>,
    ) -> Reply {
        let (parts, body) = request.into_parts();
        let scope = RequestScope::of(&parts);
        let deadline = scope.and_then(|scope| scope.entry.deadline);
        let task_ids = TaskIdsFilter(scope.map(|scope| scope.listen.task_ids.clone()).unwrap_or_default());
        let shape = self.legacy.shaper();
        let notifications_only = guard.is_some();
        let request_id = request_id.unwrap_or(Value::Null);
        // A handler that has sent nothing by the deadline is stopped (the
        // response future is dropped, which cancels it) and the client gets
        // an error rather than the gateway's 502 or 504.
        let handled = self.rmcp.handle(http::Request::from_parts(parts, Full::new(body)));
        let response = match deadline.map(|at| at.cut(STREAM_MARGIN)) {
            Some(cut) => match tokio::time::timeout_at(cut, handled).await {
                Ok(response) => response,
                Err(_) => return Reply::Whole(out_of_time(request_id.clone(), log)),
            },
            None => handled.await,
        };
        let (parts, body) = response.into_parts();
        let method = log.method.clone();
        let finish = FinalRewrite {
            ctx,
            shape,
            method,
            server_info: self.server_info.clone(),
            task_ids,
            request_id,
            notifications_only,
            log: None,
            outcome: None,
        };
        if delivery == Delivery::Streamed && is_event_stream(&parts.headers) {
            return Reply::Stream { parts, body, finish, deadline, guard };
        }
        // The stateless stream ends with the final response, so buffering it
        // is bounded by the handler's own run.
        let body = match body.collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(never) => match never {},
        };
        self.whole(parts, body, finish, log)
    }

    /// A whole answer, each message rewritten (or stamped, when it needs
    /// nothing else).
    pub(super) fn whole(&self, mut parts: http::response::Parts, body: Bytes, mut finish: FinalRewrite, log: &mut RequestLog) -> Reply {
        let legacy = finish.ctx.as_ref().is_some_and(|ctx| ctx.era != Era::Modern);
        parts.headers.remove(header::CONTENT_LENGTH);
        if is_json(&parts.headers)
            && !legacy
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
        if legacy {
            // The 2025-era transport answers a JSON-RPC error with HTTP 200;
            // 2026-07-28's 400s (-32021 among them) were shaped away.
            parts.status = StatusCode::OK;
        }
        Reply::Whole(http::Response::from_parts(parts, messages.render()))
    }
}

/// The answer of a call stopped at the invocation's deadline.
pub(super) fn out_of_time(id: Value, log: &mut RequestLog) -> http::Response<Bytes> {
    tracing::warn!("call stopped at the invocation's deadline");
    log.record_outcome(&stream::out_of_time(id.clone()));
    stream::out_of_time_response(id)
}

pub(super) fn refused(log: &mut RequestLog, error: EdgeError, id: Option<Value>) -> http::Response<Bytes> {
    log.error_code = Some(error.code());
    error.into_response(id)
}

/// How often an idle stream sends a keep-alive comment.
pub(super) const KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(15);

/// What the edge answers: whole, or rmcp's event stream still being written.
// One per request, built and taken apart once: boxing the stream's parts
// would add an allocation to every streamed answer to save a few hundred
// bytes of one move.
#[allow(clippy::large_enum_variant)]
pub(super) enum Reply {
    Whole(http::Response<Bytes>),
    /// A legacy call that may ask its client questions (none without the
    /// `legacy` feature).
    #[cfg_attr(not(feature = "legacy"), allow(dead_code))]
    Converse(Box<legacy::Conversation>),
    Stream {
        parts: http::response::Parts,
        body: BoxBody<Bytes, Infallible>,
        finish: FinalRewrite,
        deadline: Option<Deadline>,
        /// A 2025-era session's notification stream goes on only while it
        /// is the session's one.
        guard: Option<stream::Guard>,
    },
}
