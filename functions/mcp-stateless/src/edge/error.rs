//! Everything the edge refuses before a handler runs, mapped once to an HTTP
//! status and a JSON-RPC error code (basic/transports/streamable-http).

use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use crate::{protocol::context::MetaError, subscriptions::TaskIdsRefusal};

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

    /// The HTTP response: a JSON-RPC error object echoing `id` when known.
    pub(crate) fn into_response(self, id: Option<Value>) -> http::Response<Bytes> {
        let mut error = json!({"code": self.code(), "message": self.to_string()});
        if let Some(data) = self.data() {
            error["data"] = data;
        }
        let mut response = jsonrpc_error_response(self.status(), id, error);
        if matches!(self, Self::MethodNotAllowed) {
            response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
        }
        response
    }
}

/// A JSON body `{"jsonrpc":"2.0","id":…,"error":…}` with the given status.
pub fn jsonrpc_error_response(status: StatusCode, id: Option<Value>, error: Value) -> http::Response<Bytes> {
    let body = json!({"jsonrpc": "2.0", "id": id.unwrap_or(Value::Null), "error": error});
    let mut response = http::Response::new(Bytes::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

impl From<TaskIdsRefusal> for EdgeError {
    fn from(refusal: TaskIdsRefusal) -> Self {
        match refusal {
            TaskIdsRefusal::Malformed(reason) => Self::Params(reason),
            TaskIdsRefusal::MissingCapability(required) => Self::MissingCapability(required),
        }
    }
}
