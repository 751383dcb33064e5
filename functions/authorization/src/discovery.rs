//! What clients read before they sign in: the server's metadata (RFC 8414,
//! and the same document at OpenID Connect Discovery's path, which MCP
//! clients also try) and its signing key (JWKS, RFC 7517).
//!
//! MCP clients look for the metadata of an issuer `https://host/stage` at
//! `https://host/.well-known/oauth-authorization-server/stage` and
//! `https://host/.well-known/openid-configuration/stage` (path insertion),
//! then `https://host/stage/.well-known/openid-configuration` (appending).
//! Behind an API Gateway stage only the last reaches this function; behind
//! a custom domain with no base path the issuer has no path and every form
//! does. The document is the same at each.

use mcp_stateless::edge::bearer::ALGORITHMS;
use serde_json::{Value, json};

use crate::{
    scopes,
    server::{Endpoints, PATHS},
};

/// The algorithms a client assertion may be signed with.
fn algorithms() -> Vec<String> {
    ALGORITHMS.iter().map(|alg| format!("{alg:?}")).collect()
}

/// The metadata document for `endpoints`, offering `scopes`.
pub fn metadata(endpoints: &Endpoints, scopes: &[String]) -> Value {
    let issuer = &endpoints.issuer;
    json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}{}", PATHS.authorize),
        "token_endpoint": format!("{issuer}{}", PATHS.token),
        "registration_endpoint": format!("{issuer}{}", PATHS.register),
        "revocation_endpoint": format!("{issuer}{}", PATHS.revoke),
        "jwks_uri": format!("{issuer}{}", PATHS.jwks),
        "scopes_supported": scopes::advertised(scopes),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        // `none` for every client; `private_key_jwt` for a metadata
        // document that publishes keys (registered clients are public).
        "token_endpoint_auth_methods_supported": ["none", "private_key_jwt"],
        "token_endpoint_auth_signing_alg_values_supported": algorithms(),
        // The same at revocation: a family started with an assertion is
        // revoked only with one.
        "revocation_endpoint_auth_methods_supported": ["none", "private_key_jwt"],
        "revocation_endpoint_auth_signing_alg_values_supported": algorithms(),
        "client_id_metadata_document_supported": true,
        "authorization_response_iss_parameter_supported": true,
        // What OpenID Connect Discovery requires of its document (clients
        // that read this path parse it as one); no ID token is issued.
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["ES256"],
        "resource_indicators_supported": true,
    })
}

/// The well-known paths the metadata is served at, for a function whose
/// clients see `base_path` before its own paths.
pub fn is_metadata_path(path: &str, base_path: &str) -> bool {
    ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"]
        .iter()
        .any(|well_known| path == *well_known || (!base_path.is_empty() && path.strip_prefix(well_known) == Some(base_path)))
}
