//! Bearer tokens verified in the function, for `AuthMode=jwt` behind a
//! REST API (which has no JWT authorizer; the HTTP API's authorizer does
//! this job for the buffered transport).
//!
//! Why here rather than in a Lambda authorizer: the function keeps the
//! issuer's keys for the life of the instance (fetched on its first
//! verified request, refreshed every ten minutes of use; each request is
//! then a signature check of well under a millisecond), where an
//! authorizer is one more invocation on every cache miss; and the 401 it
//! writes names the protected-resource metadata and why the token failed
//! (`error="invalid_token"`, or 403 `insufficient_scope` with the scopes),
//! which MCP clients read to sign in again, where a gateway response can
//! only carry one fixed header. The price: a request without a valid
//! token still invokes the function (throttled by the stage like any).
//!
//! What is checked, in order: one `Authorization` header, scheme `Bearer`
//! in any case (RFC 9110, 11.1); an asymmetric algorithm; a key the issuer
//! publishes for that algorithm and use (`key_set.rs`, kept by [`issuer_keys`]); the signature;
//! `iss`, `aud`, `exp` and `nbf` (with [`LEEWAY_SECONDS`]), an `iat` not in
//! the future, a non-empty `sub`; then one of the required scopes in
//! `scope` or `scp`, as API Gateway's JWT authorizer reads them. Where the
//! keys may come from is [`key_url`]'s rule.

pub mod issuer_keys;
pub mod key_set;
pub mod key_url;

use std::sync::Arc;

use bytes::Bytes;
use headers::{Authorization, HeaderMapExt, authorization::Bearer};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use jsonwebtoken::{Algorithm, Validation};
use serde::Deserialize;
use serde_json::json;

use self::{
    issuer_keys::{IssuerKeys, KeyError, KeySource, KeyTimings},
    key_url::KeyUrl,
};
use crate::{
    clock::{Clock, SystemClock},
    protocol::context::Principal,
};

/// Signature algorithms accepted (asymmetric only: a shared secret would
/// let anyone holding it mint tokens for any caller).
pub const ALGORITHMS: [Algorithm; 5] = [Algorithm::RS256, Algorithm::RS384, Algorithm::RS512, Algorithm::ES256, Algorithm::PS256];
/// Clock skew tolerated on `exp`, `nbf` and `iat`.
pub const LEEWAY_SECONDS: u64 = 60;

/// What a bearer token must carry to be accepted: the `MCP_JWT_*`
/// variables, which `settings.rs` reads and [`BearerPolicy::check`]s
/// before the start goes on.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BearerPolicy {
    /// `MCP_JWT_ISSUER`: the only `iss` accepted.
    pub issuer: String,
    /// `MCP_JWT_AUDIENCE` (comma-separated): `aud` must name one.
    pub audiences: Vec<String>,
    /// `MCP_JWT_SCOPES` (comma-separated): the token's `scope` or `scp`
    /// must hold one of them; empty: no scope required.
    pub scopes: Vec<String>,
    /// `MCP_JWT_JWKS_URL`; unset: the issuer's OpenID configuration names it.
    pub jwks_url: Option<String>,
}

impl BearerPolicy {
    /// Tokens of `issuer` for one of `audiences`, any scope, keys where the
    /// issuer's OpenID configuration names them.
    pub fn new(issuer: impl Into<String>, audiences: Vec<String>) -> Self {
        Self { issuer: issuer.into(), audiences, scopes: Vec::new(), jwks_url: None }
    }

    /// Tokens must hold one of `scopes`.
    pub fn with_scopes(mut self, scopes: Vec<String>) -> Self {
        self.scopes = scopes;
        self
    }

    /// An issuer needs the audiences it may mint for, and key URLs that
    /// pass [`key_url`]'s rule: otherwise the start stops, saying which.
    pub fn check(&self) -> Result<(), String> {
        if self.audiences.is_empty() {
            return Err("MCP_JWT_AUDIENCE must name the audiences accepted when MCP_JWT_ISSUER is set".into());
        }
        self.key_source().map(|_| ())
    }

    /// Where the keys are, each URL held to [`key_url`]'s rule.
    fn key_source(&self) -> Result<KeySource, String> {
        let issuer = KeyUrl::parse(&self.issuer).map_err(|why| format!("MCP_JWT_ISSUER {why}"))?;
        match &self.jwks_url {
            Some(url) => KeyUrl::parse(url).map(KeySource::KeySet).map_err(|why| format!("MCP_JWT_JWKS_URL {why}")),
            None => {
                // OpenID Connect Discovery 1.0, 4: the issuer, less a
                // trailing slash, then the well-known path.
                let configuration = format!("{}/.well-known/openid-configuration", issuer.as_str().trim_end_matches('/'));
                let configuration = KeyUrl::parse(&configuration).map_err(|why| format!("MCP_JWT_ISSUER {why}"))?;
                Ok(KeySource::Discovery { configuration, issuer: self.issuer.clone() })
            }
        }
    }
}

