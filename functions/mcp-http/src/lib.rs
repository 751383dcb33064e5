//! rmcp served as one self-contained request per invocation, for MCP
//! revision 2026-07-28 on AWS Lambda and on a local port.
//!
//! Layers, each looking only down:
//! - [`context`], [`protocol`], [`capability_guard`], [`clock`], [`random`]:
//!   protocol rules and primitives, no I/O;
//! - ports with in-memory implementations: [`request_state`] (sealing
//!   `requestState`), [`redemption`] (single use), [`handles`] (explicit
//!   handles), [`storage`] (their errors);
//! - what tools call: [`mrtr`] (`RequestStates`, elicitation helpers) and
//!   [`handle_access`] (`Handles`);
//! - [`endpoint`]: the edge, one HTTP request in, one buffered response out,
//!   with [`policy`], [`edge_error`], [`request_log`], [`protected_resource`];
//! - [`local`], [`lambda`]: the two entry points; [`serve`] runs one.
//!
//! No AWS SDK here: KMS and DynamoDB adapters live in their own crate.

pub mod capability_guard;
pub mod clock;
pub mod context;
pub mod edge_error;
pub mod endpoint;
pub mod handle_access;
pub mod handles;
pub mod lambda;
pub mod local;
pub mod logging;
pub mod mrtr;
pub mod policy;
pub mod protected_resource;
pub mod protocol;
pub mod random;
pub mod redemption;
pub mod request_log;
pub mod request_state;
pub mod storage;

use std::sync::Arc;

pub use context::{CallContext, Principal};
pub use endpoint::{EntryFacts, McpEndpoint};
pub use handle_access::{HandleFailure, Handles};
pub use handles::{Change, HandleKind};
pub use mrtr::{RequestStates, StateScope};
pub use policy::{EdgePolicy, Mode};
use clock::{Clock, SystemClock};
use handles::memory::InMemoryHandleStore;
use redemption::InMemoryLedger;
use request_state::{EnvelopeSealer, InProcessKey};

/// What a function's tools are built from, once per cold start.
#[derive(Clone)]
pub struct Dependencies {
    pub request_states: RequestStates,
    pub handles: Handles,
}

impl Dependencies {
    /// Zero-setup defaults: `requestState` sealed under a random in-process
    /// key (see [`InProcessKey`] for what that does not give you), handles
    /// and single-use records in memory.
    pub fn in_process() -> Self {
        Self::in_process_with_clock(Arc::new(SystemClock))
    }

    pub fn in_process_with_clock(clock: Arc<dyn Clock>) -> Self {
        let audience = std::env::var("MCP_AUDIENCE").unwrap_or_else(|_| "local".to_owned());
        let sealer = EnvelopeSealer::new(InProcessKey::generate()).with_clock(clock.clone());
        Self {
            request_states: RequestStates::new(Arc::new(sealer), Arc::new(InMemoryLedger::default()), clock.clone(), audience),
            handles: Handles::new(Arc::new(InMemoryHandleStore::default()), clock),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("configuration: {0}")]
    Config(String),
    #[error("cannot listen on {addr}: {source}")]
    Listen { addr: String, source: std::io::Error },
    #[error("local server failed: {0}")]
    Serve(#[from] std::io::Error),
    #[error("Lambda runtime failed: {0}")]
    Lambda(lambda_http::Error),
}

/// Lambda when the Lambda runtime API is present, the local server otherwise.
pub fn detect_mode() -> Mode {
    if std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some() { Mode::Lambda } else { Mode::Local }
}

/// Builds the function's handler once, on the zero-setup in-process
/// dependencies, and serves it locally until the process ends. `mcp-aws`
/// has the same entry point with KMS and DynamoDB behind the ports, which
/// Lambda needs.
pub async fn run<S, F>(build_handler: F) -> Result<(), StartError>
where
    S: rmcp::ServerHandler + Clone,
    F: FnOnce(Dependencies) -> S,
{
    let mode = detect_mode();
    logging::init(mode);
    if mode == Mode::Lambda {
        // Another instance could not open this one's requestState or see
        // its handles: refuse rather than fail request by request.
        return Err(StartError::Config(
            "in-process state cannot serve Lambda, where any instance serves any request; use mcp_aws::run".into(),
        ));
    }
    serve(mode, Dependencies::in_process(), build_handler).await
}

/// Serves `build_handler(deps)` in `mode` until the process ends.
pub async fn serve<S, F>(mode: Mode, deps: Dependencies, build_handler: F) -> Result<(), StartError>
where
    S: rmcp::ServerHandler + Clone,
    F: FnOnce(Dependencies) -> S,
{
    let policy = EdgePolicy::from_env(mode).map_err(StartError::Config)?;
    let endpoint = Arc::new(McpEndpoint::new(build_handler(deps), policy));
    match mode {
        Mode::Lambda => lambda::serve_lambda(endpoint).await.map_err(StartError::Lambda),
        Mode::Local => {
            let addr = std::env::var("MCP_LOCAL_ADDR").unwrap_or_else(|_| local::DEFAULT_LOCAL_ADDR.to_owned());
            let listener = tokio::net::TcpListener::bind(&addr)
                .await
                .map_err(|source| StartError::Listen { addr: addr.clone(), source })?;
            let bound = listener.local_addr()?;
            tracing::info!("MCP server listening on http://{bound}{}", policy::MCP_PATH);
            if !bound.ip().is_loopback() {
                // The local server trusts the development principal header.
                tracing::warn!("the local server is reachable beyond this machine; x-mcp-dev-principal lets any caller choose who they are");
            }
            Ok(local::serve_local(endpoint, listener).await?)
        }
    }
}
