//! The authorization server's function: with `AWS_LAMBDA_RUNTIME_API` set
//! it serves Lambda events, otherwise it listens on 127.0.0.1:3001
//! (`MCP_OAUTH_LOCAL_ADDR`), where the local MCP server forwards its paths.

fn main() -> Result<(), mcp_stateless::StartError> {
    authorization::entry::start()
}
