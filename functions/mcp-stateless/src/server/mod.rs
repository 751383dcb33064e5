//! What a function's server registered, in one place: its tools, task
//! tools, prompts and resources. Everything the server publishes about
//! itself is derived from it, so nothing can drift from what is served:
//! the capabilities, the lists, and the digests listen streams compare
//! across deployments.
//!
//! A server holds a [`Registry`] built by [`RegistryBuilder`] and writes
//! `mcp_stateless::server_methods!(registry);` in its `ServerHandler`
//! impl (in place of rmcp's `#[tool_handler]`, whose `get_info` would
//! advertise only tools).

mod asking_prompt;
pub mod dependencies;
mod methods;
mod resources;
mod uri_template;

use std::{borrow::Cow, sync::Arc};

use rmcp::{
    ErrorData, RoleServer,
    handler::server::{
        prompt::PromptContext,
        router::{prompt::PromptRouter, tool::ToolRouter},
        tool::ToolCallContext,
    },
    model::{
        CacheScope, CallToolRequestParams, CallToolResponse, GetPromptRequestMethod, GetPromptRequestParams, GetPromptResponse,
        ListPromptsRequestMethod, ListToolsResult, ProtocolVersion, ReadResourceResult, Resource, ResourceTemplate, ResourcesCapability,
        ServerCapabilities, ServerConfig, Tool,
    },
    service::RequestContext,
};

use crate::{
    handles::{access::Handles, resource::HandleResources},
    protocol::{self, context::CallContext},
    subscriptions::{ListDigests, Subscriptions},
    tasks::{TaskTools, Tasks},
};
pub use asking_prompt::AskingPrompt;
pub use dependencies::Dependencies;
pub use resources::{FixedResource, ResourceReader, ResourceRequest, Resources, TemplatedResource};

/// What a server serves, and what it says about itself because of it.
///
/// ```
/// use mcp_stateless::prelude::{Dependencies, Registry};
/// use rmcp::{
///     ServerHandler,
///     model::{CallToolResult, ContentBlock},
///     tool, tool_router,
/// };
///
/// #[derive(Clone)]
/// struct Server {
///     registry: Registry<Self>,
/// }
///
/// #[tool_router(router = hello_tools)]
/// impl Server {
///     #[tool(description = "Says hello")]
///     async fn hello(&self) -> CallToolResult {
///         CallToolResult::success(vec![ContentBlock::text("hello")])
///     }
/// }
///
/// impl ServerHandler for Server {
///     mcp_stateless::server_methods!(registry);
/// }
///
/// // In process here; the deployment's DynamoDB, KMS and SQS in Lambda.
/// let deps = Dependencies::in_process();
/// let server = Server { registry: Registry::builder(&deps).tools(Server::hello_tools()).build() };
/// assert!(server.get_info().capabilities.tools.is_some());
/// assert!(server.get_info().capabilities.prompts.is_none(), "no prompt registered");
/// ```
/// Cheap to clone (rmcp clones the server for every request).
#[derive(Clone)]
pub struct Registry<S> {
    /// Shared, as everything here: rmcp clones the server for every
    /// request, and a router's clone would copy its every route.
    tools: Arc<ToolRouter<S>>,
    prompts: Arc<PromptRouter<S>>,
    resources: Arc<Resources<S>>,
    /// What the parts add up to, decided once (rmcp asks for the server's
    /// info on every request).
    capabilities: ServerCapabilities,
    tasks: Tasks,
    subscriptions: Subscriptions,
    handles: Handles,
}

/// Collects a server's parts; [`RegistryBuilder::build`] wires them.
pub struct RegistryBuilder<S> {
    deps: Dependencies,
    tools: ToolRouter<S>,
    task_tools: TaskTools,
    prompts: PromptRouter<S>,
    resources: Resources<S>,
    completions: bool,
}

