//! A task tool's call, followed for a 2025-era client: such a client
//! cannot poll a task, so the call's stream does it on its behalf,
//! through the same handler a modern client's `tasks/get` reaches. The
//! task itself is as durable as any other (in the table, run by the
//! worker); a status message becomes a progress notification when the
//! call asked for progress, a task that needs input asks the client on
//! the stream and is answered with `tasks/update`, and the task's outcome
//! is the call's answer. A task still running at the stream's bound is
//! reported as such, with its id, and runs on.

use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::{SinkExt, channel::mpsc};
use serde_json::{Map, Value, json};

use super::{Conversation, MAX_ROUNDS};
use crate::edge::legacy::inbound::header_value;
use crate::edge::{
    error::{Refusal, code},
    sse,
    stream::Rewrite,
};

/// The shortest and longest pause between two polls, whatever the task's
/// `pollIntervalMs` says.
const MIN_POLL: Duration = Duration::from_millis(100);
const MAX_POLL: Duration = Duration::from_secs(2);

impl Conversation {
    /// Polls task `task_id` to its outcome: the call's final message, or
    /// none when the client left.
    pub(super) async fn follow(&mut self, task_id: &str, tx: &mut mpsc::Sender<Bytes>) -> Option<Value> {
        let token = self.template.params().get("_meta").and_then(|meta| meta.get("progressToken")).cloned();
        let mut reported: Option<String> = None;
        let mut progress = 0u64;
        let mut rounds = 0;
        let mut quiet_since = Instant::now();
        loop {
            let polled = self.task_call("tasks/get", task_id, json!({"taskId": task_id}), tx).await?;
            let Some(task) = polled.get("result") else { return Some(polled) };
            let pause =
                task.get("pollIntervalMs").and_then(Value::as_u64).map_or(MIN_POLL, Duration::from_millis).clamp(MIN_POLL, MAX_POLL);
            match task.get("status").and_then(Value::as_str) {
                Some("completed") => {
                    return Some(
                        json!({"jsonrpc": "2.0", "id": self.request_id, "result": task.get("result").cloned().unwrap_or_default()}),
                    );
                }
                Some("failed") => {
                    let error = task.get("error").cloned().unwrap_or_else(|| Refusal::new(code::INTERNAL_ERROR, "the task failed").error());
                    return Some(json!({"jsonrpc": "2.0", "id": self.request_id, "error": error}));
                }
                Some("cancelled") => return Some(self.error(format!("task {task_id} was cancelled"))),
                Some("input_required") => {
                    rounds += 1;
                    if rounds > MAX_ROUNDS {
                        return Some(self.error(format!("task {task_id} asked for input more than {MAX_ROUNDS} times")));
                    }
                    let requests = task.get("inputRequests").and_then(Value::as_object).cloned().unwrap_or_default();
                    let answers = match self.ask(&requests, tx).await {
                        Ok(answers) => answers?,
                        Err(error) => return Some(error),
                    };
                    let updated =
                        self.task_call("tasks/update", task_id, json!({"taskId": task_id, "inputResponses": answers}), tx).await?;
                    if updated.get("error").is_some() {
                        return Some(updated);
                    }
                    continue;
                }
                _ => {
                    let message = task.get("statusMessage").and_then(Value::as_str);
                    if let (Some(token), Some(message)) = (&token, message)
                        && reported.as_deref() != Some(message)
                    {
                        progress += 1;
                        reported = Some(message.to_owned());
                        let mut notification = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                            "params": {"progressToken": token, "progress": progress, "message": message}});
                        self.finish.message(&mut notification);
                        tx.send(Bytes::from(sse::encode(&notification))).await.ok()?;
                        quiet_since = Instant::now();
                    }
                }
            }
            if Instant::now() + pause + Duration::from_secs(1) >= self.cut {
                return Some(self.error(format!(
                    "task {task_id} is still running at the end of this stream's time; it goes on, and its outcome is kept \
                     until it expires, but a 2025-era client cannot fetch it: use a client that speaks MCP 2026-07-28"
                )));
            }
            if quiet_since.elapsed() >= self.keep_alive {
                // Proxies drop idle streams; a comment is no message.
                tx.send(Bytes::from_static(sse::KEEP_ALIVE.as_bytes())).await.ok()?;
                quiet_since = Instant::now();
            }
            tokio::time::sleep(pause).await;
        }
    }

    /// `method` on the task, as the client would send it: the call's own
    /// `_meta`, `Mcp-Name` the task id.
    async fn task_call(&mut self, method: &'static str, task_id: &str, mut params: Value, tx: &mut mpsc::Sender<Bytes>) -> Option<Value> {
        let meta = self.template.params().get("_meta").cloned().unwrap_or_else(|| json!({}));
        params["_meta"] = meta;
        let mut message = Map::new();
        message.insert("jsonrpc".into(), json!("2.0"));
        message.insert("id".into(), self.request_id.clone());
        message.insert("method".into(), json!(method));
        message.insert("params".into(), params);
        let name = header_value(task_id).map(|value| value.to_str().unwrap_or_default().to_owned()).unwrap_or_default();
        let request = self.template.request_with(&message, &[("mcp-method", method.to_owned()), ("mcp-name", name)]);
        let response = (self.handler)(request).await;
        self.relay(response, tx).await
    }
}
