//! What the edge forgives the clients people run, and nothing more
//! (docs/reference.md, "Clients as they behave"). Each rule serves one
//! shape that a widely used client sends today, as its tracker shows, and
//! each is narrow: a version nobody speaks, `Mcp-Method` or `Mcp-Name`
//! disagreeing with the body, and a 2026 request with neither `_meta` nor a
//! session are refused exactly as before. A tolerated request is counted
//! (its `Tolerated*` metric, beside the method's other metrics) and the
//! first of each shape an instance sees is logged at warn with the
//! client's name, so an operator sees which clients need which rule.

use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, header};
use serde_json::{Map, Value};

use crate::{
    edge::{request_log::capped, rewrite::Messages, stream::is_event_stream},
    metrics::{self, Counter},
    protocol::{LEGACY_VERSIONS, SUPPORTED_VERSIONS, context::META_CLIENT_INFO},
};

/// The header that names the protocol version.
pub(super) const VERSION_HEADER: &str = "mcp-protocol-version";

/// A request shape the strict rules refuse and the edge serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tolerated {
    /// `_meta` names a version this server speaks, the header another one
    /// it speaks: served at `_meta`'s. Claude's connectors negotiate
    /// 2026-07-28 and send `MCP-Protocol-Version: 2025-11-25`
    /// (anthropics/claude-code #93290).
    VersionMismatch,
    /// `MCP-Protocol-Version` repeating one value, joined with commas or
    /// sent twice: that value. Claude Code joins two spellings of one
    /// header (lowdefy PR #2345).
    RepeatedVersion,
    /// A 2025-shaped request (no `_meta`) with a session, its header naming
    /// a newer version: served at the session's. The claude.ai connector
    /// sends its newest version after negotiating 2025-11-25
    /// (SparkyFitness #2155).
    SessionVersion,
    /// A POST with no `Accept`: answered as JSON. The claude.ai connector
    /// sent none (OB1 #33).
    MissingAccept,
}

impl Tolerated {
    const ALL: [Tolerated; 4] = [Self::VersionMismatch, Self::RepeatedVersion, Self::SessionVersion, Self::MissingAccept];

    fn counter(self) -> Counter {
        match self {
            Self::VersionMismatch => Counter::ToleratedVersionMismatch,
            Self::RepeatedVersion => Counter::ToleratedRepeatedVersion,
            Self::SessionVersion => Counter::ToleratedSessionVersion,
            Self::MissingAccept => Counter::ToleratedMissingAccept,
        }
    }

    fn what(self) -> &'static str {
        match self {
            Self::VersionMismatch => "served a request at its _meta version; its MCP-Protocol-Version header named another",
            Self::RepeatedVersion => "took an MCP-Protocol-Version header that repeated one value as that value",
            Self::SessionVersion => "served a 2025-era request at its session's version; its header named a newer one",
            Self::MissingAccept => "answered a POST without an Accept header as JSON",
        }
    }
}

/// Whether an instance has logged each shape yet.
static WARNED: [AtomicBool; Tolerated::ALL.len()] = [const { AtomicBool::new(false) }; Tolerated::ALL.len()];

/// The shapes one request was forgiven, and the client's name for itself:
/// counted only once the request was served ([`Forgiven::count_if`]), so a
/// request refused for another reason counts for nothing.
#[derive(Debug, Default)]
pub(crate) struct Forgiven(Vec<(Tolerated, Option<String>)>);

impl Forgiven {
    /// Records `shape`, forgiven to the client that calls itself `client`.
    pub(super) fn add(&mut self, shape: Tolerated, client: Option<&str>) {
        if !self.0.iter().any(|(known, _)| *known == shape) {
            self.0.push((shape, client.map(capped)));
        }
    }

    /// Counts every shape recorded when the request was `served`.
    pub(super) fn count_if(&mut self, served: bool) {
        for (shape, client) in std::mem::take(&mut self.0) {
            if served {
                note(shape, client.as_deref());
            }
        }
    }
}

/// Counts `shape` for the request being served, and logs it at warn the
/// first time this instance sees it, with the client's own name for itself;
/// true when it logged.
fn note(shape: Tolerated, client: Option<&str>) -> bool {
    metrics::count(shape.counter());
    let first = !WARNED[shape as usize].swap(true, Ordering::Relaxed);
    if first {
        tracing::warn!(
            shape = shape.counter().name(),
            client = capped(client.unwrap_or("unknown")),
            "{} (logged once per instance; the metric counts each)",
            shape.what()
        );
    }
    first
}

