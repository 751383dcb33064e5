//! The edge: everything between an HTTP request and the handler. The
//! transport rules rmcp leaves to the server (origin, body limits, JSON-RPC
//! framing, `_meta` and version headers), errors mapped once to JSON-RPC
//! codes and HTTP statuses, one log line per request, the protected
//! resource metadata, and the two entry points (Lambda events, a local port).

mod admission;
pub mod authorization_forward;
mod back_channel;
pub mod bearer;
pub mod endpoint;
mod era;
pub mod error;
pub mod lambda;
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
