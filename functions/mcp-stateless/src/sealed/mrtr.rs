//! What tools use for Multi Round-Trip Requests: seal a continuation into
//! `requestState` and open it on the retry, with errors already mapped to
//! what the client may see (basic/patterns/mrtr).

use std::{sync::Arc, time::Duration};

use rmcp::model::ErrorData;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::{
    clock::Clock,
    protocol::context::CallContext,
    sealed::redemption::{Redemption, RedemptionLedger},
    sealed::request_state::{DEFAULT_STATE_TTL, OpenError, OpenedState, RequestStateSealer, SealError, StateBinding},
};

/// The one message a client gets for any state that does not open: it must
/// not learn whether the state was forged, foreign, expired or stale.
pub const INVALID_STATE_MESSAGE: &str = "requestState is invalid or expired; retry the request without it";

/// The request a state belongs to: method, target and the arguments the tool
/// chose to bind (default: all of them).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct StateScope<'a> {
    /// The JSON-RPC method (`tools/call`, `prompts/get`).
    pub method: &'a str,
    /// The tool or prompt name.
    pub target: &'a str,
    /// What the state is bound to: it opens only on a request with equal
    /// arguments here (key order aside). Bind a subset to let the rest
    /// change between rounds.
    pub arguments: &'a Value,
}

impl<'a> StateScope<'a> {
    /// A `tools/call` of tool `name` with `arguments`.
    pub fn tool(name: &'a str, arguments: &'a Value) -> Self {
        Self { method: "tools/call", target: name, arguments }
    }

    /// A `prompts/get` of prompt `name` with `arguments`.
    pub fn prompt(name: &'a str, arguments: &'a Value) -> Self {
        Self { method: "prompts/get", target: name, arguments }
    }
}

/// Seals and opens continuations for this deployment (`MCP_AUDIENCE`).
#[derive(Clone)]
pub struct RequestStates {
    sealer: Arc<dyn RequestStateSealer>,
    ledger: Arc<dyn RedemptionLedger>,
    clock: Arc<dyn Clock>,
    audience: String,
    ttl: Duration,
}

impl RequestStates {
    /// States sealed by `sealer` for `audience` (this deployment), expiring
    /// after [`DEFAULT_STATE_TTL`]; single-use redemptions are recorded in
    /// `ledger`, dated by `clock`.
    pub fn new(
        sealer: Arc<dyn RequestStateSealer>,
        ledger: Arc<dyn RedemptionLedger>,
        clock: Arc<dyn Clock>,
        audience: impl Into<String>,
    ) -> Self {
        Self { sealer, ledger, clock, audience: audience.into(), ttl: DEFAULT_STATE_TTL }
    }

    /// The sealer, clock and audience, for what is sealed alike
    /// (`LegacySessions::of`).
    #[cfg(feature = "legacy")]
    pub(crate) fn parts(&self) -> (Arc<dyn RequestStateSealer>, Arc<dyn Clock>, String) {
        (self.sealer.clone(), self.clock.clone(), self.audience.clone())
    }

    /// A copy whose states expire after `ttl` (per tool).
    pub fn with_ttl(&self, ttl: Duration) -> Self {
        Self { ttl, ..self.clone() }
    }

    fn binding(&self, ctx: &CallContext, scope: StateScope<'_>) -> StateBinding {
        StateBinding::new(ctx, scope.method, scope.target, scope.arguments, &self.audience)
    }

