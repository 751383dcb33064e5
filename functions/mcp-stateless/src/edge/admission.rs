//! What may enter: every check the edge makes before a request reaches the
//! handler, in the order the spec's errors take precedence (path, host and
//! origin, identity, method, media type, size, JSON-RPC framing, `_meta`
//! and the version header, params), and the request context they build.

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, header};
use serde_json::{Map, Value};

use crate::{
    edge::{
        error::EdgeError,
        legacy::Route,
        policy::{EdgePolicy, is_mcp_path},
        protected_resource::ResourceMetadata,
        request_log::RequestLog,
        stream::Delivery,
        tolerance::{self, AnswerAsJson, Tolerated, VERSION_HEADER, VersionHeaders},
    },
    protocol::{
        SUPPORTED_VERSIONS,
        context::{CallContext, Principal},
        methods,
        scope::RequestScope,
    },
    subscriptions::TaskIdsFilter,
};

/// What a request may do once admitted.
pub(super) enum Admitted {
    /// A JSON-RPC request with a valid context, and its id.
    Request(http::Request<Bytes>, CallContext, Option<Value>),
    /// A notification or a stray response: rmcp decides.
    Other(http::Request<Bytes>, Option<Value>),
    /// Not MCP: answered at the edge (protected resource metadata).
    Answered(http::Response<Bytes>),
    /// A 2025-era client's: `legacy/` serves it.
    Legacy(Route),
}

/// What the envelope's checks leave for the message's.
struct Envelope {
    /// The caller the entry point (or the bearer check) established.
    principal: Principal,
    /// What the request's version headers were.
    version_headers: VersionHeaders,
    /// Whether the message may still be routed to the 2025 era (not once
    /// it is the translation of a 2025-era one).
    routes_legacy: bool,
}

/// The checks, against what this edge allows and publishes.
pub(super) struct Admission<'a> {
    pub policy: &'a EdgePolicy,
    pub metadata: &'a ResourceMetadata,
    /// Whether the handler serves listen streams (it advertises list
    /// changes; not where `Listen=off`).
    pub listens: bool,
    /// Whether 2025-era clients are served (`legacy/`); if not, every
    /// request is held to 2026-07-28's rules.
    pub legacy: bool,
}

