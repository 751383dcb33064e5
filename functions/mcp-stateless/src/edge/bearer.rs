//! Bearer tokens verified in the function, for `AuthMode=jwt` behind a
//! REST API (which has no JWT authorizer; the HTTP API's authorizer does
//! this job for the buffered transport).
//!
//! Why here rather than in a Lambda authorizer: the function keeps the
//! issuer's keys for the life of the instance (one fetch per cold start,
//! then a signature check of well under a millisecond), where an
//! authorizer is one more invocation on every cache miss; and the 401 it
//! writes names the protected-resource metadata and why the token failed
//! (`error="invalid_token"`, or 403 `insufficient_scope` with the scopes),
//! which MCP clients read to sign in again, where a gateway response can
//! only carry one fixed header. The price: a request without a valid
//! token still invokes the function (throttled by the stage like any).
//!
//! Keys come from the issuer's OpenID configuration (`jwks_uri`), or
//! `MCP_JWT_JWKS_URL`; a token signed with a key not seen yet refreshes
//! them, at most once a minute.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use http_body_util::{BodyExt, Empty, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::TokioExecutor,
};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, jwk::JwkSet};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::RwLock;

use crate::protocol::context::Principal;

/// Signature algorithms accepted (asymmetric only: a shared secret would
/// let anyone holding it mint tokens for any caller).
const ALGORITHMS: [Algorithm; 5] = [Algorithm::RS256, Algorithm::RS384, Algorithm::RS512, Algorithm::ES256, Algorithm::PS256];
/// Clock skew tolerated on `exp` and `nbf`.
const LEEWAY_SECONDS: u64 = 60;
/// The least time between two key fetches that a token with an unknown
/// key triggers: forged `kid`s cannot make the function hammer the issuer.
const REFRESH_FLOOR: Duration = Duration::from_secs(60);
/// A key set larger than this is not one.
const MAX_DOCUMENT_BYTES: usize = 256 * 1024;
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone)]
pub struct BearerPolicy {
    /// `MCP_JWT_ISSUER`: the only `iss` accepted.
    pub issuer: String,
    /// `MCP_JWT_AUDIENCE` (comma-separated): `aud` must name one.
    pub audiences: Vec<String>,
    /// `MCP_JWT_SCOPES` (comma-separated): the token's `scope` must hold
    /// one of them; empty: no scope required.
    pub scopes: Vec<String>,
    /// `MCP_JWT_JWKS_URL`; unset: the issuer's OpenID configuration names it.
    pub jwks_url: Option<String>,
}

impl BearerPolicy {
    /// `None` unless `MCP_JWT_ISSUER` is set.
    pub fn from_env() -> Result<Option<Self>, String> {
        let var = |name: &str| std::env::var(name).ok().map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        let list = |name: &str| var(name).map(|v| v.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect()).unwrap_or_default();
        let Some(issuer) = var("MCP_JWT_ISSUER") else { return Ok(None) };
        let policy = Self { issuer, audiences: list("MCP_JWT_AUDIENCE"), scopes: list("MCP_JWT_SCOPES"), jwks_url: var("MCP_JWT_JWKS_URL") };
        if policy.audiences.is_empty() {
            return Err("MCP_JWT_AUDIENCE must name the audiences accepted when MCP_JWT_ISSUER is set".into());
        }
        for url in std::iter::once(&policy.issuer).chain(policy.jwks_url.iter()) {
            if !secure(url) {
                return Err(format!("{url} must be https (plain http only on loopback)"));
            }
        }
        Ok(Some(policy))
    }
}

/// Keys are fetched over https; plain http only from this machine (tests,
/// a local identity provider).
fn secure(url: &str) -> bool {
    url.starts_with("https://")
        || ["http://127.0.0.1", "http://localhost", "http://[::1]"].iter().any(|p| url.strip_prefix(p).is_some_and(|rest| rest.is_empty() || rest.starts_with([':', '/'])))
}

