//! One task as stored, in two parts: the [`TaskRecord`], small and written
//! on every change (status, lease, progress, the outcome once), and the
//! [`TaskInput`] it was created with (caller, tool, arguments, declared
//! capabilities), written once and read once per run. Kept apart, a
//! heartbeat or a lease renewal rewrites a few hundred bytes, not the
//! arguments too (DynamoDB bills a write by the size of the whole item).
//!
//! The status only moves forward (tasks.md, "Task Status"): `working` and
//! `input_required` alternate, and the first terminal status written wins.
//! Every write is a compare-and-set on `version`, so of a cancel and a
//! completion racing, exactly one lands.

use rmcp::model::{CreateTaskResult, DetailedTask, GetTaskResult, JsonObject, Task, TaskPayload, TaskStatus};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{
    protocol::context::{CallContext, Principal},
    storage::IdKind,
};

/// Task ids are owner-bound ids as handles are: `tsk_` + 128 random bits,
/// stored under a key derived from the owner and the id
/// ([`crate::storage::ItemKey`]).
pub const TASK_IDS: IdKind = IdKind { prefix: "tsk" };

/// The serialized record's bound, under DynamoDB's 400 KB item limit with
/// room for the key and attributes beside it.
pub const MAX_RECORD_BYTES: usize = 350_000;

/// Which worker holds a task, and until when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Lease {
    /// A random id of the worker run that holds it.
    pub holder: String,
    /// Epoch milliseconds when the claim lapses, unless renewed first.
    pub until_ms: u64,
}

/// What a task was created with: written once, before its record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskInput {
    /// The caller that created the task: the run acts as it.
    pub principal: Principal,
    /// The task tool's name.
    pub tool: String,
    /// The arguments, kept to the properties the tool's schema declares.
    pub arguments: Value,
    /// The creating request's protocol version.
    pub protocol_version: String,
    /// What the creating request's client declared: the run's input
    /// requests are held to it.
    pub client_capabilities: Map<String, Value>,
}

impl TaskInput {
    /// The context the tool sees when it runs: the creating request's.
    pub fn call_context(&self) -> CallContext {
        CallContext {
            protocol_version: self.protocol_version.clone(),
            client_capabilities: self.client_capabilities.clone(),
            client_info: None,
            traceparent: None,
            principal: self.principal.clone(),
            era: Default::default(),
        }
    }

    pub(crate) fn encoded_len(&self) -> usize {
        serde_json::to_vec(self).map_or(usize::MAX, |bytes| bytes.len())
    }
}

/// The part of a task written on every change (see the module's header).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskRecord {
    /// The id clients name it by (`tsk_...`).
    pub task_id: String,
    /// [`Principal::binding_id`] of the caller that created it.
    pub owner: String,
    /// The task tool's name (its input holds the rest).
    pub tool: String,
    /// Where the task is in its life; it only moves forward.
    pub status: TaskStatus,
    /// What the tool last said of its progress, or why the task ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// The tool's result, once `completed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<JsonObject>,
    /// The JSON-RPC error (`code`, `message`), once `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<JsonObject>,
    /// Outstanding input requests only: answered keys leave this map.
    #[serde(default)]
    pub input_requests: Map<String, Value>,
    /// Every answer received over the task's life, by key.
    #[serde(default)]
    pub input_responses: Map<String, Value>,
    /// What the tool asked to get back when it resumes after input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuation: Option<Value>,
    /// Epoch milliseconds when it was created.
    pub created_at_ms: u64,
    /// Epoch milliseconds of the last write; it never moves back.
    pub updated_at_ms: u64,
    /// Its lifetime from creation, in milliseconds, as clients are told
    /// (`ttlMs`).
    pub ttl_ms: u64,
    /// How often clients are asked to poll, in milliseconds
    /// (`pollIntervalMs`).
    pub poll_interval_ms: u64,
    /// Epoch seconds: `created + ttl`, never extended; the table's TTL.
    pub expires_at: u64,
    /// The owner's counter this task took a place in
    /// ([`crate::quota::QuotaKey`]'s partition key), given back when it
    /// ends: kept here so whichever function ends it gives back to the
    /// same counter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota_key: Option<String>,
    /// Incremented by every write, each a compare-and-set on it.
    pub version: u64,
    /// Worker runs started, including the current one.
    #[serde(default)]
    pub attempts: u32,
    /// Runs started since the task last made progress (an outcome, or a
    /// request for input): runs that crashed, aborted or were lost. At
    /// `TaskPolicy::max_attempts` the task is failed rather than run again.
    #[serde(default)]
    pub unfinished_runs: u32,
    /// The worker run that holds the task, if one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<Lease>,
    /// Set while the task waits for a worker to pick it up (after creation,
    /// after its input arrived, after a run gave it up); a task that waits
    /// past the start deadline is sent to a worker again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runnable_since_ms: Option<u64>,
}

