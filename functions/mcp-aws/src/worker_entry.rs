//! The worker function's entry point: SQS events from the event source
//! mapping in Lambda (partial batch responses: only the messages to retry
//! are reported), or the same handling fed by polling the queues locally.
//!
//! The event types are the few fields read here, not `aws_lambda_events`:
//! its `sqs` feature pulls in `serde_with` and two `jiff` versions, a
//! compile-time cost out of proportion to five fields.

use std::{collections::HashMap, time::Duration};

use aws_sdk_sqs::{Client, types::MessageSystemAttributeName};
use mcp_stateless::{
    deadline::Deadline,
    tasks::{Disposition, TaskWorker, queue::TaskMessage, timings::retry_delay},
};
use serde::{Deserialize, Serialize};

use crate::CallLimits;

/// An SQS event as Lambda's event source mapping delivers it, read only as
/// far as the worker needs.
#[derive(Debug, Default, Deserialize)]
#[non_exhaustive]
pub struct SqsEvent {
    /// The messages delivered in this invocation.
    #[serde(rename = "Records", default)]
    pub records: Vec<SqsRecord>,
}

/// One delivered message.
#[derive(Debug, Deserialize)]
#[non_exhaustive]
pub struct SqsRecord {
    /// SQS's id for the message, which a [`BatchItemFailure`] names.
    #[serde(rename = "messageId")]
    pub message_id: String,
    /// What a change of the message's visibility (its retry delay) names.
    #[serde(rename = "receiptHandle", default)]
    pub receipt_handle: String,
    /// The [`TaskMessage`], as JSON.
    #[serde(default)]
    pub body: String,
    /// The system attributes; `ApproximateReceiveCount` paces the retries
    /// and is reported when a task is failed from the dead-letter queue.
    #[serde(default)]
    pub attributes: HashMap<String, String>,
    /// The queue it came from: the dead-letter queue's ARN marks a message
    /// SQS gave up on.
    #[serde(rename = "eventSourceARN", default)]
    pub event_source_arn: String,
}

/// `{"batchItemFailures": [{"itemIdentifier": id}]}`: the messages SQS
/// should deliver again; the others are deleted.
#[derive(Debug, Default, Serialize, PartialEq, Eq)]
#[allow(
    clippy::exhaustive_structs,
    reason = "the shape Lambda's SQS batch response has on the wire, fixed by AWS; the tests compare it as a value"
)]
pub struct SqsBatchResponse {
    /// The messages to deliver again.
    #[serde(rename = "batchItemFailures")]
    pub batch_item_failures: Vec<BatchItemFailure>,
}

/// One message SQS should deliver again.
#[derive(Debug, Serialize, PartialEq, Eq)]
#[allow(
    clippy::exhaustive_structs,
    reason = "the shape Lambda's SQS batch response has on the wire, fixed by AWS; the tests compare it as a value"
)]
pub struct BatchItemFailure {
    /// Its [`SqsRecord::message_id`].
    #[serde(rename = "itemIdentifier")]
    pub item_identifier: String,
}

/// Which queue a message came from decides what it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// Run the task.
    TaskQueue,
    /// SQS gave up on it: end the task `failed`.
    DeadLetterQueue,
}

/// One message, whatever delivered it, to be done by `deadline` if there
/// is one. An unreadable body is dropped: retrying it cannot help, and it
/// names no task to fail.
pub async fn handle_message(worker: &TaskWorker, source: Source, body: &str, receives: u32, deadline: Option<Deadline>) -> Disposition {
    let Ok(message) = serde_json::from_str::<TaskMessage>(body) else {
        tracing::error!(bytes = body.len(), "unreadable task message dropped");
        return Disposition::Done;
    };
    match source {
        Source::TaskQueue => worker.process_until(&message, deadline).await,
        Source::DeadLetterQueue => worker.dead_letter(&message, receives).await,
    }
}

fn receives(attributes: &HashMap<String, String>) -> u32 {
    attributes.get("ApproximateReceiveCount").and_then(|count| count.parse().ok()).unwrap_or(1)
}

/// Where a message to retry is put back, and after how long: a run that
/// failed without an outcome is retried after [`retry_delay`], not after
/// the queue's visibility timeout (six worker timeouts).
#[derive(Clone)]
#[non_exhaustive]
pub struct Retries {
    /// The SQS client the delay is set through.
    pub client: Client,
    /// The task queue the retried messages came from.
    pub queue_url: String,
}

impl Retries {
    async fn delay(&self, receipt: &str, receives: u32) {
        let delay = retry_delay(receives).as_secs() as i32;
        let changed = self
            .client
            .change_message_visibility()
            .queue_url(&self.queue_url)
            .receipt_handle(receipt)
            .visibility_timeout(delay)
            .send()
            .await;
        if let Err(error) = changed {
            // It comes back after the visibility timeout instead.
            tracing::warn!(error = %aws_sdk_sqs::error::DisplayErrorContext(&error), "ChangeMessageVisibility failed");
        }
    }
}

