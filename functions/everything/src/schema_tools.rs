//! Schema fixtures: a hand-written JSON Schema 2020-12 tool (the suite checks
//! the keywords survive verbatim) and a tool with an `x-mcp-header` property.

use rmcp::{
    handler::server::{
        router::tool::{ToolRoute, ToolRouter},
        wrapper::Parameters,
    },
    model::{CallToolResult, ContentBlock, Tool},
    tool,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::EverythingServer;

#[derive(Deserialize, JsonSchema)]
pub(crate) struct RegionArgument {
    /// Region to act in; also sent as the `Mcp-Param-Region` header.
    #[schemars(extend("x-mcp-header" = "Region"))]
    #[serde(default = "no_region")]
    region: String,
}

fn no_region() -> String {
    "<none>".into()
}

fn json_schema_2020_12_tool() -> Tool {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false,
    });
    let serde_json::Value::Object(schema) = schema else { unreachable!("literal object") };
    Tool::new("json_schema_2020_12_tool", "Accepts a contact described by a JSON Schema 2020-12 input schema", schema)
}

#[rmcp::tool_router(router = header_tools)]
impl EverythingServer {
    #[tool(description = "Echoes the region it was given in the Mcp-Param-Region header")]
    async fn test_x_mcp_header(&self, Parameters(args): Parameters<RegionArgument>) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::text(format!("region: {}", args.region))])
    }
}

impl EverythingServer {
    pub(crate) fn schema_tools() -> ToolRouter<Self> {
        let raw = ToolRoute::new_dyn(json_schema_2020_12_tool(), |_ctx| {
            Box::pin(async { Ok(CallToolResult::success(vec![ContentBlock::text("contact accepted")]).into()) })
        });
        Self::header_tools().with_route(raw)
    }
}