impl Admission<'_> {
    /// Every check that needs no handler, in the order the spec's errors
    /// take precedence.
    pub(super) fn admit(
        &self,
        mut request: http::Request<Bytes>,
        log: &mut RequestLog,
        delivery: Delivery,
    ) -> Result<Admitted, (EdgeError, Option<Value>)> {
        let facts = request.extensions().get::<RequestScope>().map(|scope| scope.entry.clone()).unwrap_or_default();
        log.trace_id = request.headers().get("traceparent").and_then(|v| v.to_str().ok()).and_then(trace_id);
        if !is_mcp_path(request.uri().path()) {
            if request.method() == Method::GET && ResourceMetadata::is_published_at(request.uri().path()) {
                // In Lambda the event's own domain, not a header, names the API.
                let host = facts.api_domain.as_deref().or_else(|| request.headers().get(header::HOST).and_then(|h| h.to_str().ok()));
                if let Some(document) = self.metadata.response(host.unwrap_or_default(), request.uri().path()) {
                    return Ok(Admitted::Answered(document));
                }
            }
            return Err((EdgeError::WrongPath, None));
        }
        self.check_host_and_origin(&request, facts.api_domain.as_deref()).map_err(|e| (e, None))?;
        if facts.unidentified {
            return Err((EdgeError::Unidentified, None));
        }
        // Before anything reads the version header.
        let version_headers = tolerance::version_headers(request.headers_mut());
        if request.method() != Method::POST && self.legacy {
            request = match Route::without_body(request, &facts.principal, delivery) {
                Ok(route) => return Ok(Admitted::Legacy(route)),
                Err(request) => request,
            };
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
        let object = match message {
            Value::Object(object) => object,
            Value::Array(_) => return Err((EdgeError::Batch, None)),
            _ => return Err((EdgeError::NotAnObject, None)),
        };
        let envelope = Envelope { principal: facts.principal, version_headers, routes_legacy: self.legacy };
        self.admit_message(request, object, envelope, log, delivery)
    }

    /// The 2026-07-28 request a 2025-era one was translated into, `object`
    /// its message: the 2025-era request's envelope was admitted (a call's
    /// whole, a session stream's `GET` without a body) and the server built
    /// this one's body, so its message's checks run, and the body limit,
    /// which the translation's added `_meta` may cross; nothing is parsed
    /// again.
    #[cfg(feature = "legacy")]
    pub(super) fn admit_translated(
        &self,
        mut request: http::Request<Bytes>,
        object: Map<String, Value>,
        log: &mut RequestLog,
        delivery: Delivery,
    ) -> Result<Admitted, (EdgeError, Option<Value>)> {
        if request.body().len() > self.policy.max_body_bytes {
            return Err((EdgeError::BodyTooLarge { limit: self.policy.max_body_bytes }, None));
        }
        let principal =
            request.extensions().get::<RequestScope>().map(|scope| scope.entry.principal.clone()).unwrap_or(Principal::Anonymous);
        let version_headers = tolerance::version_headers(request.headers_mut());
        // Routed once: the translation is served as the era it came from.
        let envelope = Envelope { principal, version_headers, routes_legacy: false };
        self.admit_message(request, object, envelope, log, delivery)
    }

    /// The checks of a request's message, once its envelope passed.
    fn admit_message(
        &self,
        mut request: http::Request<Bytes>,
        object: Map<String, Value>,
        envelope: Envelope,
        log: &mut RequestLog,
        delivery: Delivery,
    ) -> Result<Admitted, (EdgeError, Option<Value>)> {
        let Envelope { principal, version_headers, routes_legacy } = envelope;
        // Noted once the client's name can be read; the marker goes, so a
        // 2025-era request admitted again as the modern one it means is
        // not counted twice.
        let unsaid_accept = request.extensions_mut().remove::<AnswerAsJson>().is_some();
        let id = object.get("id").cloned();
        if version_headers == VersionHeaders::Conflicting {
            return Err((EdgeError::HeaderMismatch("MCP-Protocol-Version names more than one version"), id));
        }
        if version_headers == VersionHeaders::Repeated || unsaid_accept {
            let client = tolerance::client_name(&object, request.headers());
            if version_headers == VersionHeaders::Repeated {
                log.forgiven.add(Tolerated::RepeatedVersion, client);
            }
            if unsaid_accept {
                log.forgiven.add(Tolerated::MissingAccept, client);
            }
        }
        let mut object = object;
        if object.get("method").is_none() && routes_legacy {
            (request, object) = match Route::answer(request, object, &principal) {
                Ok(route) => return Ok(Admitted::Legacy(route)),
                Err(back) => back,
            };
        }
        let Some(method) = object.get("method").and_then(Value::as_str) else {
            // A JSON-RPC response or error: rmcp refuses it on a stateless server.
            return Ok(Admitted::Other(request, id));
        };
        log.method = Some(method.to_owned());
        let row = methods::method(method);
        log.known = row;
        let name_key = row.and_then(|row| row.name_key);
        log.target = name_key.and_then(|key| object.get("params")?.get(key)?.as_str()).map(str::to_owned);
        if id.is_none() {
            // Notifications carry no `_meta` requirement; rmcp answers 202.
            return Ok(Admitted::Other(request, None));
        }
        if routes_legacy {
            (request, object) = match Route::call(request, object, row, &id, &principal).map_err(|e| (e, id.clone()))? {
                Ok(route) => return Ok(Admitted::Legacy(route)),
                Err(back) => back,
            };
        }
        let method = object.get("method").and_then(Value::as_str).unwrap_or_default();
        if method == "initialize" {
            // Before the `_meta` check a legacy client's handshake would fail
            // with a message that says nothing about versions.
            let requested = object.get("params").and_then(|p| p.get("protocolVersion")).and_then(Value::as_str).map(str::to_owned);
            return Err((EdgeError::Initialize { requested }, id));
        }

        let ctx = CallContext::from_meta(
            object.get("params").and_then(|p| p.get("_meta")),
            request.headers().get("traceparent").and_then(|v| v.to_str().ok()).map(str::to_owned),
            principal,
        )
        .map_err(|e| (EdgeError::from(e), id.clone()))?;
        if let Some(trace) = ctx.traceparent.as_deref().and_then(trace_id) {
            log.trace_id = Some(trace);
        }
        if check_version_header(request.headers_mut(), &ctx).map_err(|e| (e, id.clone()))? {
            log.forgiven.add(Tolerated::VersionMismatch, ctx.client_info.as_ref().and_then(|i| i.get("name")).and_then(Value::as_str));
        }
        if let Some(reason) = row.and_then(|row| row.params_misfit(object.get("params"))) {
            return Err((EdgeError::Params(reason), id));
        }
        if method == "subscriptions/listen" {
            // A whole answer cannot hold a stream open, whatever the
            // handler advertises, and a handler without streams has none to
            // hold: the listen is acknowledged with nothing honoured and
            // ended at once (protocol::scope::ListenScope::not_served).
            if delivery == Delivery::Whole || !self.listens {
                // Nothing is honoured, whatever the handler would watch.
                let mut object = object;
                if let Some(params) = object.get_mut("params").and_then(Value::as_object_mut) {
                    params.insert("notifications".into(), Value::Object(Map::new()));
                }
                *request.body_mut() = Bytes::from(serde_json::to_vec(&object).unwrap_or_default());
                let scope = request.extensions_mut().get_or_insert_default::<RequestScope>();
                scope.listen.not_served = true;
                scope.call = Some(ctx.clone());
                return Ok(Admitted::Request(request, ctx, id));
            }
            let task_ids = TaskIdsFilter::from_params(object.get("params"), &ctx).map_err(|e| (EdgeError::from(e), id.clone()))?;
            request.extensions_mut().get_or_insert_default::<RequestScope>().listen.task_ids = task_ids.0;
        }
        request.extensions_mut().get_or_insert_default::<RequestScope>().call = Some(ctx.clone());
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
}

/// Whether a body is JSON (`application/json`, parameters aside).
pub(super) fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or_default().trim())
        .is_some_and(|essence| essence.eq_ignore_ascii_case("application/json"))
}

