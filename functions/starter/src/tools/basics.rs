//! Stateless example tools.

use rmcp::{
    ErrorData, Json,
    handler::server::wrapper::Parameters,
    model::{CallToolResult, ContentBlock},
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use mcp_stateless::prelude::{CallContext, Principal};

use crate::Server;

#[derive(Debug, Deserialize, JsonSchema)]
struct TextArgument {
    /// The text to analyse.
    text: String,
}

/// Structured output: clients get it as `structuredContent`, checked
/// against the derived `outputSchema`.
#[derive(Debug, Serialize, JsonSchema, PartialEq)]
struct TextStats {
    characters: usize,
    words: usize,
    lines: usize,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum TemperatureUnit {
    Celsius,
    Fahrenheit,
    Kelvin,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct ConvertTemperature {
    /// The temperature to convert.
    value: f64,
    from: TemperatureUnit,
    to: TemperatureUnit,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct SlugArgument {
    /// A title, e.g. "Hello, World!".
    title: String,
    /// Longest slug to return, in characters.
    // A default rather than an `Option`: schemars writes an `Option` as
    // `"type": ["integer", "null"]`, which some model providers' function
    // formats refuse; this is a plain optional integer with `"default": 60`.
    #[serde(default = "default_slug_length")]
    #[schemars(range(min = 1))]
    max_length: usize,
}

fn default_slug_length() -> usize {
    60
}

fn to_kelvin(value: f64, unit: TemperatureUnit) -> f64 {
    match unit {
        TemperatureUnit::Celsius => value + 273.15,
        TemperatureUnit::Fahrenheit => (value - 32.0) * 5.0 / 9.0 + 273.15,
        TemperatureUnit::Kelvin => value,
    }
}

fn from_kelvin(kelvin: f64, unit: TemperatureUnit) -> f64 {
    match unit {
        TemperatureUnit::Celsius => kelvin - 273.15,
        TemperatureUnit::Fahrenheit => (kelvin - 273.15) * 9.0 / 5.0 + 32.0,
        TemperatureUnit::Kelvin => kelvin,
    }
}

pub(super) fn slugify(title: &str, max_length: usize) -> String {
    let mut slug = String::new();
    for c in title.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            slug.push(c);
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug: String = slug.trim_end_matches('-').chars().take(max_length).collect();
    slug.trim_end_matches('-').to_owned()
}

#[tool_router(router = basics, vis = "pub(crate)")]
impl Server {
    #[tool(description = "Counts the characters, words and lines of a text", annotations(read_only_hint = true))]
    async fn text_stats(&self, Parameters(args): Parameters<TextArgument>) -> Json<TextStats> {
        Json(TextStats {
            characters: args.text.chars().count(),
            words: args.text.split_whitespace().count(),
            lines: args.text.lines().count(),
        })
    }

    #[tool(description = "Converts a temperature between celsius, fahrenheit and kelvin", annotations(read_only_hint = true))]
    async fn convert_temperature(&self, Parameters(args): Parameters<ConvertTemperature>) -> Result<CallToolResult, ErrorData> {
        let kelvin = to_kelvin(args.value, args.from);
        if !kelvin.is_finite() || kelvin < 0.0 {
            // A tool error, not a protocol error: the model can correct itself.
            return Ok(CallToolResult::error(vec![ContentBlock::text("That temperature is below absolute zero.")]));
        }
        let converted = from_kelvin(kelvin, args.to);
        Ok(CallToolResult::success(vec![ContentBlock::text(format!("{converted:.2}"))]))
    }

    /// A connectivity check; also the tool the shared benchmark calls.
    #[tool(description = "Echoes the text back, prefixed with \"echo: \"", annotations(read_only_hint = true))]
    async fn echo(&self, Parameters(args): Parameters<TextArgument>) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::text(format!("echo: {}", args.text))])
    }

    /// Handy after deploying: shows who the authorizer says is calling.
    #[tool(
        description = "Tells who the server believes is calling: the verified issuer and subject, or anonymous",
        annotations(read_only_hint = true)
    )]
    async fn whoami(&self, ctx: CallContext) -> CallToolResult {
        let caller = match ctx.principal {
            Principal::Anonymous => "anonymous".to_owned(),
            Principal::Verified { issuer, subject } => format!("subject {subject} from issuer {issuer}"),
        };
        CallToolResult::success(vec![ContentBlock::text(caller)])
    }

    #[tool(description = "Turns a title into a URL slug (lowercase, hyphen-separated)", annotations(read_only_hint = true))]
    async fn slugify(&self, Parameters(args): Parameters<SlugArgument>) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::text(slugify(&args.title, args.max_length))])
    }
}