/// Why a request is refused, and the status and `WWW-Authenticate` error.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// No bearer token: 401 without an error code (RFC 6750, 3.1).
    Missing,
    /// More than one `Authorization` header: 400 `invalid_request`
    /// (RFC 6750, 3.1: more than one method for including a token).
    DuplicateAuthorization,
    /// Malformed, expired, wrongly signed, or for another issuer or audience.
    Invalid,
    /// Valid, but without a required scope: 403.
    InsufficientScope,
    /// The issuer's keys could not be fetched: 503, nothing verified.
    KeysUnavailable,
}

/// The scopes a `scope` or `scp` claim grants, as issuers write them: one
/// space-separated string (RFC 8693, 4.2), or a list (`scp` from Entra ID,
/// Okta and others). Anything else grants none: a malformed claim costs
/// the token its scopes, not its validity where none are required.
fn scopes(claim: &serde_json::Value) -> Vec<&str> {
    match claim {
        serde_json::Value::String(text) => text.split_whitespace().collect(),
        serde_json::Value::Array(list) => list.iter().filter_map(serde_json::Value::as_str).collect(),
        _ => Vec::new(),
    }
}

#[derive(Deserialize)]
struct Claims {
    iss: String,
    sub: String,
    /// NumericDate (RFC 7519, 2): seconds, possibly with a fraction.
    #[serde(default)]
    iat: Option<f64>,
    #[serde(default)]
    scope: serde_json::Value,
    #[serde(default)]
    scp: serde_json::Value,
}

/// Checks each request's `Authorization: Bearer` token against a
/// [`BearerPolicy`], with the issuer's keys kept for the life of the
/// instance ([`issuer_keys`]).
pub struct BearerVerifier {
    policy: BearerPolicy,
    keys: Arc<IssuerKeys>,
}

impl BearerVerifier {
    /// On the system clock with the default [`KeyTimings`]. Fails, saying
    /// why, when a key URL breaks [`key_url`]'s rule or no TLS root
    /// certificates could be loaded; fetches nothing yet.
    pub fn new(policy: BearerPolicy) -> Result<Self, String> {
        Self::with_keys(policy, KeyTimings::default(), Arc::new(SystemClock))
    }

    /// With the key set's lifetimes timed by `clock` (tests move it).
    pub fn with_keys(policy: BearerPolicy, timings: KeyTimings, clock: Arc<dyn Clock>) -> Result<Self, String> {
        let keys = IssuerKeys::new(policy.key_source()?, timings, clock)?;
        Ok(Self { policy, keys: Arc::new(keys) })
    }

    pub(crate) fn policy(&self) -> &BearerPolicy {
        &self.policy
    }

    /// The caller the request's `Authorization: Bearer` token names.
    pub async fn verify(&self, headers: &HeaderMap) -> Result<Principal, Refusal> {
        let authorization = bearer(headers)?;
        let token = authorization.token();
        let header = jsonwebtoken::decode_header(token).map_err(|_| Refusal::Invalid)?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(Refusal::Invalid);
        }
        let key = self.keys.key(header.kid.as_deref(), header.alg).await.map_err(|error| match error {
            KeyError::Unknown => Refusal::Invalid,
            KeyError::Unavailable => Refusal::KeysUnavailable,
        })?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.policy.issuer]);
        validation.set_audience(&self.policy.audiences);
        validation.set_required_spec_claims(&["exp", "iss", "sub", "aud"]);
        validation.leeway = LEEWAY_SECONDS;
        validation.validate_nbf = true;
        let claims = jsonwebtoken::decode::<Claims>(token, &key, &validation).map_err(|_| Refusal::Invalid)?.claims;
        // `iss` is the configured issuer already.
        if claims.sub.trim().is_empty() {
            return Err(Refusal::Invalid);
        }
        // jsonwebtoken does not read `iat`: a token issued in the future
        // comes from a clock or an issuer that is not to be trusted.
        let latest = (jsonwebtoken::get_current_timestamp() + LEEWAY_SECONDS) as f64;
        if claims.iat.is_some_and(|issued| issued > latest) {
            return Err(Refusal::Invalid);
        }
        if !self.policy.scopes.is_empty() {
            let mut granted = scopes(&claims.scope).into_iter().chain(scopes(&claims.scp));
            if !granted.any(|scope| self.policy.scopes.iter().any(|wanted| wanted == scope)) {
                return Err(Refusal::InsufficientScope);
            }
        }
        Ok(Principal::Verified { issuer: claims.iss, subject: claims.sub })
    }
}

