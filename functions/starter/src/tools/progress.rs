//! Example: a tool that reports progress while it works.
//!
//! Take a [`Reporter`] argument and call it as you go. The client sees
//! each notification as it is sent when the transport streams (the local
//! server; `Transport=streaming` in the template), and all of them with
//! the result when it is buffered. Nothing is sent unless the request
//! asked: progress needs `_meta.progressToken`, log messages
//! `_meta["io.modelcontextprotocol/logLevel"]`.
//!
//! A call must still end before the function's timeout: work that takes
//! longer belongs in a task (see `report.rs`).

// Log levels are deprecated by SEP-2577 but part of revision 2026-07-28.
#![allow(deprecated)]

use std::time::Duration;

use mcp_stateless::prelude::Reporter;
use rmcp::{
    handler::server::wrapper::Parameters,
    model::{CallToolResult, ContentBlock, LoggingLevel},
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::Server;

/// How long each page takes, standing in for real work.
const PAGE_TIME: Duration = Duration::from_millis(300);

#[derive(Debug, Deserialize, JsonSchema)]
struct IndexPages {
    /// How many pages to index (1-20).
    #[schemars(range(min = 1, max = 20))]
    pages: u32,
}

#[tool_router(router = progress_tools, vis = "pub(crate)")]
impl Server {
    #[tool(description = "Indexes a number of pages, reporting progress after each one")]
    async fn index_pages(&self, Parameters(IndexPages { pages }): Parameters<IndexPages>, mut report: Reporter) -> CallToolResult {
        for page in 1..=pages {
            tokio::time::sleep(PAGE_TIME).await;
            report.progress(f64::from(page), Some(f64::from(pages)), format!("Indexed page {page} of {pages}")).await;
        }
        report.log(LoggingLevel::Info, json!({"indexed": pages})).await;
        CallToolResult::success(vec![ContentBlock::text(format!("Indexed {pages} pages."))])
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// Progress frames arrive one page apart, before the result.
    #[tokio::test]
    async fn progress_arrives_while_the_tool_still_works() {
        let addr = crate::testing::serve().await;
        let frames = e2e::stream_call(addr, "index_pages", json!({"pages": 3}), json!({"progressToken": "t"})).await;
        let progress: Vec<_> = frames.iter().filter(|(_, m)| m["method"] == "notifications/progress").collect();
        assert_eq!(progress.len(), 3, "{frames:?}");
        let (last_at, last) = frames.last().unwrap();
        assert_eq!(last["result"]["content"][0]["text"], "Indexed 3 pages.");
        // Each frame left when it was sent: the first progress came a page
        // (or more) before the answer, not with it.
        assert!(*last_at > progress[0].0, "{frames:?}");
        assert!(last_at.duration_since(progress[0].0) >= super::PAGE_TIME * 2, "{frames:?}");
    }
}
