//! The response rewrite: what the edge does to every message the handler
//! sends, whole or streamed. A result names the server (`_meta`
//! serverInfo: basic/index, "Per-response protocol fields"; whole JSON
//! answers get the same entry on their text, `stamp.rs`); an
//! `InputRequiredResult` the client cannot fulfil becomes -32021; a listen
//! acknowledgement names the task ids agreed to; and no answer may be
//! stored by anything between client and server.

use std::{sync::Arc, time::Instant};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::{Map, Value, json};

use crate::{
    deployment::LogFormat,
    edge::{
        error::{Refusal, code},
        request_log::RequestLog,
        sse,
        stream::Rewrite,
    },
    metrics,
    protocol::{
        capability_guard::missing_capabilities,
        context::{CallContext, Era},
        message::MessageView,
    },
    subscriptions::TaskIdsFilter,
};

/// The `_meta` key that names the server.
pub(super) const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";

/// Answers carry handles, sealed state and per-caller data: nothing
/// between client and server may keep them, streamed ones included (rmcp
/// marks its event streams `no-cache`, which still lets a cache store
/// them). Only a lifetime the edge gave on purpose (the public metadata's
/// `max-age`) stays. MCP's own caching hints, ttlMs and cacheScope, are in
/// the result for the client.
pub(super) fn no_store(headers: &mut HeaderMap) {
    let public = headers.get(header::CACHE_CONTROL).is_some_and(|value| value.as_bytes().starts_with(b"max-age"));
    if !public {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
}

/// How a message for a 2025-era client is shaped (the message, the
/// request's method, the client's capabilities): given by whoever serves
/// that era, so the rewrite knows nothing of it.
pub(super) type Shape = fn(&mut Value, Option<&str>, &Map<String, Value>);

/// What the edge does to the messages the handler sends, whole or streamed.
pub(super) struct FinalRewrite {
    pub ctx: Option<CallContext>,
    /// Applied to every message for a client whose era is not 2026-07-28.
    pub shape: Option<Shape>,
    /// The request's method, which decides how a legacy refusal is sent.
    pub method: Option<String>,
    pub server_info: Arc<Value>,
    pub task_ids: TaskIdsFilter,
    pub request_id: Value,
    /// A 2025-era session's notification stream: only notifications leave
    /// (a message rewritten to `null` is not sent).
    pub notifications_only: bool,
    /// Set for a stream: the log line it writes when it ends.
    pub log: Option<Finished>,
    /// What the final response said, and whether it became a refusal.
    pub outcome: Option<(RequestLog, bool)>,
}

/// A stream's log line, written when it ends.
pub(super) struct Finished {
    pub log: RequestLog,
    pub format: LogFormat,
    pub status: StatusCode,
    pub started: Instant,
    pub counts: Arc<metrics::Counts>,
}

impl Rewrite for FinalRewrite {
    fn message(&mut self, message: &mut Value) {
        if self.notifications_only
            && (message.get("id").is_some()
                || message.get("method").and_then(Value::as_str) == Some("notifications/subscriptions/acknowledged"))
        {
            if message.get("id").is_some() {
                let mut outcome = RequestLog::default();
                outcome.record_outcome(message);
                self.outcome = Some((outcome, false));
            }
            // A refused stream (too many open) has no response to give a
            // 2025-era GET: the reason goes as a log message it can show.
            *message = match message.pointer("/error/message").and_then(Value::as_str) {
                Some(reason) => json!({"jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "error", "logger": "mcp", "data": reason}}),
                None => Value::Null,
            };
            return;
        }
        if self.task_ids.acknowledge(message) {
            return;
        }
        if let (Some(shape), Some(ctx)) = (self.shape, self.ctx.as_ref().filter(|ctx| ctx.era != Era::Modern)) {
            shape(message, self.method.as_deref(), &ctx.client_capabilities);
        }
        if !MessageView::of(message).is_response() {
            return;
        }
        let mut outcome = RequestLog::default();
        outcome.record_outcome(message);
        if let Some(error) = self.ctx.as_ref().and_then(|ctx| capability_refusal(ctx, message)) {
            outcome.result_type = None;
            outcome.error_code = Some(code::MISSING_REQUIRED_CLIENT_CAPABILITY);
            *message = error.message(message.get("id").cloned());
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
            finished.log.finish(finished.format, finished.status, finished.started.elapsed(), &finished.counts);
        }
    }
}

/// The -32021 error sent instead of an `InputRequiredResult` the client
/// cannot fulfil.
fn capability_refusal(ctx: &CallContext, message: &Value) -> Option<Refusal> {
    let requests = MessageView::of(message).input_requests()?;
    let required = missing_capabilities(&ctx.client_capabilities, requests)?;
    Some(
        Refusal::new(code::MISSING_REQUIRED_CLIENT_CAPABILITY, "Missing required client capability")
            .with_data(json!({"requiredCapabilities": required})),
    )
}

/// The JSON-RPC messages of a whole response body: one JSON object, or
/// the data of each SSE event.
pub(super) struct Messages {
    pub sse: bool,
    pub messages: Vec<Value>,
}

impl Messages {
    pub(super) fn parse(headers: &HeaderMap, body: &Bytes) -> Option<Self> {
        let content_type = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
        if content_type.starts_with("application/json") {
            return Some(Self { sse: false, messages: vec![serde_json::from_slice(body).ok()?] });
        }
        if !content_type.starts_with("text/event-stream") {
            return None;
        }
        // Events without data (keep-alive comments) carry no message; one
        // whose data is not JSON leaves the body as it came.
        let messages = sse::events(std::str::from_utf8(body).ok()?)
            .filter_map(sse::data)
            .map(|data| serde_json::from_str(&data))
            .collect::<Result<_, _>>()
            .ok()?;
        Some(Self { sse: true, messages })
    }

    pub(super) fn render(&self) -> Bytes {
        if !self.sse {
            return Bytes::from(self.messages.first().map(Value::to_string).unwrap_or_default());
        }
        Bytes::from(self.messages.iter().map(sse::encode).collect::<String>())
    }
}
