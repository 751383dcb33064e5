//! The Lambda entry point: API Gateway HTTP API (payload v2) and Function URL
//! events through `lambda_http`, buffered responses, the same edge as local.

use std::{convert::Infallible, sync::Arc};

use bytes::Bytes;
use lambda_http::{Body, RequestExt, request::RequestContext, service_fn};
use rmcp::ServerHandler;

use crate::{
    protocol::context::Principal,
    edge::endpoint::{EntryFacts, McpEndpoint},
};

pub async fn serve_lambda<S: ServerHandler + Clone>(endpoint: Arc<McpEndpoint<S>>) -> Result<(), lambda_http::Error> {
    lambda_http::run(service_fn(move |event: lambda_http::Request| {
        let endpoint = endpoint.clone();
        async move { Ok::<_, Infallible>(handle_event(&endpoint, event).await) }
    }))
    .await
}

/// One Lambda event through the edge; public so tests can feed fixtures.
pub async fn handle_event<S: ServerHandler + Clone>(
    endpoint: &McpEndpoint<S>,
    event: lambda_http::Request,
) -> lambda_http::Response<Body> {
    let response = endpoint.handle(edge_request(event)).await;
    let (parts, body) = response.into_parts();
    let body = match String::from_utf8(body.to_vec()) {
        Ok(text) if text.is_empty() => Body::Empty,
        Ok(text) => Body::Text(text),
        Err(bytes) => Body::Binary(bytes.into_bytes()),
    };
    lambda_http::Response::from_parts(parts, body)
}

/// The principal comes only from the authorizer's verified claims: any
/// development header the client sends is ignored here.
fn edge_request(event: lambda_http::Request) -> http::Request<Bytes> {
    let facts = match event.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(ctx)) => {
            let jwt = ctx.authorizer.as_ref().and_then(|a| a.jwt.as_ref());
            let claim = |name: &str| jwt.and_then(|jwt| jwt.claims.get(name)).filter(|v| !v.trim().is_empty()).cloned();
            let principal = match (claim("iss"), claim("sub")) {
                (Some(issuer), Some(subject)) => Some(Principal::Verified { issuer, subject }),
                _ => None,
            };
            EntryFacts {
                // A verified token without iss or sub fails closed, never
                // as the anonymous caller every such token would share.
                unidentified: jwt.is_some() && principal.is_none(),
                principal: principal.unwrap_or(Principal::Anonymous),
                api_domain: ctx.domain_name.clone(),
            }
        }
        _ => EntryFacts::default(),
    };
    let (mut parts, body) = event.into_parts();
    parts.extensions.insert(facts);
    let body = match body {
        Body::Empty => Bytes::new(),
        Body::Text(text) => Bytes::from(text),
        Body::Binary(bytes) => Bytes::from(bytes),
        _ => Bytes::new(),
    };
    http::Request::from_parts(parts, body)
}
