//! OAuth 2.0 Protected Resource Metadata (RFC 9728), which MCP servers must
//! publish (basic/authorization): where clients find the authorization
//! server for this endpoint. Served without auth at
//! `/.well-known/oauth-protected-resource` and at its path-suffixed form for
//! `/mcp`. Off (404) unless `MCP_AUTHORIZATION_SERVERS` is set. For `/mcp/`
//! typed with its slash, at `.../oauth-protected-resource/mcp/`, naming
//! that resource (RFC 9728, 3.3: the `resource` is the one whose
//! well-known URL was asked).

use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use serde_json::json;

use crate::edge::policy::{MCP_PATH, is_mcp_path};

/// The metadata document's path (RFC 9728); it is served there and with
/// [`MCP_PATH`] appended.
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// What the metadata document says. The default names no authorization
/// server, and so publishes nothing (auth off).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ResourceMetadata {
    /// `MCP_AUTHORIZATION_SERVERS`: issuer URLs, comma-separated.
    pub authorization_servers: Vec<String>,
    /// `MCP_SCOPES_SUPPORTED`, comma-separated.
    pub scopes_supported: Vec<String>,
    /// `MCP_RESOURCE`: the canonical URI of the MCP endpoint. Unset: the
    /// request's own `https://<host><base path>/mcp` (`http` for loopback hosts).
    pub resource: Option<String>,
    /// `MCP_BASE_PATH`: the prefix clients see before `/mcp` (a REST API's
    /// stage, `/api`), which the function's own paths do not carry.
    pub base_path: String,
}

impl ResourceMetadata {
    /// A document naming `authorization_servers` and `scopes_supported`,
    /// for the request's own resource URI at the domain root.
    pub fn new(authorization_servers: Vec<String>, scopes_supported: Vec<String>) -> Self {
        Self { authorization_servers, scopes_supported, resource: None, base_path: String::new() }
    }

    /// Clients see the endpoint under `base_path` (a REST API's stage).
    pub fn with_base_path(mut self, base_path: impl Into<String>) -> Self {
        self.base_path = base_path.into();
        self
    }

    pub(crate) fn is_published_at(path: &str) -> bool {
        path == WELL_KNOWN || path.strip_prefix(WELL_KNOWN).is_some_and(is_mcp_path)
    }

    /// Where clients find the document for a request to `host` at
    /// `mcp_path` (`/mcp` or `/mcp/`, named in `WWW-Authenticate`): under
    /// the base path, as this function serves it.
    pub fn url(&self, host: &str, mcp_path: &str) -> String {
        let origin = self.resource.as_deref().and_then(origin_of).unwrap_or_else(|| format!("{}://{host}", scheme_for(host)));
        format!("{origin}{}{WELL_KNOWN}{}", self.base_path, typed(mcp_path))
    }

    /// The metadata document asked for at `path`, or `None` when no
    /// authorization server is configured (auth off).
    pub fn response(&self, host: &str, path: &str) -> Option<http::Response<Bytes>> {
        if self.authorization_servers.is_empty() {
            return None;
        }
        let resource = self.resource.clone().unwrap_or_else(|| format!("{}://{host}{}{MCP_PATH}", scheme_for(host), self.base_path));
        // The bare well-known path and `/mcp` name the canonical resource;
        // `/mcp/`, the resource as typed.
        let resource = if path.ends_with('/') && !resource.ends_with('/') { format!("{resource}/") } else { resource };
        let document = json!({
            "resource": resource,
            "authorization_servers": self.authorization_servers,
            "scopes_supported": self.scopes_supported,
            "bearer_methods_supported": ["header"],
        });
        let mut response = http::Response::new(Bytes::from(document.to_string()));
        *response.status_mut() = StatusCode::OK;
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("max-age=300"));
        Some(response)
    }
}

/// `/mcp/` when that is what the client typed, else [`MCP_PATH`].
fn typed(mcp_path: &str) -> &'static str {
    if mcp_path.ends_with('/') { "/mcp/" } else { MCP_PATH }
}

