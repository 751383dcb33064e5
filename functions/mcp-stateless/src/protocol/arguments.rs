//! Tool arguments checked against the `inputSchema` each tool publishes,
//! once for every tool, before the tool runs.
//!
//! The spec makes servers validate all tool inputs (server/tools, security
//! considerations). Serde alone does not: it ignores `maxLength`, `minimum`,
//! `pattern` and the other constraints a tool's schema advertises, so a
//! 200-character item would reach a tool that promised at most 100. The
//! schema a client sees is the one enforced, so the two cannot drift.
//!
//! A violation is a tool execution error (`isError: true`), which is how
//! the spec classes input validation errors: the model can read it and
//! retry. The message names the argument and the rule it broke, never the
//! value (which may be large or secret), and is capped.

use std::sync::{Arc, OnceLock};

use jsonschema::{Draft, Validator};
use rmcp::{
    ErrorData,
    handler::server::{
        router::tool::{ToolRoute, ToolRouter},
        tool::ToolCallContext,
    },
    model::{CallToolResult, ContentBlock, JsonObject},
};
use serde_json::Value;

/// The longest violation message a client gets, in bytes.
const MAX_MESSAGE_BYTES: usize = 300;

/// `router` with every route checking its arguments first.
///
/// Each schema is compiled on the tool's first call, not at start-up: a
/// cold instance pays only for the tools it is asked to run. A schema that
/// does not compile is the server's bug: the call answers -32603 and the
/// log says which tool (see [`schema_problems`] for a test that catches it
/// before deployment).
pub fn checked<S: Send + Sync + 'static>(router: ToolRouter<S>) -> ToolRouter<S> {
    let mut checked = ToolRouter::new();
    for route in router {
        checked.add_route(checked_route(route));
    }
    checked
}

/// Every tool in `router` whose published schema does not compile, with
/// the reason. An empty list means every tool's arguments can be checked.
pub fn schema_problems<S>(router: &ToolRouter<S>) -> Vec<String> {
    router
        .map
        .values()
        .filter_map(|route| compile(&route.attr.input_schema).err().map(|why| format!("{}: {why}", route.attr.name)))
        .collect()
}

fn checked_route<S: Send + Sync + 'static>(route: ToolRoute<S>) -> ToolRoute<S> {
    let inner = route.call.clone();
    let schema = route.attr.input_schema.clone();
    let validator: Arc<OnceLock<Result<Validator, String>>> = Arc::default();
    ToolRoute::new_dyn(route.attr, move |mut context: ToolCallContext<'_, S>| {
        let inner = inner.clone();
        let compiled = validator.get_or_init(|| compile(&schema));
        let verdict = match compiled {
            Ok(validator) => Ok(violation(validator, &mut context.arguments)),
            Err(why) => {
                tracing::error!(tool = %context.name, error = %why, "tool input schema does not compile");
                Err(ErrorData::internal_error("internal error", None))
            }
        };
        Box::pin(async move {
            match verdict? {
                Some(message) => Ok(CallToolResult::error(vec![ContentBlock::text(message)]).into()),
                None => inner(context).await,
            }
        })
    })
}

fn compile(schema: &JsonObject) -> Result<Validator, String> {
    // 2020-12 is the dialect the spec assumes when a schema names none.
    // No retriever is compiled in, so a remote `$ref` fails here rather
    // than being fetched.
    jsonschema::options().with_draft(Draft::Draft202012).build(&Value::Object(schema.clone())).map_err(|error| error.to_string())
}

/// `instance` checked against an answer schema the server itself sent (an
/// elicitation's `requestedSchema`), formats included: the value is what
/// a client filled in, the schema is the server's own.
pub fn check_against(schema: &Value, instance: &Value) -> Result<(), String> {
    let validator = jsonschema::options()
        .with_draft(Draft::Draft202012)
        .should_validate_formats(true)
        .build(schema)
        .map_err(|error| error.to_string())?;
    match first_violation(&validator, instance) {
        Some(message) => Err(message),
        None => Ok(()),
    }
}

/// The first rule `arguments` break, as a message for the caller.
/// `arguments` are moved into a `Value` for the validator and back, not
/// copied: this runs on every call.
fn violation(validator: &Validator, arguments: &mut Option<JsonObject>) -> Option<String> {
    let present = arguments.is_some();
    // Absent arguments are checked as `{}`: a tool with required
    // arguments is told which one is missing.
    let instance = Value::Object(arguments.take().unwrap_or_default());
    let message = first_violation(validator, &instance);
    if let (true, Value::Object(map)) = (present, instance) {
        *arguments = Some(map);
    }
    message
}

fn first_violation(validator: &Validator, instance: &Value) -> Option<String> {
    let error = validator.iter_errors(instance).next()?;
    let at = error.instance_path().as_str();
    let place = if at.is_empty() { "arguments".to_owned() } else { format!("argument {at}") };
    let mut message = format!("Invalid {place}: {}", error.masked_with("the value"));
    cap(&mut message);
    Some(message)
}

fn cap(message: &mut String) {
    if message.len() > MAX_MESSAGE_BYTES {
        let mut end = MAX_MESSAGE_BYTES;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push('…');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn validator(schema: Value) -> Validator {
        compile(schema.as_object().unwrap()).unwrap()
    }

    fn item_schema() -> Validator {
        validator(json!({
            "type": "object",
            "properties": {"item": {"type": "string", "maxLength": 100}, "count": {"type": "integer", "minimum": 1}},
            "required": ["item"]
        }))
    }

    fn check(validator: &Validator, arguments: Value) -> Option<String> {
        let mut arguments = arguments.as_object().cloned();
        let message = violation(validator, &mut arguments);
        assert!(arguments.is_some(), "the arguments are handed back");
        message
    }

    #[test]
    fn a_string_over_its_max_length_is_refused_without_echoing_it() {
        let long = "x".repeat(200);
        let message = check(&item_schema(), json!({"item": long})).expect("200 chars > maxLength 100");
        assert!(message.starts_with("Invalid argument /item:"), "{message}");
        assert!(message.contains("100"), "{message}");
        assert!(!message.contains("xxxx"), "the value is not echoed: {message}");
        assert_eq!(check(&item_schema(), json!({"item": "x".repeat(100)})), None);
    }

    #[test]
    fn missing_required_wrong_type_and_range_are_refused() {
        assert!(check(&item_schema(), json!({})).unwrap().contains("item"));
        let mut absent = None;
        assert!(violation(&item_schema(), &mut absent).unwrap().contains("item"), "absent arguments are {{}}");
        assert!(absent.is_none(), "and stay absent");
        assert!(check(&item_schema(), json!({"item": 5})).is_some());
        assert!(check(&item_schema(), json!({"item": "a", "count": 0})).unwrap().starts_with("Invalid argument /count"));
        assert_eq!(check(&item_schema(), json!({"item": "a", "count": 3})), None);
    }

    #[test]
    fn messages_are_capped_even_for_huge_property_names() {
        let strict = validator(json!({"type": "object", "additionalProperties": false}));
        let name = "k".repeat(10_000);
        let message = check(&strict, json!({name: 1})).unwrap();
        assert!(message.len() <= MAX_MESSAGE_BYTES + '…'.len_utf8(), "{} bytes", message.len());
    }

    #[test]
    fn a_remote_ref_is_not_fetched_but_refused_at_compile_time() {
        let remote = json!({"type": "object", "properties": {"a": {"$ref": "https://example.invalid/s.json"}}});
        assert!(compile(remote.as_object().unwrap()).is_err());
    }
}
