//! The worker: one queue message in, one run of the task's function, its
//! outcome written. What a queue does to it is designed for:
//! - a message delivered twice: the second finds the task leased by the
//!   first (or finished) and does nothing; only one outcome is written;
//! - a worker that dies mid-run (a crash, a panic that aborts the process):
//!   its lease lapses, the next `tasks/get` sends the task again, and the
//!   next worker takes it over; after `max_attempts` runs that ended
//!   without an outcome the task is failed instead of run again;
//! - a run that fails without dying (a store outage, a panic that unwinds):
//!   the lease is given up and the message left for redelivery (the entry
//!   point sets a short delay on it) until the queue moves it to the
//!   dead-letter queue, whose handler ([`TaskWorker::dead_letter`]) ends
//!   the task `failed` if no worker holds it;
//! - a cancel: the task is already `cancelled` in the store; the heartbeat
//!   sees it within one beat and signals the function, which is dropped if
//!   it does not stop within [`CANCEL_GRACE`].

use std::{collections::BTreeMap, time::Duration};

use rmcp::model::{ErrorCode, ErrorData, InputRequest, JsonObject, TaskStatus};
use serde_json::{Map, Value};
use tokio::{sync::mpsc, time::Instant};

use super::{
    queue::TaskMessage,
    record::{Lease, TaskRecord},
    service::{Tasks, out_of_attempts},
    store::Decision,
    tool::{TaskRun, TaskStep},
};
use crate::deadline::Deadline;
use crate::{
    protocol::capability_guard::missing_capabilities,
    random,
    storage::ItemKey,
    storage::{StoreError, hex},
};

/// How long a cancelled function may take to return before it is dropped.
pub const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// What to tell the queue about a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Disposition {
    /// Delete it: the task has an outcome, or needs nothing from this message.
    Done,
    /// Leave it: it comes back after the entry point's retry delay (or the
    /// visibility timeout, if setting the delay failed).
    Retry,
}

/// How the function's run ended.
enum RunEnd {
    Step(Result<TaskStep, ErrorData>),
    /// The task was cancelled (or vanished) and the function was dropped.
    Stopped,
    Panicked,
    /// The invocation's deadline came first; the function was dropped.
    OutOfTime,
}

/// The worker side of [`Tasks`]: a queue message in, one run of its task's
/// function, the outcome written (see the module's header). Cheap to clone.
#[derive(Clone)]
pub struct TaskWorker {
    tasks: Tasks,
}

impl TaskWorker {
    /// Runs the task tools `tasks` was built with: the same list as the
    /// request function's.
    pub fn new(tasks: Tasks) -> Self {
        Self { tasks }
    }

    /// Runs the task a message points at, if it is runnable and not leased
    /// by another worker.
    pub async fn process(&self, message: &TaskMessage) -> Disposition {
        self.process_until(message, None).await
    }

    /// As [`Self::process`], within a deadline (a Lambda invocation's): a
    /// run that would overrun it is stopped and its task failed, rather than
    /// killed with the sandbox and redelivered to fail the same way again.
    pub async fn process_until(&self, message: &TaskMessage, deadline: Option<Deadline>) -> Disposition {
        let key = message.key();
        let holder = hex(&random::bytes::<8>());
        let record = match self.claim(&key, &holder).await {
            Ok(Some(record)) => record,
            Ok(None) => return Disposition::Done,
            Err(error) => {
                tracing::error!(%error, "could not claim a task");
                return Disposition::Retry;
            }
        };
        let input = match self.tasks.store.input(&key).await {
            Ok(Some(input)) => input,
            Ok(None) => {
                let error = ErrorData::internal_error("The task's input is missing.", None);
                return self.settle(&key, &holder, &Map::new(), RunEnd::Step(Err(error))).await;
            }
            Err(error) => {
                tracing::error!(%error, "could not read a task's input");
                self.release(&key, &holder).await;
                return Disposition::Retry;
            }
        };
        let Some(tool) = self.tasks.tools.get(&input.tool).cloned() else {
            // A deployment whose worker lacks a tool its server has.
            let message = format!("This worker has no task tool named {}.", input.tool);
            let error = ErrorData::internal_error(message, None);
            return self.settle(&key, &holder, &input.client_capabilities, RunEnd::Step(Err(error))).await;
        };
        let (run, status, cancel) = TaskRun::new(
            Some(record.task_id.clone()),
            record.attempts,
            input.call_context(),
            record.input_responses.clone(),
            record.continuation.clone(),
        );
        tracing::info!(task = %record.task_id, tool = %input.tool, attempt = record.attempts, "task run started");
        let function = tokio::spawn((tool.run)(input.arguments.clone(), run));
        let end = self.watch(&key, &holder, function, status, cancel, deadline).await;
        self.settle(&key, &holder, &input.client_capabilities, end).await
    }

