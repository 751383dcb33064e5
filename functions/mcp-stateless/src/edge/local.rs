//! The local HTTP server: `cargo run -p <function>` with no AWS account and
//! no emulator. Serves MCP at `/mcp` on `MCP_LOCAL_ADDR` (default
//! 127.0.0.1:3000) through the same edge as Lambda, streaming unless
//! `MCP_TRANSPORT=buffered`.

use std::{convert::Infallible, sync::Arc};

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::{body::Incoming, server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use rmcp::ServerHandler;
use tokio::net::TcpListener;

use crate::{
    deployment::Transport,
    edge::authorization_forward::{AuthorizationForward, is_authorization_path},
    edge::endpoint::McpEndpoint,
    edge::error::EdgeError,
    edge::policy::DEV_PRINCIPAL_HEADER,
    edge::stream::{self, EdgeBody},
    protocol::context::EntryFacts,
    protocol::context::Principal,
};

/// Where the local server listens when neither `MCP_LOCAL_ADDR` nor `PORT`
/// is set: loopback only.
pub const DEFAULT_LOCAL_ADDR: &str = "127.0.0.1:3000";

/// Issuer given to development principals, so they never equal a real one.
pub const DEV_ISSUER: &str = "local-dev";

/// Accepts connections until the listener fails.
pub async fn serve_local<S: ServerHandler + Clone>(endpoint: Arc<McpEndpoint<S>>, listener: TcpListener) -> std::io::Result<()> {
    serve_local_with(endpoint, listener, None).await
}

/// The same, passing the authorization server's paths to `authorization`
/// when given ([`authorization_forward`](crate::edge::authorization_forward)).
pub async fn serve_local_with<S: ServerHandler + Clone>(
    endpoint: Arc<McpEndpoint<S>>,
    listener: TcpListener,
    authorization: Option<Arc<AuthorizationForward>>,
) -> std::io::Result<()> {
    loop {
        let (stream, peer) = listener.accept().await?;
        let endpoint = endpoint.clone();
        let authorization = authorization.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                let endpoint = endpoint.clone();
                let authorization = authorization.clone();
                async move { Ok::<_, Infallible>(local_request(&endpoint, authorization.as_deref(), request, peer).await) }
            });
            if let Err(error) = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await {
                tracing::debug!(%error, "local connection ended");
            }
        });
    }
}

async fn local_request<S: ServerHandler + Clone>(
    endpoint: &McpEndpoint<S>,
    authorization: Option<&AuthorizationForward>,
    request: http::Request<Incoming>,
    peer: std::net::SocketAddr,
) -> http::Response<EdgeBody> {
    let limit = endpoint.policy().max_body_bytes;
    let (mut parts, body) = request.into_parts();
    let body: Bytes = match Limited::new(body, limit).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return EdgeError::BodyTooLarge { limit }.into_response(None).map(stream::whole),
    };
    if let Some(authorization) = authorization.filter(|_| is_authorization_path(parts.uri.path())) {
        return authorization.forward(parts, body).await.map(stream::whole);
    }
    let sender = Some(peer.ip().to_string());
    parts.extensions.insert(EntryFacts { principal: dev_principal(&parts.headers), sender, ..EntryFacts::default() });
    let request = http::Request::from_parts(parts, body);
    match endpoint.policy().transport {
        Transport::Streaming => endpoint.handle_streaming(request).await,
        Transport::Buffered => endpoint.handle(request).await.map(stream::whole),
    }
}

/// Set to `1` to serve the local server beyond loopback anyway.
pub const DEV_PRINCIPAL_BEYOND_LOOPBACK: &str = "MCP_LOCAL_ALLOW_REMOTE";

/// The local server trusts `x-mcp-dev-principal`, so anyone who can reach it
/// can be anyone: it refuses a non-loopback address unless told otherwise.
pub fn check_reach(bound: std::net::SocketAddr, allowed_beyond_loopback: bool) -> Result<(), String> {
    if bound.ip().is_loopback() {
        return Ok(());
    }
    if allowed_beyond_loopback {
        tracing::warn!("the local server is reachable beyond this machine; x-mcp-dev-principal lets any caller choose who they are");
        return Ok(());
    }
    Err(format!(
        "the local server would listen on {bound}, beyond this machine, where x-mcp-dev-principal lets any caller \
         choose who they are; bind a loopback address, or set {DEV_PRINCIPAL_BEYOND_LOOPBACK}=1 to accept that"
    ))
}

/// Local mode only: `x-mcp-dev-principal: <subject>` acts as that subject, so
/// owner binding can be tried without an identity provider.
pub fn dev_principal(headers: &http::HeaderMap) -> Principal {
    headers
        .get(DEV_PRINCIPAL_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map_or(Principal::Anonymous, |subject| Principal::Verified { issuer: DEV_ISSUER.to_owned(), subject: subject.to_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beyond_loopback_needs_an_explicit_opt_in() {
        assert!(check_reach("127.0.0.1:3000".parse().unwrap(), false).is_ok());
        assert!(check_reach("[::1]:3000".parse().unwrap(), false).is_ok());
        let error = check_reach("0.0.0.0:3000".parse().unwrap(), false).unwrap_err();
        assert!(error.contains(DEV_PRINCIPAL_BEYOND_LOOPBACK), "{error}");
        assert!(check_reach("0.0.0.0:3000".parse().unwrap(), true).is_ok());
    }
}