impl<S: Send + Sync + 'static> Registry<S> {
    /// A registry over `deps`: the task backend, listen streams and handles
    /// its parts are served with.
    pub fn builder(deps: &Dependencies) -> RegistryBuilder<S> {
        RegistryBuilder {
            deps: deps.clone(),
            tools: ToolRouter::new(),
            task_tools: TaskTools::new(),
            prompts: PromptRouter::new(),
            resources: Resources::new(),
            completions: false,
        }
    }

    /// Every tool, task tools included, with arguments checked against
    /// each tool's published schema.
    pub fn tools(&self) -> &ToolRouter<S> {
        &self.tools
    }

    /// The request side of the task tools (a tool that starts a task
    /// itself calls [`Tasks::start`]).
    pub fn tasks(&self) -> &Tasks {
        &self.tasks
    }

    /// Listen streams (a tool that changes a list calls
    /// [`Subscriptions::list_changed`]).
    pub fn subscriptions(&self) -> &Subscriptions {
        &self.subscriptions
    }

    /// Handle kinds exposed as resources (what listen streams watch).
    pub fn handle_resources(&self) -> &HandleResources {
        self.resources.handles()
    }

    /// The handles those resources are read from.
    pub fn handles(&self) -> &Handles {
        &self.handles
    }

    /// `tools/list`. The list is the same for every caller, and a
    /// 2026-07-28 client may cache it publicly; it revalidates at once
    /// (`ttlMs` 0), since a deployment can change it at any moment.
    pub fn list_tools(&self, context: &RequestContext<RoleServer>) -> ListToolsResult {
        let list = ListToolsResult::with_all_items(self.tools.list_all());
        match context.protocol_version() {
            Some(version) if version >= ProtocolVersion::V_2026_07_28 => list.with_ttl_ms(0).with_cache_scope(CacheScope::Public),
            _ => list,
        }
    }

    /// `tools/call` through the tool routes, on `server`.
    pub async fn call_tool(
        &self,
        server: &S,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.tools.call(ToolCallContext::new(server, request, context)).await
    }

    /// The definition of tool `name` (rmcp checks `Mcp-Name` against it).
    pub fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.get(name).cloned()
    }

    /// `ServerHandler::get_info`: the capabilities of what is registered,
    /// with `listChanged` and resource subscriptions where listen streams
    /// exist, and `name`/`version` as `serverInfo`.
    pub fn info(&self, name: &str, version: &str) -> ServerConfig {
        protocol::server_info(name, version, self.capabilities.clone())
    }

    /// `ServerHandler::supported_protocol_versions`.
    pub fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        protocol::supported_protocol_versions()
    }

    /// `prompts/list`; -32601 for a server with no prompts, which
    /// advertises none (as rmcp answers then).
    pub fn list_prompts(&self) -> Result<Vec<rmcp::model::Prompt>, ErrorData> {
        match self.capabilities.prompts {
            Some(_) => Ok(self.prompts.list_all()),
            None => Err(ErrorData::method_not_found::<ListPromptsRequestMethod>()),
        }
    }

    /// `prompts/get` through the prompt routes, on `server`; -32601 for a
    /// server with no prompts. The request's rounds (`inputResponses`,
    /// `requestState`) travel in `context`'s extensions, for the
    /// [`AskingPrompt`]s among the routes.
    pub async fn get_prompt(
        &self,
        server: &S,
        request: GetPromptRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if self.capabilities.prompts.is_none() {
            return Err(ErrorData::method_not_found::<GetPromptRequestMethod>());
        }
        let rounds =
            asking_prompt::Rounds { input_responses: request.input_responses, request_state: request.request_state, meta: request.meta };
        context.extensions.insert(rounds);
        self.prompts.get_prompt(PromptContext::new(server, request.name, request.arguments, context)).await
    }

    /// `resources/list`: the fixed resources (handle-backed ones are per
    /// caller, so none is listed for everyone).
    pub fn list_resources(&self) -> Vec<Resource> {
        self.resources.list()
    }

    /// `resources/templates/list`: the templated resources, then one
    /// template per handle kind.
    pub fn list_resource_templates(&self) -> Vec<ResourceTemplate> {
        self.resources.templates()
    }

    /// `resources/read` on `server`: the fixed resource of that URI, else
    /// the first template that matches it, else a handle kind's, read for
    /// the caller; -32002 for anything else, a server with no resources
    /// included.
    pub async fn read_resource(
        &self,
        server: &S,
        context: &RequestContext<RoleServer>,
        uri: &str,
    ) -> Result<ReadResourceResult, ErrorData> {
        self.resources.read(server, &self.handles, CallContext::of(context)?, uri).await
    }
}

impl<S: Send + Sync + 'static> RegistryBuilder<S> {
    /// Adds a group of tools (one `#[tool_router]` block each).
    pub fn tools(mut self, tools: ToolRouter<S>) -> Self {
        self.tools += tools;
        self
    }

    /// Adds task tools: served here, run by the worker from the same list.
    pub fn task_tools(mut self, tools: TaskTools) -> Self {
        self.task_tools += tools;
        self
    }

    /// Adds a group of prompts: one `#[prompt_router]` block each, and
    /// [`AskingPrompt`]s added to a router with `with_route`.
    pub fn prompts(mut self, prompts: PromptRouter<S>) -> Self {
        self.prompts += prompts;
        self
    }

    /// Adds resources: fixed, templated and handle-backed, in one list.
    pub fn resources(mut self, resources: Resources<S>) -> Self {
        self.resources += resources;
        self
    }

    /// The server answers `completion/complete` (its own `complete` method).
    pub fn completions(mut self) -> Self {
        self.completions = true;
        self
    }

    /// The registry, its lists recorded for listen streams.
    pub fn build(self) -> Registry<S> {
        let deps = self.deps;
        let tasks = deps.tasks.with_tools(self.task_tools);
        // Every call's arguments are checked against the tool's published
        // inputSchema before the tool runs (a tool error if they break it).
        let tools = protocol::arguments::checked(self.tools + tasks.router());
        let mut capabilities = ServerCapabilities::builder().enable_tools().enable_tasks().build();
        if !self.prompts.list_all().is_empty() {
            capabilities.prompts = Some(Default::default());
        }
        if !self.resources.is_empty() {
            capabilities.resources = Some(ResourcesCapability::default());
        }
        if self.completions {
            capabilities.completions = Some(Default::default());
        }
        // Only handle-backed resources change, so only they can be watched.
        let capabilities = deps.subscriptions.advertise(capabilities, !self.resources.handles().is_empty());
        let registry = Registry {
            tools: Arc::new(tools),
            prompts: Arc::new(self.prompts),
            resources: Arc::new(self.resources),
            capabilities,
            tasks,
            subscriptions: deps.subscriptions,
            handles: deps.handles,
        };
        // A deployment whose lists differ tells listening clients so; the
        // digests are only worth computing where streams exist.
        if registry.subscriptions.enabled() {
            registry.subscriptions.serve_lists(ListDigests::of(
                &serde_json::json!(registry.tools.list_all()),
                &serde_json::json!(registry.prompts.list_all()),
                &serde_json::json!([registry.list_resources(), registry.list_resource_templates()]),
            ));
        }
        registry
    }
}

#[cfg(test)]
mod tests;
