//! The per-request context: who is calling, with which protocol version and
//! client capabilities, under which trace. Built once at the edge from the
//! HTTP request and its `_meta`, then handed to handlers in the request's
//! scope (`protocol::scope`). Never cached anywhere else: any instance
//! serves any request.

use rmcp::{
    RoleServer,
    handler::server::common::{AsRequestContext, FromContextPart},
    model::ErrorData,
    service::RequestContext,
};

use serde_json::{Map, Value};

use crate::{deadline::Deadline, senders};

/// Facts an entry point established outside the JSON body, attached to the
/// HTTP request as an extension before it reaches the edge.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EntryFacts {
    /// The caller the entry point established (an authorizer's claims, a
    /// token verified here, or locally the development header);
    /// [`Principal::Anonymous`] when none did.
    pub principal: Principal,
    /// The API's own domain, from the Lambda event's request context.
    pub api_domain: Option<String>,
    /// Verified credentials that name no caller: the request is refused.
    pub unidentified: bool,
    /// When the invocation must have answered (Lambda's deadline); streams
    /// end before it.
    pub deadline: Option<Deadline>,
    /// The address the request came from (API Gateway's source IP;
    /// locally the connection's peer), where the entry point knows it.
    pub sender: Option<String>,
}

impl Default for EntryFacts {
    fn default() -> Self {
        Self { principal: Principal::Anonymous, api_domain: None, unidentified: false, deadline: None, sender: None }
    }
}

impl EntryFacts {
    /// Whom costly lookups for unseen keys (KMS `Decrypt`) are budgeted
    /// to: the verified caller; without one (auth off), the address the
    /// request came from (an IPv6 address's /64, [`senders`]), so that
    /// one sender's forged ids do not spend what every anonymous caller's
    /// genuine ones need.
    pub fn budget_key(&self) -> String {
        match (&self.principal, &self.sender) {
            (Principal::Anonymous, Some(sender)) => format!("address:{}", senders::budgeted_as(sender)),
            (principal, _) => principal.binding_id(),
        }
    }
}

/// The `_meta` key of the request's protocol version, one of the 2026-07-28
/// revision's per-request fields (basic/index, "Per-request protocol
/// fields"); required.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key of the capabilities the client declares; required.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The `_meta` key of the client's name and version; optional.
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";

/// The caller, as established by verified credentials only.
///
/// In Lambda this comes from the API Gateway JWT authorizer's claims; nothing
/// the client writes in the body (such as `clientInfo`) can change it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[allow(
    clippy::exhaustive_enums,
    reason = "tools match every kind of caller on purpose: a new kind must be handled where identity matters, not fall into a wildcard arm"
)]
pub enum Principal {
    /// No authorizer in front of the function, or no credentials.
    Anonymous,
    /// `iss` and `sub` of a token the authorizer verified.
    Verified {
        /// The token's `iss`: who vouches for the subject.
        issuer: String,
        /// The token's `sub`: the caller, as that issuer names it.
        subject: String,
    },
}

impl Principal {
    /// A stable string naming this principal, for binding state to its owner.
    /// Issuer and subject are length-prefixed so no two principals collide.
    pub fn binding_id(&self) -> String {
        match self {
            Principal::Anonymous => "anonymous".to_owned(),
            Principal::Verified { issuer, subject } => {
                format!("jwt:{}:{issuer}:{subject}", issuer.len())
            }
        }
    }
}

/// Which era of the protocol the client speaks (basic/versioning, "Eras").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Era {
    /// 2026-07-28: everything in the request's own `_meta`.
    #[default]
    Modern,
    /// A 2025-era client, in the session its `initialize` opened. The edge
    /// serves it through the same handler, with the session's
    /// capabilities as the request's, and shapes the answers for it.
    Legacy {
        /// The version the session negotiated (`2025-11-25`, ...).
        version: String,
    },
}

