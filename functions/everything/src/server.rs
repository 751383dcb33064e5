//! The `ServerHandler`: capabilities and the routers of the other modules.

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    handler::server::{
        prompt::PromptContext,
        router::{prompt::PromptRouter, tool::ToolRouter},
    },
    model::{
        CompleteRequestParams, CompleteResult, CompletionInfo, GetPromptRequestParams, GetPromptResponse, ListPromptsResult,
        ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams,
        ReadResourceResponse, Reference, ServerCapabilities, ServerConfig,
    },
    service::RequestContext,
    tool_handler,
};
use std::borrow::Cow;

use mcp_stateless::{
    CallContext, Dependencies, RequestStates,
    subscriptions::{ListDigests, Subscriptions},
    tasks::Tasks,
};

#[derive(Clone)]
pub struct EverythingServer {
    pub(crate) request_states: RequestStates,
    pub(crate) tasks: Tasks,
    pub(crate) subscriptions: Subscriptions,
    tool_router: ToolRouter<Self>,
    prompt_router: PromptRouter<Self>,
}

impl EverythingServer {
    pub fn new(deps: Dependencies) -> Self {
        Self::with_task_tools(deps, crate::task_tools())
    }

    /// With `tools` as its task tools instead of the fixtures' own (tests
    /// add tools that misbehave on purpose).
    pub fn with_task_tools(deps: Dependencies, tools: mcp_stateless::tasks::TaskTools) -> Self {
        let tasks = deps.tasks.with_tools(tools);
        let tool_router = mcp_stateless::protocol::arguments::checked(
            Self::content_tools()
                + Self::listen_tools()
                + Self::mrtr_tools()
                + Self::schema_tools()
                + Self::task_fixture_tools()
                + tasks.router(),
        );
        let prompt_router = Self::prompts();
        deps.subscriptions.serve_lists(ListDigests::of(
            &serde_json::json!(tool_router.list_all()),
            &serde_json::json!(prompt_router.list_all()),
            &serde_json::json!([crate::resources::list(), crate::resources::templates()]),
        ));
        Self { request_states: deps.request_states, tool_router, tasks, subscriptions: deps.subscriptions, prompt_router }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for EverythingServer {
    fn get_info(&self) -> ServerConfig {
        // listChanged only where responses stream: a buffered Lambda
        // cannot hold a subscriptions/listen stream open.
        let capabilities =
            ServerCapabilities::builder().enable_tools().enable_prompts().enable_resources().enable_completions().enable_tasks().build();
        mcp_stateless::protocol::server_info(
            env!("CARGO_PKG_NAME"),
            env!("CARGO_PKG_VERSION"),
            self.subscriptions.advertise(capabilities, false),
        )
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        mcp_stateless::protocol::supported_protocol_versions()
    }

    mcp_stateless::task_methods!(tasks);
    mcp_stateless::listen_methods!(subscriptions, tasks);

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(self.prompt_router.list_all()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        // The MRTR prompt needs inputResponses, which prompt routes do not see.
        if request.name == crate::prompts::INPUT_REQUIRED_PROMPT {
            let ctx = CallContext::of(&context)?;
            return self.input_required_prompt(&ctx, &request).await;
        }
        let prompt = PromptContext::new(self, request.name, request.arguments, context);
        self.prompt_router.get_prompt(prompt).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(crate::resources::list()))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(crate::resources::templates()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        crate::resources::read(&request.uri).map(Into::into)
    }

    async fn complete(&self, request: CompleteRequestParams, _context: RequestContext<RoleServer>) -> Result<CompleteResult, ErrorData> {
        let values = match &request.r#ref {
            Reference::Prompt(prompt) if prompt.name == "test_prompt_with_arguments" => {
                let typed = request.argument.value.as_str();
                ["test", "testValue1", "testValue2"]
                    .into_iter()
                    .filter(|candidate| candidate.starts_with(typed))
                    .map(str::to_owned)
                    .collect()
            }
            _ => Vec::new(),
        };
        let info = CompletionInfo::with_all_values(values).map_err(|e| ErrorData::internal_error(e, None))?;
        Ok(CompleteResult::new(info))
    }
}
