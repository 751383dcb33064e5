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

pub mod dependencies;

use std::borrow::Cow;

use rmcp::{
    ErrorData, RoleServer,
    handler::server::{
        prompt::PromptContext,
        router::{prompt::PromptRouter, tool::ToolRouter},
        tool::ToolCallContext,
    },
    model::{
        CacheScope, CallToolRequestParams, CallToolResponse, GetPromptRequestParams, GetPromptResponse, ListToolsResult, ProtocolVersion,
        ReadResourceResult, Resource, ResourceTemplate, ResourcesCapability, ServerCapabilities, ServerConfig, Tool,
    },
    service::RequestContext,
};

use crate::{
    handles::{access::Handles, resource::HandleResources},
    protocol::{self, context::CallContext},
    subscriptions::{ListDigests, Subscriptions},
    tasks::{TaskTools, Tasks},
};
pub use dependencies::Dependencies;

/// How a server reads its fixed resources: `resources/read` of a URI that
/// no handle kind claims.
pub type ReadResource = fn(&str) -> Result<ReadResourceResult, ErrorData>;

/// Resources that are the same for every caller.
#[derive(Clone)]
struct FixedResources {
    list: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
    read: ReadResource,
}

/// What a server serves, and what it says about itself because of it.
/// Cheap to clone (rmcp clones the server for every request).
#[derive(Clone)]
pub struct Registry<S> {
    tools: ToolRouter<S>,
    prompts: PromptRouter<S>,
    fixed: Option<FixedResources>,
    handle_resources: HandleResources,
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
    fixed: Option<FixedResources>,
    handle_resources: HandleResources,
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
            fixed: None,
            handle_resources: HandleResources::default(),
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

