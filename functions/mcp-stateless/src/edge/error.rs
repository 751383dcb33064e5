//! Everything the edge refuses before a handler runs, mapped once to an HTTP
//! status and a JSON-RPC error code (basic/transports/streamable-http), and
//! the one `Refusal` every JSON-RPC error the edge writes goes through,
//! in either era.

use bytes::Bytes;
use http::{HeaderName, HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use crate::{protocol::context::MetaError, subscriptions::TaskIdsRefusal};

/// A JSON-RPC error the edge writes: its `code`, `message` and `data`, and
/// the HTTP status it travels with when it is the whole answer. Built here
/// and nowhere else, for the edge's own refusals, the 2025 era's and the
/// errors put in place of a handler's message.
#[derive(Debug, Clone)]
pub(crate) struct Refusal {
    code: i32,
    message: String,
    data: Option<Value>,
    status: StatusCode,
    header: Option<(HeaderName, HeaderValue)>,
}

impl Refusal {
    /// A refusal with HTTP 400, as 2026-07-28 answers a call it refuses.
    pub(crate) fn new(code: i32, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), data: None, status: StatusCode::BAD_REQUEST, header: None }
    }

    /// With `data` (the versions supported, the capabilities required).
    pub(crate) fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// With another HTTP status: one that holds in every era (a session
    /// not found, a server busy or failing, a method not allowed).
    pub(crate) fn with_status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }

    /// With a header beside it (`Allow`, `Retry-After`).
    pub(crate) fn with_header(mut self, name: HeaderName, value: &'static str) -> Self {
        self.header = Some((name, HeaderValue::from_static(value)));
        self
    }

    /// As the refusal of a 2025-era call, which that era's transport
    /// answers with HTTP 200 (2026-07-28 keeps the status it has).
    #[cfg(feature = "legacy")]
    pub(crate) fn of_legacy_call(mut self) -> Self {
        self.status = StatusCode::OK;
        self
    }

    /// The error object: `code`, `message` and, when there is some, `data`.
    pub(crate) fn error(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }

    /// The JSON-RPC message answering `id` (`null` when unknown).
    pub(crate) fn message(&self, id: Option<Value>) -> Value {
        json!({"jsonrpc": "2.0", "id": id.unwrap_or(Value::Null), "error": self.error()})
    }

    /// The whole HTTP answer: the message as JSON, with the status.
    pub(crate) fn into_response(self, id: Option<Value>) -> http::Response<Bytes> {
        let mut response = http::Response::new(Bytes::from(self.message(id).to_string()));
        *response.status_mut() = self.status;
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some((name, value)) = self.header {
            response.headers_mut().insert(name, value);
        }
        response
    }
}

