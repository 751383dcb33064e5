//! What tools use for Multi Round-Trip Requests: seal a continuation into
//! `requestState` and open it on the retry, with errors already mapped to
//! what the client may see (basic/patterns/mrtr).

use std::{sync::Arc, time::Duration};

use rmcp::model::ErrorData;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::{
    context::CallContext,
    request_state::{DEFAULT_STATE_TTL, OpenError, RequestStateSealer, SealError, StateBinding},
};

/// The one message a client gets for any state that does not open: it must
/// not learn whether the state was forged, foreign, expired or stale.
pub const INVALID_STATE_MESSAGE: &str = "requestState is invalid or expired; retry the request without it";

/// The request a state belongs to: method, target and the arguments the tool
/// chose to bind (default: all of them).
#[derive(Debug, Clone, Copy)]
pub struct StateScope<'a> {
    pub method: &'a str,
    pub target: &'a str,
    pub arguments: &'a Value,
}

impl<'a> StateScope<'a> {
    pub fn tool(name: &'a str, arguments: &'a Value) -> Self {
        Self { method: "tools/call", target: name, arguments }
    }

    pub fn prompt(name: &'a str, arguments: &'a Value) -> Self {
        Self { method: "prompts/get", target: name, arguments }
    }
}

/// Seals and opens continuations for this deployment (`MCP_AUDIENCE`).
#[derive(Clone)]
pub struct RequestStates {
    sealer: Arc<dyn RequestStateSealer>,
    audience: String,
    ttl: Duration,
}

impl RequestStates {
    pub fn new(sealer: Arc<dyn RequestStateSealer>, audience: impl Into<String>) -> Self {
        Self { sealer, audience: audience.into(), ttl: DEFAULT_STATE_TTL }
    }

    /// A copy whose states expire after `ttl` (per tool).
    pub fn with_ttl(&self, ttl: Duration) -> Self {
        Self { ttl, ..self.clone() }
    }

    fn binding(&self, ctx: &CallContext, scope: StateScope<'_>) -> StateBinding {
        StateBinding::new(ctx, scope.method, scope.target, scope.arguments, &self.audience)
    }

    pub async fn seal(
        &self,
        ctx: &CallContext,
        scope: StateScope<'_>,
        continuation: &impl Serialize,
    ) -> Result<String, ErrorData> {
        let continuation = serde_json::to_value(continuation)
            .map_err(|e| ErrorData::internal_error(format!("continuation is not serializable: {e}"), None))?;
        self.sealer
            .seal(&self.binding(ctx, scope), &continuation, self.ttl)
            .await
            .map_err(|error| match error {
                SealError::TooLarge { .. } | SealError::Serialize(_) => ErrorData::internal_error(error.to_string(), None),
                SealError::KeyUnavailable(_) => {
                    tracing::error!(%error, "sealing requestState failed");
                    ErrorData::internal_error("request state service unavailable", None)
                }
            })
    }

    pub async fn open<T: DeserializeOwned>(
        &self,
        ctx: &CallContext,
        scope: StateScope<'_>,
        token: &str,
    ) -> Result<T, ErrorData> {
        let value = self.sealer.open(&self.binding(ctx, scope), token).await.map_err(|error| match error {
            OpenError::KeyUnavailable(_) => {
                tracing::error!(%error, "opening requestState failed");
                ErrorData::internal_error("request state service unavailable", None)
            }
            other => {
                tracing::info!(reason = %other, "requestState rejected");
                ErrorData::invalid_params(INVALID_STATE_MESSAGE, None)
            }
        })?;
        serde_json::from_value(value).map_err(|_| ErrorData::invalid_params(INVALID_STATE_MESSAGE, None))
    }
}
