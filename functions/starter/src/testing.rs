//! For the examples' tests: the starter on an ephemeral loopback port with
//! in-memory dependencies, called over HTTP with the end-to-end helpers.

use std::net::SocketAddr;

use mcp_stateless::{Dependencies, EdgePolicy, McpEndpoint, Mode};

pub async fn serve() -> SocketAddr {
    e2e::spawn(McpEndpoint::new(crate::StarterServer::new(Dependencies::in_process()), EdgePolicy::new(Mode::Local))).await
}