/// Why a request is refused, and the status and `WWW-Authenticate` error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No bearer token: 401 without an error code (RFC 6750, 3.1).
    Missing,
    /// Malformed, expired, wrongly signed, or for another issuer or audience.
    Invalid,
    /// Valid, but without a required scope: 403.
    InsufficientScope,
    /// The issuer's keys could not be fetched: 503, nothing verified.
    KeysUnavailable,
}

#[derive(Deserialize)]
struct Claims {
    iss: String,
    sub: String,
    #[serde(default)]
    scope: Option<String>,
}

struct Keys {
    set: JwkSet,
}

/// The keys last fetched, and when a fetch was last tried (fetches are at
/// least [`REFRESH_FLOOR`] apart, failed ones included).
struct KeyState {
    keys: Option<Keys>,
    attempted: Instant,
}

type HttpsClient = Client<HttpsConnector<HttpConnector>, Empty<Bytes>>;

pub struct BearerVerifier {
    policy: BearerPolicy,
    keys: RwLock<Option<KeyState>>,
    client: HttpsClient,
}

impl BearerVerifier {
    pub fn new(policy: BearerPolicy) -> Result<Arc<Self>, String> {
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_native_roots()
            .map_err(|e| format!("no TLS root certificates: {e}"))?
            .https_or_http()
            .enable_http1()
            .build();
        let client = Client::builder(TokioExecutor::new()).build(connector);
        Ok(Arc::new(Self { policy, keys: RwLock::new(None), client }))
    }

    pub fn policy(&self) -> &BearerPolicy {
        &self.policy
    }

    /// The caller the request's `Authorization: Bearer` token names.
    pub async fn verify(&self, headers: &HeaderMap) -> Result<Principal, Refusal> {
        let token = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or(Refusal::Missing)?;
        let header = jsonwebtoken::decode_header(token).map_err(|_| Refusal::Invalid)?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(Refusal::Invalid);
        }
        let key = self.key(header.kid.as_deref()).await?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.policy.issuer]);
        validation.set_audience(&self.policy.audiences);
        validation.set_required_spec_claims(&["exp", "iss", "sub", "aud"]);
        validation.leeway = LEEWAY_SECONDS;
        validation.validate_nbf = true;
        let claims = jsonwebtoken::decode::<Claims>(token, &key, &validation).map_err(|_| Refusal::Invalid)?.claims;
        if claims.iss.trim().is_empty() || claims.sub.trim().is_empty() {
            return Err(Refusal::Invalid);
        }
        if !self.policy.scopes.is_empty() {
            let granted = claims.scope.unwrap_or_default();
            if !granted.split_whitespace().any(|scope| self.policy.scopes.iter().any(|wanted| wanted == scope)) {
                return Err(Refusal::InsufficientScope);
            }
        }
        Ok(Principal::Verified { issuer: claims.iss, subject: claims.sub })
    }

    /// The key `kid` names, fetching the key set when it is not known yet
    /// (first use, or a rotation).
    async fn key(&self, kid: Option<&str>) -> Result<DecodingKey, Refusal> {
        let found = |keys: &Keys| {
            let jwk = match kid {
                Some(kid) => keys.set.find(kid),
                // A token without `kid` only fits an issuer with one key.
                None if keys.set.keys.len() == 1 => keys.set.keys.first(),
                None => None,
            };
            jwk.and_then(|jwk| DecodingKey::from_jwk(jwk).ok())
        };
        if let Some(key) = self.keys.read().await.as_ref().and_then(|state| state.keys.as_ref()).and_then(found) {
            return Ok(key);
        }
        let mut state = self.keys.write().await;
        // Another request may have fetched them meanwhile.
        if let Some(key) = state.as_ref().and_then(|state| state.keys.as_ref()).and_then(found) {
            return Ok(key);
        }
        if state.as_ref().is_none_or(|state| state.attempted.elapsed() >= REFRESH_FLOOR) {
            let fetched = self.fetch_keys().await;
            let keys = state.take().and_then(|state| state.keys);
            *state = Some(match fetched {
                Ok(set) => KeyState { keys: Some(Keys { set }), attempted: Instant::now() },
                Err(error) => {
                    tracing::error!(%error, "the issuer's keys could not be fetched");
                    KeyState { keys, attempted: Instant::now() }
                }
            });
        }
        match state.as_ref().and_then(|state| state.keys.as_ref()) {
            None => Err(Refusal::KeysUnavailable),
            Some(keys) => found(keys).ok_or(Refusal::Invalid),
        }
    }

    async fn fetch_keys(&self) -> Result<JwkSet, String> {
        let url = match &self.policy.jwks_url {
            Some(url) => url.clone(),
            None => {
                let configuration = format!("{}/.well-known/openid-configuration", self.policy.issuer.trim_end_matches('/'));
                let document: serde_json::Value = self.get_json(&configuration).await?;
                let url = document["jwks_uri"].as_str().ok_or("the OpenID configuration names no jwks_uri")?.to_owned();
                if !secure(&url) {
                    return Err(format!("jwks_uri {url} is not https"));
                }
                url
            }
        };
        self.get_json(&url).await
    }

    async fn get_json<T: serde::de::DeserializeOwned>(&self, url: &str) -> Result<T, String> {
        let uri: http::Uri = url.parse().map_err(|e| format!("{url}: {e}"))?;
        let response = tokio::time::timeout(FETCH_TIMEOUT, self.client.get(uri))
            .await
            .map_err(|_| format!("{url}: timed out"))?
            .map_err(|e| format!("{url}: {e}"))?;
        if response.status() != StatusCode::OK {
            return Err(format!("{url}: HTTP {}", response.status()));
        }
        let body = tokio::time::timeout(FETCH_TIMEOUT, Limited::new(response.into_body(), MAX_DOCUMENT_BYTES).collect())
            .await
            .map_err(|_| format!("{url}: timed out"))?
            .map_err(|e| format!("{url}: {e}"))?
            .to_bytes();
        serde_json::from_slice(&body).map_err(|e| format!("{url}: {e}"))
    }
}

