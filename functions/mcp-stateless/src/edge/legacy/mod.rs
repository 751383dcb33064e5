//! 2025-era clients on the same endpoint (basic/versioning, "A dual-era
//! server MAY serve both eras concurrently on the same endpoint"), behind
//! one seam: the endpoint holds a [`LegacySide`] and has one branch for
//! the routes [`classify`] finds; everything else of the era is here.
//!
//! A legacy request is served by the same handler as a modern one: the
//! edge answers what only the legacy era has (`initialize`, `ping`,
//! `logging/setLevel`, `resources/subscribe`, the session's `DELETE`),
//! and turns every other request into the 2026-07-28 request it means,
//! with the session's capabilities, client info and log level in its
//! `_meta` and the standard headers rmcp checks. The answer is shaped back
//! for the era on its way out ([`outbound::shape`]): no 2026-only fields, and a
//! clean refusal where a tool asks for input the connection cannot carry.
//! Nothing is kept in the process: the session travels sealed in
//! `Mcp-Session-Id` (`crate::sessions`).
//!
//! By job:
//! - [`classify`]: which requests are 2025-era, and the route each takes;
//! - [`inbound`]: a call answered here or turned into the modern request it means;
//! - [`outbound`]: answers shaped for the era;
//! - [`session_routes`]: the session's `DELETE` and `GET`, and answers to the
//!   server's own requests;
//! - [`back_channel`]: a call that asks its client mid-call, on its stream;
//! - [`refusals`]: the era's own errors;
//! - [`serve`]: the endpoint's one branch.
//!
//! The whole era, and `crate::sessions`, sit behind the `legacy` cargo
//! feature (on by default); without it `legacy_off.rs` stands in and the
//! endpoint serves 2026-07-28 only.

pub(super) mod back_channel;
pub(super) mod classify;
mod inbound;
pub(super) mod outbound;
mod refusals;
mod serve;
mod session_routes;

use std::sync::Arc;

use rmcp::{
    ServerHandler,
    transport::{StreamableHttpService, streamable_http_server::session::never::NeverSessionManager},
};
use serde_json::{Map, Value, json};

use crate::{edge::rewrite::Shape, server::dependencies::Dependencies, sessions::LegacySessions};
pub(super) use back_channel::Conversation;
pub(super) use classify::Route;
pub(super) use serve::conversation_response;

/// The header a legacy session travels in.
pub(super) const SESSION_HEADER: &str = "mcp-session-id";

/// Looks up a tool's input schema by name.
type ToolSchemas = dyn Fn(&str) -> Option<Arc<rmcp::model::JsonObject>> + Send + Sync;

/// What the endpoint holds for the 2025 era, built once per cold start:
/// the era is served once the endpoint is given its sessions.
pub(super) struct LegacySide {
    /// The deployment's sessions (`Dependencies::sessions`); none: the
    /// endpoint serves 2026-07-28 only.
    sessions: Option<LegacySessions>,
    /// What their `initialize` answers.
    info: LegacyInfo,
    /// The handler's tools' input schemas, for the headers a legacy
    /// request gets when it is served as a modern one.
    tool_schemas: Arc<ToolSchemas>,
    /// rmcp's service as a legacy call's conversation calls it, round by
    /// round.
    rounds: back_channel::Handler,
}

impl LegacySide {
    /// For `handler`, served by `service`; `notifies`: whether listen
    /// streams exist, and so a session's notification stream.
    pub(super) fn new<S: ServerHandler + Clone>(
        handler: &S,
        info: &rmcp::model::ServerConfig,
        capabilities: &Value,
        service: &StreamableHttpService<S, NeverSessionManager>,
        notifies: bool,
    ) -> Self {
        let tools = handler.clone();
        let tool_schemas: Arc<ToolSchemas> = Arc::new(move |name: &str| tools.get_tool(name).map(|tool| tool.input_schema));
        let service = service.clone();
        let rounds: back_channel::Handler = Arc::new(move |request| {
            let service = service.clone();
            Box::pin(async move { service.handle(request).await })
        });
        Self { sessions: None, info: LegacyInfo::new(info, capabilities, notifies), tool_schemas, rounds }
    }

    /// Serves the era with sessions sealed as `deps` seal `requestState`
    /// and kept where its handles are.
    pub(super) fn with_dependencies(mut self, deps: &Dependencies) -> Self {
        self.sessions = Some(LegacySessions::of(&deps.request_states, &deps.handles));
        self
    }

    /// Whether 2025-era requests are served (else they are held to
    /// 2026-07-28's rules, and refused by them).
    pub(super) fn serves(&self) -> bool {
        self.sessions.is_some()
    }

    /// How answers to a 2025-era client are shaped.
    pub(super) fn shaper(&self) -> Option<Shape> {
        self.serves().then_some(outbound::shape as Shape)
    }
}

/// What `initialize` answers besides the version: computed once per cold
/// start from what the handler advertises.
pub(super) struct LegacyInfo {
    capabilities: Value,
    server_info: Value,
    instructions: Option<String>,
    /// Whether sessions get a notification stream (`GET`): where listen
    /// streams exist.
    notifies: bool,
}

impl LegacyInfo {
    /// From the handler's own info. Only what the legacy side delivers on
    /// this deployment is advertised: `listChanged` and resource
    /// `subscribe` where the handler advertises them, which is where listen
    /// streams exist and so a session's notification stream too; nothing of
    /// 2026-07-28's extensions or tasks.
    fn new(info: &rmcp::model::ServerConfig, modern: &Value, notifies: bool) -> Self {
        let mut capabilities = Map::new();
        for kind in ["tools", "prompts", "resources"] {
            if modern.get(kind).is_some() {
                capabilities.insert(kind.into(), json!({}));
            }
        }
        for (kind, flag) in crate::protocol::announced_changes(modern) {
            if let Some(Value::Object(flags)) = capabilities.get_mut(kind) {
                flags.insert(flag.into(), Value::Bool(true));
            }
        }
        if modern.get("completions").is_some() {
            capabilities.insert("completions".into(), json!({}));
        }
        // logging/setLevel is served for every session.
        capabilities.insert("logging".into(), json!({}));
        Self {
            capabilities: Value::Object(capabilities),
            server_info: serde_json::to_value(&info.server_info).unwrap_or_default(),
            instructions: info.instructions.clone(),
            notifies,
        }
    }
}
