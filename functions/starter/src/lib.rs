//! Wiring for the starter function: the `ServerHandler` that serves the
//! tools, prompts and resources listed in [`tools`]. Edit `src/tools/`; this file rarely needs to change.

#[cfg(test)]
mod testing;
pub mod tools;

use rmcp::ServerHandler;

use mcp_stateless::prelude::{Dependencies, Handles, Registry, RequestStates};

#[derive(Clone)]
// A fork whose tools use no sealed state or no handles reads neither field:
// they stay, ready for the tools it adds, without a warning.
#[allow(dead_code)]
pub struct Server {
    /// Sealed `requestState` for multi-round tools (KMS in Lambda).
    request_states: RequestStates,
    /// Explicit handles (DynamoDB in Lambda).
    handles: Handles,
    /// What the server serves (the lists in `tools/mod.rs`), and with it
    /// tasks (DynamoDB + SQS + worker in Lambda) and listen streams.
    registry: Registry<Self>,
}

impl Server {
    pub fn new(deps: Dependencies) -> Self {
        let registry = Registry::builder(&deps)
            .tools(tools::all())
            .task_tools(tools::task_tools())
            .prompts(tools::prompts())
            .resources(tools::resources())
            .build();
        Self { request_states: deps.request_states, handles: deps.handles, registry }
    }
}

impl ServerHandler for Server {
    mcp_stateless::server_methods!(registry);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A schema that does not compile would make its tool answer -32603:
    /// caught here, before deployment.
    #[test]
    fn every_published_input_schema_compiles() {
        let server = Server::new(Dependencies::in_process());
        assert_eq!(mcp_stateless::protocol::arguments::schema_problems(server.registry.tools()), Vec::<String>::new());
    }
}
