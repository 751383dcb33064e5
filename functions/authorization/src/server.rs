//! The authorization server: one request in, one response out, nothing
//! kept between requests but what the [`GrantStore`] and the ledger hold.
//! This file routes and holds the dependencies; the flows are in
//! `authorize.rs` (the browser's part) and `token.rs` (the client's).

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use mcp_stateless::{clock::Clock, sealed::redemption::RedemptionLedger};
use serde_json::json;
use url::form_urlencoded;

use crate::{
    clients::Clients,
    discovery,
    grants::GrantStore,
    responses::{self, ErrorCode, OAuthError},
    sealing::Seals,
    settings::OAuthSettings,
    signing::TokenSigner,
    upstream::Upstream,
};

/// The function's own paths (clients see them after `MCP_BASE_PATH`).
pub struct Paths {
    /// Where the browser starts (RFC 6749, 3.1).
    pub authorize: &'static str,
    /// Where the consent form posts.
    pub consent: &'static str,
    /// Where the upstream provider returns the browser.
    pub callback: &'static str,
    /// Where a browser forgets the approvals it remembers.
    pub forget: &'static str,
    /// Codes and refresh tokens for tokens (RFC 6749, 3.2).
    pub token: &'static str,
    /// Dynamic registration (RFC 7591).
    pub register: &'static str,
    /// Refresh token revocation (RFC 7009).
    pub revoke: &'static str,
    /// The signing key (RFC 7517).
    pub jwks: &'static str,
}

/// The paths, in one place.
pub const PATHS: Paths = Paths {
    authorize: "/oauth/authorize",
    consent: "/oauth/consent",
    callback: "/oauth/callback",
    forget: "/oauth/consent/forget",
    token: "/oauth/token",
    register: "/oauth/register",
    revoke: "/oauth/revoke",
    jwks: "/oauth/jwks",
};

/// Whether `path` (the function's own) is one this server answers: the MCP
/// function's local server forwards these to it.
pub fn serves(path: &str, base_path: &str) -> bool {
    path.starts_with("/oauth/") || discovery::is_metadata_path(path, base_path)
}

/// Whom a request came from (API Gateway's source IP, or the local
/// connection's peer; an IPv6 address's /64, `mcp_stateless::senders`):
/// what costly lookups are budgeted to.
#[derive(Debug, Clone)]
pub struct Sender(pub String);

/// `request`'s [`Sender`], or one shared by all requests without one.
pub(crate) fn sender<B>(request: &Request<B>) -> &str {
    request.extensions().get::<Sender>().map_or("unknown", |sender| sender.0.as_str())
}

/// This server's URLs as clients see them, for one request.
pub struct Endpoints {
    /// The issuer: `MCP_OAUTH_ISSUER`, else (locally only) the request's
    /// loopback origin and base path.
    pub issuer: String,
    /// The MCP endpoint tokens are for.
    pub resource: String,
}

/// What the server is built from.
pub struct Parts {
    /// Configuration.
    pub settings: OAuthSettings,
    /// Who a client id is.
    pub clients: Clients,
    /// The pages' sealed records.
    pub seals: Seals,
    /// Codes and refresh tokens.
    pub grants: Arc<dyn GrantStore>,
    /// Single use of consent pages and upstream states.
    pub ledger: Arc<dyn RedemptionLedger>,
    /// Access tokens' key.
    pub signer: Arc<dyn TokenSigner>,
    /// The identity provider; `None` until configured.
    pub upstream: Option<Arc<Upstream>>,
    /// The time.
    pub clock: Arc<dyn Clock>,
}

/// The authorization server.
pub struct AuthorizationServer {
    pub(crate) parts: Parts,
}

impl AuthorizationServer {
    /// From its parts.
    pub fn new(parts: Parts) -> Self {
        Self { parts }
    }

    /// Its configuration.
    pub fn settings(&self) -> &OAuthSettings {
        &self.parts.settings
    }

