//! What tools use for Multi Round-Trip Requests: seal a continuation into
//! `requestState` and open it on the retry, with errors already mapped to
//! what the client may see (basic/patterns/mrtr).

use std::{sync::Arc, time::Duration};

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ErrorCode, ErrorData, InputRequest, InputRequests, InputRequiredResult, InputResponses,
};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Value, json};

use crate::{
    clock::Clock,
    protocol::context::CallContext,
    sealed::redemption::{Redemption, RedemptionLedger},
    sealed::request_state::{DEFAULT_STATE_TTL, OpenError, OpenedState, RequestStateSealer, SealError, StateBinding},
};

/// The one message a client gets for any state that does not open: it must
/// not learn whether the state was forged, foreign, expired or stale.
pub const INVALID_STATE_MESSAGE: &str = "requestState is invalid or expired; retry the request without it";

/// Refuses a request whose client did not declare form elicitation, with
/// the -32021 the edge would send once the tool had asked: call it first in
/// a round that will ask, so a request that is going to be refused reads,
/// writes and seals nothing.
pub fn require_form_elicitation(ctx: &CallContext) -> Result<(), ErrorData> {
    if ctx.declares("elicitation", Some("form")) {
        return Ok(());
    }
    Err(ErrorData::new(
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        "Missing required client capability",
        Some(json!({"requiredCapabilities": {"elicitation": {"form": {}}}})),
    ))
}

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
    ledger: Arc<dyn RedemptionLedger>,
    clock: Arc<dyn Clock>,
    audience: String,
    ttl: Duration,
}

impl RequestStates {
    pub fn new(
        sealer: Arc<dyn RequestStateSealer>,
        ledger: Arc<dyn RedemptionLedger>,
        clock: Arc<dyn Clock>,
        audience: impl Into<String>,
    ) -> Self {
        Self { sealer, ledger, clock, audience: audience.into(), ttl: DEFAULT_STATE_TTL }
    }

    /// A copy whose states expire after `ttl` (per tool).
    pub fn with_ttl(&self, ttl: Duration) -> Self {
        Self { ttl, ..self.clone() }
    }

    fn binding(&self, ctx: &CallContext, scope: StateScope<'_>) -> StateBinding {
        StateBinding::new(ctx, scope.method, scope.target, scope.arguments, &self.audience)
    }

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
            OpenError::KeyUnavailable(_) => {
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

/// What the user answered to a form elicitation (client/elicitation,
/// "Response Actions").
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationReply<'a> {
    Accepted(&'a serde_json::Map<String, Value>),
    Declined,
    Cancelled,
    /// No answer under that key, or not an elicitation result: ask again.
    Missing,
}

/// Reads the answer to the input request named `key`.
pub fn elicitation_reply<'a>(responses: &'a Option<InputResponses>, key: &str) -> ElicitationReply<'a> {
    read_elicitation(responses.as_ref().and_then(|r| r.get(key)))
}

/// Reads one elicitation result (or its absence).
pub fn read_elicitation(reply: Option<&Value>) -> ElicitationReply<'_> {
    let Some(reply) = reply else {
        return ElicitationReply::Missing;
    };
    match reply.get("action").and_then(Value::as_str) {
        Some("accept") => reply.get("content").and_then(Value::as_object).map_or(ElicitationReply::Missing, ElicitationReply::Accepted),
        Some("decline") => ElicitationReply::Declined,
        Some("cancel") => ElicitationReply::Cancelled,
        _ => ElicitationReply::Missing,
    }
}

/// The answer under `key` to a form elicitation the previous round sent
/// with `requested_schema` (keep the schema in one function both rounds
/// call), checked against that schema first: the client fills the form,
/// so what comes back is checked as any input is (client/elicitation:
/// servers SHOULD validate). An answer that does not fit is -32602 naming
/// the rule it broke, never echoing the value.
pub fn checked_reply<'a>(
    responses: &'a Option<InputResponses>,
    key: &str,
    requested_schema: &Value,
) -> Result<ElicitationReply<'a>, ErrorData> {
    let reply = responses.as_ref().and_then(|r| r.get(key));
    if let Some(reply) = reply {
        check_content(Some(requested_schema), reply)
            .map_err(|reason| ErrorData::invalid_params(format!("Invalid input response {key}: {reason}"), None))?;
    }
    Ok(read_elicitation(reply))
}

/// The largest answer to one input request a server keeps.
pub const MAX_ANSWER_BYTES: usize = 8 * 1024;

/// `response` (an input response) checked against `request`, the input
/// request it answers (as JSON, the way a task stores it), and kept as the
/// form asked: properties of an accepted form's content that the
/// `requestedSchema` does not name are dropped (a form's answer holds
/// only what the form asked, and what is kept is stored).
pub fn answer_as_asked(request: &Value, mut response: Value) -> Result<Value, String> {
    let schema = request.get("params").and_then(|p| p.get("requestedSchema"));
    check_content(schema, &response)?;
    let named = schema.and_then(|s| s.get("properties")).and_then(Value::as_object);
    if let (Some(named), Some(Value::Object(content))) = (named, response.get_mut("content")) {
        content.retain(|name, _| named.contains_key(name));
    }
    Ok(response)
}

/// Small, and for an accepted form elicitation, content that matches the
/// schema asked for.
fn check_content(requested_schema: Option<&Value>, response: &Value) -> Result<(), String> {
    if serde_json::to_vec(response).map_or(usize::MAX, |bytes| bytes.len()) > MAX_ANSWER_BYTES {
        return Err(format!("over {MAX_ANSWER_BYTES} bytes"));
    }
    match (requested_schema, response.get("action").and_then(Value::as_str)) {
        (Some(schema), Some("accept")) => {
            crate::protocol::arguments::check_against(schema, response.get("content").unwrap_or(&Value::Null))
        }
        _ => Ok(()),
    }
}

/// A form-mode elicitation asking `message`, with a flat `requestedSchema`.
pub fn form_request(message: &str, requested_schema: Value) -> Result<InputRequest, ErrorData> {
    let requested_schema = serde_json::from_value(requested_schema)
        .map_err(|e| ErrorData::internal_error(format!("invalid elicitation schema: {e}"), None))?;
    Ok(InputRequest::Elicitation(ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message.to_owned(),
        requested_schema,
    })))
}

/// An `InputRequiredResult` asking one thing, with the sealed state.
pub fn ask_one(key: &str, request: InputRequest, request_state: String) -> InputRequiredResult {
    let mut requests = InputRequests::new();
    requests.insert(key.to_owned(), request);
    InputRequiredResult::new(Some(requests), Some(request_state))
}

#[cfg(test)]
mod tests {
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
        let meta =
            json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": capabilities});
        CallContext::from_meta(Some(&meta), None, Principal::Anonymous).unwrap()
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

    #[test]
    fn form_elicitation_is_required_up_front() {
        assert!(require_form_elicitation(&ctx(json!({"elicitation": {}}))).is_ok());
        let refused = require_form_elicitation(&ctx(json!({"elicitation": {"url": {}}}))).unwrap_err();
        assert_eq!(refused.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
        assert_eq!(refused.data, Some(json!({"requiredCapabilities": {"elicitation": {"form": {}}}})));
    }
}