/// basic/transports/streamable-http, "Protocol Version Header": the header is
/// required and must agree with `_meta`; only then is support checked, so a
/// mismatch is -32020 and an agreed but unknown version is -32022. One
/// mismatch is tolerated (`tolerance.rs`): `_meta` naming a version this
/// server serves and the header another it speaks. The header is then
/// rewritten to `_meta`'s, as rmcp checks it too, and the answer is true.
fn check_version_header(headers: &mut HeaderMap, ctx: &CallContext) -> Result<bool, EdgeError> {
    let claimed = ctx.protocol_version.as_str();
    let served = SUPPORTED_VERSIONS.iter().copied().find(|version| *version == claimed);
    match headers.get(VERSION_HEADER).map(|v| v.to_str().unwrap_or_default()) {
        None => Err(EdgeError::HeaderMismatch("MCP-Protocol-Version header is required")),
        Some(h) if h == claimed => match served {
            Some(_) => Ok(false),
            None => Err(EdgeError::UnsupportedVersion { requested: ctx.protocol_version.clone(), legacy: false }),
        },
        Some(h) => match served {
            Some(served) if tolerance::spoken(h) => {
                headers.insert(VERSION_HEADER, HeaderValue::from_static(served));
                Ok(true)
            }
            _ => Err(EdgeError::HeaderMismatch("MCP-Protocol-Version header does not match _meta protocolVersion")),
        },
    }
}

/// The trace id of a W3C `traceparent` (`00-<trace-id>-<span-id>-<flags>`).
fn trace_id(traceparent: &str) -> Option<String> {
    let trace = traceparent.split('-').nth(1)?;
    (trace.len() == 32 && trace.bytes().all(|b| b.is_ascii_hexdigit())).then(|| trace.to_owned())
}