/// The client's name for itself: `_meta`'s `clientInfo`, else its
/// `User-Agent`.
pub(super) fn client_name<'a>(message: &'a Map<String, Value>, headers: &'a HeaderMap) -> Option<&'a str> {
    message
        .get("params")
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_CLIENT_INFO))
        .and_then(|info| info.get("name"))
        .and_then(Value::as_str)
        .or_else(|| headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()))
}

/// Whether `version` is one this server speaks, in either era.
pub(super) fn spoken(version: &str) -> bool {
    SUPPORTED_VERSIONS.contains(&version) || LEGACY_VERSIONS.contains(&version)
}

/// What a request's `MCP-Protocol-Version` headers say.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum VersionHeaders {
    /// None, or one value: for the strict checks.
    AsSent,
    /// One value repeated (`a, a`, or the header twice), now rewritten to
    /// it: tolerated.
    Repeated,
    /// Two different values: refused (-32020), whichever came first.
    Conflicting,
}

/// Reads every `MCP-Protocol-Version` value, each split at commas, and
/// rewrites a repeated one to its single value.
pub(super) fn version_headers(headers: &mut HeaderMap) -> VersionHeaders {
    // The common case, one header with one value, costs no allocation.
    let mut sent = headers.get_all(VERSION_HEADER).iter();
    match (sent.next(), sent.next()) {
        (None, _) => return VersionHeaders::AsSent,
        (Some(one), None) if !one.as_bytes().contains(&b',') => return VersionHeaders::AsSent,
        _ => {}
    }
    let mut values = Vec::new();
    for value in headers.get_all(VERSION_HEADER) {
        match value.to_str() {
            Ok(text) => values.extend(text.split(',').map(str::trim)),
            // Not text: for the strict checks, which refuse it.
            Err(_) => return VersionHeaders::AsSent,
        }
    }
    let Some((first, rest)) = values.split_first() else { return VersionHeaders::AsSent };
    if rest.is_empty() {
        return VersionHeaders::AsSent;
    }
    if first.is_empty() || rest.iter().any(|value| value != first) {
        return VersionHeaders::Conflicting;
    }
    let Ok(one) = HeaderValue::from_str(first) else { return VersionHeaders::Conflicting };
    headers.insert(VERSION_HEADER, one);
    VersionHeaders::Repeated
}

/// Marks a POST that came without `Accept`: its answer is whole JSON.
#[derive(Debug, Clone, Copy)]
pub(super) struct AnswerAsJson;