    /// Seals `continuation` for `scope`, bound to `ctx`'s caller: the
    /// `requestState` to send back. A failure is -32603 naming no size or
    /// key detail (the log has it).
    pub async fn seal(&self, ctx: &CallContext, scope: StateScope<'_>, continuation: &impl Serialize) -> Result<String, ErrorData> {
        let continuation = serde_json::to_value(continuation)
            .map_err(|e| ErrorData::internal_error(format!("continuation is not serializable: {e}"), None))?;
        self.sealer.seal(&self.binding(ctx, scope), &continuation, self.ttl).await.map_err(|error| match error {
            // The sizes are the server's business: logged, not sent. A
            // tool that carries user input should bound it first and
            // answer with a tool error the user can act on.
            SealError::TooLarge { .. } | SealError::Serialize(_) => {
                tracing::error!(%error, "sealing requestState failed");
                ErrorData::internal_error("the tool's state is too large to carry between rounds", None)
            }
            SealError::KeyUnavailable(_) => {
                tracing::error!(%error, "sealing requestState failed");
                ErrorData::internal_error("request state service unavailable", None)
            }
        })
    }

    /// Opens a state the client echoed. The state may be replayed until it
    /// expires, which the spec allows for idempotent continuations.
    pub async fn open<T: DeserializeOwned>(&self, ctx: &CallContext, scope: StateScope<'_>, token: &str) -> Result<T, ErrorData> {
        decode(self.open_state(ctx, scope, token).await?)
    }

    /// Opens a state at most once: a replay of the same token is refused.
    /// For steps that must not happen twice (a payment, a redemption). The
    /// record is written only after the token opened, so a forged or
    /// expired token, or an unreachable KMS, writes nothing.
    pub async fn open_once<T: DeserializeOwned>(&self, ctx: &CallContext, scope: StateScope<'_>, token: &str) -> Result<T, ErrorData> {
        let opened = self.open_state(ctx, scope, token).await?;
        let redemption = self.ledger.redeem(&opened.jti, opened.expires_at, self.clock.now()).await.map_err(|error| {
            tracing::error!(%error, "recording a single-use requestState failed");
            ErrorData::internal_error("request state service unavailable", None)
        })?;
        match redemption {
            Redemption::First => decode(opened),
            Redemption::Replay => {
                tracing::info!(reason = "replayed single-use state", "requestState rejected");
                Err(ErrorData::invalid_params(INVALID_STATE_MESSAGE, None))
            }
        }
    }

    async fn open_state(&self, ctx: &CallContext, scope: StateScope<'_>, token: &str) -> Result<OpenedState, ErrorData> {
        self.sealer.open(&self.binding(ctx, scope), token).await.map_err(|error| match error {
            OpenError::KeyUnavailable(_) | OpenError::OverBudget => {
                tracing::error!(%error, "opening requestState failed");
                ErrorData::internal_error("request state service unavailable", None)
            }
            other => {
                tracing::info!(reason = %other, "requestState rejected");
                ErrorData::invalid_params(INVALID_STATE_MESSAGE, None)
            }
        })
    }
}

fn decode<T: DeserializeOwned>(opened: OpenedState) -> Result<T, ErrorData> {
    serde_json::from_value(opened.data).map_err(|_| ErrorData::invalid_params(INVALID_STATE_MESSAGE, None))
}

#[cfg(test)]
mod tests {
    use rmcp::model::ErrorCode;
    use serde_json::json;

    use super::*;
    use crate::{
        clock::SystemClock,
        protocol::context::Principal,
        sealed::{
            redemption::InMemoryLedger,
            request_state::{EnvelopeSealer, InProcessKey},
        },
    };

    fn ctx(capabilities: Value) -> CallContext {
        CallContext::with_capabilities(Principal::Anonymous, capabilities)
    }

    #[tokio::test]
    async fn an_oversized_state_is_refused_without_saying_how_big() {
        let sealer = EnvelopeSealer::new(InProcessKey::generate()).with_max_token_bytes(300);
        let states = RequestStates::new(Arc::new(sealer), Arc::new(InMemoryLedger::default()), Arc::new(SystemClock), "t");
        let arguments = json!({});
        let error = states.seal(&ctx(json!({})), StateScope::tool("t", &arguments), &"x".repeat(1_000)).await.unwrap_err();
        assert_eq!(error.code, ErrorCode::INTERNAL_ERROR);
        assert!(!error.message.chars().any(|c| c.is_ascii_digit()), "no sizes or limits: {}", error.message);
    }
}