/// The one `Authorization: Bearer` header; any other scheme is no token.
fn bearer(headers: &HeaderMap) -> Result<Authorization<Bearer>, Refusal> {
    if headers.get_all(header::AUTHORIZATION).iter().nth(1).is_some() {
        return Err(Refusal::DuplicateAuthorization);
    }
    match headers.typed_try_get::<Authorization<Bearer>>() {
        Ok(Some(authorization)) if !authorization.token().is_empty() => Ok(authorization),
        _ => Err(Refusal::Missing),
    }
}

impl Refusal {
    /// The response, naming where the protected-resource metadata is and,
    /// on a 401 or 403, the scopes a token needs here (`scopes`; none
    /// named when empty).
    pub fn into_response(self, metadata_url: &str, scopes: &[String]) -> http::Response<Bytes> {
        // 2025-11-25 basic/authorization ("Protected Resource Metadata
        // Discovery Requirements"): a 401 SHOULD name the scopes to ask
        // for, which clients prefer over the metadata's list.
        let scope = scope_parameter(scopes);
        let (status, challenge, message) = match self {
            Refusal::Missing => (
                StatusCode::UNAUTHORIZED,
                format!("Bearer {scope}resource_metadata=\"{metadata_url}\""),
                "Unauthorized: a bearer token is required",
            ),
            Refusal::DuplicateAuthorization => (
                StatusCode::BAD_REQUEST,
                format!("Bearer error=\"invalid_request\", resource_metadata=\"{metadata_url}\""),
                "Bad Request: send one Authorization header",
            ),
            Refusal::Invalid => (
                StatusCode::UNAUTHORIZED,
                format!("Bearer error=\"invalid_token\", {scope}resource_metadata=\"{metadata_url}\""),
                "Unauthorized: the bearer token is not valid here",
            ),
            Refusal::InsufficientScope => (
                StatusCode::FORBIDDEN,
                format!("Bearer error=\"insufficient_scope\", {scope}resource_metadata=\"{metadata_url}\""),
                "Forbidden: the bearer token lacks the scope this server needs",
            ),
            Refusal::KeysUnavailable => {
                let mut response = http::Response::new(Bytes::from(
                    json!({"message": "Service Unavailable: the token issuer's keys could not be fetched"}).to_string(),
                ));
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

/// `scope="a b", ` for a challenge, or nothing when no scope is named.
/// Only scope-tokens are written (RFC 6749, 3.3: printable ASCII but
/// space, `"` and `\`; RFC 6750, 3): the value is a quoted string, and a
/// configured scope holding a quote would end it early and pass the rest
/// off as parameters of its own.
fn scope_parameter(scopes: &[String]) -> String {
    let is_scope_token = |scope: &&String| !scope.is_empty() && scope.bytes().all(|b| matches!(b, 0x21 | 0x23..=0x5b | 0x5d..=0x7e));
    let tokens: Vec<&str> = scopes.iter().filter(is_scope_token).map(String::as_str).collect();
    if tokens.is_empty() { String::new() } else { format!("scope=\"{}\", ", tokens.join(" ")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn challenge(refusal: Refusal, scopes: &[&str]) -> String {
        let scopes: Vec<String> = scopes.iter().map(|scope| (*scope).to_owned()).collect();
        let response = refusal.into_response("https://mcp.example.com/.well-known/oauth-protected-resource/mcp", &scopes);
        response.headers().get(header::WWW_AUTHENTICATE).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
    }

    #[test]
    fn every_401_and_403_names_the_scopes_quoted() {
        let metadata = "resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\"";
        assert_eq!(challenge(Refusal::Missing, &["mcp", "files:read"]), format!("Bearer scope=\"mcp files:read\", {metadata}"));
        assert_eq!(challenge(Refusal::Invalid, &["mcp"]), format!("Bearer error=\"invalid_token\", scope=\"mcp\", {metadata}"));
        assert_eq!(
            challenge(Refusal::InsufficientScope, &["mcp"]),
            format!("Bearer error=\"insufficient_scope\", scope=\"mcp\", {metadata}")
        );
        assert_eq!(challenge(Refusal::DuplicateAuthorization, &["mcp"]), format!("Bearer error=\"invalid_request\", {metadata}"));
        assert_eq!(challenge(Refusal::Missing, &[]), format!("Bearer {metadata}"), "no scope configured, none named");
    }

    #[test]
    fn a_scope_that_would_break_the_quoting_is_left_out() {
        let header = challenge(Refusal::Missing, &["mcp", "a\"b", "back\\slash", "two words", "", "é"]);
        assert!(header.starts_with("Bearer scope=\"mcp\", resource_metadata="), "{header}");
        assert_eq!(challenge(Refusal::Missing, &["\", x=\"y"]), challenge(Refusal::Missing, &[]));
    }
}
