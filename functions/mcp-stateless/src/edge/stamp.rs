//! The edge's one change to a whole JSON answer, made on its text.
//!
//! Every result names the server in its `_meta` (basic/index, "Per-response
//! protocol fields"); rmcp does so only for `server/discover`. Parsing each
//! answer into a `Value`, adding the entry and writing it out again was a
//! tenth of a `tools/call`'s work (docs/benchmarks.md), so the common
//! answer, a result without `_meta` or an error, is read only as far as its
//! top-level fields, and the entry is written in front of the result's own
//! fields, which are copied as they are. Anything else (a result that has a
//! `_meta` already, one that asks for input, which the -32021 guard must
//! see, a body that is not one JSON-RPC response) goes the general way.

use std::borrow::Cow;

use bytes::Bytes;
use serde::{Deserialize, de::IgnoredAny};
use serde_json::value::RawValue;

use crate::{
    edge::request_log::RequestLog,
    protocol::message::{COMPLETE, INPUT_REQUIRED},
};

/// A JSON-RPC response and nothing more: any other field sends the body
/// the general way, so that nothing is lost when it is written again.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Response<'a> {
    #[serde(borrow)]
    jsonrpc: &'a str,
    #[serde(borrow)]
    id: &'a RawValue,
    // Present even when null (`Option` would read null as absent).
    #[serde(borrow, default, deserialize_with = "present_raw")]
    result: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<ErrorHead>,
}

#[derive(Deserialize)]
struct ErrorHead {
    code: i64,
}

/// The result's fields the edge looks at; the others are skipped unread.
#[derive(Deserialize)]
struct ResultHead<'a> {
    #[serde(rename = "resultType", borrow, default)]
    result_type: Option<Cow<'a, str>>,
    /// Whether the result has a `_meta`, even a null one.
    #[serde(rename = "_meta", default, deserialize_with = "present")]
    meta: bool,
}

fn present<'de, D: serde::Deserializer<'de>>(value: D) -> Result<bool, D::Error> {
    IgnoredAny::deserialize(value).map(|_| true)
}

fn present_raw<'de, D: serde::Deserializer<'de>>(value: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(value).map(Some)
}

/// `body` with `"_meta": {<key>: <server_info>}` as its result's first
/// field, or as it is for an error, and what it said (for the request
/// log); `None` when the body must go the general way. `server_info` is
/// JSON text.
pub(super) fn stamped(body: &Bytes, key: &str, server_info: &str) -> Option<(Bytes, RequestLog)> {
    let response: Response<'_> = serde_json::from_slice(body).ok()?;
    if response.jsonrpc != "2.0" {
        return None;
    }
    let mut outcome = RequestLog::default();
    match (response.result, response.error) {
        (None, Some(error)) => {
            outcome.record(None, Some(error.code));
            Some((body.clone(), outcome))
        }
        (Some(result), None) => {
            let head: ResultHead<'_> = serde_json::from_str(result.get()).ok()?;
            let result_type = head.result_type.as_deref().unwrap_or(COMPLETE);
            if head.meta || result_type == INPUT_REQUIRED {
                return None;
            }
            // A RawValue holds the value's text exactly, an object's braces
            // included.
            let fields = result.get().strip_prefix('{')?.strip_suffix('}')?.trim();
            let mut out = String::with_capacity(body.len() + key.len() + server_info.len() + 16);
            out.push_str(r#"{"jsonrpc":"2.0","id":"#);
            out.push_str(response.id.get());
            out.push_str(r#","result":{"_meta":{"#);
            // `key` is a constant of the edge's and needs no escaping.
            out.push('"');
            out.push_str(key);
            out.push_str(r#"":"#);
            out.push_str(server_info);
            out.push('}');
            if !fields.is_empty() {
                out.push(',');
                out.push_str(fields);
            }
            out.push_str("}}");
            outcome.record(Some(result_type), None);
            Some((Bytes::from(out), outcome))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const KEY: &str = "io.modelcontextprotocol/serverInfo";
    const INFO: &str = r#"{"name":"s","version":"1"}"#;

    fn stamp(body: Value) -> Option<(Value, RequestLog)> {
        let (out, outcome) = stamped(&Bytes::from(body.to_string()), KEY, INFO)?;
        Some((serde_json::from_slice(&out).expect("the stamped body is JSON"), outcome))
    }

    #[test]
    fn a_result_gets_the_server_info_and_keeps_every_field() {
        let result = json!({"content": [{"type": "text", "text": "a \"quoted\" } brace"}], "isError": false, "resultType": "complete"});
        let (out, outcome) = stamp(json!({"jsonrpc": "2.0", "id": "x-1", "result": result.clone()})).unwrap();
        let mut expected = result;
        expected["_meta"] = json!({KEY: {"name": "s", "version": "1"}});
        assert_eq!(out, json!({"jsonrpc": "2.0", "id": "x-1", "result": expected}));
        assert_eq!((outcome.result_type.as_deref(), outcome.error_code), (Some("complete"), None));
    }

    #[test]
    fn an_empty_result_and_a_result_without_a_type() {
        let (out, outcome) = stamp(json!({"jsonrpc": "2.0", "id": 7, "result": {}})).unwrap();
        assert_eq!(out, json!({"jsonrpc": "2.0", "id": 7, "result": {"_meta": {KEY: {"name": "s", "version": "1"}}}}));
        assert_eq!(outcome.result_type.as_deref(), Some("complete"), "no resultType means complete");
    }

    #[test]
    fn an_error_is_passed_on_unchanged_with_its_code() {
        let body = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "bad"}});
        let (out, outcome) = stamp(body.clone()).unwrap();
        assert_eq!(out, body);
        assert_eq!((outcome.result_type, outcome.error_code), (None, Some(-32602)));
    }

    #[test]
    fn what_the_text_path_must_not_handle_goes_the_general_way() {
        let meta = json!({"jsonrpc": "2.0", "id": 1, "result": {"_meta": {"k": 1}}});
        let input = json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "input_required", "inputRequests": {}}});
        let extra = json!({"jsonrpc": "2.0", "id": 1, "result": {}, "other": 1});
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
        let both = json!({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": ""}});
        let not_object = json!({"jsonrpc": "2.0", "id": 1, "result": [1]});
        let null_meta = json!({"jsonrpc": "2.0", "id": 1, "result": {"_meta": null, "content": []}});
        let null_result = json!({"jsonrpc": "2.0", "id": 1, "result": null, "error": {"code": 1, "message": ""}});
        for body in [meta, input, extra, request, both, not_object, null_meta, null_result] {
            assert!(stamp(body.clone()).is_none(), "{body}");
        }
        assert!(stamped(&Bytes::from_static(b"not json"), KEY, INFO).is_none());
    }
}
