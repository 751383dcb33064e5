//! Wiring for the starter function: the `ServerHandler` that serves the
//! tools in [`tools`]. Edit `tools.rs`; this file rarely needs to change.

mod tools;

use std::borrow::Cow;

use rmcp::{
    ServerHandler,
    handler::server::router::tool::ToolRouter,
    model::{ProtocolVersion, ServerCapabilities, ServerConfig},
    tool_handler,
};

use mcp_http::Dependencies;

#[derive(Clone)]
pub struct StarterServer {
    /// Unused by the example tools yet; multi-round tools seal their state here.
    #[allow(dead_code)]
    deps: Dependencies,
    tool_router: ToolRouter<Self>,
}

impl StarterServer {
    pub fn new(deps: Dependencies) -> Self {
        Self { deps, tool_router: Self::tools() }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for StarterServer {
    fn get_info(&self) -> ServerConfig {
        mcp_http::protocol::server_info(
            env!("CARGO_PKG_NAME"),
            env!("CARGO_PKG_VERSION"),
            ServerCapabilities::builder().enable_tools().build(),
        )
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        mcp_http::protocol::supported_protocol_versions()
    }
}
