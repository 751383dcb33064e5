//! `server_methods!`: the `ServerHandler` methods a [`Registry`](super::Registry)
//! answers, for a server to write in one line.

/// The `ServerHandler` methods a [`Registry`](crate::Registry) answers: server info and
/// versions, tools, prompts, resources, the tasks extension and listen streams.
/// Write `mcp_stateless::server_methods!(registry);` inside
/// `impl ServerHandler for YourServer`. A prompt that asks the user first is
/// an [`AskingPrompt`](crate::prelude::AskingPrompt) among the prompt routes.
#[macro_export]
macro_rules! server_methods {
    ($registry:ident) => {
        async fn get_prompt(
            &self,
            request: ::rmcp::model::GetPromptRequestParams,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> Result<::rmcp::model::GetPromptResponse, ::rmcp::ErrorData> {
            self.$registry.get_prompt(self, request, context).await
        }

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
            Ok(::rmcp::model::ListPromptsResult::with_all_items(self.$registry.list_prompts()?))
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
            self.$registry.read_resource(self, &context, &request.uri).await.map(Into::into)
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

        fn accepted_subscription_filter(&self, requested: &::rmcp::model::SubscriptionFilter) -> Option<::rmcp::model::SubscriptionFilter> {
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
