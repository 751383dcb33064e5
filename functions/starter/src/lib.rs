//! Wiring for the starter function: the `ServerHandler` that serves the
//! tools in [`tools`]. Edit `src/tools/`; this file rarely needs to change.

#[cfg(test)]
mod testing;
pub mod tools;

use std::borrow::Cow;

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    handler::server::router::tool::ToolRouter,
    model::{
        ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams,
        ReadResourceResponse, ResourcesCapability, ServerCapabilities, ServerConfig,
    },
    service::RequestContext,
    tool_handler,
};

use mcp_stateless::{
    CallContext, Dependencies, Handles, RequestStates,
    handles::resource::HandleResources,
    subscriptions::{ListDigests, Subscriptions},
    tasks::Tasks,
};

#[derive(Clone)]
// A fork whose tools use no sealed state or no handles reads neither field:
// they stay, ready for the tools it adds, without a warning.
#[allow(dead_code)]
pub struct Server {
    /// Sealed `requestState` for multi-round tools (KMS in Lambda).
    request_states: RequestStates,
    /// Explicit handles (DynamoDB in Lambda).
    handles: Handles,
    /// Tool calls that outlive a request (DynamoDB + SQS + worker in Lambda).
    tasks: Tasks,
    /// `subscriptions/listen` streams (where responses stream).
    subscriptions: Subscriptions,
    /// Handles clients read and watch as resources (`tools::resources`).
    resources: HandleResources,
    tool_router: ToolRouter<Self>,
}

impl Server {
    pub fn new(deps: Dependencies) -> Self {
        let tasks = deps.tasks.with_tools(tools::task_tools());
        // Every call's arguments are checked against the tool's published
        // inputSchema before the tool runs (a tool error if they break it).
        let tool_router = mcp_stateless::protocol::arguments::checked(tools::all() + tasks.router());
        // A deployment whose tools differ tells listening clients so.
        let resources = tools::resources();
        deps.subscriptions.serve_lists(ListDigests::of(
            &serde_json::json!(tool_router.list_all()),
            &serde_json::json!([]),
            &serde_json::json!(resources.templates()),
        ));
        Self {
            request_states: deps.request_states,
            handles: deps.handles,
            tasks,
            subscriptions: deps.subscriptions,
            resources,
            tool_router,
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder().enable_tools().enable_tasks().build();
        if !self.resources.is_empty() {
            capabilities.resources = Some(ResourcesCapability::default());
        }
        let capabilities = self.subscriptions.advertise(capabilities, !self.resources.is_empty());
        mcp_stateless::protocol::server_info(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION"), capabilities)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        mcp_stateless::protocol::supported_protocol_versions()
    }

    mcp_stateless::task_methods!(tasks);
    mcp_stateless::listen_methods!(subscriptions, tasks, resources, handles);

    // Handle-backed resources are per caller: none is listed for everyone.
    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(Vec::new()))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(self.resources.templates()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.resources.read(&self.handles, &CallContext::of(&context)?, &request.uri).await.map(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A schema that does not compile would make its tool answer -32603:
    /// caught here, before deployment.
    #[test]
    fn every_published_input_schema_compiles() {
        let server = Server::new(Dependencies::in_process());
        assert_eq!(mcp_stateless::protocol::arguments::schema_problems(&server.tool_router), Vec::<String>::new());
    }
}