impl TaskRecord {
    /// Whether it has ended: `completed`, `failed` or `cancelled`.
    pub fn is_terminal(&self) -> bool {
        self.status.is_terminal()
    }

    /// Ends the task. The caller checks it is not terminal already.
    pub fn finish(&mut self, status: TaskStatus, message: Option<String>) {
        self.status = status;
        self.status_message = message;
        self.input_requests.clear();
        self.continuation = None;
        self.lease = None;
        self.runnable_since_ms = None;
    }

    /// Ends the task `failed`, with a JSON-RPC error of `code` and `message`
    /// (its status message too). The caller checks it is not terminal
    /// already.
    pub fn fail(&mut self, code: i32, message: &str) {
        let mut error = JsonObject::new();
        error.insert("code".into(), code.into());
        error.insert("message".into(), message.into());
        self.finish(TaskStatus::Failed, Some(message.to_owned()));
        self.error = Some(error);
    }

    pub(crate) fn encoded_len(&self) -> usize {
        serde_json::to_vec(self).map_or(usize::MAX, |bytes| bytes.len())
    }

    fn task(&self) -> Task {
        let mut task = Task::new(&self.task_id, self.status, iso8601(self.created_at_ms), iso8601(self.updated_at_ms))
            .with_ttl_ms(self.ttl_ms)
            .with_poll_interval_ms(self.poll_interval_ms);
        task.status_message = self.status_message.clone();
        task
    }

    pub(crate) fn create_result(&self) -> CreateTaskResult {
        CreateTaskResult::new(self.task())
    }

    /// The `tasks/get` answer: the task with its status's payload inlined.
    pub fn get_result(&self) -> GetTaskResult {
        let payload = match self.status {
            TaskStatus::InputRequired => match serde_json::from_value(Value::Object(self.input_requests.clone())) {
                Ok(input_requests) => TaskPayload::InputRequired { input_requests },
                Err(_) => TaskPayload::Working,
            },
            TaskStatus::Completed => TaskPayload::Completed { result: self.result.clone().unwrap_or_default() },
            TaskStatus::Failed => TaskPayload::Failed { error: self.error.clone().unwrap_or_default() },
            TaskStatus::Cancelled => TaskPayload::Cancelled,
            _ => TaskPayload::Working,
        };
        GetTaskResult::new(DetailedTask::new(self.task(), payload))
    }
}

/// `2026-11-30T10:35:35.123Z` from epoch milliseconds (UTC, proleptic
/// Gregorian; the days-to-civil conversion of Howard Hinnant's `date`).
pub fn iso8601(epoch_ms: u64) -> String {
    let secs = epoch_ms / 1_000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z", rem / 3_600, rem % 3_600 / 60, rem % 60, epoch_ms % 1_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso8601_matches_known_instants() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso8601(1_796_034_935_123), "2026-11-30T10:35:35.123Z");
    }
}
