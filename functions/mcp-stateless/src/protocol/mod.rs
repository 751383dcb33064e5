//! Protocol rules with no I/O: the per-request [`context`], the -32021
//! [`capability_guard`], [`elicitation`] forms and their answers, and the constants and helpers every function's
//! handler uses.

pub mod arguments;
pub mod capability_guard;
pub mod context;
pub mod elicitation;
pub mod report;

use std::borrow::Cow;

use rmcp::model::{
    CallToolRequestParams, CancelTaskParams, CompleteRequestParams, GetPromptRequestParams, GetTaskParams, Implementation, ProtocolVersion,
    ReadResourceRequestParams, ServerCapabilities, ServerConfig, UpdateTaskParams,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

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

/// For `ServerHandler::get_info`: the capabilities plus the implementation
/// name and version that go into every result's `_meta` as
/// `io.modelcontextprotocol/serverInfo`.
pub fn server_info(name: &str, version: &str, capabilities: ServerCapabilities) -> ServerConfig {
    ServerConfig::new(capabilities)
        .with_server_info(Implementation::new(name, version))
        .with_protocol_version(ProtocolVersion::V_2026_07_28)
}

/// Why `params` do not have the shape `method` requires, if they do not.
///
/// rmcp reads a request whose params do not parse as a custom (unknown)
/// method, so `"arguments": "text"` on `tools/call` would be -32601 with
/// HTTP 404; the edge answers -32602 instead. Methods not listed here take
/// optional params rmcp reads leniently.
pub fn params_misfit(method: &str, params: Option<&Value>) -> Option<String> {
    fn check<T: DeserializeOwned>(method: &str, params: Option<&Value>) -> Option<String> {
        // Deserialized from a borrow: no copy of the arguments per request.
        let empty = Value::Object(Default::default());
        let error = T::deserialize(params.unwrap_or(&empty)).err()?.to_string();
        // The reason quotes the client's own input: keep it short.
        let reason: String = error.chars().take(160).collect();
        Some(format!("params of {method} do not fit its schema: {reason}"))
    }
    match method {
        "tools/call" => check::<CallToolRequestParams>(method, params),
        "prompts/get" => check::<GetPromptRequestParams>(method, params),
        "resources/read" => check::<ReadResourceRequestParams>(method, params),
        "completion/complete" => check::<CompleteRequestParams>(method, params),
        "tasks/get" => check::<GetTaskParams>(method, params),
        "tasks/update" => check::<UpdateTaskParams>(method, params),
        "tasks/cancel" => check::<CancelTaskParams>(method, params),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn misshapen_params_of_known_methods_are_named() {
        let bad = json!({"name": "echo", "arguments": "string"});
        assert!(params_misfit("tools/call", Some(&bad)).unwrap().starts_with("params of tools/call"));
        assert!(params_misfit("tools/call", Some(&json!({"name": "echo", "arguments": {}}))).is_none());
        assert!(params_misfit("tasks/get", Some(&json!({"taskId": 7}))).is_some());
        assert!(params_misfit("tools/list", Some(&json!({"cursor": 7}))).is_none(), "not checked here");
        let long = json!({"name": "x".repeat(10_000), "arguments": "y".repeat(10_000)});
        assert!(params_misfit("tools/call", Some(&long)).unwrap().len() < 300);
    }
}
