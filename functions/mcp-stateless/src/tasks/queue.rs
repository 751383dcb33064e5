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
pub struct TaskMessage {
    pub pk: String,
    pub owner: String,
}

impl TaskMessage {
    pub fn for_key(key: &ItemKey) -> Self {
        Self { pk: key.partition_key.clone(), owner: key.owner.clone() }
    }

    pub fn key(&self) -> ItemKey {
        ItemKey { partition_key: self.pk.clone(), owner: self.owner.clone(), kind: TASK_IDS.prefix }
    }
}

pub trait TaskQueue: Send + Sync {
    fn enqueue<'a>(&'a self, message: &'a TaskMessage) -> BoxFuture<'a, Result<(), StoreError>>;
}

/// `cargo run`'s queue: an unbounded channel drained by
/// [`super::worker::run_in_process`].
pub struct InProcessQueue(mpsc::UnboundedSender<TaskMessage>);

impl InProcessQueue {
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
