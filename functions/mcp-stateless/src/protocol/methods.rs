//! Every JSON-RPC request method the server knows, one row each: which era
//! has it, who serves it, whether its handler may ask the client, where its
//! name is, the shape of its params, and so its metric dimension. The edge
//! reads these rows instead of keeping lists of its own, so a method added
//! here is classified, checked, routed and counted alike.

use rmcp::model::{
    CallToolRequestParams, CancelTaskParams, CompleteRequestParams, GetPromptRequestParams, GetTaskParams, ReadResourceRequestParams,
    UpdateTaskParams,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Which protocol era has a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Eras {
    /// Both the 2025 era and 2026-07-28.
    Both,
    /// 2026-07-28 only: whatever a request of it carries, it is modern.
    Modern,
    /// The 2025 era only (a session's handshake and its state).
    Legacy,
}

/// Who answers a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServedBy {
    /// The `ServerHandler` (through rmcp), for either era.
    Handler,
    /// The edge's 2025-era side, from the session it keeps.
    LegacyEdge,
}

/// One method's row.
#[derive(Debug)]
pub struct Method {
    /// Its JSON-RPC name.
    pub name: &'static str,
    /// The eras that have it.
    pub eras: Eras,
    /// Who answers it.
    pub served_by: ServedBy,
    /// Whether what serves it may ask the client mid-call (elicitation,
    /// sampling, roots), which a 2025-era client answers on the stream.
    pub may_ask: bool,
    /// The param that names its target (`Mcp-Name`, the log's target).
    pub name_key: Option<&'static str>,
    /// Why its params do not have the shape it requires, if they do not;
    /// `None` for methods whose optional params rmcp reads leniently.
    params: Option<ParamsCheck>,
}

/// Why params do not fit a shape, if they do not.
type ParamsCheck = fn(Option<&Value>) -> Option<String>;

impl Method {
    const fn new(name: &'static str, eras: Eras, served_by: ServedBy) -> Self {
        Self { name, eras, served_by, may_ask: false, name_key: None, params: None }
    }

    const fn asking(mut self) -> Self {
        self.may_ask = true;
        self
    }

    const fn named_by(mut self, key: &'static str) -> Self {
        self.name_key = Some(key);
        self
    }

    const fn shaped(mut self, check: ParamsCheck) -> Self {
        self.params = Some(check);
        self
    }

    /// Why `params` do not fit this method's shape, if they do not.
    ///
    /// rmcp reads a request whose params do not parse as a custom (unknown)
    /// method, so `"arguments": "text"` on `tools/call` would be -32601
    /// with HTTP 404; the edge answers -32602 instead.
    pub fn params_misfit(&self, params: Option<&Value>) -> Option<String> {
        let reason = (self.params?)(params)?;
        Some(format!("params of {} do not fit its schema: {reason}", self.name))
    }
}

/// The first 160 characters of why `params` are not a `T` (the reason
/// quotes the client's own input: keep it short).
fn misfit<T: DeserializeOwned>(params: Option<&Value>) -> Option<String> {
    // Deserialized from a borrow: no copy of the arguments per request.
    let empty = Value::Object(Default::default());
    let error = T::deserialize(params.unwrap_or(&empty)).err()?.to_string();
    Some(error.chars().take(160).collect())
}

use Eras::{Both, Legacy, Modern};
use ServedBy::{Handler, LegacyEdge};

/// The table.
pub const METHODS: &[Method] = &[
    Method::new("initialize", Legacy, LegacyEdge),
    Method::new("ping", Both, Handler),
    Method::new("server/discover", Modern, Handler),
    Method::new("tools/list", Both, Handler),
    Method::new("tools/call", Both, Handler).asking().named_by("name").shaped(misfit::<CallToolRequestParams>),
    Method::new("prompts/list", Both, Handler),
    Method::new("prompts/get", Both, Handler).asking().named_by("name").shaped(misfit::<GetPromptRequestParams>),
    Method::new("resources/list", Both, Handler),
    Method::new("resources/templates/list", Both, Handler),
    Method::new("resources/read", Both, Handler).asking().named_by("uri").shaped(misfit::<ReadResourceRequestParams>),
    Method::new("resources/subscribe", Legacy, LegacyEdge).named_by("uri"),
    Method::new("resources/unsubscribe", Legacy, LegacyEdge).named_by("uri"),
    Method::new("logging/setLevel", Legacy, LegacyEdge),
    Method::new("completion/complete", Both, Handler).shaped(misfit::<CompleteRequestParams>),
    Method::new("subscriptions/listen", Modern, Handler),
    Method::new("tasks/get", Modern, Handler).shaped(misfit::<GetTaskParams>),
    Method::new("tasks/update", Modern, Handler).shaped(misfit::<UpdateTaskParams>),
    Method::new("tasks/cancel", Modern, Handler).shaped(misfit::<CancelTaskParams>),
];

/// The row of `name`, if the server knows it.
pub fn method(name: &str) -> Option<&'static Method> {
    METHODS.iter().find(|method| method.name == name)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_method_has_one_row() {
        let mut names: Vec<_> = METHODS.iter().map(|m| m.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), METHODS.len());
    }

    #[test]
    fn params_are_checked_where_a_shape_is_required() {
        let bad = json!({"name": "echo", "arguments": "text"});
        let call = method("tools/call").unwrap();
        assert!(call.params_misfit(Some(&bad)).unwrap().starts_with("params of tools/call"));
        assert!(call.params_misfit(Some(&json!({"name": "echo", "arguments": {}}))).is_none());
        assert!(method("tasks/get").unwrap().params_misfit(Some(&json!({"taskId": 7}))).is_some());
        assert!(method("tools/list").unwrap().params_misfit(Some(&json!({"cursor": 7}))).is_none(), "not checked here");
        let long = json!({"name": "x".repeat(10_000), "arguments": "y".repeat(10_000)});
        assert!(call.params_misfit(Some(&long)).unwrap().len() < 300);
    }

    #[test]
    fn only_what_the_handler_serves_may_ask() {
        let asking: Vec<_> = METHODS.iter().filter(|m| m.may_ask).map(|m| m.name).collect();
        assert_eq!(asking, ["tools/call", "prompts/get", "resources/read"]);
        assert!(METHODS.iter().filter(|m| m.may_ask).all(|m| m.served_by == Handler && m.eras == Both));
    }
}
