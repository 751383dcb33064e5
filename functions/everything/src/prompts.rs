//! Prompt fixtures.

use rmcp::{
    ErrorData,
    handler::server::router::prompt::PromptRouter,
    handler::server::wrapper::Parameters,
    model::{GetPromptRequestParams, GetPromptResponse, GetPromptResult, InputRequiredResult, PromptMessage, Role},
    prompt, prompt_router,
};
use schemars::JsonSchema;
use serde::Deserialize;

use mcp_stateless::prelude::{AskingPrompt, CallContext};

use crate::{
    EverythingServer, PNG_1X1,
    mrtr_tools::{answered, elicit_name},
};

#[derive(Deserialize, JsonSchema)]
pub(crate) struct TwoArguments {
    /// First argument
    arg1: String,
    /// Second argument
    arg2: String,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct ResourceArgument {
    /// URI of the resource to embed
    #[serde(rename = "resourceUri")]
    resource_uri: String,
}

#[prompt_router(router = "prompt_routes")]
impl EverythingServer {
    #[prompt(description = "A prompt without arguments")]
    async fn test_simple_prompt(&self) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(Role::User, "This is a simple prompt for testing.")]
    }

    #[prompt(description = "A prompt that repeats its two arguments")]
    async fn test_prompt_with_arguments(&self, Parameters(args): Parameters<TwoArguments>) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(Role::User, format!("Prompt with arguments: arg1='{}', arg2='{}'", args.arg1, args.arg2))]
    }

    #[prompt(description = "A prompt that embeds the resource it is given")]
    async fn test_prompt_with_embedded_resource(&self, Parameters(args): Parameters<ResourceArgument>) -> Vec<PromptMessage> {
        vec![
            PromptMessage::new_resource(
                Role::User,
                args.resource_uri,
                Some("text/plain".into()),
                Some("Embedded resource content for testing.".into()),
                None,
                None,
                None,
            ),
            PromptMessage::new_text(Role::User, "Please process the embedded resource above."),
        ]
    }

    #[prompt(description = "A prompt with an image")]
    async fn test_prompt_with_image(&self) -> Result<Vec<PromptMessage>, ErrorData> {
        use base64::Engine;
        let png = base64::engine::general_purpose::STANDARD.decode(PNG_1X1).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(vec![
            PromptMessage::new_image(Role::User, &png, "image/png", None, None),
            PromptMessage::new_text(Role::User, "Please analyze the image above."),
        ])
    }
}

impl EverythingServer {
    /// Every prompt fixture: the routes above and the one that asks first.
    pub(crate) fn prompts() -> PromptRouter<Self> {
        Self::prompt_routes().with_route(AskingPrompt::new(
            "test_input_required_result_prompt",
            "Asks for the user's name before producing its messages",
            input_required_prompt,
        ))
    }
}

async fn input_required_prompt(
    _server: EverythingServer,
    _ctx: CallContext,
    request: GetPromptRequestParams,
) -> Result<GetPromptResponse, ErrorData> {
    let Some(reply) = answered(&request.input_responses, "user_name") else {
        let asks = [("user_name".to_owned(), elicit_name())].into_iter().collect();
        return Ok(InputRequiredResult::from_input_requests(asks).into());
    };
    let name = reply.get("content").and_then(|c| c.get("name")).and_then(|n| n.as_str()).unwrap_or("friend");
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, format!("Write a greeting for {name}."))]).into())
}
