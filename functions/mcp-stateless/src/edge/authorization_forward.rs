//! Locally, the stack's authorization server (its own process, as it is its
//! own function on AWS) answers on the MCP server's address: the local
//! server passes it the paths API Gateway routes to it there, so clients
//! find the issuer, the MCP endpoint and every sign-in URL at one origin.
//! The `Host` header travels unchanged, so the authorization server names
//! this address as its issuer.

use bytes::Bytes;
use http::{Request, Response, StatusCode, Uri, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::TokioExecutor,
};

/// The variable naming the local authorization server (`http://127.0.0.1:3001`).
pub const LOCAL_AUTHORIZATION_SERVER: &str = "MCP_LOCAL_AUTHORIZATION_SERVER";
/// The largest answer passed back (its pages and documents are small).
const MAX_ANSWER_BYTES: usize = 256 * 1024;

/// Whether `path` is the authorization server's: its endpoints under
/// `/oauth/`, and its metadata at the two well-known paths (with any
/// suffix: path insertion).
pub fn is_authorization_path(path: &str) -> bool {
    path.starts_with("/oauth/")
        || ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"]
            .iter()
            .any(|well_known| path.strip_prefix(well_known).is_some_and(|rest| rest.is_empty() || rest.starts_with('/')))
}

/// Passes requests to the local authorization server.
pub struct AuthorizationForward {
    authority: http::uri::Authority,
    client: Client<HttpConnector, Full<Bytes>>,
}

impl AuthorizationForward {
    /// To `url`: plain http on a loopback address (it is a local process).
    pub fn new(url: &str) -> Result<Self, String> {
        let uri: Uri = url.parse().map_err(|_| format!("{LOCAL_AUTHORIZATION_SERVER} is not a URL: {url:?}"))?;
        let authority = uri.authority().cloned().filter(|_| uri.scheme_str() == Some("http"));
        let loopback = authority.as_ref().is_some_and(|a| crate::loopback::is_loopback_name(a.host()));
        match authority {
            Some(authority) if loopback => Ok(Self { authority, client: Client::builder(TokioExecutor::new()).build_http() }),
            _ => Err(format!("{LOCAL_AUTHORIZATION_SERVER} must be http://127.0.0.1:PORT (a local process), not {url:?}")),
        }
    }

    /// `parts` and `body` passed on, and the answer brought back whole.
    pub async fn forward(&self, mut parts: http::request::Parts, body: Bytes) -> Response<Bytes> {
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
        parts.uri = match Uri::builder().scheme("http").authority(self.authority.clone()).path_and_query(path).build() {
            Ok(uri) => uri,
            Err(_) => return status(StatusCode::BAD_REQUEST),
        };
        parts.headers.remove(header::CONNECTION);
        match self.client.request(Request::from_parts(parts, Full::new(body))).await {
            Ok(response) => {
                let (parts, body) = response.into_parts();
                match Limited::new(body, MAX_ANSWER_BYTES).collect().await {
                    Ok(body) => Response::from_parts(parts, body.to_bytes()),
                    Err(_) => status(StatusCode::BAD_GATEWAY),
                }
            }
            Err(error) => {
                tracing::warn!(%error, "the local authorization server did not answer");
                status(StatusCode::BAD_GATEWAY)
            }
        }
    }
}

fn status(status: StatusCode) -> Response<Bytes> {
    let mut response = Response::new(Bytes::new());
    *response.status_mut() = status;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_authorization_servers_paths_and_no_other() {
        for path in ["/oauth/authorize", "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration/stage"] {
            assert!(is_authorization_path(path), "{path}");
        }
        for path in ["/mcp", "/.well-known/oauth-protected-resource/mcp", "/oauthx", "/.well-known/openid-configurationx"] {
            assert!(!is_authorization_path(path), "{path}");
        }
        assert!(AuthorizationForward::new("https://127.0.0.1:3001").is_err());
        assert!(AuthorizationForward::new("http://example.com:3001").is_err());
        assert!(AuthorizationForward::new("http://127.0.0.1:3001").is_ok());
    }
}
