//! Stateless MCP on Lambda without the AWS SDK: rmcp served as one
//! self-contained request per invocation (MCP revision 2026-07-28), and the
//! machinery tools use for state that outlives a request.
//!
//! One folder per concern, highest first, each looking only down (a test,
//! `layering.rs`, fails on any `crate::` path that names a module above
//! the one holding it):
//! - [`settings`]: every variable the machinery takes, read once at start
//!   with its default and its check, and handed down;
//! - [`edge`]: one HTTP request in, one response out, whole or streamed
//!   (headers, origin, `_meta`, errors, logs, protected resource
//!   metadata), and the Lambda and local entry points; 2025-era clients
//!   behind one seam, `edge/legacy/`;
//! - [`server`]: what a function's server registered (tools, task tools,
//!   prompts, resources), and everything it publishes derived from that
//!   (`Registry`, `server_methods!`), and [`testing`], helpers for
//!   tools' unit tests; [`prelude`] re-exports what tool authors name;
//! - `sessions`: 2025-era clients' sessions, sealed into their
//!   `Mcp-Session-Id` (`LegacySessions`); with `edge/legacy/`, behind the
//!   `legacy` cargo feature (on by default);
//! - [`subscriptions`]: `subscriptions/listen` streams that report what
//!   any instance changed (`Subscriptions`, the change feed);
//! - [`tasks`]: tool calls that outlive one invocation (`Tasks`, the
//!   worker, and the API a task tool is written against);
//! - [`handles`]: explicit, owner-bound, expiring handles (`Handles`);
//! - [`sealed`]: `requestState` sealed for multi-round tool calls
//!   (`RequestStates`), and single-use redemption;
//! - [`protocol`]: the per-request context (principal, version, client
//!   capabilities, what the entry point established), the -32021
//!   capability rules, server info;
//! - [`storage`] and [`quota`], and below them [`clock`], [`deadline`], [`random`],
//!   [`metrics`], [`deployment`] (where the process runs, how answers
//!   leave it), [`logging`] and [`loopback`] (which hosts are this
//!   machine): primitives the others share.
//!
//! Each state concern is a port (a small trait) with an in-memory
//! implementation here; the KMS and DynamoDB adapters live in `mcp-aws`.

// The public surface a fork builds on may grow without breaking it: every
// exported struct and enum is `#[non_exhaustive]`, or says with
// `#[allow(clippy::exhaustive_..., reason = "...")]` why a new field or
// variant should break the code that uses it (the lint gate's clippy runs
// with -D warnings).
#![warn(missing_docs, clippy::exhaustive_structs, clippy::exhaustive_enums)]

pub mod clock;
#[cfg(feature = "contracts")]
pub mod contracts;
pub mod deadline;
pub mod deployment;
pub mod edge;
pub mod handles;
#[cfg(test)]
mod layering;
pub mod logging;
pub mod loopback;
pub mod metrics;
pub mod prelude;
pub mod protocol;
pub mod quota;
pub mod random;
pub mod sealed;
pub mod senders;
pub mod server;
#[cfg(feature = "legacy")]
pub mod sessions;
pub mod settings;
pub mod storage;
pub mod subscriptions;
pub mod tasks;
pub mod testing;

use std::sync::Arc;

pub use deployment::{Deployment, Entry, Mode, Runtime};
pub use edge::endpoint::McpEndpoint;
pub use edge::policy::EdgePolicy;
pub use handles::access::{HandleFailure, Handles};
pub use handles::{Change, HandleKind};
pub use protocol::context::{CallContext, EntryFacts, Principal};
pub use sealed::mrtr::{RequestStates, StateScope};
pub use server::{Registry, RegistryBuilder, dependencies::Dependencies};
pub use settings::{Settings, detect_mode};

/// Why a function did not start, or stopped serving: what its `main`
/// returns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// A setting is missing or malformed, or asks for what this start
    /// refuses (in-process state in Lambda, a local server beyond
    /// loopback); the message says which.
    #[error("configuration: {0}")]
    Config(String),
    /// The local server could not bind its address.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address asked for ([`Entry::Local`]).
        addr: String,
        /// Why the bind failed.
        source: std::io::Error,
    },
    /// The local server failed after binding its address.
    #[error("local server failed: {0}")]
    Serve(#[from] std::io::Error),
    /// The Lambda runtime failed (in the request or the worker function).
    #[error("Lambda runtime failed: {0}")]
    Lambda(lambda_http::Error),
}

/// Runs `main` to completion on `runtime` (the deployment's
/// [`Deployment::runtime`]).
pub fn block_on<T>(runtime: Runtime, main: impl Future<Output = T>) -> T {
    let mut builder = match runtime {
        Runtime::OneThread => tokio::runtime::Builder::new_current_thread(),
        Runtime::PerCore => tokio::runtime::Builder::new_multi_thread(),
    };
    builder.enable_all().build().expect("the Tokio runtime starts").block_on(main)
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
    let settings = Settings::from_env().map_err(StartError::Config)?;
    logging::init(settings.deployment.log_format, &settings.log_level);
    if settings.deployment.shared_state {
        // Another instance could not open this one's requestState or see
        // its handles: refuse rather than fail request by request.
        return Err(StartError::Config(
            "in-process state cannot serve Lambda, where any instance serves any request; use mcp_aws::run".into(),
        ));
    }
    serve(settings, Dependencies::in_process(), build_handler).await
}

/// Serves `build_handler(deps)` as `settings` say until the process ends.
pub async fn serve<S, F>(settings: Settings, deps: Dependencies, build_handler: F) -> Result<(), StartError>
where
    S: rmcp::ServerHandler + Clone,
    F: FnOnce(Dependencies) -> S,
{
    edge::request_log::use_metrics_namespace(&settings.metrics_namespace);
    let deps = settings.configure(deps);
    let edge_deps = deps.clone();
    let mut endpoint = McpEndpoint::new(build_handler(deps), settings.edge)
        .with_resource_metadata(settings.resource_metadata)
        .with_dependencies(&edge_deps);
    if let Some(bearer) = settings.bearer {
        endpoint = endpoint.with_bearer(edge::bearer::BearerVerifier::new(bearer).map_err(StartError::Config)?);
    }
    let endpoint = Arc::new(endpoint);
    // This build's lists are recorded in the change feed by its first
    // listen stream (`Subscriptions::listen`), not here: at the start it
    // would hold Init for a TLS handshake and a round trip on every cold
    // start, streams or none (docs/benchmarks.md, "Cold starts as Lambda
    // bills them"). Older builds' streams learn of this one then, or close
    // at the end of their lifetime and listen again, here.
    match settings.deployment.entry {
        Entry::Lambda => edge::lambda::serve_lambda(endpoint).await.map_err(StartError::Lambda),
        Entry::Local { addr } => {
            let listener =
                tokio::net::TcpListener::bind(&addr).await.map_err(|source| StartError::Listen { addr: addr.clone(), source })?;
            let bound = listener.local_addr()?;
            edge::local::check_reach(bound, settings.allow_remote).map_err(StartError::Config)?;
            tracing::info!("MCP server listening on http://{bound}{}", edge::policy::MCP_PATH);
            let authorization = settings
                .local_authorization
                .as_deref()
                .map(edge::authorization_forward::AuthorizationForward::new)
                .transpose()
                .map_err(StartError::Config)?
                .map(Arc::new);
            Ok(edge::local::serve_local_with(endpoint, listener, authorization).await?)
        }
    }
}
