//! The starter function: your MCP server on Lambda.
//!
//! Tools live in `src/tools/`; this file only starts the server. With
//! `AWS_LAMBDA_RUNTIME_API` set it serves Lambda events, otherwise it serves
//! MCP on http://127.0.0.1:3000/mcp (`MCP_LOCAL_ADDR`, or `PORT`, to change).

fn main() -> Result<(), mcp_stateless::StartError> {
    mcp_aws::start(mcp_function::Server::new)
}
