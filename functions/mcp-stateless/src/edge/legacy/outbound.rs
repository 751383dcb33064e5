//! Answers shaped for a 2025-era client on their way out: no 2026-only
//! fields, and a refusal the era can read where the handler asked for
//! input the connection cannot carry.

use serde_json::{Map, Value, json};

use crate::{
    edge::error::{Refusal, code},
    protocol::{
        SUPPORTED_VERSIONS,
        capability_guard::missing_capabilities,
        message::{INPUT_REQUIRED, MessageView},
    },
};

/// Result fields 2026-07-28 added, which no 2025-era schema has.
const MODERN_ONLY_RESULT_FIELDS: &[&str] = &["resultType", "ttlMs", "cacheScope"];

/// Shapes a message the handler sent a legacy client: a result loses the
/// fields 2026-07-28 added, and one that asks for input (the MRTR
/// `input_required`) becomes a refusal naming what was asked, since this
/// connection has no way to ask the client mid-call: a tool result with
/// `isError` for `tools/call` (the model can read it), a JSON-RPC error
/// otherwise.
pub(super) fn shape(message: &mut Value, method: Option<&str>, client_capabilities: &Map<String, Value>) {
    if let Some(meta) = message.get_mut("params").and_then(|p| p.get_mut("_meta")).and_then(Value::as_object_mut) {
        // A notification names the listen stream it belongs to, which a
        // 2025-era client never opened.
        meta.remove("io.modelcontextprotocol/subscriptionId");
    }
    if let Some(required) = message
        .get("error")
        .filter(|error| error.get("code").and_then(Value::as_i64) == Some(code::MISSING_REQUIRED_CLIENT_CAPABILITY.into()))
        .map(|error| error.get("data").and_then(|d| d.get("requiredCapabilities")).cloned().unwrap_or_default())
    {
        // -32021 is 2026-07-28's; a 2025-era client gets the refusal its
        // era has, naming what to declare.
        let reason = format!(
            "This needs a capability the client did not declare ({required}). Use a client that declares it, or one that \
             speaks MCP {}.",
            SUPPORTED_VERSIONS[0]
        );
        *message = refusal(message.get("id").cloned().unwrap_or(Value::Null), method, reason);
        return;
    }
    let view = MessageView::of(message);
    if view.result_type() == Some(INPUT_REQUIRED) {
        let asked = view.input_requests();
        let missing = asked.and_then(|requests| missing_capabilities(client_capabilities, requests));
        let what = asked.map(asked_methods).unwrap_or_default();
        let reason = match missing {
            Some(missing) => format!(
                "This needs the client to answer {what} mid-call, and the client did not declare the capability ({missing}). \
                 Use a client that declares it, or one that speaks MCP {}.",
                SUPPORTED_VERSIONS[0]
            ),
            None => format!(
                "This needs the client to answer {what} mid-call, which this server cannot send on a 2025-era connection \
                 here. Use a client that speaks MCP {}.",
                SUPPORTED_VERSIONS[0]
            ),
        };
        *message = refusal(message.get("id").cloned().unwrap_or(Value::Null), method, reason);
        return;
    }
    if let Some(result) = message.get_mut("result").and_then(Value::as_object_mut) {
        for field in MODERN_ONLY_RESULT_FIELDS {
            result.remove(*field);
        }
    }
}

/// A refusal a 2025-era client can read: a tool result with `isError`
/// for `tools/call` (the model reads it), a JSON-RPC error otherwise.
pub(in crate::edge) fn refusal(id: Value, method: Option<&str>, reason: String) -> Value {
    if method == Some("tools/call") {
        json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": reason}], "isError": true}})
    } else {
        Refusal::new(code::INVALID_REQUEST, reason).message(Some(id))
    }
}

/// `elicitation/create, sampling/createMessage`: the methods an
/// `inputRequests` map asks the client to answer.
fn asked_methods(requests: &Map<String, Value>) -> String {
    let mut methods: Vec<&str> = requests.values().filter_map(|request| request.get("method").and_then(Value::as_str)).collect();
    methods.sort_unstable();
    methods.dedup();
    methods.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_legacy_result_loses_modern_fields_and_input_requests_become_refusals() {
        let mut listed =
            json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "ttlMs": 5, "cacheScope": "x", "tools": []}});
        shape(&mut listed, Some("tools/list"), &Map::new());
        assert_eq!(listed["result"], json!({"tools": []}));

        let asking = json!({"jsonrpc": "2.0", "id": 2, "result": {"resultType": "input_required",
            "inputRequests": {"a": {"method": "elicitation/create", "params": {}}}}});
        let mut tool = asking.clone();
        shape(&mut tool, Some("tools/call"), &Map::new());
        assert_eq!(tool["result"]["isError"], true);
        let text = tool["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("elicitation/create") && text.contains("did not declare"), "{text}");

        let mut prompt = asking.clone();
        let declared = json!({"elicitation": {}}).as_object().cloned().unwrap();
        shape(&mut prompt, Some("prompts/get"), &declared);
        assert_eq!(prompt["error"]["code"], code::INVALID_REQUEST);
        assert!(prompt["error"]["message"].as_str().unwrap().contains("cannot send"), "{prompt}");
        assert_eq!(prompt["id"], 2);
    }

    #[test]
    fn a_missing_capability_error_becomes_the_eras_refusal() {
        let error = json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32021, "message": "Missing required client capability",
            "data": {"requiredCapabilities": {"elicitation": {"form": {}}}}}});
        let mut tool = error.clone();
        shape(&mut tool, Some("tools/call"), &Map::new());
        assert_eq!(tool["result"]["isError"], true);
        assert!(tool["result"]["content"][0]["text"].as_str().unwrap().contains(r#"{"elicitation":{"form":{}}}"#), "{tool}");
        let mut prompt = error;
        shape(&mut prompt, Some("prompts/get"), &Map::new());
        assert_eq!((prompt["id"].as_i64(), prompt["error"]["code"].as_i64()), (Some(3), Some(-32600)));
    }
}
