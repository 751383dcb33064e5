//! The era's own errors: a session that does not open, is busy or cannot
//! be reached, and params its methods refuse.

use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use super::SESSION_HEADER;
use crate::{
    edge::error::{code, jsonrpc_error_response},
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
    jsonrpc_error_response(StatusCode::OK, Some(id), json!({"code": code::INVALID_PARAMS, "message": format!("Invalid params: {reason}")}))
}

/// A session that does not open is 404, which tells a 2025-era client to
/// initialize again; a session other requests kept changing is 503 with
/// `Retry-After` (the same request, sent again, is served); the keys or the
/// table failing is the server's 500.
pub(super) fn session_error(error: SessionError, id: Option<Value>) -> http::Response<Bytes> {
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
