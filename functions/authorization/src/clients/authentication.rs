//! How a client proves itself at the token endpoint: not at all (a public
//! client, whose proof is PKCE and refresh rotation), or, for a client
//! whose metadata document publishes keys, an RFC 7523 assertion
//! (`private_key_jwt`, RFC 7521 4.2) signed with one of them.
//!
//! An assertion names the client in `iss` and `sub`, this server in `aud`
//! (its token endpoint or its issuer), expires within
//! [`MAX_ASSERTION_LIFETIME`] and carries a `jti` that is taken once
//! (the caller spends it in the single-use ledger).

use jsonwebtoken::{Algorithm, Validation};
use mcp_stateless::edge::bearer::{
    ALGORITHMS, LEEWAY_SECONDS,
    key_set::{KeySet, Lookup},
};
use serde::Deserialize;
use url::Url;

/// `client_assertion_type` of a JWT assertion (RFC 7523, 2.2).
pub const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// The longest an assertion may live, `iat` (or now) to `exp`: a short
/// window keeps the single-use ledger small and a leaked one useless soon.
pub const MAX_ASSERTION_LIFETIME: u64 = 300;

/// How a client authenticates at the token endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Authentication {
    /// A public client.
    None,
    /// `private_key_jwt`, with the keys its document names.
    PrivateKeyJwt {
        /// Where its keys are.
        keys: KeySource,
        /// Whether it must authenticate: its document offers no `none`.
        required: bool,
    },
}

impl Authentication {
    /// Whether a token request of this client without an assertion is refused.
    pub fn required(&self) -> bool {
        matches!(self, Self::PrivateKeyJwt { required: true, .. })
    }
}

/// Where a client's public keys are published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// In the document itself (`jwks`), as JSON.
    Inline(String),
    /// At `jwks_uri`, fetched like the document.
    Url(Url),
}

/// Why an assertion is refused: said to the developer, as `invalid_client`.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum AssertionError {
    /// Not a JWT, or of an algorithm not taken.
    #[error("the client assertion is not a JWT signed with an asymmetric key")]
    Malformed,
    /// No published key verifies it.
    #[error("no key the client publishes verifies its assertion")]
    UnknownKey,
    /// Signature, `iss`, `sub`, `aud`, `exp` or `nbf` do not hold.
    #[error("the client assertion is not valid: {0}")]
    Invalid(String),
    /// It lives longer than [`MAX_ASSERTION_LIFETIME`] or has no `jti`.
    #[error("the client assertion must expire within {MAX_ASSERTION_LIFETIME} s and carry a jti")]
    TooLong,
    /// The client publishes no keys it could sign with.
    #[error("the client publishes no keys to authenticate with")]
    NoKeys,
}

/// What a verified assertion leaves to spend: its `jti`, good until `exp`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The assertion's id, to be taken once.
    pub jti: String,
    /// When it expires.
    pub expires_at: u64,
}

#[derive(Deserialize)]
struct Claims {
    exp: u64,
    iat: Option<u64>,
    jti: Option<String>,
}

/// The header of `assertion`, if it may be one: its key id and algorithm.
pub fn header(assertion: &str) -> Result<(Option<String>, Algorithm), AssertionError> {
    let header = jsonwebtoken::decode_header(assertion).map_err(|_| AssertionError::Malformed)?;
    if !ALGORITHMS.contains(&header.alg) {
        return Err(AssertionError::Malformed);
    }
    Ok((header.kid, header.alg))
}

/// Verifies `assertion` of `client_id` with `keys`, for a server known as
/// any of `audiences`, at `now`.
pub fn verify(assertion: &str, client_id: &str, keys: &KeySet, audiences: &[&str], now: u64) -> Result<Verified, AssertionError> {
    let (kid, alg) = header(assertion)?;
    let Lookup::Usable(key) = keys.lookup(kid.as_deref(), alg) else {
        return Err(AssertionError::UnknownKey);
    };
    let mut validation = Validation::new(alg);
    validation.set_issuer(&[client_id]);
    validation.sub = Some(client_id.to_owned());
    validation.set_audience(audiences);
    validation.set_required_spec_claims(&["exp", "iss", "sub", "aud"]);
    validation.leeway = LEEWAY_SECONDS;
    validation.validate_nbf = true;
    let claims =
        jsonwebtoken::decode::<Claims>(assertion, &key, &validation).map_err(|error| AssertionError::Invalid(reason(&error)))?.claims;
    let issued = claims.iat.unwrap_or(now).min(now);
    let jti = claims.jti.filter(|jti| !jti.is_empty() && jti.len() <= 256).ok_or(AssertionError::TooLong)?;
    if claims.exp > issued + MAX_ASSERTION_LIFETIME + LEEWAY_SECONDS || claims.iat.is_some_and(|iat| iat > now + LEEWAY_SECONDS) {
        return Err(AssertionError::TooLong);
    }
    // Taken until it can no longer be accepted: its `exp`, and the leeway.
    Ok(Verified { jti, expires_at: claims.exp + LEEWAY_SECONDS })
}

/// What was wrong, without the library's detail.
fn reason(error: &jsonwebtoken::errors::Error) -> String {
    use jsonwebtoken::errors::ErrorKind;
    match error.kind() {
        ErrorKind::InvalidSignature => "its signature does not verify",
        ErrorKind::ExpiredSignature => "it has expired",
        ErrorKind::ImmatureSignature => "it is not valid yet",
        ErrorKind::InvalidIssuer => "iss is not the client id",
        ErrorKind::InvalidSubject => "sub is not the client id",
        ErrorKind::InvalidAudience => "aud is not this server's token endpoint or issuer",
        ErrorKind::MissingRequiredClaim(_) => "exp, iss, sub and aud are required",
        _ => "it could not be read",
    }
    .to_owned()
}
