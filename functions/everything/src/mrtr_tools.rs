//! Multi Round-Trip Request fixtures (basic/patterns/mrtr, SEP-2322).
//!
//! Every fixture is stateless: the round is derived from `inputResponses`
//! and from `requestState`, which is sealed by the `RequestStates` port and
//! bound to the caller, the tool, its arguments and an expiry.

use rmcp::{
    ErrorData,
    handler::server::tool::{InputResponses, RequestState},
    model::{
        CallToolResponse, CallToolResult, ContentBlock, CreateMessageRequest, CreateMessageRequestParams, ElicitRequest,
        ElicitRequestParams, InputRequest, InputRequests, InputRequiredResult, JsonObject, ListRootsRequest, SamplingMessage,
    },
    tool, tool_router,
};
use serde_json::{Map, Value, json};

use mcp_stateless::prelude::{CallContext, StateScope};

use crate::EverythingServer;

pub(crate) fn elicit(message: &str, properties: Value, required: &[&str]) -> InputRequest {
    let schema = json!({"type": "object", "properties": properties, "required": required});
    InputRequest::Elicitation(ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message.into(),
        requested_schema: serde_json::from_value(schema).expect("fixture schema is a valid elicitation schema"),
    }))
}

pub(crate) fn elicit_name() -> InputRequest {
    elicit("What is your name?", json!({"name": {"type": "string"}}), &["name"])
}

pub(crate) fn sample(question: &str) -> InputRequest {
    InputRequest::CreateMessage(CreateMessageRequest::new(CreateMessageRequestParams::new(vec![SamplingMessage::user_text(question)], 100)))
}

fn list_roots() -> InputRequest {
    InputRequest::ListRoots(ListRootsRequest::default())
}

pub(crate) fn requests<const N: usize>(entries: [(&str, InputRequest); N]) -> InputRequests {
    entries.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// A response counts only if it is a JSON object (an ElicitResult,
/// CreateMessageResult or ListRootsResult); anything else is asked again.
pub(crate) fn answered<'a>(responses: &'a Option<rmcp::model::InputResponses>, key: &str) -> Option<&'a Map<String, Value>> {
    responses.as_ref()?.get(key)?.as_object()
}

fn done(text: impl Into<String>) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(text)]).into()
}

impl EverythingServer {
    /// Round one of a stateful fixture: seal `continuation` and ask.
    async fn ask_with_state(
        &self,
        ctx: &CallContext,
        scope: StateScope<'_>,
        continuation: Value,
        asks: InputRequests,
    ) -> Result<CallToolResponse, ErrorData> {
        let token = self.request_states.seal(ctx, scope, &continuation).await?;
        Ok(InputRequiredResult::new(Some(asks), Some(token)).into())
    }
}

#[tool_router(router = mrtr_tools, vis = "pub(crate)")]
impl EverythingServer {
    #[tool(description = "Asks for the user's name by elicitation, then greets them")]
    async fn test_input_required_result_elicitation(&self, InputResponses(responses): InputResponses) -> CallToolResponse {
        match answered(&responses, "user_name") {
            Some(reply) => {
                let name = reply.get("content").and_then(|c| c.get("name")).and_then(Value::as_str);
                match (reply.get("action").and_then(Value::as_str), name) {
                    (Some("accept"), Some(name)) => done(format!("Hello, {name}!")),
                    _ => done("No name was given."),
                }
            }
            None => InputRequiredResult::from_input_requests(requests([("user_name", elicit_name())])).into(),
        }
    }

    #[tool(description = "Asks the client's model a question by sampling")]
    async fn test_input_required_result_sampling(&self, InputResponses(responses): InputResponses) -> CallToolResponse {
        match answered(&responses, "capital_question") {
            Some(reply) => done(format!("The model answered: {}", reply.get("content").cloned().unwrap_or_default())),
            None => {
                InputRequiredResult::from_input_requests(requests([("capital_question", sample("What is the capital of France?"))])).into()
            }
        }
    }

    #[tool(description = "Asks the client for its roots")]
    async fn test_input_required_result_list_roots(&self, InputResponses(responses): InputResponses) -> CallToolResponse {
        match answered(&responses, "roots") {
            Some(reply) => {
                let count = reply.get("roots").and_then(Value::as_array).map_or(0, Vec::len);
                done(format!("The client has {count} root(s)."))
            }
            None => InputRequiredResult::from_input_requests(requests([("roots", list_roots())])).into(),
        }
    }