#[cfg(test)]
mod tests {
    use e2e::{post, request};
    use serde_json::json;

    use super::*;
    use crate::testing::serve;

    #[test]
    fn slugs_collapse_punctuation_and_respect_the_limit() {
        assert_eq!(slugify("Hello, World!", 60), "hello-world");
        assert_eq!(slugify("  Many   spaces  ", 60), "many-spaces");
        assert_eq!(slugify("abc def", 4), "abc");
    }

    #[tokio::test]
    async fn slugify_takes_an_optional_length_with_a_portable_schema() {
        let addr = serve().await;
        let list = post(addr, &request(1, "tools/list", json!({}), json!({}))).await.json();
        let tool = list["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "slugify").unwrap().clone();
        let length = &tool["inputSchema"]["properties"]["max_length"];
        // One type, not ["integer", "null"], and not required.
        assert_eq!(length["type"], "integer");
        assert_eq!(length["default"], 60);
        assert_eq!(tool["inputSchema"]["required"], json!(["title"]));

        let long = "word ".repeat(20);
        let call = |id, arguments| request(id, "tools/call", json!({"name": "slugify", "arguments": arguments}), json!({}));
        let default = post(addr, &call(2, json!({"title": long}))).await.json();
        assert_eq!(default["result"]["content"][0]["text"].as_str().unwrap().len(), 59, "60 characters, less the trailing hyphen");
        let short = post(addr, &call(3, json!({"title": long, "max_length": 9}))).await.json();
        assert_eq!(short["result"]["content"][0]["text"], "word-word");
    }

    #[test]
    fn temperatures_round_trip_through_kelvin() {
        let k = to_kelvin(100.0, TemperatureUnit::Celsius);
        assert!((from_kelvin(k, TemperatureUnit::Fahrenheit) - 212.0).abs() < 1e-9);
    }

    #[tokio::test]
    async fn text_stats_returns_structured_content_matching_its_output_schema() {
        let addr = serve().await;
        let list = post(addr, &request(1, "tools/list", json!({}), json!({}))).await.json();
        let tool = list["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "text_stats").unwrap().clone();
        assert_eq!(tool["inputSchema"]["properties"]["text"]["type"], "string");
        assert!(tool["outputSchema"]["properties"]["words"].is_object());

        let call = request(2, "tools/call", json!({"name": "text_stats", "arguments": {"text": "one two\nthree"}}), json!({}));
        let result = post(addr, &call).await.json()["result"].clone();
        assert_eq!(result["structuredContent"], json!({"characters": 13, "words": 3, "lines": 2}));
    }

    #[tokio::test]
    async fn bad_arguments_and_impossible_inputs_are_tool_errors() {
        let addr = serve().await;
        let missing = request(1, "tools/call", json!({"name": "convert_temperature", "arguments": {"value": 1}}), json!({}));
        // server/tools: input validation failures are tool execution errors, so
        // the model sees them and can correct its call.
        let result = post(addr, &missing).await.json()["result"].clone();
        assert_eq!(result["isError"], true);
        assert!(result["content"][0]["text"].as_str().unwrap().contains("from"));

        let below_zero = request(
            2,
            "tools/call",
            json!({"name": "convert_temperature", "arguments": {"value": -500, "from": "celsius", "to": "kelvin"}}),
            json!({}),
        );
        let result = post(addr, &below_zero).await.json()["result"].clone();
        assert_eq!(result["isError"], true);

        let boiling = request(
            3,
            "tools/call",
            json!({"name": "convert_temperature", "arguments": {"value": 100, "from": "celsius", "to": "fahrenheit"}}),
            json!({}),
        );
        assert_eq!(post(addr, &boiling).await.json()["result"]["content"][0]["text"], "212.00");
    }

    #[tokio::test]
    async fn unknown_tool_is_an_error_not_a_panic() {
        let addr = serve().await;
        let reply = post(addr, &request(1, "tools/call", json!({"name": "nope"}), json!({}))).await;
        assert_eq!(reply.json()["error"]["code"], -32602);
    }

    #[tokio::test]
    async fn echo_answers_with_its_text() {
        let addr = serve().await;
        let call = request(1, "tools/call", json!({"name": "echo", "arguments": {"text": "hello"}}), json!({}));
        assert_eq!(post(addr, &call).await.json()["result"]["content"][0]["text"], "echo: hello");
    }

    #[tokio::test]
    async fn whoami_names_the_development_principal() {
        let addr = serve().await;
        let reply = e2e::call_tool(addr, "alice", "whoami", json!({}), json!({}), json!({})).await;
        assert_eq!(e2e::text_of(&reply), "subject alice from issuer local-dev");
    }
}
