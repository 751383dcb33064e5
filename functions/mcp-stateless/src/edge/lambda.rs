//! The Lambda entry point: API Gateway HTTP API (payload v2), REST API
//! (payload v1) and Function URL events through `lambda_http`, through the
//! same edge as local. The runner is chosen once, at cold start, from the
//! deployment's transport: buffered answers for the HTTP API, response
//! streaming for the REST API and Function URLs.

use std::{
    convert::Infallible,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{Either, StreamBody};
use hyper::body::Body as _;
use hyper::body::Frame;
use lambda_http::{Body, RequestExt, request::RequestContext, service_fn};
use rmcp::ServerHandler;
use serde_json::Value;

use crate::deadline::Deadline;
use crate::{
    deployment::Transport,
    edge::endpoint::McpEndpoint,
    edge::stream::{self, EdgeBody},
    protocol::context::EntryFacts,
    protocol::context::Principal,
};

/// Serves Lambda events until the runtime stops, answered whole or
/// streamed as the endpoint's transport says.
pub(crate) async fn serve_lambda<S: ServerHandler + Clone>(endpoint: Arc<McpEndpoint<S>>) -> Result<(), lambda_http::Error> {
    match endpoint.policy().transport {
        Transport::Buffered => {
            lambda_http::run(service_fn(move |event: lambda_http::Request| {
                let endpoint = endpoint.clone();
                async move { Ok::<_, Infallible>(handle_event(&endpoint, event).await) }
            }))
            .await
        }
        Transport::Streaming => {
            lambda_http::run_with_streaming_response(service_fn(move |event: lambda_http::Request| {
                let endpoint = endpoint.clone();
                async move { Ok::<_, Infallible>(handle_event_streaming(&endpoint, event).await) }
            }))
            .await
        }
    }
}

/// One Lambda event through the edge, answered whole; public so tests can
/// feed fixtures.
pub async fn handle_event<S: ServerHandler + Clone>(endpoint: &McpEndpoint<S>, event: lambda_http::Request) -> lambda_http::Response<Body> {
    let response = endpoint.handle(edge_request(event, endpoint.base_path())).await;
    let (parts, body) = response.into_parts();
    let body = match String::from_utf8(body.to_vec()) {
        Ok(text) if text.is_empty() => Body::Empty,
        Ok(text) => Body::Text(text),
        Err(bytes) => Body::Binary(bytes.into_bytes()),
    };
    lambda_http::Response::from_parts(parts, body)
}

/// One Lambda event through the edge, streamed as the handler writes it.
pub async fn handle_event_streaming<S: ServerHandler + Clone>(
    endpoint: &McpEndpoint<S>,
    event: lambda_http::Request,
) -> http::Response<EdgeBody> {
    endpoint.handle_streaming(edge_request(event, endpoint.base_path())).await.map(never_empty)
}

/// A streamed response whose body stays empty keeps API Gateway waiting
/// until the function times out (then 502): an empty answer (a
/// notification's 202) ends with one newline instead.
fn never_empty(body: EdgeBody) -> EdgeBody {
    let frames = match body {
        Either::Left(whole) if whole.size_hint().exact() == Some(0) => return stream::whole(Bytes::from_static(b"\n")),
        Either::Left(whole) => return Either::Left(whole),
        Either::Right(frames) => frames,
    };
    let sent = Arc::new(AtomicBool::new(false));
    let seen = sent.clone();
    let frames = http_body_util::BodyStream::new(frames).inspect(move |frame| {
        if frame.as_ref().ok().and_then(|f| f.data_ref()).is_some_and(|data| !data.is_empty()) {
            seen.store(true, Ordering::Relaxed);
        }
    });
    let tail = futures::stream::once(async move { (!sent.load(Ordering::Relaxed)).then(|| Ok(Frame::data(Bytes::from_static(b"\n")))) })
        .filter_map(std::future::ready);
    Either::Right(StreamBody::new(frames.chain(tail).boxed()))
}

/// The principal comes only from the authorizer's verified claims: any
/// development header the client sends is ignored here. The path loses
/// what clients see before the function's own paths (`base_path`).
fn edge_request(event: lambda_http::Request, base_path: &str) -> http::Request<Bytes> {
    let mut facts = match event.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(ctx)) => {
            let jwt = ctx.authorizer.as_ref().and_then(|a| a.jwt.as_ref());
            let claims = jwt.map(|jwt| |name: &str| jwt.claims.get(name).cloned());
            facts_from_claims(claims, ctx.domain_name.clone())
        }
        Some(RequestContext::ApiGatewayV1(ctx)) => {
            // A Cognito user-pool authorizer puts the verified token's
            // claims in `authorizer.claims`, each as a string.
            let claims = ctx.authorizer.fields.get("claims").and_then(Value::as_object);
            let claims = claims.map(|claims| |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned));
            facts_from_claims(claims, ctx.domain_name.clone())
        }
        _ => EntryFacts::default(),
    };
    facts.deadline = event.lambda_context_ref().and_then(|context| Deadline::from_epoch_ms(context.deadline));
    facts.sender = match event.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(ctx)) => ctx.http.source_ip.clone(),
        Some(RequestContext::ApiGatewayV1(ctx)) => ctx.identity.source_ip.clone(),
        _ => None,
    };
    let stage = match event.request_context_ref() {
        Some(RequestContext::ApiGatewayV1(ctx)) => ctx.stage.clone(),
        _ => None,
    };
    let (mut parts, body) = event.into_parts();
    // A REST API's stage, then a custom domain's base path mapping, whose
    // key API Gateway leaves in the path (either API).
    let prefixes = [stage.map(|stage| format!("/{stage}")), Some(base_path.to_owned()).filter(|path| !path.is_empty())];
    for prefix in prefixes.into_iter().flatten() {
        if let Some(path) = without_prefix(&parts.uri, &prefix) {
            parts.uri = path;
        }
    }
    parts.extensions.insert(facts);
    let body = match body {
        Body::Empty => Bytes::new(),
        Body::Text(text) => Bytes::from(text),
        Body::Binary(bytes) => Bytes::from(bytes),
        _ => Bytes::new(),
    };
    http::Request::from_parts(parts, body)
}

/// `uri` without `prefix` (`/stage`, a base path), if its path starts with
/// it. A REST API's stage is not part of the function's paths:
/// `lambda_http` adds it unless `AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH` is
/// set (the template sets it); taken off here either way.
fn without_prefix(uri: &http::Uri, prefix: &str) -> Option<http::Uri> {
    let rest = uri.path().strip_prefix(prefix)?;
    if !rest.starts_with('/') {
        return None;
    }
    let path_and_query = match uri.query() {
        Some(query) => format!("{rest}?{query}"),
        None => rest.to_owned(),
    };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = path_and_query.parse().ok();
    http::Uri::from_parts(parts).ok()
}

/// `claim` reads one verified claim; `None` when no authorizer verified
/// anything (auth off).
fn facts_from_claims(claim: Option<impl Fn(&str) -> Option<String>>, api_domain: Option<String>) -> EntryFacts {
    let verified = claim.is_some();
    let principal = claim.and_then(|claim| {
        let claim = |name: &str| claim(name).filter(|v| !v.trim().is_empty());
        Some(Principal::Verified { issuer: claim("iss")?, subject: claim("sub")? })
    });
    EntryFacts {
        // A verified token without iss or sub fails closed, never as the
        // anonymous caller every such token would share.
        unidentified: verified && principal.is_none(),
        principal: principal.unwrap_or(Principal::Anonymous),
        api_domain,
        ..EntryFacts::default()
    }
}
