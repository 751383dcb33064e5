//! Example: prompts. `summarize` is a plain prompt, a `#[prompt]` whose
//! typed arguments become the arguments it lists. `draft_reply` asks the
//! user first (its tone, by form elicitation) and builds its messages from
//! the answer: an `AskingPrompt`, which sees the whole `prompts/get`
//! request, the answers included. It asks one thing and needs no sealed
//! state: the answer and the prompt's own arguments come back together in
//! the next round.

use mcp_stateless::prelude::{AskingPrompt, CallContext, ElicitationReply, checked_reply, form_request, require_form_elicitation};
use rmcp::{
    ErrorData,
    handler::server::{router::prompt::PromptRouter, wrapper::Parameters},
    model::{GetPromptRequestParams, GetPromptResponse, GetPromptResult, InputRequiredResult, PromptArgument, PromptMessage, Role},
    prompt, prompt_router,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::Server;

#[derive(Deserialize, JsonSchema)]
struct Summarize {
    /// The text to summarize.
    text: String,
}

#[prompt_router(router = "writing_routes")]
impl Server {
    #[prompt(description = "Asks the model for a three-sentence summary of a text")]
    async fn summarize(&self, Parameters(args): Parameters<Summarize>) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(Role::User, format!("Summarize this in three sentences:\n\n{}", args.text))]
    }
}

fn tone_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"tone": {"type": "string", "enum": ["warm", "formal", "brief"]}},
        "required": ["tone"],
    })
}

async fn draft_reply(_server: Server, ctx: CallContext, request: GetPromptRequestParams) -> Result<GetPromptResponse, ErrorData> {
    let message = request.arguments.as_ref().and_then(|a| a.get("message")).and_then(Value::as_str).unwrap_or_default().to_owned();
    if message.trim().is_empty() {
        return Err(ErrorData::invalid_params("argument `message` is required", None));
    }
    let tone = match checked_reply(&request.input_responses, "tone", &tone_schema())? {
        // Round one: ask. The client calls again with the answer.
        ElicitationReply::Missing => {
            require_form_elicitation(&ctx)?;
            let asks = [("tone".to_owned(), form_request("Which tone should the reply take?", tone_schema())?)];
            return Ok(InputRequiredResult::from_input_requests(asks.into_iter().collect()).into());
        }
        ElicitationReply::Accepted(content) => content.get("tone").and_then(Value::as_str).unwrap_or("warm").to_owned(),
        // The user would rather not say: a neutral reply.
        ElicitationReply::Declined | ElicitationReply::Cancelled => "neutral".to_owned(),
    };
    let text = format!("Draft a {tone} reply to this message:\n\n{message}");
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]).into())
}

/// Both prompts: the `#[prompt]` routes and the prompt that asks first.
pub(crate) fn writing_prompts() -> PromptRouter<Server> {
    Server::writing_routes().with_route(
        AskingPrompt::new("draft_reply", "Asks the user which tone to take, then drafts a reply to a message", draft_reply)
            .with_arguments(vec![PromptArgument::new("message").with_description("The message to reply to").with_required(true)]),
    )
}

#[cfg(test)]
mod tests {
    use e2e::{post, request};
    use serde_json::json;

    use crate::testing::serve;

    async fn get_prompt(addr: std::net::SocketAddr, params: serde_json::Value, capabilities: serde_json::Value) -> serde_json::Value {
        post(addr, &request(1, "prompts/get", params, capabilities)).await.message()
    }

    #[tokio::test]
    async fn summarize_puts_the_text_in_its_message() {
        let addr = serve().await;
        let reply = get_prompt(addr, json!({"name": "summarize", "arguments": {"text": "It rained."}}), json!({})).await;
        assert_eq!(reply["result"]["messages"][0]["content"]["text"], "Summarize this in three sentences:\n\nIt rained.", "{reply}");
    }

    #[tokio::test]
    async fn draft_reply_asks_the_tone_then_drafts_in_it() {
        let addr = serve().await;
        let params = json!({"name": "draft_reply", "arguments": {"message": "Lunch on Friday?"}});
        let round1 = get_prompt(addr, params.clone(), json!({"elicitation": {}})).await;
        assert_eq!(round1["result"]["resultType"], "input_required", "{round1}");
        assert_eq!(round1["result"]["inputRequests"]["tone"]["params"]["message"], "Which tone should the reply take?");

        let mut answered = params;
        answered["inputResponses"] = json!({"tone": {"action": "accept", "content": {"tone": "brief"}}});
        let round2 = get_prompt(addr, answered, json!({"elicitation": {}})).await;
        assert_eq!(
            round2["result"]["messages"][0]["content"]["text"], "Draft a brief reply to this message:\n\nLunch on Friday?",
            "{round2}"
        );
    }

    #[tokio::test]
    async fn both_prompts_are_listed_with_their_arguments() {
        let addr = serve().await;
        let reply = post(addr, &request(1, "prompts/list", json!({}), json!({}))).await.message();
        let prompts = reply["result"]["prompts"].as_array().unwrap_or_else(|| panic!("{reply}"));
        let draft = prompts.iter().find(|p| p["name"] == "draft_reply").unwrap_or_else(|| panic!("{reply}"));
        assert_eq!(draft["arguments"], json!([{"name": "message", "description": "The message to reply to", "required": true}]));
        assert!(prompts.iter().any(|p| p["name"] == "summarize"), "{reply}");
    }

    #[tokio::test]
    async fn a_client_that_cannot_answer_forms_is_told_so() {
        let addr = serve().await;
        let reply = get_prompt(addr, json!({"name": "draft_reply", "arguments": {"message": "Hi"}}), json!({})).await;
        assert_eq!(reply["error"]["code"], -32021, "{reply}");
    }
}
