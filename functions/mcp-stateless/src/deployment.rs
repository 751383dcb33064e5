//! Facts about the deployment that every layer may need, decided once at
//! start: where the process runs ([`Mode`]) and how its answers leave it
//! ([`Transport`]). Below every other module, so that none has to reach up
//! into the edge for them.

use std::env;

/// Whether the process serves Lambda events or a local HTTP port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Lambda,
    Local,
}

/// How responses leave the function: whole (API Gateway HTTP API, which
/// cannot stream) or as they are written (a REST API with response
/// streaming, a Function URL, the local server). Chosen at deploy time
/// (`MCP_TRANSPORT`), read once at cold start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Buffered,
    Streaming,
}

impl Transport {
    /// `MCP_TRANSPORT` (`buffered` or `streaming`); unset: buffered in
    /// Lambda (the template's default API), streaming locally.
    pub fn from_env(mode: Mode) -> Result<Self, String> {
        match env::var("MCP_TRANSPORT").ok().as_deref().map(str::trim) {
            None | Some("") => Ok(if mode == Mode::Local { Self::Streaming } else { Self::Buffered }),
            Some("buffered") => Ok(Self::Buffered),
            Some("streaming") => Ok(Self::Streaming),
            Some(other) => Err(format!("MCP_TRANSPORT must be buffered or streaming, not {other:?}")),
        }
    }
}

/// Lambda when the Lambda runtime API is present, the local server otherwise.
pub fn detect_mode() -> Mode {
    if env::var_os("AWS_LAMBDA_RUNTIME_API").is_some() { Mode::Lambda } else { Mode::Local }
}
