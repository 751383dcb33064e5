//! Protocol rules with no I/O: the per-request [`context`], the -32021
//! [`capability_guard`], [`elicitation`] forms and their answers, and the constants and helpers every function's
//! handler uses.

pub mod arguments;
pub mod capability_guard;
pub mod context;
pub mod elicitation;
pub mod message;
pub mod methods;
pub mod report;
pub mod scope;

use std::borrow::Cow;

use rmcp::model::{ErrorData, Implementation, ProtocolVersion, ServerCapabilities, ServerConfig};

/// The modern versions this template speaks: exactly the stateless
/// revision (basic/versioning). `server/discover` lists these.
pub const SUPPORTED_VERSIONS: &[&str] = &["2026-07-28"];

/// The 2025-era versions a legacy client may negotiate in `initialize`,
/// newest first: the one answered when a client asks for any other.
pub const LEGACY_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];

/// What a legacy request without `MCP-Protocol-Version` is served as: the
/// 2025-11-25 transport says to assume 2025-03-26, whose clients send no
/// such header.
pub const LEGACY_DEFAULT_VERSION: &str = "2025-03-26";

/// For `ServerHandler::supported_protocol_versions`, which `server/discover`
/// reports as `supportedVersions`.
pub fn supported_protocol_versions() -> Cow<'static, [ProtocolVersion]> {
    Cow::Borrowed(&[ProtocolVersion::V_2026_07_28])
}

/// The changes `capabilities` (as JSON) say the server announces: each
/// list (`tools`, `prompts`, `resources`) with each of its flags
/// (`listChanged`, `subscribe`) that is `true`. Listen streams exist where
/// there is one; a 2025-era session is offered exactly these.
pub fn announced_changes(capabilities: &serde_json::Value) -> Vec<(&'static str, &'static str)> {
    let mut announced = Vec::new();
    for kind in ["tools", "prompts", "resources"] {
        for flag in ["listChanged", "subscribe"] {
            if capabilities.get(kind).and_then(|c| c.get(flag)) == Some(&serde_json::Value::Bool(true)) {
                announced.push((kind, flag));
            }
        }
    }
    announced
}

/// For `ServerHandler::get_info`: the capabilities plus the implementation
/// name and version that go into every result's `_meta` as
/// `io.modelcontextprotocol/serverInfo`.
pub fn server_info(name: &str, version: &str, capabilities: ServerCapabilities) -> ServerConfig {
    ServerConfig::new(capabilities)
        .with_server_info(Implementation::new(name, version))
        .with_protocol_version(ProtocolVersion::V_2026_07_28)
}

/// What a client gets for a resource it may not read: the same for an
/// unknown URI, a malformed one, and another caller's handle, so an answer
/// tells nothing of what exists. -32002, which rmcp answers as -32602 to a
/// 2026-07-28 client (SEP-2164); the URI asked for is echoed, nothing else.
pub fn resource_not_found(uri: &str) -> ErrorData {
    ErrorData::resource_not_found("Resource not found", Some(serde_json::json!({"uri": uri})))
}