    /// Takes the lease on a runnable task. `None`: nothing to run here. A
    /// task whose earlier runs all ended unfinished is failed instead.
    async fn claim(&self, key: &ItemKey, holder: &str) -> Result<Option<TaskRecord>, StoreError> {
        let now_ms = self.tasks.clock.now_ms();
        let lease = self.tasks.policy.lease.as_millis() as u64;
        let max_attempts = self.tasks.policy.max_attempts;
        let record = self
            .tasks
            .transition(key, |record| {
                let leased_elsewhere = record.lease.as_ref().is_some_and(|l| l.holder != holder && l.until_ms > now_ms);
                // Ours already: an attempt whose write landed before a conflict
                // made the loop read again; counting it again would be wrong.
                if record.status != TaskStatus::Working || leased_elsewhere || holds(record, holder) {
                    return Decision::Keep;
                }
                if record.unfinished_runs >= max_attempts {
                    record.fail(ErrorCode::INTERNAL_ERROR.0, &out_of_attempts(record.unfinished_runs));
                    return Decision::Write;
                }
                record.lease = Some(Lease { holder: holder.to_owned(), until_ms: now_ms + lease });
                record.attempts += 1;
                record.unfinished_runs += 1;
                record.runnable_since_ms = None;
                Decision::Write
            })
            .await?;
        Ok(record.filter(|record| holds(record, holder) && record.status == TaskStatus::Working))
    }

