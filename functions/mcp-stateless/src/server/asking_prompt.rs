//! Prompts that may ask the user before they answer (a multi-round
//! `prompts/get`, SEP-2322), registered beside `#[prompt]` routes in the
//! same `PromptRouter`.
//!
//! rmcp's prompt routes are given the prompt's name and arguments only, not
//! `inputResponses` or `requestState`. [`Registry::get_prompt`](crate::Registry::get_prompt)
//! puts those two in the request's extensions before it routes, and an
//! [`AskingPrompt`]'s route hands its function the whole request again. One
//! router still lists, orders and refuses every prompt, as rmcp does.

use std::{future::Future, sync::Arc};

use futures::FutureExt;
use rmcp::{
    ErrorData,
    handler::server::{
        prompt::PromptContext,
        router::prompt::{IntoPromptRoute, PromptRoute},
    },
    model::{GetPromptRequestParams, GetPromptResponse, InputResponses, Prompt, PromptArgument, RequestMetaObject},
};

use crate::protocol::context::CallContext;

/// What a `prompts/get` carries besides the name and arguments, which
/// prompt routes are not given: put in the request's extensions by the
/// registry, read by the route.
#[derive(Clone, Default)]
pub(super) struct Rounds {
    pub(super) input_responses: Option<InputResponses>,
    pub(super) request_state: Option<String>,
    pub(super) meta: Option<RequestMetaObject>,
}

/// A prompt served by a function that sees the whole `prompts/get`
/// request, so it can ask the user first (answer an `InputRequiredResult`)
/// and read the answers in the next round.
///
/// ```
/// use mcp_stateless::prelude::{AskingPrompt, CallContext, ElicitationReply, elicitation_reply, form_request};
/// use rmcp::{ErrorData, handler::server::router::prompt::PromptRouter, model::*};
///
/// #[derive(Clone)]
/// struct Server;
///
/// async fn greeting(_server: Server, _ctx: CallContext, request: GetPromptRequestParams) -> Result<GetPromptResponse, ErrorData> {
///     let name = match elicitation_reply(&request.input_responses, "name") {
///         // Round one: ask (a later round carries the answer).
///         ElicitationReply::Missing => {
///             let schema = serde_json::json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
///             let asks = [("name".to_owned(), form_request("Your name?", schema)?)].into_iter().collect();
///             return Ok(InputRequiredResult::from_input_requests(asks).into());
///         }
///         ElicitationReply::Accepted(content) => content.get("name").and_then(|n| n.as_str()).unwrap_or("friend").to_owned(),
///         _ => "friend".to_owned(), // declined or cancelled
///     };
///     Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, format!("Greet {name}."))]).into())
/// }
///
/// let prompts = PromptRouter::<Server>::new().with_route(AskingPrompt::new("greeting", "Asks whom to greet", greeting));
/// assert_eq!(prompts.list_all()[0].name, "greeting");
/// ```
pub struct AskingPrompt<S> {
    route: PromptRoute<S>,
}

impl<S: Clone + Send + Sync + 'static> AskingPrompt<S> {
    /// Prompt `name`, listed with `description`, served by `serve` on a
    /// clone of the server (cheap: rmcp clones it for every request anyway).
    pub fn new<F, Fut>(name: &str, description: &str, serve: F) -> Self
    where
        F: Fn(S, CallContext, GetPromptRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResponse, ErrorData>> + Send + 'static,
    {
        let serve = Arc::new(serve);
        let route = PromptRoute::new_dyn(Prompt::new(name, Some(description), None), move |prompt: PromptContext<'_, S>| {
            let rounds = prompt.context.extensions.get::<Rounds>().cloned().unwrap_or_default();
            let mut request = GetPromptRequestParams::new(prompt.name);
            request.arguments = prompt.arguments;
            request.input_responses = rounds.input_responses;
            request.request_state = rounds.request_state;
            request.meta = rounds.meta;
            let call = CallContext::of(&prompt.context).map(|ctx| serve(prompt.server.clone(), ctx, request));
            async move { call?.await }.boxed()
        });
        Self { route }
    }

    /// The arguments the prompt lists (rmcp's `PromptArgument`s).
    pub fn with_arguments(mut self, arguments: Vec<PromptArgument>) -> Self {
        self.route.attr.arguments = Some(arguments);
        self
    }

    /// A human-readable title for clients to show.
    pub fn with_title(mut self, title: &str) -> Self {
        self.route.attr.title = Some(title.to_owned());
        self
    }
}

/// `PromptRouter::with_route(AskingPrompt::new(..))`, beside the routes
/// `#[prompt_router]` makes.
impl<S: Send + Sync + 'static> IntoPromptRoute<S, ()> for AskingPrompt<S> {
    fn into_prompt_route(self) -> PromptRoute<S> {
        self.route
    }
}