/// A Lambda SQS event: each record in turn (the template sets batch size
/// 1), within the invocation's `deadline`.
pub async fn handle_sqs_event(
    worker: &TaskWorker,
    event: SqsEvent,
    dead_letter_arn: Option<&str>,
    retries: Option<&Retries>,
    deadline: Option<Deadline>,
) -> SqsBatchResponse {
    let mut response = SqsBatchResponse::default();
    for record in event.records {
        let source = if dead_letter_arn == Some(record.event_source_arn.as_str()) { Source::DeadLetterQueue } else { Source::TaskQueue };
        let count = receives(&record.attributes);
        if handle_message(worker, source, &record.body, count, deadline).await == Disposition::Retry {
            if let (Source::TaskQueue, Some(retries)) = (source, retries) {
                retries.delay(&record.receipt_handle, count).await;
            }
            response.batch_item_failures.push(BatchItemFailure { item_identifier: record.message_id });
        }
    }
    response
}

/// Serves the worker Lambda's SQS events until the runtime stops.
pub(crate) async fn serve_lambda(worker: TaskWorker, dead_letter_arn: Option<String>, retries: Retries) -> Result<(), lambda_http::Error> {
    let dead_letter_arn = dead_letter_arn.as_deref();
    let retries = &retries;
    lambda_http::lambda_runtime::run(lambda_http::service_fn(|event: lambda_http::LambdaEvent<SqsEvent>| {
        let worker = worker.clone();
        let deadline = Deadline::from_epoch_ms(event.context.deadline);
        async move {
            Ok::<_, std::convert::Infallible>(handle_sqs_event(&worker, event.payload, dead_letter_arn, Some(retries), deadline).await)
        }
    }))
    .await
}

/// The local worker process: long-polls the task queue (and the
/// dead-letter queue, when given) as the event source mapping would, runs
/// each message in its own Tokio task, deletes what is done and leaves
/// what should be retried for the visibility timeout to bring back.
///
/// Unlike Lambda (whose queue's visibility timeout outlasts the function's
/// timeout), a local run has no time limit: each message is received
/// invisible for a hold (its renewal interval plus two of `limits`'
/// operation timeouts) and pushed back while it runs, whatever the
/// queue's own timeout. Received with the queue's timeout
/// instead, a run longer than it would be delivered again mid-run; the copy
/// would find the task leased and be deleted, and a retry the run then
/// asked for would be lost with it. A killed worker's task does not wait
/// for its message: its lease lapses and the next `tasks/get` sends it
/// again.
pub async fn poll_queues(worker: TaskWorker, client: Client, queue_url: String, dead_letter_url: Option<String>, limits: &CallLimits) {
    let hold = visibility_hold(limits);
    let tasks = poll(worker.clone(), client.clone(), queue_url, Source::TaskQueue, hold);
    match dead_letter_url {
        Some(url) => {
            tokio::join!(tasks, poll(worker, client, url, Source::DeadLetterQueue, hold));
        }
        None => tasks.await,
    }
}

async fn poll(worker: TaskWorker, client: Client, queue_url: String, source: Source, hold: Duration) {
    tracing::info!(queue = %queue_url, ?source, "polling");
    loop {
        let received = client
            .receive_message()
            .queue_url(&queue_url)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .visibility_timeout(hold.as_secs() as i32)
            .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
            .send()
            .await;
        let messages = match received {
            Ok(output) => output.messages.unwrap_or_default(),
            Err(error) => {
                tracing::warn!(error = %aws_sdk_sqs::error::DisplayErrorContext(&error), "ReceiveMessage failed");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        for message in messages {
            let (worker, client, queue_url) = (worker.clone(), client.clone(), queue_url.clone());
            tokio::spawn(async move {
                let count = message
                    .attributes
                    .as_ref()
                    .and_then(|a| a.get(&MessageSystemAttributeName::ApproximateReceiveCount))
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(1);
                let body = message.body.unwrap_or_default();
                let receipt = message.receipt_handle.unwrap_or_default();
                let disposition = tokio::select! {
                    disposition = handle_message(&worker, source, &body, count, None) => disposition,
                    never = keep_invisible(&client, &queue_url, &receipt, hold) => match never {},
                };
                if disposition == Disposition::Retry {
                    if source == Source::TaskQueue {
                        Retries { client, queue_url }.delay(&receipt, count).await;
                    }
                } else if let Err(error) = client.delete_message().queue_url(&queue_url).receipt_handle(receipt).send().await {
                    tracing::warn!(error = %aws_sdk_sqs::error::DisplayErrorContext(&error), "DeleteMessage failed");
                }
            });
        }
    }
}

/// How often a running message's visibility is pushed back.
const VISIBILITY_RENEWAL: Duration = Duration::from_secs(3);

/// How long a message stays invisible from its receipt or a renewal: past
/// the next renewal's landing even when one renewal failed after its whole
/// operation timeout (30 s against the local emulator) and the next takes
/// as long.
fn visibility_hold(limits: &CallLimits) -> Duration {
    VISIBILITY_RENEWAL + limits.operation * 2
}

async fn keep_invisible(client: &Client, queue_url: &str, receipt: &str, hold: Duration) -> std::convert::Infallible {
    loop {
        tokio::time::sleep(VISIBILITY_RENEWAL).await;
        let extended = client
            .change_message_visibility()
            .queue_url(queue_url)
            .receipt_handle(receipt)
            .visibility_timeout(hold.as_secs() as i32)
            .send()
            .await;
        if let Err(error) = extended {
            tracing::warn!(error = %aws_sdk_sqs::error::DisplayErrorContext(&error), "ChangeMessageVisibility failed");
        }
    }
}
