//! What tasks are stored in and dispatched through, built once per cold
//! start with the other dependencies, before the function's task tools are
//! known; [`TaskBackend::with_tools`] joins the two.

use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use super::{
    TaskPolicy, TaskTools, TaskWorker, Tasks,
    queue::{InProcessQueue, TaskMessage, TaskQueue},
    store::{TaskStore, memory::InMemoryTaskStore},
    worker::run_in_process,
};
use crate::{
    clock::Clock,
    quota::{CreationQuota, InMemoryQuota},
};

/// Where tasks are stored and sent, and the policy and quota they run
/// under, before the function's task tools are known:
/// [`with_tools`](Self::with_tools) gives the request side for them. Cheap
/// to clone.
#[derive(Clone)]
pub struct TaskBackend {
    store: Arc<dyn TaskStore>,
    queue: Arc<dyn TaskQueue>,
    clock: Arc<dyn Clock>,
    policy: TaskPolicy,
    quota: Arc<dyn CreationQuota>,
    /// `cargo run` only: the in-process queue's other end, handed to a
    /// worker loop the first time the tools are known.
    in_process: Option<Arc<Mutex<Option<mpsc::UnboundedReceiver<TaskMessage>>>>>,
}

impl TaskBackend {
    /// Tasks kept in `store` and sent through `queue` (to a worker function,
    /// in Lambda), under the default policy and a per-process quota.
    pub fn new(store: Arc<dyn TaskStore>, queue: Arc<dyn TaskQueue>, clock: Arc<dyn Clock>) -> Self {
        Self { store, queue, clock, policy: TaskPolicy::default(), quota: Arc::new(InMemoryQuota::default()), in_process: None }
    }

    /// Memory and a worker in this process: zero setup, and nothing
    /// survives the process (never for Lambda).
    pub fn in_process(clock: Arc<dyn Clock>) -> Self {
        Self::in_process_with_store(Arc::new(InMemoryTaskStore::default()), clock)
    }

    /// A worker in this process over `store` (the local server pointed at
    /// a table but no queue).
    pub fn in_process_with_store(store: Arc<dyn TaskStore>, clock: Arc<dyn Clock>) -> Self {
        let (queue, messages) = InProcessQueue::new();
        Self { in_process: Some(Arc::new(Mutex::new(Some(messages)))), ..Self::new(store, Arc::new(queue), clock) }
    }

    /// Runs tasks under `policy` (the deployment's, from the settings).
    pub fn with_policy(mut self, policy: TaskPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Where per-owner task counts live (the table, in Lambda).
    pub fn with_quota(mut self, quota: Arc<dyn CreationQuota>) -> Self {
        self.quota = quota;
        self
    }

    /// The request side for `tools`. With the in-process backend, the first
    /// call also starts the worker loop for them.
    pub fn with_tools(&self, tools: TaskTools) -> Tasks {
        let tasks = Tasks::new(self.store.clone(), self.queue.clone(), self.clock.clone(), tools)
            .with_policy(self.policy.clone())
            .with_quota(self.quota.clone());
        let messages = self.in_process.as_ref().and_then(|slot| slot.lock().ok()?.take());
        if let Some(messages) = messages {
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    runtime.spawn(run_in_process(TaskWorker::new(tasks.clone()), messages));
                }
                Err(_) => tracing::warn!("no Tokio runtime: in-process tasks will not run"),
            }
        }
        tasks
    }
}