/// JSON-RPC and MCP error codes the edge answers with.
pub mod code {
    /// The body is not JSON (JSON-RPC).
    pub const PARSE_ERROR: i32 = -32700;
    /// Not one acceptable JSON-RPC request (JSON-RPC); also what every
    /// refusal at the HTTP level carries.
    pub const INVALID_REQUEST: i32 = -32600;
    /// A method this server does not serve (JSON-RPC).
    pub const METHOD_NOT_FOUND: i32 = -32601;
    /// Params, `_meta` included, that do not fit the method (JSON-RPC).
    pub const INVALID_PARAMS: i32 = -32602;
    /// The server failed (JSON-RPC).
    pub const INTERNAL_ERROR: i32 = -32603;
    /// A required header missing, or disagreeing with the body (MCP).
    pub const HEADER_MISMATCH: i32 = -32020;
    /// The request needs a capability the client did not declare (MCP).
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i32 = -32021;
    /// A protocol version this server does not speak (MCP).
    pub const UNSUPPORTED_PROTOCOL_VERSION: i32 = -32022;
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum EdgeError {
    #[error("Not Found")]
    WrongPath,
    #[error("Method Not Allowed: the MCP endpoint accepts POST, and DELETE to end a 2025-era session")]
    MethodNotAllowed,
    #[error("Forbidden: Host is not allowed")]
    HostNotAllowed,
    #[error("Forbidden: Origin is not allowed")]
    OriginNotAllowed,
    #[error("Unsupported Media Type: Content-Type must be application/json")]
    UnsupportedMediaType,
    #[error("Payload Too Large: request body exceeds {limit} bytes")]
    BodyTooLarge { limit: usize },
    #[error("Parse error: request body is not valid JSON")]
    Parse,
    #[error("Invalid Request: batch requests are not supported")]
    Batch,
    #[error("Invalid Request: the body must be a JSON-RPC object")]
    NotAnObject,
    #[error("Invalid params: {0}")]
    Meta(#[from] MetaError),
    #[error("Header mismatch: {0}")]
    HeaderMismatch(&'static str),
    #[error("Invalid params: {0}")]
    Params(String),
    /// A version this server does not speak; `legacy` when only the
    /// header named it (no envelope), so the 2025-era versions it serves
    /// are listed too.
    #[error("Unsupported protocol version")]
    UnsupportedVersion { requested: String, legacy: bool },
    /// A legacy (2025-era) client's handshake. basic/versioning, "Backward
    /// Compatibility with Initialization-Based Versions": a server that
    /// supports only modern versions SHOULD name the versions it supports
    /// in any error it returns to `initialize`, since legacy clients have
    /// no way forward and this message may be all they can show a user.
    /// The error itself is -32601 with HTTP 404, as for any removed method.
    #[error(
        "Method not found: initialize. This server speaks MCP {}, which has no initialize handshake: \
         send every request with its own _meta (protocolVersion, clientCapabilities), or use a client that speaks {}",
        crate::protocol::SUPPORTED_VERSIONS.join(", "),
        crate::protocol::SUPPORTED_VERSIONS.join(" or ")
    )]
    Initialize { requested: Option<String> },
    /// The authorizer verified a token that names no issuer or subject:
    /// refused, not served as the anonymous caller every such token would share.
    #[error("Unauthorized: the token does not identify a caller (iss and sub are required)")]
    Unidentified,
    /// The request needs a capability the client did not declare (-32021);
    /// the value is the `requiredCapabilities` object.
    #[error("Missing required client capability")]
    MissingCapability(Value),
}

impl EdgeError {
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            Self::WrongPath | Self::Initialize { .. } => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::HostNotAllowed | Self::OriginNotAllowed => StatusCode::FORBIDDEN,
            Self::Unidentified => StatusCode::UNAUTHORIZED,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Parse
            | Self::Batch
            | Self::NotAnObject
            | Self::Meta(_)
            | Self::Params(_)
            | Self::HeaderMismatch(_)
            | Self::MissingCapability(_)
            | Self::UnsupportedVersion { .. } => StatusCode::BAD_REQUEST,
        }
    }

    pub(crate) fn code(&self) -> i32 {
        match self {
            Self::Parse => code::PARSE_ERROR,
            Self::Meta(_) | Self::Params(_) => code::INVALID_PARAMS,
            Self::HeaderMismatch(_) => code::HEADER_MISMATCH,
            Self::UnsupportedVersion { .. } => code::UNSUPPORTED_PROTOCOL_VERSION,
            Self::Initialize { .. } => code::METHOD_NOT_FOUND,
            Self::MissingCapability(_) => code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            _ => code::INVALID_REQUEST,
        }
    }

    fn data(&self) -> Option<Value> {
        match self {
            Self::UnsupportedVersion { requested, legacy } => {
                let mut supported: Vec<&str> = crate::protocol::SUPPORTED_VERSIONS.to_vec();
                if *legacy {
                    supported.extend(crate::protocol::LEGACY_VERSIONS);
                }
                Some(json!({"supported": supported, "requested": requested}))
            }
            Self::Initialize { requested } => Some(json!({
                "supported": crate::protocol::SUPPORTED_VERSIONS,
                "requested": requested,
            })),
            Self::MissingCapability(required) => Some(json!({"requiredCapabilities": required})),
            _ => None,
        }
    }

    /// As a [`Refusal`].
    pub(crate) fn refusal(&self) -> Refusal {
        let mut refusal = Refusal::new(self.code(), self.to_string()).with_status(self.status());
        if let Some(data) = self.data() {
            refusal = refusal.with_data(data);
        }
        if matches!(self, Self::MethodNotAllowed) {
            refusal = refusal.with_header(header::ALLOW, "POST, DELETE");
        }
        refusal
    }

    /// The HTTP response: a JSON-RPC error object echoing `id` when known.
    pub(crate) fn into_response(self, id: Option<Value>) -> http::Response<Bytes> {
        self.refusal().into_response(id)
    }
}

impl From<TaskIdsRefusal> for EdgeError {
    fn from(refusal: TaskIdsRefusal) -> Self {
        match refusal {
            TaskIdsRefusal::Malformed(reason) => Self::Params(reason),
            TaskIdsRefusal::MissingCapability(required) => Self::MissingCapability(required),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(response: http::Response<Bytes>) -> (StatusCode, Option<String>, Value) {
        let allow = response.headers().get(header::ALLOW).map(|value| value.to_str().unwrap().to_owned());
        (response.status(), allow, serde_json::from_slice(response.body()).unwrap())
    }

    #[test]
    fn an_edge_error_is_answered_as_its_refusal_with_status_header_and_data() {
        let (status, allow, body) = parts(EdgeError::MethodNotAllowed.into_response(None));
        assert_eq!((status, allow.as_deref()), (StatusCode::METHOD_NOT_ALLOWED, Some("POST, DELETE")));
        assert_eq!(body["id"], Value::Null);
        assert_eq!(body["error"]["code"], code::INVALID_REQUEST);
        let version = EdgeError::UnsupportedVersion { requested: "1999-01-01".into(), legacy: false };
        let (status, _, body) = parts(version.into_response(Some(json!(7))));
        assert_eq!((status, body["id"].clone()), (StatusCode::BAD_REQUEST, json!(7)));
        assert_eq!(body["error"]["code"], code::UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(body["error"]["data"], json!({"supported": ["2026-07-28"], "requested": "1999-01-01"}));
    }

    #[test]
    fn a_refusal_without_data_has_none_and_its_message_is_the_same_in_a_stream() {
        let refusal = Refusal::new(code::INTERNAL_ERROR, "failed").with_status(StatusCode::SERVICE_UNAVAILABLE);
        let message = refusal.message(Some(json!("a")));
        assert_eq!(message, json!({"jsonrpc": "2.0", "id": "a", "error": {"code": -32603, "message": "failed"}}));
        let (status, _, body) = parts(refusal.into_response(Some(json!("a"))));
        assert_eq!((status, body), (StatusCode::SERVICE_UNAVAILABLE, message));
    }

    #[cfg(feature = "legacy")]
    #[test]
    fn a_2025_era_calls_refusal_travels_with_http_200() {
        let refusal = Refusal::new(code::INVALID_PARAMS, "Invalid params: x").of_legacy_call();
        assert_eq!(refusal.into_response(Some(json!(1))).status(), StatusCode::OK);
    }
}
