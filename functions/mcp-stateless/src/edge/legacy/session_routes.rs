//! A session's own routes: `DELETE` ends it, `GET` is its notification
//! stream, and a POSTed answer to a request the server sent mid-call goes
//! to its mailbox.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use serde_json::{Map, Value, json};

use super::{
    SESSION_HEADER,
    inbound::{modern_request, standard_headers, with_modern_meta},
    refusals::session_error,
};
use crate::{
    edge::{
        error::{Refusal, code},
        stream::Guard,
    },
    protocol::{
        context::{Era, Principal},
        scope::{OnOpen, RequestScope},
    },
    sessions::{LegacySessions, Session, SessionError, SessionState, mailbox::AnswerRefusal},
};

/// The session `token` names for `principal`; a key this instance has not
/// seen is looked up on the budget of whom the request came from (the
/// caller, or without one its address: `EntryFacts::budget_key`).
pub(super) async fn open_session<B>(
    sessions: &LegacySessions,
    request: &http::Request<B>,
    principal: &Principal,
    token: &str,
) -> Result<(Session, SessionState), SessionError> {
    let scope = request.extensions().get::<RequestScope>();
    let budget_key = scope.map_or_else(|| principal.binding_id(), |scope| scope.entry.budget_key());
    sessions.open_budgeted(principal, token, &budget_key).await
}

/// `DELETE` with a session: ends it, on every instance. 404 if it was not
/// a live session of this caller (already ended included).
pub(super) async fn end_session(sessions: &LegacySessions, request: &http::Request<Bytes>, principal: &Principal) -> http::Response<Bytes> {
    let Some(token) = session_token(request.headers()) else {
        return Refusal::new(code::INVALID_REQUEST, "Bad Request: DELETE needs the Mcp-Session-Id header of the session to end")
            .into_response(None);
    };
    let ended = match open_session(sessions, request, principal, token).await {
        Ok((session, _)) => sessions.end(principal, &session).await,
        Err(error) => Err(error),
    };
    match ended {
        Ok(()) => http::Response::new(Bytes::new()),
        Err(error) => session_error(error, None),
    }
}

/// A session's notification stream, and its id once it made itself the
/// session's one.
struct HeldStream {
    sessions: LegacySessions,
    principal: Principal,
    session: Session,
    id: OnceLock<String>,
}

impl HeldStream {
    /// Makes this stream the session's one (`protocol::scope::OnOpen`).
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
/// caller as listen streams are. With it, its guard: the stream carries
/// notifications only (the listen acknowledgement and the final result are
/// left out), and goes on only while it is the session's one.
pub(super) async fn notification_stream(
    sessions: &LegacySessions,
    request: http::Request<Bytes>,
    principal: &Principal,
) -> Result<(http::Request<Bytes>, Map<String, Value>, Era, Guard), http::Response<Bytes>> {
    let token = session_token(request.headers()).unwrap_or_default();
    let opened = open_session(sessions, &request, principal, token).await.map_err(|error| session_error(error, None))?;
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
    parts.extensions.get_or_insert_default::<RequestScope>().listen.on_open = Some(on_open);
    let headers = standard_headers("subscriptions/listen", &Value::Null, &|_: &str| None);
    let era = Era::Legacy { version: opened.0.protocol_version.clone() };
    Ok((modern_request(http::Request::from_parts(parts, Bytes::new()), &message, headers), message, era, guard))
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
    let session = match open_session(sessions, request, principal, token).await {
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
        other => Refusal::new(code::INVALID_PARAMS, format!("Invalid params: {other}")).into_response(None),
    }
}

pub(super) fn session_token(headers: &http::HeaderMap) -> Option<&str> {
    headers.get(SESSION_HEADER).map(|value| value.to_str().unwrap_or_default())
}
