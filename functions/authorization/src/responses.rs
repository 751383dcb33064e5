//! The answers the server sends, built in one place: OAuth errors as JSON
//! (RFC 6749, 5.2), JSON documents, redirects, and HTML pages under
//! headers that keep them out of frames and away from other origins.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use serde_json::{Value, json};

/// An OAuth error code (RFC 6749, 4.1.2.1 and 5.2; RFC 7591, 3.2.2; RFC 8707, 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorCode {
    /// A parameter missing, repeated, malformed or unsupported.
    InvalidRequest,
    /// The client is unknown, or not this client.
    InvalidClient,
    /// A code or refresh token that is invalid, expired, used or another's.
    InvalidGrant,
    /// A grant type this server does not issue.
    UnsupportedGrantType,
    /// A response type other than `code`.
    UnsupportedResponseType,
    /// A scope never offered or never granted.
    InvalidScope,
    /// A resource other than this MCP server.
    InvalidTarget,
    /// The user said no.
    AccessDenied,
    /// A redirect URI that may not be registered.
    InvalidRedirectUri,
    /// Client metadata that may not be registered.
    InvalidClientMetadata,
    /// The server's own failure.
    ServerError,
    /// The server cannot serve now; try again.
    TemporarilyUnavailable,
}

impl ErrorCode {
    /// The code as the wire spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::InvalidClient => "invalid_client",
            ErrorCode::InvalidGrant => "invalid_grant",
            ErrorCode::UnsupportedGrantType => "unsupported_grant_type",
            ErrorCode::UnsupportedResponseType => "unsupported_response_type",
            ErrorCode::InvalidScope => "invalid_scope",
            ErrorCode::InvalidTarget => "invalid_target",
            ErrorCode::AccessDenied => "access_denied",
            ErrorCode::InvalidRedirectUri => "invalid_redirect_uri",
            ErrorCode::InvalidClientMetadata => "invalid_client_metadata",
            ErrorCode::ServerError => "server_error",
            ErrorCode::TemporarilyUnavailable => "temporarily_unavailable",
        }
    }

    /// The status a JSON endpoint answers it with.
    fn status(self) -> StatusCode {
        match self {
            ErrorCode::InvalidClient => StatusCode::UNAUTHORIZED,
            ErrorCode::ServerError => StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::TemporarilyUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::BAD_REQUEST,
        }
    }
}

/// An OAuth error: its code and a description for the developer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthError {
    /// The code.
    pub code: ErrorCode,
    /// What was wrong, in words (never a secret, never a token).
    pub description: String,
}

impl OAuthError {
    /// `code`, described.
    pub fn new(code: ErrorCode, description: impl Into<String>) -> Self {
        Self { code, description: description.into() }
    }

    /// The answer of a JSON endpoint (token, registration, revocation).
    pub fn into_json(self) -> Response<Bytes> {
        let mut response = json_response(self.code.status(), &json!({"error": self.code.as_str(), "error_description": self.description}));
        if self.code == ErrorCode::InvalidClient {
            // RFC 6749, 5.2: a 401 names the scheme the client may use.
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Basic realm=\"oauth\""));
        }
        response
    }
}

/// A JSON document that must not be cached (tokens, registrations, errors).
pub fn json_response(status: StatusCode, body: &Value) -> Response<Bytes> {
    let mut response = Response::new(Bytes::from(body.to_string()));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A public document clients may cache for five minutes (metadata, keys).
pub fn public_json(body: &Value) -> Response<Bytes> {
    let mut response = json_response(StatusCode::OK, body);
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=300"));
    response
}

/// A 303 to `location` (a form's POST then becomes the next page's GET).
pub fn redirect(location: &str) -> Response<Bytes> {
    let mut response = Response::new(Bytes::new());
    *response.status_mut() = StatusCode::SEE_OTHER;
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response.headers_mut().insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    response
}

/// An HTML page of this server's: no framing (clickjacking a consent is
/// approving it), no script, no asset from anywhere, never cached.
pub fn page(status: StatusCode, html: String) -> Response<Bytes> {
    let mut response = Response::new(Bytes::from(html));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Plain text: 404s and 405s.
pub fn text(status: StatusCode, body: &'static str) -> Response<Bytes> {
    let mut response = Response::new(Bytes::from_static(body.as_bytes()));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}
