//! The conformance fixture server: every tool, prompt and resource the
//! official MCP conformance suite expects, behind the same edge as any
//! function built from this template.

fn main() -> Result<(), mcp_stateless::StartError> {
    mcp_aws::start(everything::EverythingServer::new)
}
