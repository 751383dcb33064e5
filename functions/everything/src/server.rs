//! The `ServerHandler`: capabilities and the routers of the other modules.

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{CompleteRequestParams, CompleteResult, CompletionInfo, Reference},
    service::RequestContext,
};

use mcp_stateless::prelude::{Dependencies, Registry, RequestStates, TaskTools};

#[derive(Clone)]
pub struct EverythingServer {
    pub(crate) request_states: RequestStates,
    pub(crate) registry: Registry<Self>,
}

impl EverythingServer {
    pub fn new(deps: Dependencies) -> Self {
        Self::with_task_tools(deps, crate::task_tools())
    }

    /// With `tools` as its task tools instead of the fixtures' own (tests
    /// add tools that misbehave on purpose).
    pub fn with_task_tools(deps: Dependencies, tools: TaskTools) -> Self {
        let registry = Registry::builder(&deps)
            .tools(Self::content_tools())
            .tools(Self::legacy_tools())
            .tools(Self::listen_tools())
            .tools(Self::mrtr_tools())
            .tools(Self::schema_tools())
            .tools(Self::task_fixture_tools())
            .task_tools(tools)
            .prompts(Self::prompts())
            .resources(crate::resources::resources())
            .completions()
            .build();
        Self { request_states: deps.request_states, registry }
    }
}

impl ServerHandler for EverythingServer {
    mcp_stateless::server_methods!(registry);

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