/// Everything a handler may know about the request besides its params. A
/// tool takes it as an argument beside its typed arguments
/// (`async fn greet(&self, ctx: CallContext, ...)`):
///
/// ```
/// use mcp_stateless::prelude::{CallContext, Principal};
///
/// fn greeting(ctx: &CallContext) -> String {
///     let who = match &ctx.principal {
///         Principal::Verified { subject, .. } => subject.as_str(),
///         Principal::Anonymous => "stranger",
///     };
///     // Ask only a client that said it can answer a form.
///     let asks = if ctx.declares("elicitation", Some("form")) { " What shall I call you?" } else { "" };
///     format!("Hello, {who}.{asks}")
/// }
///
/// let alice = Principal::Verified { issuer: "https://issuer.example".into(), subject: "alice".into() };
/// let ctx = CallContext::with_capabilities(alice, serde_json::json!({"elicitation": {"form": {}}}));
/// assert_eq!(greeting(&ctx), "Hello, alice. What shall I call you?");
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CallContext {
    /// The protocol version the request's `_meta` names (the edge admits
    /// only those it supports).
    pub protocol_version: String,
    /// The `clientCapabilities` object exactly as the client declared it.
    pub client_capabilities: Map<String, Value>,
    /// The `clientInfo` object as sent, if any: the client's own claim,
    /// never an identity.
    pub client_info: Option<Value>,
    /// W3C trace context: `_meta.traceparent` (the OpenTelemetry MCP
    /// conventions' carrier), else the `traceparent` header.
    pub traceparent: Option<String>,
    /// The verified caller, which state is bound to; nothing in the body
    /// can change it.
    pub principal: Principal,
    /// The client's era: a handler answers both alike, the edge shapes
    /// the answer.
    pub era: Era,
}

/// Why a request's `_meta` is malformed (-32602, HTTP 400).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum MetaError {
    /// `params._meta` is absent, or not an object.
    #[error("request _meta is missing")]
    Missing,
    /// `_meta` names no protocol version (as a string).
    #[error("request _meta is missing io.modelcontextprotocol/protocolVersion")]
    MissingProtocolVersion,
    /// `_meta` declares no capabilities (as an object).
    #[error("request _meta is missing io.modelcontextprotocol/clientCapabilities")]
    MissingClientCapabilities,
}

impl CallContext {
    /// Reads the required per-request fields from `params._meta`.
    /// `clientInfo` is optional (basic/index): its absence is not an error.
    pub fn from_meta(meta: Option<&Value>, traceparent: Option<String>, principal: Principal) -> Result<Self, MetaError> {
        let meta = meta.and_then(Value::as_object).ok_or(MetaError::Missing)?;
        let protocol_version = meta.get(META_PROTOCOL_VERSION).and_then(Value::as_str).ok_or(MetaError::MissingProtocolVersion)?.to_owned();
        let client_capabilities =
            meta.get(META_CLIENT_CAPABILITIES).and_then(Value::as_object).ok_or(MetaError::MissingClientCapabilities)?.clone();
        Ok(Self {
            protocol_version,
            client_capabilities,
            client_info: meta.get(META_CLIENT_INFO).cloned(),
            traceparent: meta.get("traceparent").and_then(Value::as_str).map(str::to_owned).or(traceparent),
            principal,
            era: Era::Modern,
        })
    }

