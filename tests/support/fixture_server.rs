//! The machinery's own test server: a handle kind, a single-use
//! confirmation and a multi-round flow, written against the public API the
//! way a tool author would. The end-to-end tests of sealing, handles and
//! Lambda events call these tools, never the starter's examples, so a fork
//! can delete every example and keep its machinery tested.

use std::{borrow::Cow, time::Duration};

use mcp_stateless::{
    CallContext, Change, Dependencies, HandleKind, Handles, RequestStates, StateScope,
    protocol::elicitation::{ElicitationReply, ask_one, elicitation_reply, form_request},
};
use rmcp::{
    ErrorData, ServerHandler,
    handler::server::{
        router::tool::ToolRouter,
        tool::{InputResponses, RequestState},
        wrapper::Parameters,
    },
    model::{CallToolResponse, CallToolResult, ContentBlock, ProtocolVersion, ServerCapabilities, ServerConfig},
    tool, tool_handler, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// A list of strings behind a handle; expires after a day unused or two
/// days after it was opened; five per owner per two days.
pub const LIST: HandleKind = HandleKind {
    prefix: "lst",
    noun: "list",
    created_by: "open_list",
    idle_ttl: Duration::from_secs(24 * 3600),
    max_lifetime: Duration::from_secs(2 * 24 * 3600),
    max_data_bytes: 32 * 1024,
    max_per_owner: 5,
};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListArgument {
    pub list: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Append {
    pub list: String,
    pub entry: String,
}

fn text(message: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(message)])
}

fn entries(data: &Value) -> Vec<Value> {
    data["entries"].as_array().cloned().unwrap_or_default()
}

#[derive(Clone)]
pub struct FixtureServer {
    request_states: RequestStates,
    handles: Handles,
    tool_router: ToolRouter<Self>,
}

impl FixtureServer {
    pub fn new(deps: Dependencies) -> Self {
        Self {
            request_states: deps.request_states,
            handles: deps.handles,
            tool_router: mcp_stateless::protocol::arguments::checked(Self::fixture_tools()),
        }
    }
}

#[tool_router(router = fixture_tools)]
impl FixtureServer {
    /// The principal exactly as the edge resolved it.
    #[tool(description = "The caller's principal, as JSON")]
    async fn whoami(&self, ctx: CallContext) -> Result<CallToolResult, ErrorData> {
        Ok(text(serde_json::to_string(&ctx.principal).unwrap_or_default()))
    }

    /// Answers with the bare handle, so tests need not parse prose.
    #[tool(description = "Opens an empty list and returns its handle")]
    async fn open_list(&self, ctx: CallContext) -> Result<CallToolResult, ErrorData> {
        match self.handles.create(&ctx, &LIST, json!({"entries": []})).await {
            Ok(handle) => Ok(text(handle)),
            Err(failure) => failure.into_tool_result(&LIST),
        }
    }

    #[tool(description = "Appends an entry to a list")]
    async fn append(&self, ctx: CallContext, Parameters(args): Parameters<Append>) -> Result<CallToolResult, ErrorData> {
        let change = Change::Append { field: "entries".into(), value: json!(args.entry), max_len: 500 };
        match self.handles.apply(&ctx, &LIST, &args.list, &change).await {
            Ok(record) => Ok(text(format!("{} entries", entries(&record.data).len()))),
            Err(failure) => failure.into_tool_result(&LIST),
        }
    }

    #[tool(description = "Shows a list's entries")]
    async fn show_list(&self, ctx: CallContext, Parameters(args): Parameters<ListArgument>) -> Result<CallToolResult, ErrorData> {
        match self.handles.read(&ctx, &LIST, &args.list).await {
            Ok(record) => Ok(CallToolResult::structured(json!({"entries": entries(&record.data)}))),
            Err(failure) => failure.into_tool_result(&LIST),
        }
    }

    /// Asks for confirmation, then deletes the list. The sealed state is
    /// single use: a replayed confirmation is refused.
    #[tool(description = "Deletes a list after the user confirms")]
    async fn discard_list(
        &self,
        ctx: CallContext,
        Parameters(args): Parameters<ListArgument>,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        let bound = json!({"list": args.list});
        let scope = StateScope::tool("discard_list", &bound);
        let Some(token) = state else {
            if let Err(failure) = self.handles.read(&ctx, &LIST, &args.list).await {
                return failure.into_tool_result(&LIST).map(Into::into);
            }
            let question = form_request(
                "Discard the list?",
                json!({"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}),
            )?;
            let state = self.request_states.seal(&ctx, scope, &json!({})).await?;
            return Ok(ask_one("confirm", question, state).into());
        };
        self.request_states.open_once::<Value>(&ctx, scope, &token).await?;
        let ElicitationReply::Accepted(content) = elicitation_reply(&responses, "confirm") else {
            return Ok(text("Kept.").into());
        };
        if content.get("confirm") != Some(&json!(true)) {
            return Ok(text("Kept.").into());
        }
        match self.handles.delete(&ctx, &LIST, &args.list).await {
            Ok(record) => Ok(text(format!("Discarded {} entries.", entries(&record.data).len())).into()),
            Err(failure) => failure.into_tool_result(&LIST).map(Into::into),
        }
    }

    /// Two rounds under multi-use sealed state: asks `first`, then `second`
    /// (carrying the first answer sealed), then answers with both.
    #[tool(description = "Asks two questions, one per round")]
    async fn two_questions(
        &self,
        ctx: CallContext,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = json!({});
        let scope = StateScope::tool("two_questions", &arguments);
        let ask = |key: &str| form_request(key, json!({"type": "object", "properties": {key: {"type": "string"}}, "required": [key]}));
        let Some(token) = state else {
            let state = self.request_states.seal(&ctx, scope, &json!({})).await?;
            return Ok(ask_one("first", ask("first")?, state).into());
        };
        let sealed: Value = self.request_states.open(&ctx, scope, &token).await?;
        let key = if sealed.get("first").is_some() { "second" } else { "first" };
        let ElicitationReply::Accepted(content) = elicitation_reply(&responses, key) else {
            return Ok(text("Stopped.").into());
        };
        let answer = content.get(key).cloned().unwrap_or_default();
        match sealed.get("first") {
            None => {
                let state = self.request_states.seal(&ctx, scope, &json!({"first": answer})).await?;
                Ok(ask_one("second", ask("second")?, state).into())
            }
            Some(first) => Ok(text(format!("{}, {}", first.as_str().unwrap_or(""), answer.as_str().unwrap_or(""))).into()),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for FixtureServer {
    fn get_info(&self) -> ServerConfig {
        mcp_stateless::protocol::server_info("fixtures", "0", ServerCapabilities::builder().enable_tools().build())
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        mcp_stateless::protocol::supported_protocol_versions()
    }
}
