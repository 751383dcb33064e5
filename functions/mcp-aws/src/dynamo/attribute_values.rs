//! JSON <-> DynamoDB attribute values, so handle data is stored as a native
//! map that update expressions (such as `list_append`) can work on.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::{Map, Number, Value};

pub(crate) fn to_attribute(value: &Value) -> AttributeValue {
    match value {
        Value::Null => AttributeValue::Null(true),
        Value::Bool(b) => AttributeValue::Bool(*b),
        Value::Number(n) => AttributeValue::N(n.to_string()),
        Value::String(s) => AttributeValue::S(s.clone()),
        Value::Array(items) => AttributeValue::L(items.iter().map(to_attribute).collect()),
        Value::Object(map) => AttributeValue::M(map.iter().map(|(k, v)| (k.clone(), to_attribute(v))).collect()),
    }
}

/// `None` for attribute types this crate never writes (sets, binary).
pub(crate) fn from_attribute(attribute: &AttributeValue) -> Option<Value> {
    Some(match attribute {
        AttributeValue::Null(_) => Value::Null,
        AttributeValue::Bool(b) => Value::Bool(*b),
        AttributeValue::N(n) => Value::Number(parse_number(n)?),
        AttributeValue::S(s) => Value::String(s.clone()),
        AttributeValue::L(items) => Value::Array(items.iter().map(from_attribute).collect::<Option<_>>()?),
        AttributeValue::M(map) => Value::Object(from_map(map)?),
        _ => return None,
    })
}

pub(crate) fn from_map(map: &HashMap<String, AttributeValue>) -> Option<Map<String, Value>> {
    map.iter().map(|(k, v)| Some((k.clone(), from_attribute(v)?))).collect()
}

fn parse_number(n: &str) -> Option<Number> {
    if let Ok(i) = n.parse::<i64>() {
        return Some(i.into());
    }
    if let Ok(u) = n.parse::<u64>() {
        return Some(u.into());
    }
    Number::from_f64(n.parse().ok()?)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn json_round_trips() {
        let value = json!({"items": [{"sku": "a", "qty": 2, "price": 1.5}], "note": null, "open": true, "empty": {}});
        assert_eq!(from_attribute(&to_attribute(&value)), Some(value));
    }
}
