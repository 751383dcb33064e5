//! The automatic -32021 guard (basic/index, "A server MUST NOT rely on
//! capabilities the client has not declared").
//!
//! Whatever a tool, prompt or resource handler returns, the edge passes its
//! `inputRequests` through [`missing_capabilities`]; if any needs a capability
//! the request did not declare, the client gets -32021 instead of a request
//! it cannot answer. Handlers do not each have to remember.

use serde_json::{Map, Value, json};

/// Whether `capabilities` declares `capability`, and `feature` under it if given.
///
/// `elicitation: {}` means form mode only (client/elicitation, "Capabilities").
pub fn declares(capabilities: &Map<String, Value>, capability: &str, feature: Option<&str>) -> bool {
    let Some(declared) = capabilities.get(capability).and_then(Value::as_object) else {
        return false;
    };
    match (capability, feature) {
        (_, None) => true,
        ("elicitation", Some("form")) => declared.is_empty() || declared.contains_key("form"),
        (_, Some(feature)) => declared.contains_key(feature),
    }
}

/// The capability (and sub-feature) one input request needs, if known.
fn needed_by(input_request: &Value) -> Option<(&'static str, Option<&'static str>)> {
    match input_request.get("method").and_then(Value::as_str)? {
        "sampling/createMessage" => Some(("sampling", None)),
        "roots/list" => Some(("roots", None)),
        "elicitation/create" => {
            let url_mode = input_request.pointer("/params/mode").and_then(Value::as_str) == Some("url");
            Some(("elicitation", Some(if url_mode { "url" } else { "form" })))
        }
        _ => None,
    }
}

/// The `requiredCapabilities` object for the input requests the client cannot
/// answer, or `None` when it declared everything they need.
pub fn missing_capabilities(declared: &Map<String, Value>, input_requests: &Map<String, Value>) -> Option<Value> {
    let mut required = Map::new();
    for (capability, feature) in input_requests.values().filter_map(needed_by) {
        if declares(declared, capability, feature) {
            continue;
        }
        let entry = required.entry(capability).or_insert_with(|| json!({}));
        if let (Some(feature), Some(entry)) = (feature, entry.as_object_mut()) {
            entry.insert(feature.to_owned(), json!({}));
        }
    }
    (!required.is_empty()).then_some(Value::Object(required))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn empty_elicitation_declares_form_but_not_url() {
        let c = caps(json!({"elicitation": {}}));
        assert!(declares(&c, "elicitation", Some("form")));
        assert!(!declares(&c, "elicitation", Some("url")));
        assert!(declares(&caps(json!({"elicitation": {"url": {}}})), "elicitation", Some("url")));
    }

    #[test]
    fn reports_only_what_is_missing() {
        let requests = caps(json!({
            "a": {"method": "elicitation/create", "params": {"message": "?"}},
            "b": {"method": "sampling/createMessage", "params": {}},
            "c": {"method": "roots/list"},
        }));
        assert_eq!(
            missing_capabilities(&caps(json!({"sampling": {}})), &requests),
            Some(json!({"elicitation": {"form": {}}, "roots": {}}))
        );
        let all = caps(json!({"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}}));
        assert_eq!(missing_capabilities(&all, &requests), None);
    }

    #[test]
    fn url_elicitation_needs_url_mode() {
        let requests = caps(json!({"u": {"method": "elicitation/create", "params": {"mode": "url"}}}));
        assert_eq!(missing_capabilities(&caps(json!({"elicitation": {}})), &requests), Some(json!({"elicitation": {"url": {}}})));
    }
}
