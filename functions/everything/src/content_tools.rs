//! Content fixtures: each returns one kind of content block, plus the
//! progress, error and stateless-stream fixtures.

use rmcp::{
    ErrorData, Peer, RoleServer,
    model::{
        CallToolResponse, CallToolResult, ContentBlock, CreateMessageRequest, CreateMessageRequestParams, InputRequest, InputRequests,
        InputRequiredResult, ProgressNotificationParam, RequestMetaObject, ResourceContents, SamplingMessage,
    },
    tool, tool_router,
};

use crate::{EverythingServer, PNG_1X1};

/// A 44-byte WAV header with no samples: silence.
const WAV_SILENCE: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEARKwAAIhYAQACABAAZGF0YQAAAAA=";
const EMBEDDED_URI: &str = "test://embedded-resource";

fn embedded_resource() -> ContentBlock {
    ContentBlock::resource(ResourceContents::TextResourceContents {
        uri: EMBEDDED_URI.into(),
        mime_type: Some("text/plain".into()),
        text: "This is an embedded resource.".into(),
        meta: None,
    })
}

#[tool_router(router = content_tools, vis = "pub(crate)")]
impl EverythingServer {
    #[tool(description = "Returns a short text")]
    async fn test_simple_text(&self) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::text("This is a simple text response for testing.")])
    }

    #[tool(description = "Returns a 1x1 PNG image")]
    async fn test_image_content(&self) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::image(PNG_1X1, "image/png")])
    }

    #[tool(description = "Returns a silent WAV clip")]
    async fn test_audio_content(&self) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::audio(WAV_SILENCE, "audio/wav")])
    }

    #[tool(description = "Returns an embedded text resource")]
    async fn test_embedded_resource(&self) -> CallToolResult {
        CallToolResult::success(vec![embedded_resource()])
    }

    #[tool(description = "Returns text, an image and an embedded resource")]
    async fn test_multiple_content_types(&self) -> CallToolResult {
        CallToolResult::success(vec![
            ContentBlock::text("Multiple content types test:"),
            ContentBlock::image(PNG_1X1, "image/png"),
            embedded_resource(),
        ])
    }

    #[tool(description = "Always fails with a tool error (isError: true)")]
    async fn test_error_handling(&self) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text("This tool intentionally returns an error for testing.")])
    }

    #[tool(description = "Reports progress 0, 50 and 100 of 100 before answering")]
    async fn test_tool_with_progress(&self, meta: RequestMetaObject, peer: Peer<RoleServer>) -> Result<CallToolResult, ErrorData> {
        if let Some(token) = meta.get_progress_token() {
            for progress in [0.0, 50.0, 100.0] {
                let mut param = ProgressNotificationParam::new(token.clone(), progress);
                param.total = Some(100.0);
                peer.notify_progress(param).await.map_err(|e| ErrorData::internal_error(format!("progress not delivered: {e}"), None))?;
            }
        }
        Ok(CallToolResult::success(vec![ContentBlock::text("Progress reported: 100/100")]))
    }

    /// Needs sampling: the edge's capability guard turns this into -32021
    /// for a client that did not declare it.
    #[tool(description = "Asks the client to sample a message; needs the sampling capability")]
    async fn test_missing_capability(&self) -> CallToolResponse {
        let mut requests = InputRequests::new();
        requests.insert(
            "sample".into(),
            InputRequest::CreateMessage(CreateMessageRequest::new(CreateMessageRequestParams::new(
                vec![SamplingMessage::user_text("Say hello")],
                50,
            ))),
        );
        InputRequiredResult::from_input_requests(requests).into()
    }

    /// A stateless server never sends requests on a response stream: input
    /// is asked for through InputRequiredResult instead.
    #[tool(description = "Answers without sending any server-to-client request on the response stream")]
    async fn test_streaming_elicitation(&self) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::text(
            "Stateless servers ask for input with InputRequiredResult, never on the response stream.",
        )])
    }

    /// No `logLevel` in `_meta` means no `notifications/message`.
    #[tool(description = "Emits log notifications only when the request asks for a log level")]
    async fn test_logging_tool(&self) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::text("Logging tool finished.")])
    }
}
