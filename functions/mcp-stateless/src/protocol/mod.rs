//! Protocol rules with no I/O: the per-request [`context`], the -32021
//! [`capability_guard`], and the constants and helpers every function's
//! handler uses.

pub mod capability_guard;
pub mod context;

use std::borrow::Cow;

use rmcp::model::{Implementation, ProtocolVersion, ServerCapabilities, ServerConfig};

/// This template speaks exactly the stateless revision (basic/versioning).
pub const SUPPORTED_VERSIONS: &[&str] = &["2026-07-28"];

/// For `ServerHandler::supported_protocol_versions`, which `server/discover`
/// reports as `supportedVersions`.
pub fn supported_protocol_versions() -> Cow<'static, [ProtocolVersion]> {
    Cow::Borrowed(&[ProtocolVersion::V_2026_07_28])
}

/// For `ServerHandler::get_info`: the capabilities plus the implementation
/// name and version that go into every result's `_meta` as
/// `io.modelcontextprotocol/serverInfo`.
pub fn server_info(name: &str, version: &str, capabilities: ServerCapabilities) -> ServerConfig {
    ServerConfig::new(capabilities)
        .with_server_info(Implementation::new(name, version))
        .with_protocol_version(ProtocolVersion::V_2026_07_28)
}
