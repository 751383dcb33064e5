//! Example: a multi-round flow (MRTR). Each round asks the user one thing by
//! form elicitation and seals what it has so far into a fresh
//! `requestState`, so any instance can serve the next round and nothing is
//! stored or locked while the user thinks (a client may never come back).

use mcp_stateless::prelude::{CallContext, ElicitationReply, StateScope, ask_one, checked_reply, form_request, require_form_elicitation};
use rmcp::{
    ErrorData,
    handler::server::tool::{InputResponses, RequestState},
    model::{CallToolResponse, CallToolResult, ContentBlock, JsonObject},
    tool, tool_router,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::Server;

/// The longest "what" the flow carries (sealed state is a few KB at most).
const MAX_WHAT_CHARS: usize = 500;

/// What the flow carries from round to round, sealed.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Draft {
    what: Option<String>,
}

/// The forms asked, one function each: the round that asks and the round
/// that checks the answer use the same schema.
fn what_schema() -> Value {
    json!({"type": "object", "properties": {"what": {"type": "string", "minLength": 1}}, "required": ["what"]})
}

fn when_schema() -> Value {
    json!({"type": "object", "properties": {"when": {"type": "string", "format": "date-time"}}, "required": ["when"]})
}

fn done(message: &str) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(message)]).into()
}

#[tool_router(router = reminder_tools, vis = "pub(crate)")]
impl Server {
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
                require_form_elicitation(&ctx)?;
                let ask = form_request("What should I remind you about?", what_schema())?;
                let state = self.request_states.seal(&ctx, scope, &Draft::default()).await?;
                Ok(ask_one("what", ask, state).into())
            }
            // Round 2: record what, ask when, under a fresh state.
            (None, true) => match checked_reply(&responses, "what", &what_schema())? {
                ElicitationReply::Accepted(content) => {
                    let what = content.get("what").and_then(Value::as_str).unwrap_or_default().trim().to_owned();
                    if what.is_empty() {
                        return Ok(done("No reminder was set: nothing to remind about."));
                    }
                    // It travels sealed in the next round's requestState,
                    // whose size is bounded: say so rather than fail.
                    if what.chars().count() > MAX_WHAT_CHARS {
                        let message = format!("Keep the reminder under {MAX_WHAT_CHARS} characters; call plan_reminder again.");
                        return Ok(CallToolResult::error(vec![ContentBlock::text(message)]).into());
                    }
                    let ask = form_request(&format!("When should I remind you to {what}?"), when_schema())?;
                    let state = self.request_states.seal(&ctx, scope, &Draft { what: Some(what) }).await?;
                    Ok(ask_one("when", ask, state).into())
                }
                ElicitationReply::Missing => Ok(done("No answer arrived; call plan_reminder again.")),
                ElicitationReply::Declined | ElicitationReply::Cancelled => Ok(done("No reminder was set.")),
            },
            // Round 3: done.
            (Some(what), _) => match checked_reply(&responses, "when", &when_schema())? {
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

#[cfg(test)]
mod tests {
    use e2e::{call_tool, text_of};

    use super::*;
    use crate::testing::serve;

    const ELICIT: fn() -> Value = || json!({"elicitation": {}});

    fn answer(state: &Value, key: &str, reply: Value) -> Value {
        json!({"requestState": state, "inputResponses": {key: reply}})
    }

    #[tokio::test]
    async fn asks_what_then_when_then_sets_it() {
        let addr = serve().await;
        let round1 = call_tool(addr, "alice", "plan_reminder", json!({}), ELICIT(), json!({})).await;
        assert_eq!(round1["result"]["resultType"], "input_required", "{round1}");
        let what = json!({"action": "accept", "content": {"what": "water the plants"}});
        let round2 =
            call_tool(addr, "alice", "plan_reminder", json!({}), ELICIT(), answer(&round1["result"]["requestState"], "what", what)).await;
        assert_eq!(round2["result"]["inputRequests"]["when"]["params"]["message"], "When should I remind you to water the plants?");
        let when = json!({"action": "accept", "content": {"when": "2026-12-01T09:00:00Z"}});
        let round3 =
            call_tool(addr, "alice", "plan_reminder", json!({}), ELICIT(), answer(&round2["result"]["requestState"], "when", when)).await;
        assert_eq!(text_of(&round3), "Reminder set: water the plants, at 2026-12-01T09:00:00Z.");
    }

    #[tokio::test]
    async fn an_overlong_answer_is_a_tool_error_that_says_what_to_do() {
        let addr = serve().await;
        let round1 = call_tool(addr, "alice", "plan_reminder", json!({}), ELICIT(), json!({})).await;
        let what = json!({"action": "accept", "content": {"what": "x".repeat(5_000)}});
        let reply =
            call_tool(addr, "alice", "plan_reminder", json!({}), ELICIT(), answer(&round1["result"]["requestState"], "what", what)).await;
        assert_eq!(reply["result"]["isError"], true, "{reply}");
        assert_eq!(text_of(&reply), "Keep the reminder under 500 characters; call plan_reminder again.");
    }

    /// Issue 16, finding 11: an answer that does not fit the form it
    /// answers (not a date-time, not a string) is refused.
    #[tokio::test]
    async fn an_answer_that_does_not_fit_the_form_is_refused() {
        let addr = serve().await;
        let round1 = call_tool(addr, "alice", "plan_reminder", json!({}), ELICIT(), json!({})).await;
        let what = json!({"action": "accept", "content": {"what": "call mum"}});
        let round2 =
            call_tool(addr, "alice", "plan_reminder", json!({}), ELICIT(), answer(&round1["result"]["requestState"], "what", what)).await;
        for when in [json!({"when": "NOT-A-DATE-TIME"}), json!({"when": 20261201})] {
            let reply = answer(&round2["result"]["requestState"], "when", json!({"action": "accept", "content": when}));
            let refused = call_tool(addr, "alice", "plan_reminder", json!({}), ELICIT(), reply).await;
            assert_eq!(refused["error"]["code"], -32602, "{refused}");
            assert!(refused["error"]["message"].as_str().unwrap().starts_with("Invalid input response when"), "{refused}");
        }
    }

    #[tokio::test]
    async fn declining_sets_nothing() {
        let addr = serve().await;
        let round1 = call_tool(addr, "alice", "plan_reminder", json!({}), ELICIT(), json!({})).await;
        let declined = answer(&round1["result"]["requestState"], "what", json!({"action": "decline"}));
        let reply = call_tool(addr, "alice", "plan_reminder", json!({}), ELICIT(), declined).await;
        assert_eq!(text_of(&reply), "No reminder was set.");
    }
}