    #[tool(description = "Asks for confirmation, keeping its progress in a sealed requestState")]
    async fn test_input_required_result_request_state(
        &self,
        ctx: CallContext,
        arguments: JsonObject,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(arguments);
        let scope = StateScope::tool("test_input_required_result_request_state", &arguments);
        let ask = || requests([("confirm", elicit("Confirm?", json!({"ok": {"type": "boolean"}}), &["ok"]))]);
        let Some(token) = state else {
            return self.ask_with_state(&ctx, scope, json!({"awaiting": "confirm"}), ask()).await;
        };
        self.request_states.open::<Value>(&ctx, scope, &token).await?;
        match answered(&responses, "confirm") {
            Some(_) => Ok(done("Confirmed with verified request state.")),
            None => self.ask_with_state(&ctx, scope, json!({"awaiting": "confirm"}), ask()).await,
        }
    }

    #[tool(description = "Asks for an elicitation, a sampling and the roots in one round")]
    async fn test_input_required_result_multiple_inputs(
        &self,
        ctx: CallContext,
        arguments: JsonObject,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(arguments);
        let scope = StateScope::tool("test_input_required_result_multiple_inputs", &arguments);
        let keys = ["user_name", "capital_question", "roots"];
        if let Some(token) = state {
            self.request_states.open::<Value>(&ctx, scope, &token).await?;
            if keys.iter().all(|key| answered(&responses, key).is_some()) {
                return Ok(done("All three inputs received."));
            }
        }
        let asks = requests([
            ("user_name", elicit_name()),
            ("capital_question", sample("What is the capital of France?")),
            ("roots", list_roots()),
        ]);
        self.ask_with_state(&ctx, scope, json!({"awaiting": keys}), asks).await
    }

    #[tool(description = "Two rounds of input, each with a fresh requestState, then a result")]
    async fn test_input_required_result_multi_round(
        &self,
        ctx: CallContext,
        arguments: JsonObject,
        RequestState(state): RequestState,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(arguments);
        let scope = StateScope::tool("test_input_required_result_multi_round", &arguments);
        let round = match state {
            None => 0,
            Some(token) => {
                let state: Value = self.request_states.open(&ctx, scope, &token).await?;
                state.get("round").and_then(Value::as_u64).unwrap_or(0)
            }
        };
        if round >= 2 {
            return Ok(done("Finished after two rounds."));
        }
        let next = round + 1;
        let ask = requests([("step", elicit(&format!("Step {next} of 2: continue?"), json!({"ok": {"type": "boolean"}}), &["ok"]))]);
        self.ask_with_state(&ctx, scope, json!({"round": next}), ask).await
    }

    #[tool(description = "Seals its requestState; a tampered state is refused with a JSON-RPC error")]
    async fn test_input_required_result_tampered_state(
        &self,
        ctx: CallContext,
        arguments: JsonObject,
        RequestState(state): RequestState,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(arguments);
        let scope = StateScope::tool("test_input_required_result_tampered_state", &arguments);
        match state {
            Some(token) => {
                self.request_states.open::<Value>(&ctx, scope, &token).await?;
                Ok(done("State verified."))
            }
            None => self.ask_with_state(&ctx, scope, json!({"awaiting": "name"}), requests([("user_name", elicit_name())])).await,
        }
    }

    #[tool(description = "Asks only for input the client declared it can give")]
    async fn test_input_required_result_capabilities(
        &self,
        ctx: CallContext,
        InputResponses(responses): InputResponses,
    ) -> CallToolResponse {
        let offered = [
            ("user_name", ctx.declares("elicitation", Some("form")), elicit_name as fn() -> InputRequest),
            ("capital_question", ctx.declares("sampling", None), || sample("What is the capital of France?")),
            ("roots", ctx.declares("roots", None), list_roots),
        ];
        if offered.iter().any(|(key, _, _)| answered(&responses, key).is_some()) {
            return done("Input received.");
        }
        let asks: InputRequests =
            offered.into_iter().filter(|(_, declared, _)| *declared).map(|(key, _, make)| (key.to_owned(), make())).collect();
        if asks.is_empty() {
            return done("The client declared no capability to ask through.");
        }
        InputRequiredResult::from_input_requests(asks).into()
    }
}
