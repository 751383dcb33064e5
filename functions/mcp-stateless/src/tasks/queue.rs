//! The hand-off from the request that created (or resumed) a task to the
//! worker that runs it. In Lambda this is SQS, feeding a worker function;
//! for `cargo run`, a channel to a worker loop in the same process.
//!
//! Lambda freezes a function once it has answered, so work started in the
//! background after the response would be lost: the request function only
//! enqueues, and the work runs in an invocation of its own.

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::storage::{ItemKey, StoreError};

use super::record::TASK_IDS;

/// The queue message body: where the task record is, nothing else. The
/// queue is trusted (only the request function may send to it), and the
/// record carries everything the run needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskMessage {
    /// The record's partition key ([`ItemKey::partition_key`]).
    pub pk: String,
    /// The owner's binding id, which the store checks against the record.
    pub owner: String,
}

impl TaskMessage {
    /// The message for the task stored at `key`.
    pub fn for_key(key: &ItemKey) -> Self {
        Self { pk: key.partition_key.clone(), owner: key.owner.clone() }
    }

    /// Where the task's record is.
    pub fn key(&self) -> ItemKey {
        ItemKey { partition_key: self.pk.clone(), owner: self.owner.clone(), kind: TASK_IDS.prefix }
    }
}

/// The port a task is handed to a worker through: SQS in Lambda, a channel
/// to a worker loop locally.
pub trait TaskQueue: Send + Sync {
    /// Sends `message` to a worker; an error means it was not sent.
    fn enqueue<'a>(&'a self, message: &'a TaskMessage) -> BoxFuture<'a, Result<(), StoreError>>;
}

/// `cargo run`'s queue: an unbounded channel drained by
/// [`super::worker::run_in_process`].
pub struct InProcessQueue(mpsc::UnboundedSender<TaskMessage>);

impl InProcessQueue {
    /// The queue, and the end a worker loop drains.
    pub fn new() -> (Self, mpsc::UnboundedReceiver<TaskMessage>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        (Self(sender), receiver)
    }
}

impl TaskQueue for InProcessQueue {
    fn enqueue<'a>(&'a self, message: &'a TaskMessage) -> BoxFuture<'a, Result<(), StoreError>> {
        let sent = self.0.send(message.clone()).map_err(|_| StoreError::Unavailable("the in-process worker has stopped".into()));
        Box::pin(async move { sent })
    }
}