impl Refusal {
    /// The response, naming where the protected-resource metadata is.
    pub fn into_response(self, metadata_url: &str, scopes: &[String]) -> http::Response<Bytes> {
        let (status, challenge, message) = match self {
            Refusal::Missing => (StatusCode::UNAUTHORIZED, format!("Bearer resource_metadata=\"{metadata_url}\""), "Unauthorized: a bearer token is required"),
            Refusal::Invalid => (
                StatusCode::UNAUTHORIZED,
                format!("Bearer error=\"invalid_token\", resource_metadata=\"{metadata_url}\""),
                "Unauthorized: the bearer token is not valid here",
            ),
            Refusal::InsufficientScope => (
                StatusCode::FORBIDDEN,
                format!("Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{metadata_url}\"", scopes.join(" ")),
                "Forbidden: the bearer token lacks the scope this server needs",
            ),
            Refusal::KeysUnavailable => {
                let mut response = http::Response::new(Bytes::from(json!({"message": "Service Unavailable: the token issuer's keys could not be fetched"}).to_string()));
                *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
                response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
                return response;
            }
        };
        let mut response = http::Response::new(Bytes::from(json!({"message": message}).to_string()));
        *response.status_mut() = status;
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_fetched_over_https_or_from_this_machine_only() {
        assert!(secure("https://issuer.example.com"));
        assert!(secure("http://127.0.0.1:8080/jwks.json"));
        assert!(secure("http://localhost"));
        assert!(!secure("http://issuer.example.com"));
        assert!(!secure("http://127.0.0.1.evil.example/jwks.json"));
        assert!(!secure("http://localhost.evil.example"));
    }
}
