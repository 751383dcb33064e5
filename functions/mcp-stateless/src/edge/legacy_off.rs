//! Stands in for `legacy/` in a build without the `legacy` feature: the
//! same names, and nothing to serve. Every request is held to 2026-07-28's
//! rules; a 2025-era client's is refused by them.

use std::{sync::Arc, time::Instant};

use bytes::Bytes;
use rmcp::{
    ServerHandler,
    transport::{StreamableHttpService, streamable_http_server::session::never::NeverSessionManager},
};
use serde_json::{Map, Value};

use crate::{
    deployment::LogFormat,
    edge::{
        admission::Admission,
        endpoint::{McpEndpoint, Reply},
        error::EdgeError,
        request_log::RequestLog,
        rewrite::Shape,
        stream::{Delivery, EdgeBody},
    },
    metrics::Counts,
    protocol::context::Principal,
    server::dependencies::Dependencies,
};

/// No 2025 era to serve.
pub(super) struct LegacySide;

impl LegacySide {
    pub(super) fn new<S: ServerHandler + Clone>(
        _: &S,
        _: &rmcp::model::ServerConfig,
        _: &Value,
        _: &StreamableHttpService<S, NeverSessionManager>,
        _: bool,
    ) -> Self {
        Self
    }

    pub(super) fn with_dependencies(self, _: &Dependencies) -> Self {
        self
    }

    pub(super) fn serves(&self) -> bool {
        false
    }

    pub(super) fn shaper(&self) -> Option<Shape> {
        None
    }
}

/// No route: admission never finds one (`LegacySide::serves` is false).
pub(in crate::edge) enum Route {}

// The same signatures as `legacy/classify.rs`: everything comes back.
#[allow(clippy::result_large_err, clippy::type_complexity)]
impl Route {
    pub(in crate::edge) fn without_body(request: http::Request<Bytes>, _: &Principal, _: Delivery) -> Result<Self, http::Request<Bytes>> {
        Err(request)
    }

    pub(in crate::edge) fn answer(
        request: http::Request<Bytes>,
        message: Map<String, Value>,
        _: &Principal,
    ) -> Result<Self, (http::Request<Bytes>, Map<String, Value>)> {
        Err((request, message))
    }

    pub(in crate::edge) fn call(
        request: http::Request<Bytes>,
        message: Map<String, Value>,
        _: Option<&crate::protocol::methods::Method>,
        _: &Option<Value>,
        _: &Principal,
    ) -> Result<Result<Self, (http::Request<Bytes>, Map<String, Value>)>, EdgeError> {
        Ok(Err((request, message)))
    }
}

/// No conversation is ever held.
pub(in crate::edge) enum Conversation {}

// The legacy side's signature, which the endpoint calls either way.
#[allow(clippy::boxed_local)]
pub(in crate::edge) fn conversation_response(
    conversation: Box<Conversation>,
    _: RequestLog,
    _: LogFormat,
    _: Instant,
    _: Arc<Counts>,
) -> http::Response<EdgeBody> {
    match *conversation {}
}

impl<S: ServerHandler + Clone> McpEndpoint<S> {
    pub(in crate::edge) async fn serve_legacy(&self, route: Route, _: &Admission<'_>, _: &mut RequestLog, _: Delivery) -> Reply {
        match route {}
    }
}
