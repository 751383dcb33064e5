//! The era's own errors: a session that does not open, is busy or cannot
//! be reached, and params its methods refuse.

use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use super::SESSION_HEADER;
use crate::{
    edge::error::{Refusal, code},
    sessions::SessionError,
};

/// JSON-RPC code of an unknown or ended session, as the official SDKs
/// answer it.
const SESSION_NOT_FOUND: i32 = -32001;

pub(super) fn result_response(id: Value, result: Value, session: Option<&str>) -> http::Response<Bytes> {
    let body = json!({"jsonrpc": "2.0", "id": id, "result": result});
    let mut response = http::Response::new(Bytes::from(body.to_string()));
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(value) = session.and_then(|token| HeaderValue::from_str(token).ok()) {
        response.headers_mut().insert(SESSION_HEADER, value);
    }
    response
}

pub(super) fn invalid_params(id: Value, reason: String) -> http::Response<Bytes> {
    Refusal::new(code::INVALID_PARAMS, format!("Invalid params: {reason}")).of_legacy_call().into_response(Some(id))
}

/// A session that does not open is 404, which tells a 2025-era client to
/// initialize again; a session other requests kept changing, or the keys
/// or the table failing after the SDK's retries, is 503 with `Retry-After`:
/// nothing of the session was half-written, and the same request, sent
/// again once the dependency answers, is served (a stored item that no
/// longer reads, which no retry mends, is logged as such and answered
/// the same: the client can do nothing else either way). A bare 500 would
/// tell the client nothing it can do.
pub(super) fn session_error(error: SessionError, id: Option<Value>) -> http::Response<Bytes> {
    let refusal = match &error {
        SessionError::NotFound => {
            Refusal::new(SESSION_NOT_FOUND, "Session not found: it ended or expired; initialize again").with_status(StatusCode::NOT_FOUND)
        }
        SessionError::Refused(reason) => Refusal::new(code::INVALID_PARAMS, format!("Invalid params: {reason}")).of_legacy_call(),
        SessionError::Unavailable(_) => {
            tracing::error!(%error, "legacy session");
            Refusal::new(code::INTERNAL_ERROR, "session service unavailable")
                .with_status(StatusCode::SERVICE_UNAVAILABLE)
                .with_header(header::RETRY_AFTER, "1")
        }
        SessionError::Busy => Refusal::new(code::INTERNAL_ERROR, format!("Busy: {error}"))
            .with_status(StatusCode::SERVICE_UNAVAILABLE)
            .with_header(header::RETRY_AFTER, "1"),
        // The budget is a minute's: by then the caller has its own again.
        SessionError::OverBudget => Refusal::new(code::INTERNAL_ERROR, format!("Busy: {error}"))
            .with_status(StatusCode::SERVICE_UNAVAILABLE)
            .with_header(header::RETRY_AFTER, "60"),
    };
    refusal.into_response(id)
}
