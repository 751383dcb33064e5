//! Example: a multi-round flow (MRTR). Each round asks the user one thing by
//! form elicitation and seals what it has so far into a fresh
//! `requestState`, so any instance can serve the next round and nothing is
//! stored or locked while the user thinks (a client may never come back).

use mcp_stateless::{
    CallContext, StateScope,
    sealed::mrtr::{ElicitationReply, ask_one, elicitation_reply, form_request},
};
use rmcp::{
    ErrorData,
    handler::server::tool::{InputResponses, RequestState},
    model::{CallToolResponse, CallToolResult, ContentBlock, JsonObject},
    tool, tool_router,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::StarterServer;

/// What the flow carries from round to round, sealed.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Draft {
    what: Option<String>,
}

fn done(message: &str) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(message)]).into()
}

#[tool_router(router = reminder_tools, vis = "pub(crate)")]
impl StarterServer {
    #[tool(description = "Sets up a reminder, asking the user what and when")]
    async fn plan_reminder(
        &self,
        ctx: CallContext,
        arguments: JsonObject,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(arguments);
        let scope = StateScope::tool("plan_reminder", &arguments);
        let draft: Draft = match &state {
            Some(token) => self.request_states.open(&ctx, scope, token).await?,
            None => Draft::default(),
        };
        match (draft.what, state.is_some()) {
            // Round 1: ask what.
            (None, false) => {
                let ask = form_request(
                    "What should I remind you about?",
                    json!({"type": "object", "properties": {"what": {"type": "string", "minLength": 1}}, "required": ["what"]}),
                )?;
                let state = self.request_states.seal(&ctx, scope, &Draft::default()).await?;
                Ok(ask_one("what", ask, state).into())
            }
            // Round 2: record what, ask when, under a fresh state.
            (None, true) => match elicitation_reply(&responses, "what") {
                ElicitationReply::Accepted(content) => {
                    let what = content.get("what").and_then(Value::as_str).unwrap_or_default().trim().to_owned();
                    if what.is_empty() {
                        return Ok(done("No reminder was set: nothing to remind about."));
                    }
                    let ask = form_request(
                        &format!("When should I remind you to {what}?"),
                        json!({"type": "object", "properties": {"when": {"type": "string", "format": "date-time"}}, "required": ["when"]}),
                    )?;
                    let state = self.request_states.seal(&ctx, scope, &Draft { what: Some(what) }).await?;
                    Ok(ask_one("when", ask, state).into())
                }
                ElicitationReply::Missing => Ok(done("No answer arrived; call plan_reminder again.")),
                ElicitationReply::Declined | ElicitationReply::Cancelled => Ok(done("No reminder was set.")),
            },
            // Round 3: done.
            (Some(what), _) => match elicitation_reply(&responses, "when") {
                ElicitationReply::Accepted(content) => {
                    let when = content.get("when").and_then(Value::as_str).unwrap_or("soon");
                    Ok(done(&format!("Reminder set: {what}, at {when}.")))
                }
                ElicitationReply::Missing => Ok(done("No answer arrived; call plan_reminder again.")),
                ElicitationReply::Declined | ElicitationReply::Cancelled => Ok(done("No reminder was set.")),
            },
        }
    }
}
