//! Elicitation for tools (client/elicitation): asking the user through a
//! form, and reading what came back, checked as any input is. Used by
//! multi-round tools (with `requestState`, `sealed::mrtr`) and by tasks
//! that park for input alike.

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ErrorCode, ErrorData, InputRequest, InputRequests, InputRequiredResult, InputResponses,
};
use serde_json::{Value, json};

use crate::protocol::context::CallContext;

/// Refuses a request whose client did not declare form elicitation, with
/// the -32021 the edge would send once the tool had asked: call it first in
/// a round that will ask, so a request that is going to be refused reads,
/// writes and seals nothing.
pub fn require_form_elicitation(ctx: &CallContext) -> Result<(), ErrorData> {
    if ctx.declares("elicitation", Some("form")) {
        return Ok(());
    }
    Err(ErrorData::new(
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        "Missing required client capability",
        Some(json!({"requiredCapabilities": {"elicitation": {"form": {}}}})),
    ))
}

/// What the user answered to a form elicitation (client/elicitation,
/// "Response Actions").
#[derive(Debug, Clone, PartialEq)]
#[allow(
    clippy::exhaustive_enums,
    reason = "a tool handles each answer a user can give; a new one must be handled, not fall into a wildcard arm"
)]
pub enum ElicitationReply<'a> {
    /// The user submitted the form: its content, checked against the schema
    /// only when read through [`checked_reply`].
    Accepted(&'a serde_json::Map<String, Value>),
    /// The user refused to answer.
    Declined,
    /// The user dismissed the form without choosing.
    Cancelled,
    /// No answer under that key, or not an elicitation result: ask again.
    Missing,
}

/// Reads the answer to the input request named `key`.
pub fn elicitation_reply<'a>(responses: &'a Option<InputResponses>, key: &str) -> ElicitationReply<'a> {
    read_elicitation(responses.as_ref().and_then(|r| r.get(key)))
}

/// Reads one elicitation result (or its absence).
pub fn read_elicitation(reply: Option<&Value>) -> ElicitationReply<'_> {
    let Some(reply) = reply else {
        return ElicitationReply::Missing;
    };
    match reply.get("action").and_then(Value::as_str) {
        Some("accept") => reply.get("content").and_then(Value::as_object).map_or(ElicitationReply::Missing, ElicitationReply::Accepted),
        Some("decline") => ElicitationReply::Declined,
        Some("cancel") => ElicitationReply::Cancelled,
        _ => ElicitationReply::Missing,
    }
}

/// The answer under `key` to a form elicitation the previous round sent
/// with `requested_schema` (keep the schema in one function both rounds
/// call), checked against that schema first: the client fills the form,
/// so what comes back is checked as any input is (client/elicitation:
/// servers SHOULD validate). An answer that does not fit is -32602 naming
/// the rule it broke, never echoing the value.
pub fn checked_reply<'a>(
    responses: &'a Option<InputResponses>,
    key: &str,
    requested_schema: &Value,
) -> Result<ElicitationReply<'a>, ErrorData> {
    let reply = responses.as_ref().and_then(|r| r.get(key));
    if let Some(reply) = reply {
        check_content(Some(requested_schema), reply)
            .map_err(|reason| ErrorData::invalid_params(format!("Invalid input response {key}: {reason}"), None))?;
    }
    Ok(read_elicitation(reply))
}

/// The largest answer to one input request a server keeps.
pub const MAX_ANSWER_BYTES: usize = 8 * 1024;

/// `response` (an input response) checked against `request`, the input
/// request it answers (as JSON, the way a task stores it), and kept as the
/// form asked: properties of an accepted form's content that the
/// `requestedSchema` does not name are dropped (a form's answer holds
/// only what the form asked, and what is kept is stored).
pub fn answer_as_asked(request: &Value, mut response: Value) -> Result<Value, String> {
    let schema = request.get("params").and_then(|p| p.get("requestedSchema"));
    check_content(schema, &response)?;
    let named = schema.and_then(|s| s.get("properties")).and_then(Value::as_object);
    if let (Some(named), Some(Value::Object(content))) = (named, response.get_mut("content")) {
        content.retain(|name, _| named.contains_key(name));
    }
    Ok(response)
}

/// Small, and for an accepted form elicitation, content that matches the
/// schema asked for.
fn check_content(requested_schema: Option<&Value>, response: &Value) -> Result<(), String> {
    if serde_json::to_vec(response).map_or(usize::MAX, |bytes| bytes.len()) > MAX_ANSWER_BYTES {
        return Err(format!("over {MAX_ANSWER_BYTES} bytes"));
    }
    match (requested_schema, response.get("action").and_then(Value::as_str)) {
        (Some(schema), Some("accept")) => {
            crate::protocol::arguments::check_against(schema, response.get("content").unwrap_or(&Value::Null))
        }
        _ => Ok(()),
    }
}

/// A form-mode elicitation asking `message`, with a flat `requestedSchema`.
pub fn form_request(message: &str, requested_schema: Value) -> Result<InputRequest, ErrorData> {
    let requested_schema = serde_json::from_value(requested_schema)
        .map_err(|e| ErrorData::internal_error(format!("invalid elicitation schema: {e}"), None))?;
    Ok(InputRequest::Elicitation(ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message.to_owned(),
        requested_schema,
    })))
}

/// An `InputRequiredResult` asking one thing, with the sealed state.
pub fn ask_one(key: &str, request: InputRequest, request_state: String) -> InputRequiredResult {
    let mut requests = InputRequests::new();
    requests.insert(key.to_owned(), request);
    InputRequiredResult::new(Some(requests), Some(request_state))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(capabilities: Value) -> CallContext {
        CallContext::with_capabilities(crate::protocol::context::Principal::Anonymous, capabilities)
    }

    #[test]
    fn form_elicitation_is_required_up_front() {
        assert!(require_form_elicitation(&ctx(json!({"elicitation": {}}))).is_ok());
        let refused = require_form_elicitation(&ctx(json!({"elicitation": {"url": {}}}))).unwrap_err();
        assert_eq!(refused.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
        assert_eq!(refused.data, Some(json!({"requiredCapabilities": {"elicitation": {"form": {}}}})));
    }
}