    /// This server's URLs for a request to `host`.
    pub fn endpoints(&self, headers: &HeaderMap) -> Endpoints {
        let settings = &self.parts.settings;
        let issuer = settings.issuer_for(headers.get(header::HOST).and_then(|v| v.to_str().ok()));
        let resource = settings.resource.clone().unwrap_or_else(|| format!("{issuer}/mcp"));
        Endpoints { issuer, resource }
    }

    /// Answers one request.
    pub async fn handle(&self, request: Request<Bytes>) -> Response<Bytes> {
        let path = request.uri().path();
        let path = path.strip_prefix(self.parts.settings.base_path.as_str()).filter(|p| p.starts_with('/')).unwrap_or(path).to_owned();
        let method = request.method().clone();
        let cross_origin = ![PATHS.authorize, PATHS.consent, PATHS.callback, PATHS.forget].contains(&path.as_str());
        if method == Method::OPTIONS && cross_origin {
            return with_cors(responses::text(StatusCode::NO_CONTENT, ""));
        }
        let response = match (method, path.as_str()) {
            (Method::GET, path) if discovery::is_metadata_path(path, &self.parts.settings.base_path) => {
                responses::public_json(&discovery::metadata(&self.endpoints(request.headers()), &self.parts.settings.scopes))
            }
            (Method::GET, path) if path == PATHS.jwks => match self.parts.signer.public_key().await {
                Ok(key) => responses::public_json(&json!({"keys": [key.jwk()]})),
                Err(error) => {
                    tracing::error!(%error, "the signing key's public half is unavailable");
                    OAuthError::new(ErrorCode::TemporarilyUnavailable, "keys unavailable").into_json()
                }
            },
            (Method::GET, path) if path == PATHS.authorize => self.authorize(&request).await,
            (Method::POST, path) if path == PATHS.consent => self.consent(&request).await,
            (Method::GET, path) if path == PATHS.callback => self.callback(&request).await,
            (Method::GET, path) if path == PATHS.forget => self.forget_page(&request).await,
            (Method::POST, path) if path == PATHS.forget => self.forget(&request).await,
            (Method::POST, path) if path == PATHS.token => self.token(&request).await.unwrap_or_else(OAuthError::into_json),
            (Method::POST, path) if path == PATHS.revoke => self.revoke(&request).await.unwrap_or_else(OAuthError::into_json),
            (Method::POST, path) if path == PATHS.register => {
                let lifetime = self.parts.settings.lifetimes.registration;
                self.parts.clients.register(request.body(), self.parts.clock.now(), lifetime).await.unwrap_or_else(OAuthError::into_json)
            }
            (_, path) if serves(path, &self.parts.settings.base_path) => {
                responses::text(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed")
            }
            _ => responses::text(StatusCode::NOT_FOUND, "Not Found"),
        };
        let response = with_retry_after(response);
        if cross_origin { with_cors(response) } else { response }
    }
}

/// Every `503` says when to try again (RFC 9110, 10.2.3): a client that
/// cannot be known yet (its document unfetched, no copy standing in), keys
/// or the store unavailable. A second is what the SDK's own retries wait.
fn with_retry_after(mut response: Response<Bytes>) -> Response<Bytes> {
    if response.status() == StatusCode::SERVICE_UNAVAILABLE && !response.headers().contains_key(header::RETRY_AFTER) {
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

/// The JSON endpoints are called from web pages too (the MCP Inspector
/// signs in from the browser); they take no cookie, so any origin may.
fn with_cors(mut response: Response<Bytes>) -> Response<Bytes> {
    let headers = response.headers_mut();
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, POST, OPTIONS"));
    headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static("authorization, content-type, mcp-protocol-version"));
    headers.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
    response
}

/// The parameters of a query or form, refusing any given twice (RFC 6749,
/// 3.1 and 3.2: none may be).
pub(crate) fn parameters(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for (name, value) in form_urlencoded::parse(text.as_bytes()) {
        if pairs.iter().any(|(seen, _)| *seen == name) {
            return Err(format!("{name} is given more than once"));
        }
        pairs.push((name.into_owned(), value.into_owned()));
    }
    Ok(pairs)
}

/// The value of `name` among `pairs`, if given and not empty.
pub(crate) fn parameter<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str()).filter(|v| !v.is_empty())
}