/// `http` for loopback hosts (the local server), `https` for any other:
/// how a URL of this server is written from a request's `Host`.
pub fn scheme_for(host: &str) -> &'static str {
    if crate::loopback::is_loopback_authority(host) { "http" } else { "https" }
}

/// `scheme://authority` of a URL.
fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split('/').next().filter(|a| !a.is_empty())?;
    Some(format!("{scheme}://{authority}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn served_at_both_paths_only_when_configured() {
        assert!(ResourceMetadata::is_published_at("/.well-known/oauth-protected-resource"));
        assert!(ResourceMetadata::is_published_at("/.well-known/oauth-protected-resource/mcp"));
        assert!(ResourceMetadata::is_published_at("/.well-known/oauth-protected-resource/mcp/"));
        assert!(!ResourceMetadata::is_published_at("/.well-known/oauth-protected-resource/mcp/x"));
        assert!(!ResourceMetadata::is_published_at("/.well-known/oauth-protected-resource/other"));
        assert!(ResourceMetadata::default().response("example.com", WELL_KNOWN).is_none());

        let metadata = ResourceMetadata {
            authorization_servers: vec!["https://issuer.example.com".into()],
            scopes_supported: vec!["mcp".into()],
            resource: None,
            base_path: String::new(),
        };
        let body: serde_json::Value = serde_json::from_slice(metadata.response("api.example.com", WELL_KNOWN).unwrap().body()).unwrap();
        assert_eq!(body["resource"], "https://api.example.com/mcp");
        let staged = ResourceMetadata { base_path: "/api".into(), ..metadata.clone() };
        let body: serde_json::Value = serde_json::from_slice(staged.response("api.example.com", WELL_KNOWN).unwrap().body()).unwrap();
        assert_eq!(body["resource"], "https://api.example.com/api/mcp", "a REST API's stage is part of the resource");
        assert_eq!(staged.url("api.example.com", MCP_PATH), "https://api.example.com/api/.well-known/oauth-protected-resource/mcp");
        let custom = ResourceMetadata { resource: Some("https://mcp.example.com/mcp".into()), ..metadata.clone() };
        assert_eq!(custom.url("abc.execute-api.example", MCP_PATH), "https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
        assert_eq!(body["authorization_servers"][0], "https://issuer.example.com");
    }

    #[test]
    fn the_endpoint_typed_with_a_slash_is_its_own_resource() {
        let metadata = ResourceMetadata::new(vec!["https://issuer.example.com".into()], vec!["mcp".into()]).with_base_path("/api");
        let resource = |path: &str| -> serde_json::Value {
            let body: serde_json::Value = serde_json::from_slice(metadata.response("api.example.com", path).unwrap().body()).unwrap();
            body["resource"].clone()
        };
        assert_eq!(resource("/.well-known/oauth-protected-resource/mcp/"), "https://api.example.com/api/mcp/");
        assert_eq!(resource("/.well-known/oauth-protected-resource/mcp"), "https://api.example.com/api/mcp");
        assert_eq!(resource("/.well-known/oauth-protected-resource"), "https://api.example.com/api/mcp");
        assert_eq!(metadata.url("api.example.com", "/mcp/"), "https://api.example.com/api/.well-known/oauth-protected-resource/mcp/");
        let custom = ResourceMetadata { resource: Some("https://mcp.example.com/mcp".into()), ..metadata.clone() };
        let body: serde_json::Value =
            serde_json::from_slice(custom.response("x", "/.well-known/oauth-protected-resource/mcp/").unwrap().body()).unwrap();
        assert_eq!(body["resource"], "https://mcp.example.com/mcp/");
    }

    #[test]
    fn plain_http_only_for_a_loopback_host() {
        for host in ["localhost", "localhost:3000", "127.0.0.2:3000", "[::1]:8080", "LOCALHOST"] {
            assert_eq!(scheme_for(host), "http", "{host}");
        }
        for host in ["api.example.com", "localhost.evil.example", "localhost:evil", "localhost.:3000", "0.0.0.0:3000"] {
            assert_eq!(scheme_for(host), "https", "{host}");
        }
    }
}
