//! Facts about the deployment that every layer may need, decided once at
//! start: where the process runs ([`Mode`]) and how its answers leave it
//! ([`Transport`]). Below every other module, so that none has to reach up
//! into the edge for them.

use std::env;

/// Whether the process serves Lambda events or a local HTTP port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Lambda events, through the Lambda Runtime API
    /// (`AWS_LAMBDA_RUNTIME_API` is set).
    Lambda,
    /// The local HTTP server (`cargo run`).
    Local,
}

/// How responses leave the function: whole (API Gateway HTTP API, which
/// cannot stream) or as they are written (a REST API with response
/// streaming, a Function URL, the local server). Chosen at deploy time
/// (`MCP_TRANSPORT`), read once at start (`settings.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Each answer leaves whole, once the handler has finished.
    Buffered,
    /// Answers leave as they are written: progress and log messages on
    /// the way, and `subscriptions/listen` streams held open.
    Streaming,
}

/// Lambda when the Lambda runtime API is present, the local server otherwise.
pub fn detect_mode() -> Mode {
    if env::var_os("AWS_LAMBDA_RUNTIME_API").is_some() { Mode::Lambda } else { Mode::Local }
}