    /// Handle kinds exposed as resources.
    pub fn handle_resources(&self) -> &HandleResources {
        &self.handle_resources
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

    /// `prompts/list`.
    pub fn list_prompts(&self) -> Vec<rmcp::model::Prompt> {
        self.prompts.list_all()
    }

    /// `prompts/get` through the prompt routes, on `server`.
    pub async fn get_prompt(
        &self,
        server: &S,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.prompts.get_prompt(PromptContext::new(server, request.name, request.arguments, context)).await
    }

    /// `resources/list`: the fixed resources (handle-backed ones are per
    /// caller, so none is listed for everyone).
    pub fn list_resources(&self) -> Vec<Resource> {
        self.fixed.as_ref().map(|fixed| fixed.list.clone()).unwrap_or_default()
    }

    /// `resources/templates/list`: the fixed templates and one per handle kind.
    pub fn list_resource_templates(&self) -> Vec<ResourceTemplate> {
        let mut templates = self.fixed.as_ref().map(|fixed| fixed.templates.clone()).unwrap_or_default();
        templates.extend(self.handle_resources.templates());
        templates
    }

    /// `resources/read`: a handle kind's URI for the caller, else a fixed one.
    pub async fn read_resource(&self, context: &RequestContext<RoleServer>, uri: &str) -> Result<ReadResourceResult, ErrorData> {
        match &self.fixed {
            Some(fixed) if !self.handle_resources.claims(uri) => (fixed.read)(uri),
            _ => self.handle_resources.read(&self.handles, &CallContext::of(context)?, uri).await,
        }
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

    /// Adds a group of prompts (one `#[prompt_router]` block each).
    pub fn prompts(mut self, prompts: PromptRouter<S>) -> Self {
        self.prompts += prompts;
        self
    }

    /// Resources that are the same for every caller, and how to read them.
    pub fn resources(mut self, list: Vec<Resource>, templates: Vec<ResourceTemplate>, read: ReadResource) -> Self {
        self.fixed = Some(FixedResources { list, templates, read });
        self
    }

    /// Handle kinds clients read and watch as resources.
    pub fn handle_resources(mut self, resources: HandleResources) -> Self {
        self.handle_resources = resources;
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
        if self.fixed.is_some() || !self.handle_resources.is_empty() {
            capabilities.resources = Some(ResourcesCapability::default());
        }
        if self.completions {
            capabilities.completions = Some(Default::default());
        }
        // Only handle-backed resources change, so only they can be watched.
        let capabilities = deps.subscriptions.advertise(capabilities, !self.handle_resources.is_empty());
        let registry = Registry {
            tools,
            prompts: self.prompts,
            fixed: self.fixed,
            handle_resources: self.handle_resources,
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

/// The `ServerHandler` methods a [`Registry`] answers: server info and
/// versions, tools, prompts, resources, the tasks extension and listen streams.
/// Write `mcp_stateless::server_methods!(registry);` inside
/// `impl ServerHandler for YourServer`; a server that answers `prompts/get`
/// itself (to read `inputResponses`, which prompt routes do not see) writes
/// `mcp_stateless::server_methods!(registry, own get_prompt);` and calls
/// [`Registry::get_prompt`] for the rest.
#[macro_export]
macro_rules! server_methods {
    ($registry:ident) => {
        $crate::server_methods!($registry, own get_prompt);

        async fn get_prompt(
            &self,
            request: ::rmcp::model::GetPromptRequestParams,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> Result<::rmcp::model::GetPromptResponse, ::rmcp::ErrorData> {
            self.$registry.get_prompt(self, request, context).await
        }
    };
    ($registry:ident, own get_prompt) => {
        async fn call_tool(
            &self,
            request: ::rmcp::model::CallToolRequestParams,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> Result<::rmcp::model::CallToolResponse, ::rmcp::ErrorData> {
            self.$registry.call_tool(self, request, context).await
        }

        async fn list_tools(
            &self,
            _request: Option<::rmcp::model::PaginatedRequestParams>,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> Result<::rmcp::model::ListToolsResult, ::rmcp::ErrorData> {
            Ok(self.$registry.list_tools(&context))
        }

        fn get_tool(&self, name: &str) -> Option<::rmcp::model::Tool> {
            self.$registry.get_tool(name)
        }

        fn get_info(&self) -> ::rmcp::model::ServerConfig {
            self.$registry.info(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION"))
        }

        fn supported_protocol_versions(&self) -> ::std::borrow::Cow<'static, [::rmcp::model::ProtocolVersion]> {
            self.$registry.supported_protocol_versions()
        }

        async fn list_prompts(
            &self,
            _request: Option<::rmcp::model::PaginatedRequestParams>,
            _context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> Result<::rmcp::model::ListPromptsResult, ::rmcp::ErrorData> {
            Ok(::rmcp::model::ListPromptsResult::with_all_items(self.$registry.list_prompts()))
        }

        async fn list_resources(
            &self,
            _request: Option<::rmcp::model::PaginatedRequestParams>,
            _context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> Result<::rmcp::model::ListResourcesResult, ::rmcp::ErrorData> {
            Ok(::rmcp::model::ListResourcesResult::with_all_items(self.$registry.list_resources()))
        }

        async fn list_resource_templates(
            &self,
            _request: Option<::rmcp::model::PaginatedRequestParams>,
            _context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> Result<::rmcp::model::ListResourceTemplatesResult, ::rmcp::ErrorData> {
            Ok(::rmcp::model::ListResourceTemplatesResult::with_all_items(self.$registry.list_resource_templates()))
        }

        async fn read_resource(
            &self,
            request: ::rmcp::model::ReadResourceRequestParams,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> Result<::rmcp::model::ReadResourceResponse, ::rmcp::ErrorData> {
            self.$registry.read_resource(&context, &request.uri).await.map(Into::into)
        }

        async fn get_task(
            &self,
            request: ::rmcp::model::GetTaskParams,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> Result<::rmcp::model::GetTaskResult, ::rmcp::ErrorData> {
            self.$registry.tasks().get(&$crate::CallContext::of(&context)?, &request.task_id).await
        }

        async fn update_task(
            &self,
            request: ::rmcp::model::UpdateTaskParams,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> Result<(), ::rmcp::ErrorData> {
            self.$registry.tasks().update(&$crate::CallContext::of(&context)?, &request).await
        }

        async fn cancel_task(
            &self,
            request: ::rmcp::model::CancelTaskParams,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> Result<(), ::rmcp::ErrorData> {
            self.$registry.tasks().cancel(&$crate::CallContext::of(&context)?, &request.task_id).await
        }

        fn accepted_subscription_filter(
            &self,
            requested: &::rmcp::model::SubscriptionFilter,
        ) -> Option<::rmcp::model::SubscriptionFilter> {
            self.$registry.subscriptions().accepted(requested)
        }

        async fn listen(&self, context: ::rmcp::service::SubscriptionContext) -> Result<(), ::rmcp::ErrorData> {
            let registry = &self.$registry;
            let mut watched = $crate::subscriptions::Watched::default();
            watched.tasks = Some(registry.tasks());
            if !registry.handle_resources().is_empty() {
                watched.resources = Some((registry.handle_resources(), registry.handles()));
            }
            // Boxed: rmcp's future for every request is as large as its
            // largest method's, and a stream's (polls of the feed, tasks
            // and resources) is large; moved on each spawn, it cost every
            // request a copy of it (docs/benchmarks.md).
            Box::pin(registry.subscriptions().listen(context, watched)).await
        }
    };
}

#[cfg(test)]
mod tests {
    use rmcp::{
        handler::server::wrapper::Parameters,
        model::{GetPromptResult, PromptMessage, Role},
        prompt, prompt_router, schemars, tool, tool_router,
    };
    use serde_json::{Value, json};

    use super::*;
    use crate::{
        handles::{HandleKind, resource::HandleResource},
        subscriptions::{ListKind, ListenPolicy},
    };

    #[derive(Clone)]
    struct Fixture;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Name {
        name: String,
    }

    #[tool_router(router = greetings)]
    impl Fixture {
        #[tool(description = "Greets")]
        async fn greet(&self, Parameters(args): Parameters<Name>) -> String {
            format!("hello {}", args.name)
        }
    }

    #[prompt_router(router = "prompts")]
    impl Fixture {
        #[prompt(description = "Asks for a greeting")]
        async fn greeting(&self) -> GetPromptResult {
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, "Greet me.")])
        }
    }

    static NOTE: HandleKind = HandleKind {
        prefix: "note",
        noun: "note",
        created_by: "greet",
        idle_ttl: std::time::Duration::from_secs(60),
        max_lifetime: std::time::Duration::from_secs(600),
        max_data_bytes: 1024,
        max_per_owner: 10,
    };

    fn deps(listen: bool) -> Dependencies {
        let mut deps = Dependencies::in_process();
        deps.subscriptions = deps.subscriptions.with_policy(ListenPolicy::new(listen));
        deps
    }

    fn capabilities(registry: &Registry<Fixture>) -> Value {
        serde_json::to_value(&registry.info("fixture", "0.0.0").capabilities).unwrap()
    }

    #[tokio::test]
    async fn capabilities_come_from_what_is_registered() {
        let tools_only = Registry::<Fixture>::builder(&deps(true)).tools(Fixture::greetings()).build();
        let caps = capabilities(&tools_only);
        assert_eq!(caps["tools"], json!({"listChanged": true}), "{caps}");
        assert!(caps.get("prompts").is_none() && caps.get("resources").is_none() && caps.get("completions").is_none(), "{caps}");

        let mut notes = HandleResources::default();
        notes += HandleResource { scheme: "note", kind: &NOTE, description: "A note", render: |record| record.data.clone() };
        let full = Registry::<Fixture>::builder(&deps(true))
            .tools(Fixture::greetings())
            .prompts(Fixture::prompts())
            .handle_resources(notes)
            .completions()
            .build();
        let caps = capabilities(&full);
        assert_eq!(caps["prompts"], json!({"listChanged": true}), "{caps}");
        assert_eq!(caps["resources"], json!({"listChanged": true, "subscribe": true}), "{caps}");
        assert_eq!(caps["completions"], json!({}), "{caps}");
        assert_eq!(full.list_resource_templates()[0].uri_template, "note://{handle}");

        // Where answers do not stream, nothing changes under a client.
        let buffered = Registry::<Fixture>::builder(&deps(false)).prompts(Fixture::prompts()).build();
        assert_eq!(capabilities(&buffered)["prompts"], json!({}));
    }

    #[tokio::test]
    async fn listen_digests_follow_the_registered_lists() {
        let digests = |registry: Registry<Fixture>| registry.subscriptions().served_lists().cloned();
        let without = digests(Registry::builder(&deps(true)).tools(Fixture::greetings()).build()).unwrap();
        let with_prompt = digests(Registry::builder(&deps(true)).tools(Fixture::greetings()).prompts(Fixture::prompts()).build()).unwrap();
        assert_eq!(without.get(ListKind::Tools), with_prompt.get(ListKind::Tools));
        assert_ne!(without.get(ListKind::Prompts), with_prompt.get(ListKind::Prompts));
        // A task tool is a tool: it changes the tools list.
        let with_task = digests(
            Registry::builder(&deps(true))
                .tools(Fixture::greetings())
                .task_tools(TaskTools::new().with(crate::tasks::TaskTool::new(
                    "later",
                    "Runs later",
                    crate::tasks::TaskSupport::Optional,
                    |_: serde_json::Map<String, Value>, _| async { Ok(crate::tasks::TaskStep::text("done")) },
                )))
                .build(),
        )
        .unwrap();
        assert_ne!(without.get(ListKind::Tools), with_task.get(ListKind::Tools));
        // Not computed where no stream could use them.
        assert!(digests(Registry::builder(&deps(false)).tools(Fixture::greetings()).build()).is_none());
    }
}
