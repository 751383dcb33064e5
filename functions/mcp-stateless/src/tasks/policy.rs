//! [`TaskPolicy`]: the lifetimes and pacing every task of a function
//! shares, derived once at start from what the deployment sets
//! ([`TaskSettings`], read by `settings.rs`) through [`TaskTimings`].

use std::time::Duration;

use super::{record::TASK_IDS, timings::TaskTimings};
use crate::quota::QuotaKey;

/// What a deployment sets of its tasks' timing (`settings.rs` reads it):
/// `MCP_WORKER_TIMEOUT_SECONDS`, `MCP_TASK_MAX_ATTEMPTS`,
/// `MCP_TASK_LEASE_SECONDS`, `MCP_TASK_START_DEADLINE_SECONDS`,
/// `MCP_TASK_TTL_SECONDS` and `MCP_TASK_MAX_PER_OWNER`; unset, the defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskSettings {
    /// `MCP_WORKER_TIMEOUT_SECONDS`: how long one worker run may take.
    pub worker_timeout: Option<Duration>,
    /// `MCP_TASK_MAX_ATTEMPTS`: runs that may end without an outcome
    /// before the task is failed.
    pub max_attempts: Option<u32>,
    /// `MCP_TASK_LEASE_SECONDS`: how long a worker's claim lasts unless
    /// renewed.
    pub lease: Option<Duration>,
    /// `MCP_TASK_START_DEADLINE_SECONDS`: a runnable task no worker started
    /// within this is sent again.
    pub start_deadline: Option<Duration>,
    /// `MCP_TASK_TTL_SECONDS`: a lifetime to lengthen the derived one to;
    /// it never shortens it.
    pub ttl: Option<Duration>,
    /// `MCP_TASK_MAX_PER_OWNER`: tasks one owner may have open at once.
    pub max_per_owner: Option<u32>,
}

/// Lifetimes and pacing, the same for every task of a function, derived
/// from the deployment's worker timeout and attempts ([`TaskTimings`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskPolicy {
    /// From creation; never extended. The record is unreadable after it.
    pub ttl: Duration,
    /// Suggested to clients as `pollIntervalMs`.
    pub poll_interval: Duration,
    /// A runnable task no worker started within this is sent again (its
    /// message was lost, or the queue is busy: either way it is not failed).
    pub start_deadline: Duration,
    /// How long a worker's claim on a task lasts unless renewed. A task
    /// whose lease lapsed (its worker died) is sent again by the next poll.
    pub lease: Duration,
    /// How often a running worker stores progress and checks for a cancel.
    pub heartbeat: Duration,
    /// Tasks one owner may have open (not yet completed, failed or
    /// cancelled) at once, so one tenant cannot fill the queue; a task
    /// gives its place back when it ends (see [`crate::quota`]).
    pub max_per_owner: u32,
    /// Runs of a task that may end without an outcome (crashed, timed out
    /// unfinished, panicked) before it is failed.
    pub max_attempts: u32,
    /// A task tool run inline (a client without the tasks extension) is
    /// stopped after this, under the request function's timeout.
    pub inline_limit: Duration,
    /// Time a worker keeps back before its invocation's deadline to store
    /// the outcome: at least one bounded AWS call.
    pub deadline_margin: Duration,
}

impl Default for TaskPolicy {
    fn default() -> Self {
        Self::from_timings(&TaskTimings::derive(Duration::from_secs(300), 3))
    }
}

impl TaskPolicy {
    /// The policy `timings` give, with the fixed pacing (poll interval,
    /// heartbeat, inline limit), the default per-owner cap, and a deadline
    /// margin for AWS calls bounded as they are in Lambda.
    pub fn from_timings(timings: &TaskTimings) -> Self {
        Self {
            ttl: timings.ttl,
            poll_interval: Duration::from_millis(1_000),
            start_deadline: timings.start_deadline,
            lease: timings.lease,
            heartbeat: Duration::from_millis(1_000),
            max_per_owner: 20,
            max_attempts: timings.max_attempts,
            inline_limit: Duration::from_secs(20),
            deadline_margin: super::timings::deadline_margin(Duration::from_secs(5)),
        }
    }

    /// Derived from the worker's timeout and the attempts a task gets
    /// (both functions get both from `template.yaml`), with the lease,
    /// start deadline and per-owner cap applied when set. A requested
    /// lifetime may lengthen the task's, never shorten it below the
    /// recovery bound.
    pub fn from_settings(settings: &TaskSettings) -> Self {
        let worker_timeout = settings.worker_timeout.unwrap_or(Duration::from_secs(300));
        let mut timings = TaskTimings::derive(worker_timeout, settings.max_attempts.unwrap_or(3));
        if let Some(lease) = settings.lease {
            timings.lease = lease;
        }
        if let Some(deadline) = settings.start_deadline {
            timings.start_deadline = deadline;
        }
        timings.ttl = timings.ttl.max(timings.recovery_bound()).max(settings.ttl.unwrap_or_default());
        let defaults = Self::from_timings(&timings);
        Self { max_per_owner: settings.max_per_owner.unwrap_or(defaults.max_per_owner), ..defaults }
    }

    /// The per-owner counter a task created at `created_at_ms` counts in.
    pub fn quota_key(&self, owner: &str, created_at_ms: u64) -> QuotaKey {
        QuotaKey::new(owner, TASK_IDS.prefix, self.ttl, created_at_ms / 1_000)
    }
}