    /// Beats until the function ends: stores its latest status message,
    /// renews the lease, and stops the function if the task was cancelled.
    async fn watch(
        &self,
        key: &ItemKey,
        holder: &str,
        mut function: tokio::task::JoinHandle<Result<TaskStep, ErrorData>>,
        mut status: tokio::sync::watch::Receiver<Option<String>>,
        cancel: tokio::sync::watch::Sender<bool>,
        deadline: Option<Deadline>,
    ) -> RunEnd {
        let policy = &self.tasks.policy;
        let mut beat = tokio::time::interval(policy.heartbeat);
        beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut stop_by: Option<Instant> = None;
        // The deadline less the time storing the outcome takes; a heartbeat
        // still under way then is cut short too.
        let out_of_time_at = deadline.map(|deadline| deadline.cut(policy.deadline_margin));
        let out_of_time = tokio::time::sleep_until(out_of_time_at.unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400 * 365)));
        tokio::pin!(out_of_time);
        loop {
            tokio::select! {
                joined = &mut function => {
                    return match joined {
                        Ok(step) => RunEnd::Step(step),
                        Err(error) if error.is_panic() => RunEnd::Panicked,
                        Err(_) => RunEnd::Stopped,
                    };
                }
                _ = &mut out_of_time, if out_of_time_at.is_some() => {
                    function.abort();
                    return RunEnd::OutOfTime;
                }
                _ = beat.tick() => {}
            }
            if stop_by.is_some_and(|deadline| Instant::now() >= deadline) {
                function.abort();
                return RunEnd::Stopped;
            }
            let message = status.has_changed().unwrap_or(false).then(|| status.borrow_and_update().clone()).flatten();
            let beaten = tokio::select! {
                beaten = self.beat(key, holder, message) => beaten,
                _ = &mut out_of_time, if out_of_time_at.is_some() => {
                    function.abort();
                    return RunEnd::OutOfTime;
                }
            };
            match beaten {
                Ok(true) => {}
                Ok(false) if stop_by.is_none() => {
                    tracing::info!("task cancelled or gone: stopping its function");
                    cancel.send_replace(true);
                    stop_by = Some(Instant::now() + CANCEL_GRACE);
                }
                Ok(false) => {}
                // A store hiccup: keep running; the next beat tries again.
                Err(error) => tracing::warn!(%error, "task heartbeat failed"),
            }
        }
    }

    /// One heartbeat. `false` when this worker should stop: the task is
    /// terminal (cancelled), expired, or leased to somebody else.
    async fn beat(&self, key: &ItemKey, holder: &str, message: Option<String>) -> Result<bool, StoreError> {
        let now_ms = self.tasks.clock.now_ms();
        let lease = self.tasks.policy.lease.as_millis() as u64;
        let record = self
            .tasks
            .transition(key, |record| {
                if record.is_terminal() || !holds(record, holder) {
                    return Decision::Keep;
                }
                let renew = record.lease.as_ref().is_some_and(|l| l.until_ms < now_ms + lease * 2 / 3);
                if message.is_none() && !renew {
                    return Decision::Keep;
                }
                if let Some(message) = &message {
                    record.status_message = Some(message.clone());
                }
                record.lease = Some(Lease { holder: holder.to_owned(), until_ms: now_ms + lease });
                Decision::Write
            })
            .await?;
        Ok(record.is_some_and(|record| !record.is_terminal() && holds(&record, holder)))
    }

    /// Writes the run's outcome, if this worker still holds the task.
    /// `capabilities`: what the creating client declared (input it cannot
    /// give fails the task).
    async fn settle(&self, key: &ItemKey, holder: &str, capabilities: &Map<String, Value>, end: RunEnd) -> Disposition {
        let step = match end {
            RunEnd::Step(step) => step,
            RunEnd::OutOfTime => {
                let message = "The task did not finish within the worker's time limit.";
                Err(ErrorData::internal_error(message, None))
            }
            RunEnd::Stopped => return Disposition::Done,
            RunEnd::Panicked => {
                tracing::error!("task function panicked; leaving the message for a retry");
                self.release(key, holder).await;
                return Disposition::Retry;
            }
        };
        let written = self.tasks.transition(key, |record| {
            if record.is_terminal() || !holds(record, holder) {
                return Decision::Keep;
            }
            apply(record, capabilities, &step);
            Decision::Write
        });
        done_or_retry(written.await, "could not store a task's outcome")
    }

    /// Gives the lease up so a retry need not wait for it to lapse.
    async fn release(&self, key: &ItemKey, holder: &str) {
        let now_ms = self.tasks.clock.now_ms();
        let released = self
            .tasks
            .transition(key, |record| {
                if !holds(record, holder) {
                    return Decision::Keep;
                }
                record.lease = None;
                // Runnable again: if its message does not come back, a poll
                // after the start deadline sends it again.
                record.runnable_since_ms = Some(now_ms);
                Decision::Write
            })
            .await;
        if let Err(error) = released {
            tracing::warn!(%error, "could not release a task lease");
        }
    }

    /// A message the queue gave up on (`receives` deliveries): the task
    /// ends `failed`, unless it already ended, waits for input, a worker
    /// holds it (a live lease: it is running), or no run of it has ended
    /// unfinished since it last made progress. The queue only
    /// takes messages the task queue redrove (its policy), and this check
    /// keeps a message that names a healthy task from ending it anyway.
    pub async fn dead_letter(&self, message: &TaskMessage, receives: u32) -> Disposition {
        let text = out_of_attempts(receives);
        let key = message.key();
        let now_ms = self.tasks.clock.now_ms();
        let failed = self.tasks.transition(&key, |record| {
            let running = record.lease.as_ref().is_some_and(|lease| lease.until_ms > now_ms);
            // Only a task whose runs have been ending unfinished: not one
            // waiting for input, for its first run, or for its resumed one.
            if record.status != TaskStatus::Working || running || record.unfinished_runs == 0 {
                return Decision::Keep;
            }
            record.fail(ErrorCode::INTERNAL_ERROR.0, &text);
            Decision::Write
        });
        done_or_retry(failed.await, "could not fail a dead-lettered task")
    }
}