/// A POST without `Accept` is given one accepting both media types (rmcp
/// requires it) and marked [`AnswerAsJson`]; true when it was. An `Accept`
/// that names neither stays as it came (406).
pub(super) fn accept_when_unsaid(request: &mut http::Request<Bytes>) -> bool {
    if request.method() != Method::POST || request.headers().contains_key(header::ACCEPT) {
        return false;
    }
    request.headers_mut().insert(header::ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
    request.extensions_mut().insert(AnswerAsJson);
    true
}

/// A whole answer as a client that sent no `Accept` gets it: an event
/// stream becomes its response alone, as JSON (progress and log messages
/// sent before it have nowhere else to go). Anything else is unchanged.
pub(super) fn answered_as_json(response: http::Response<Bytes>) -> http::Response<Bytes> {
    let (mut parts, body) = response.into_parts();
    if !is_event_stream(&parts.headers) {
        return http::Response::from_parts(parts, body);
    }
    let Some(mut messages) = Messages::parse(&parts.headers, &body) else {
        return http::Response::from_parts(parts, body);
    };
    messages.messages.retain(|message| message.get("id").is_some() && message.get("method").is_none());
    let Some(last) = messages.messages.pop() else {
        return http::Response::from_parts(parts, body);
    };
    messages.messages = vec![last];
    messages.sse = false;
    parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    parts.headers.remove(header::CONTENT_LENGTH);
    http::Response::from_parts(parts, messages.render())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(VERSION_HEADER, value.parse().unwrap());
        }
        headers
    }

    #[test]
    fn a_header_repeating_one_value_is_that_value_and_two_values_conflict() {
        for repeated in [&["2026-07-28, 2026-07-28"][..], &["2026-07-28", "2026-07-28"], &["2025-11-25,2025-11-25, 2025-11-25"]] {
            let mut map = headers(repeated);
            assert_eq!(version_headers(&mut map), VersionHeaders::Repeated, "{repeated:?}");
            let values: Vec<_> = map.get_all(VERSION_HEADER).iter().collect();
            assert_eq!(values.len(), 1);
            assert_eq!(values[0], repeated[0].split(',').next().unwrap().trim());
        }
        for (sent, read) in [
            (&[][..], VersionHeaders::AsSent),
            (&["2026-07-28"], VersionHeaders::AsSent),
            (&["2026-07-28, 2025-11-25"], VersionHeaders::Conflicting),
            (&["2026-07-28", "2025-11-25"], VersionHeaders::Conflicting),
            (&[", "], VersionHeaders::Conflicting),
            (&["a,"], VersionHeaders::Conflicting),
        ] {
            let mut map = headers(sent);
            let before = map.clone();
            assert_eq!(version_headers(&mut map), read, "{sent:?}");
            assert_eq!(map, before, "{sent:?} untouched");
        }
    }

    #[test]
    fn only_a_post_without_accept_is_given_one() {
        let post = |accept: Option<&str>| {
            let mut builder = http::Request::builder().method(Method::POST);
            if let Some(accept) = accept {
                builder = builder.header(header::ACCEPT, accept);
            }
            builder.body(Bytes::new()).unwrap()
        };
        let mut unsaid = post(None);
        assert!(accept_when_unsaid(&mut unsaid));
        assert!(unsaid.extensions().get::<AnswerAsJson>().is_some());
        let mut html = post(Some("text/html"));
        assert!(!accept_when_unsaid(&mut html), "a wrong Accept is still 406");
        let mut get = http::Request::builder().method(Method::GET).body(Bytes::new()).unwrap();
        assert!(!accept_when_unsaid(&mut get));
    }

    #[test]
    fn an_event_stream_becomes_its_response_as_json() {
        let sse = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n\
                   event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n";
        let response = http::Response::builder().header(header::CONTENT_TYPE, "text/event-stream").body(Bytes::from(sse)).unwrap();
        let json = answered_as_json(response);
        assert_eq!(json.headers()[header::CONTENT_TYPE], "application/json");
        let body: Value = serde_json::from_slice(json.body()).unwrap();
        assert_eq!(body, serde_json::json!({"jsonrpc": "2.0", "id": 3, "result": {}}));
        let plain = http::Response::builder().header(header::CONTENT_TYPE, "application/json").body(Bytes::from("{}")).unwrap();
        assert_eq!(answered_as_json(plain).body(), &Bytes::from("{}"));
    }

    #[tokio::test]
    async fn each_shape_is_counted_in_its_own_metric_only_when_the_request_was_served() {
        let ((), counts) = metrics::scope(async {
            let mut served = Forgiven::default();
            served.add(Tolerated::VersionMismatch, Some("claude-ai"));
            served.add(Tolerated::VersionMismatch, Some("claude-ai"));
            served.add(Tolerated::MissingAccept, Some("x".repeat(10_000).as_str()));
            served.count_if(true);
            let mut refused = Forgiven::default();
            refused.add(Tolerated::RepeatedVersion, None);
            refused.count_if(false);
        })
        .await;
        assert_eq!(counts.get(Counter::ToleratedVersionMismatch), 1, "once per request");
        assert_eq!(counts.get(Counter::ToleratedMissingAccept), 1);
        assert_eq!(counts.get(Counter::ToleratedRepeatedVersion), 0, "refused for another reason: not counted");
        assert_eq!(Tolerated::ALL.map(|shape| shape.counter()).iter().filter(|c| c.is_tolerance()).count(), Tolerated::ALL.len());
    }

    #[test]
    fn each_shape_is_logged_once_per_instance() {
        assert!(note(Tolerated::SessionVersion, Some("a")), "the first is logged");
        assert!(!note(Tolerated::SessionVersion, Some("b")), "later ones only counted");
    }

    #[test]
    fn the_versions_spoken_are_both_eras() {
        assert!(spoken("2026-07-28") && spoken("2025-11-25") && spoken("2025-03-26"));
        assert!(!spoken("v999.0.0") && !spoken("2024-11-05"));
    }
}
