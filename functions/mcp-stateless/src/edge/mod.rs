//! The edge: everything between an HTTP request and the handler. The
//! transport rules rmcp leaves to the server (origin, body limits, JSON-RPC
//! framing, `_meta` and version headers), errors mapped once to JSON-RPC
//! codes and HTTP statuses, one log line per request, the protected
//! resource metadata, and the two entry points (Lambda events, a local port).

mod admission;
pub mod authorization_forward;
pub mod bearer;
pub mod endpoint;
pub mod error;
pub mod lambda;
// The 2025 era, behind one seam; without the `legacy` feature a stand-in
// with the same names serves 2026-07-28 only.
#[cfg(feature = "legacy")]
mod legacy;
#[cfg(not(feature = "legacy"))]
#[path = "legacy_off.rs"]
mod legacy;
pub mod local;
pub mod policy;
pub mod protected_resource;
pub mod request_log;
mod rewrite;
pub mod sse;
mod stamp;
pub mod stream;
mod tolerance;