/// A written outcome deletes the message; a store failure leaves it for a
/// retry.
fn done_or_retry<T>(written: Result<T, StoreError>, failure: &str) -> Disposition {
    match written {
        Ok(_) => Disposition::Done,
        Err(error) => {
            tracing::error!(%error, "{failure}; leaving the message for a retry");
            Disposition::Retry
        }
    }
}

fn holds(record: &TaskRecord, holder: &str) -> bool {
    record.lease.as_ref().is_some_and(|lease| lease.holder == holder)
}

fn object(value: impl serde::Serialize) -> JsonObject {
    match serde_json::to_value(value) {
        Ok(Value::Object(object)) => object,
        _ => JsonObject::new(),
    }
}

/// The record after a run's step (tasks.md, "Task Execution Errors"): a
/// result, `isError` or not, is `completed`; a JSON-RPC error is `failed`.
fn apply(record: &mut TaskRecord, capabilities: &Map<String, Value>, step: &Result<TaskStep, ErrorData>) {
    record.unfinished_runs = 0;
    match step {
        Ok(TaskStep::Complete(result)) => {
            record.finish(TaskStatus::Completed, None);
            record.result = Some(object(result));
        }
        Ok(TaskStep::NeedInput { requests, continuation }) => park(record, capabilities, requests, continuation),
        Err(error) => {
            record.finish(TaskStatus::Failed, Some(error.message.to_string()));
            record.error = Some(object(error));
        }
    }
}

fn park(record: &mut TaskRecord, capabilities: &Map<String, Value>, requests: &BTreeMap<String, InputRequest>, continuation: &Value) {
    let requests: Map<String, Value> = object(requests);
    if requests.is_empty() || requests.keys().any(|key| record.input_responses.contains_key(key)) {
        // A tool bug: keys are never reused over a task's life.
        record.fail(ErrorCode::INTERNAL_ERROR.0, "The task asked for input under a key it had used before.");
        return;
    }
    if let Some(required) = missing_capabilities(capabilities, &requests) {
        let error = ErrorData::new(
            ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
            "Missing required client capability",
            Some(serde_json::json!({"requiredCapabilities": required})),
        );
        record.finish(TaskStatus::Failed, Some(error.message.to_string()));
        record.error = Some(object(error));
        return;
    }
    record.status = TaskStatus::InputRequired;
    record.status_message = Some("Waiting for input.".into());
    record.input_requests = requests;
    record.continuation = Some(continuation.clone());
    record.lease = None;
}

/// `cargo run`'s worker: drains the in-process queue, each message in its
/// own Tokio task, retried twice before it counts as dead-lettered.
pub async fn run_in_process(worker: TaskWorker, mut messages: mpsc::UnboundedReceiver<TaskMessage>) {
    while let Some(message) = messages.recv().await {
        let worker = worker.clone();
        tokio::spawn(async move {
            for attempt in 1..=3 {
                if worker.process(&message).await == Disposition::Done {
                    return;
                }
                if attempt < 3 {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
            worker.dead_letter(&message, 3).await;
        });
    }
}
