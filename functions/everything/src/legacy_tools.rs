//! The fixtures the 2025-11-25 conformance scenarios call. They are
//! written once, in the 2026-07-28 style: a tool that needs the client
//! answers `input_required`, and a 2025-era client gets the same question
//! as a request on the call's stream (the edge's back channel), its answer
//! routed to whichever instance holds the call.

use rmcp::{
    handler::server::tool::InputResponses,
    model::{CallToolResponse, CallToolResult, ContentBlock, InputRequiredResult, LoggingLevel},
    tool, tool_router,
};
use serde_json::json;

use mcp_stateless::prelude::Reporter;

use crate::{
    EverythingServer,
    mrtr_tools::{answered, elicit, requests, sample},
};

/// Asks the client the one question `request`, under `key`.
fn ask(key: &str, request: rmcp::model::InputRequest) -> CallToolResponse {
    InputRequiredResult::from_input_requests(requests([(key, request)])).into()
}

fn reply(text: String) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(text)]).into()
}

#[tool_router(router = legacy_tools, vis = "pub(crate)")]
impl EverythingServer {
    #[tool(description = "Sends three log messages at the level the client set")]
    async fn test_tool_with_logging(&self, report: Reporter) -> CallToolResult {
        for step in ["started", "working", "finished"] {
            report.log(LoggingLevel::Info, json!({"step": step})).await;
        }
        CallToolResult::success(vec![ContentBlock::text("Logged three messages.")])
    }

    #[tool(description = "Asks the client's model to answer a prompt (sampling)")]
    async fn test_sampling(&self, InputResponses(responses): InputResponses) -> CallToolResponse {
        match answered(&responses, "completion") {
            Some(answer) => reply(format!("LLM response: {}", answer["content"]["text"].as_str().unwrap_or_default())),
            None => ask("completion", sample("Test prompt for sampling")),
        }
    }

    #[tool(description = "Asks the user for a username and an email (elicitation)")]
    async fn test_elicitation(&self, InputResponses(responses): InputResponses) -> CallToolResponse {
        let form = || {
            elicit(
                "Please provide your information",
                json!({"username": {"type": "string", "description": "Your username"}, "email": {"type": "string", "format": "email"}}),
                &["username", "email"],
            )
        };
        match answered(&responses, "user") {
            Some(answer) => reply(format!("User response: action={}, content={}", answer["action"], answer["content"])),
            None => ask("user", form()),
        }
    }

    #[tool(description = "Asks with a form whose every field has a default (SEP-1034)")]
    async fn test_elicitation_sep1034_defaults(&self, InputResponses(responses): InputResponses) -> CallToolResponse {
        let form = || {
            elicit(
                "Please review your profile",
                json!({
                    "name": {"type": "string", "default": "John Doe"},
                    "age": {"type": "integer", "default": 30},
                    "score": {"type": "number", "default": 95.5},
                    "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                    "verified": {"type": "boolean", "default": true},
                }),
                &[],
            )
        };
        match answered(&responses, "profile") {
            Some(answer) => reply(format!("Elicitation completed: action={}, content={}", answer["action"], answer["content"])),
            None => ask("profile", form()),
        }
    }

    #[tool(description = "Asks with every kind of enum field (SEP-1330)")]
    async fn test_elicitation_sep1330_enums(&self, InputResponses(responses): InputResponses) -> CallToolResponse {
        let form = || {
            elicit(
                "Please choose",
                json!({
                    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                    "titledSingle": {"type": "string", "oneOf": [
                        {"const": "value1", "title": "First"}, {"const": "value2", "title": "Second"}, {"const": "value3", "title": "Third"}]},
                    "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["One", "Two", "Three"]},
                    "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                    "titledMulti": {"type": "array", "items": {"anyOf": [
                        {"const": "value1", "title": "First"}, {"const": "value2", "title": "Second"}, {"const": "value3", "title": "Third"}]}},
                }),
                &[],
            )
        };
        match answered(&responses, "choices") {
            Some(answer) => reply(format!("Elicitation completed: action={}, content={}", answer["action"], answer["content"])),
            None => ask("choices", form()),
        }
    }
}
