//! What a tool tells its caller while it works (basic/patterns/progress,
//! and `notifications/message`): progress when the request carries a
//! `progressToken`, log messages at or above the `logLevel` it asked for,
//! nothing otherwise. On a streaming transport each leaves as it is sent;
//! a buffered one delivers them with the result.
//!
//! Take it as a tool argument (`report: Reporter`) and call it as you go.
//! A client that left does not fail the tool: what cannot be delivered is
//! dropped.

// Logging is deprecated by SEP-2577 but part of revision 2026-07-28.
#![allow(deprecated)]

use rmcp::{
    ErrorData, Peer, RoleServer,
    handler::server::common::{AsRequestContext, FromContextPart},
    model::{LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken},
};
use serde_json::Value;

/// Progress and log messages for the request a tool serves, each sent only
/// if the caller asked for it (see the module's header). A tool takes it as
/// an argument:
///
/// ```
/// use mcp_stateless::prelude::Reporter;
/// use rmcp::{
///     model::{CallToolResult, ContentBlock, LoggingLevel},
///     tool, tool_router,
/// };
///
/// #[derive(Clone)]
/// struct Server;
///
/// #[tool_router(router = indexing)]
/// impl Server {
///     #[tool(description = "Indexes ten pages, saying how far it got")]
///     async fn index(&self, mut reporter: Reporter) -> CallToolResult {
///         for page in 1..=10 {
///             reporter.progress(f64::from(page), Some(10.0), format!("page {page}")).await;
///         }
///         reporter.log(LoggingLevel::Info, serde_json::json!("indexed 10 pages")).await;
///         CallToolResult::success(vec![ContentBlock::text("done")])
///     }
/// }
///
/// assert_eq!(Server::indexing().list_all()[0].name, "index");
/// ```
#[derive(Clone)]
pub struct Reporter {
    peer: Peer<RoleServer>,
    token: Option<ProgressToken>,
    level: Option<LoggingLevel>,
    /// Progress must increase with each notification (progress.mdx).
    last: Option<f64>,
}

impl Reporter {
    /// Whether the caller asked for progress.
    pub fn wants_progress(&self) -> bool {
        self.token.is_some()
    }

    /// Sends `progress` (of `total`, if known) with a human-readable
    /// message; skipped unless it is above the last one sent.
    pub async fn progress(&mut self, progress: f64, total: Option<f64>, message: impl Into<String>) {
        let Some(token) = self.token.clone() else { return };
        if self.last.is_some_and(|last| progress <= last) {
            return;
        }
        self.last = Some(progress);
        let mut param = ProgressNotificationParam::new(token, progress);
        param.total = total;
        param.message = Some(message.into());
        if let Err(error) = self.peer.notify_progress(param).await {
            tracing::debug!(%error, "progress not delivered");
        }
    }

    /// Sends a log message if the caller asked for `level` or a lower one.
    pub async fn log(&self, level: LoggingLevel, data: Value) {
        let Some(wanted) = self.level else { return };
        if rank(level) < rank(wanted) {
            return;
        }
        let param = LoggingMessageNotificationParam::new(level, data);
        if let Err(error) = self.peer.notify_logging_message(param).await {
            tracing::debug!(%error, "log message not delivered");
        }
    }
}

/// RFC 5424 severity, least severe first.
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

impl<C: AsRequestContext> FromContextPart<C> for Reporter {
    fn from_context_part(context: &mut C) -> Result<Self, ErrorData> {
        let request = context.as_request_context();
        Ok(Self { peer: request.peer.clone(), token: request.meta.get_progress_token(), level: request.meta.log_level(), last: None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn severities_order_as_rfc_5424() {
        assert!(rank(LoggingLevel::Debug) < rank(LoggingLevel::Info));
        assert!(rank(LoggingLevel::Warning) < rank(LoggingLevel::Error));
        assert!(rank(LoggingLevel::Alert) < rank(LoggingLevel::Emergency));
    }
}