    /// The context of a 2026-07-28 request from `principal` whose client
    /// declared `capabilities` (an object; anything else counts as none),
    /// built directly: for tests, and for work driven outside a request.
    pub fn with_capabilities(principal: Principal, capabilities: Value) -> Self {
        let client_capabilities = match capabilities {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        Self {
            protocol_version: crate::protocol::SUPPORTED_VERSIONS[0].to_owned(),
            client_capabilities,
            client_info: None,
            traceparent: None,
            principal,
            era: Era::Modern,
        }
    }

    /// Whether the client declared `capability` (a top-level key such as
    /// `sampling`), optionally with a sub-feature (`elicitation.url`).
    pub fn declares(&self, capability: &str, feature: Option<&str>) -> bool {
        crate::protocol::capability_guard::declares(&self.client_capabilities, capability, feature)
    }

    /// The context the edge attached to this request.
    ///
    /// rmcp hands handlers the HTTP request parts; the edge put the context in
    /// their extensions. Its absence means the handler is being driven by
    /// something other than this crate's edge, which is a server bug.
    pub fn of(request: &RequestContext<RoleServer>) -> Result<Self, ErrorData> {
        request
            .extensions
            .get::<http::request::Parts>()
            .and_then(crate::protocol::scope::RequestScope::of)
            .and_then(|scope| scope.call.clone())
            .ok_or_else(|| ErrorData::internal_error("request context unavailable", None))
    }
}

/// Lets tool and prompt methods take `ctx: CallContext` as an argument.
impl<C: AsRequestContext> FromContextPart<C> for CallContext {
    fn from_context_part(context: &mut C) -> Result<Self, ErrorData> {
        CallContext::of(context.as_request_context())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unseen_keys_are_budgeted_to_the_caller_else_to_its_address() {
        let verified = Principal::Verified { issuer: "https://idp".into(), subject: "alice".into() };
        let facts = |principal: Principal, sender: Option<&str>| EntryFacts {
            principal,
            sender: sender.map(str::to_owned),
            ..EntryFacts::default()
        };
        // A verified caller is one budget wherever it comes from.
        assert_eq!(facts(verified.clone(), Some("198.51.100.7")).budget_key(), verified.binding_id());
        assert_eq!(facts(verified.clone(), None).budget_key(), verified.binding_id());
        // Without sign-in, each address is one; with no address known, all share one.
        let (one, other) = (facts(Principal::Anonymous, Some("198.51.100.7")), facts(Principal::Anonymous, Some("203.0.113.9")));
        assert_ne!(one.budget_key(), other.budget_key());
        assert_eq!(facts(Principal::Anonymous, None).budget_key(), "anonymous");
        assert_ne!(one.budget_key(), "anonymous");
        // An IPv6 host is one sender whichever address of its /64 it uses.
        let (host, rotated) = (facts(Principal::Anonymous, Some("2001:db8::1")), facts(Principal::Anonymous, Some("2001:db8::beef")));
        assert_eq!(host.budget_key(), rotated.budget_key());
    }

    #[test]
    fn trace_context_comes_from_meta_before_the_header() {
        let header = Some("00-11111111111111111111111111111111-2222222222222222-01".to_owned());
        let from_meta = "00-33333333333333333333333333333333-4444444444444444-01";
        let meta = json!({META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}, "traceparent": from_meta});
        let ctx = CallContext::from_meta(Some(&meta), header.clone(), Principal::Anonymous).unwrap();
        assert_eq!(ctx.traceparent.as_deref(), Some(from_meta));
        let without = json!({META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}});
        assert_eq!(CallContext::from_meta(Some(&without), header.clone(), Principal::Anonymous).unwrap().traceparent, header);
    }

    #[test]
    fn meta_requires_version_and_capabilities_but_not_client_info() {
        let ok = json!({META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}});
        let ctx = CallContext::from_meta(Some(&ok), None, Principal::Anonymous).unwrap();
        assert_eq!(ctx.protocol_version, "2026-07-28");
        assert!(ctx.client_info.is_none());

        let no_version = json!({META_CLIENT_CAPABILITIES: {}});
        assert_eq!(CallContext::from_meta(Some(&no_version), None, Principal::Anonymous).unwrap_err(), MetaError::MissingProtocolVersion);
        let no_caps = json!({META_PROTOCOL_VERSION: "2026-07-28"});
        assert_eq!(CallContext::from_meta(Some(&no_caps), None, Principal::Anonymous).unwrap_err(), MetaError::MissingClientCapabilities);
        assert_eq!(CallContext::from_meta(None, None, Principal::Anonymous).unwrap_err(), MetaError::Missing);
    }

    #[test]
    fn principals_with_shifted_separators_do_not_collide() {
        let a = Principal::Verified { issuer: "a:b".into(), subject: "c".into() };
        let b = Principal::Verified { issuer: "a".into(), subject: "b:c".into() };
        assert_ne!(a.binding_id(), b.binding_id());
        assert_ne!(Principal::Anonymous.binding_id(), a.binding_id());
    }
}
