//! The task queue in SQS: the request function sends one message per
//! runnable task; the worker function consumes it through an event source
//! mapping (or, locally, `worker_entry::poll_queues`).
//!
//! Each message names its owner's group (`MessageGroupId`, a digest of the
//! owner): on a standard queue that makes it an SQS fair queue, so one
//! tenant's backlog does not hold up the others' tasks.

use aws_lc_rs::digest::{SHA256, digest};
use aws_sdk_sqs::Client;
use futures::future::BoxFuture;
use mcp_stateless::{
    storage::{StoreError, hex},
    tasks::queue::{TaskMessage, TaskQueue},
};

/// The SQS [`TaskQueue`]: one message per runnable task, grouped by owner
/// (see the module's header).
pub struct SqsTaskQueue {
    client: Client,
    queue_url: String,
}

impl SqsTaskQueue {
    /// Sends to the queue at `queue_url` through `client`.
    pub fn new(client: Client, queue_url: impl Into<String>) -> Self {
        Self { client, queue_url: queue_url.into() }
    }
}

impl TaskQueue for SqsTaskQueue {
    fn enqueue<'a>(&'a self, message: &'a TaskMessage) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let body = serde_json::to_string(message).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            let group = hex(&digest(&SHA256, message.owner.as_bytes()).as_ref()[..16]);
            let send = self.client.send_message().queue_url(&self.queue_url).message_body(body).message_group_id(group);
            send.send().await.map_err(|error| {
                let detail = aws_sdk_sqs::error::DisplayErrorContext(&error).to_string();
                tracing::error!(error = %detail, "SQS SendMessage failed");
                StoreError::Unavailable("queue unavailable".into())
            })?;
            Ok(())
        })
    }
}
