//! One consistent set of task timings, derived in one place from the two
//! deployment choices that bound them: how long one run may take (the
//! worker function's timeout) and how many runs a task gets.
//!
//! Recovery does not wait for the queue. A run that died (a crash, an
//! abort, a killed sandbox) leaves its lease to lapse within [`LEASE`];
//! the next `tasks/get` sees a `working` task nobody holds and sends its
//! message again. A task nobody started within the start deadline (its
//! message lost, or waiting in a busy queue) is sent again too, never
//! failed for waiting. So the queue's visibility timeout (six times the
//! worker timeout, AWS's advice for SQS event sources) only paces the
//! redelivery of a message whose worker died, and the lifetime is chosen so
//! that every allowed attempt can start and end before the record expires.

use std::time::Duration;

/// The queue's visibility timeout is this many worker timeouts
/// (`template.yaml`'s `WorkerTimeouts` mapping; its test reads this).
pub const VISIBILITY_FACTOR: u64 = 6;

/// The worker timeouts `template.yaml` allows (seconds).
pub const WORKER_TIMEOUTS: [u64; 5] = [60, 120, 300, 600, 900];

/// The attempts `template.yaml` allows (`TaskMaxAttempts`).
pub const MAX_ATTEMPTS_ALLOWED: u32 = 10;

/// A worker's claim on a task, renewed every third of it while it runs.
pub const LEASE: Duration = Duration::from_secs(30);

/// A task no worker started within this is sent again.
pub const START_DEADLINE: Duration = Duration::from_secs(300);

/// The lifetime a task gets when the recovery bound is shorter.
pub const DEFAULT_TTL: Duration = Duration::from_secs(3_600);

/// Bounded AWS calls a worker keeps time for before its invocation's
/// deadline: reading the record, writing the outcome, and giving the
/// owner's place back.
pub const DEADLINE_MARGIN_CALLS: u32 = 3;

/// The time kept back before a worker invocation's deadline, for AWS calls
/// each bounded by `operation_timeout`.
pub fn deadline_margin(operation_timeout: Duration) -> Duration {
    operation_timeout * DEADLINE_MARGIN_CALLS
}

/// How long a failed run's message waits before it is delivered again
/// (set by the worker on the message, instead of the visibility timeout).
pub fn retry_delay(receives: u32) -> Duration {
    Duration::from_secs(10 * u64::from(receives.clamp(1, 30)))
}

/// The timings one deployment's tasks run by (see the module's header).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskTimings {
    /// How long one worker run may take: the worker function's timeout.
    pub worker_timeout: Duration,
    /// Runs that may end without an outcome before the task is failed.
    pub max_attempts: u32,
    /// How long a worker's claim on a task lasts unless renewed.
    pub lease: Duration,
    /// A runnable task no worker started within this is sent again.
    pub start_deadline: Duration,
    /// The task's lifetime from creation.
    pub ttl: Duration,
}

impl TaskTimings {
    /// The timings for runs of at most `worker_timeout`, `max_attempts` of
    /// them (held to 1 through [`MAX_ATTEMPTS_ALLOWED`]): [`LEASE`],
    /// [`START_DEADLINE`], and a lifetime of at least [`DEFAULT_TTL`] that
    /// covers the [`recovery_bound`](Self::recovery_bound).
    pub fn derive(worker_timeout: Duration, max_attempts: u32) -> Self {
        let max_attempts = max_attempts.clamp(1, MAX_ATTEMPTS_ALLOWED);
        let mut timings = Self { worker_timeout, max_attempts, lease: LEASE, start_deadline: START_DEADLINE, ttl: DEFAULT_TTL };
        timings.ttl = DEFAULT_TTL.max(round_up_to_minutes(timings.recovery_bound()));
        timings
    }

    /// From creation, the latest the last allowed attempt ends, if every
    /// earlier one died as late as it could: the task waits out the start
    /// deadline, then each attempt runs its full time, its lease lapses,
    /// and it waits for its retry; a poll every `poll` sends it again.
    pub fn recovery_bound(&self) -> Duration {
        let per_attempt = self.worker_timeout + self.lease + retry_delay(self.max_attempts) + POLL_SLACK;
        self.start_deadline + per_attempt * self.max_attempts
    }

    /// The queue's visibility timeout these timings go with.
    pub fn visibility_timeout(&self) -> Duration {
        self.worker_timeout * VISIBILITY_FACTOR as u32
    }
}

/// Time for the next poll to notice a lapsed lease.
const POLL_SLACK: Duration = Duration::from_secs(30);

fn round_up_to_minutes(duration: Duration) -> Duration {
    Duration::from_secs(duration.as_secs().div_ceil(60) * 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The arithmetic the docs promise, for every deployment the template
    /// allows: each attempt can run and be recovered before the record
    /// expires, a lease lapses long before the queue would redeliver, and
    /// a run's time fits inside the lease renewals.
    #[test]
    fn every_allowed_deployment_recovers_every_attempt_within_the_task_lifetime() {
        for seconds in WORKER_TIMEOUTS {
            for attempts in 1..=MAX_ATTEMPTS_ALLOWED {
                let timings = TaskTimings::derive(Duration::from_secs(seconds), attempts);
                let label = format!("WorkerTimeout {seconds}, {attempts} attempt(s)");
                assert!(timings.recovery_bound() <= timings.ttl, "{label}: {timings:?}");
                assert!(timings.ttl >= DEFAULT_TTL, "{label}");
                assert!(timings.lease < timings.visibility_timeout(), "{label}");
                assert!(timings.lease * 2 < timings.worker_timeout + timings.lease, "{label}");
                assert!(timings.visibility_timeout() <= Duration::from_secs(43_200), "{label}: SQS's maximum");
            }
        }
    }

    /// Issue 16, finding 15: the outcome's write must fit before the
    /// invocation ends, so the margin covers whole bounded calls (5 s each
    /// as deployed) and still leaves most of the shortest run.
    #[test]
    fn the_deadline_margin_fits_the_outcome_write_in_every_deployment() {
        let deployed_call = Duration::from_secs(5);
        let margin = deadline_margin(deployed_call);
        // settle(): a consistent read, a put, the counter's update.
        assert!(margin >= deployed_call * 3, "{margin:?}");
        assert!(margin * 4 <= Duration::from_secs(WORKER_TIMEOUTS[0]), "{margin:?}");
    }

    #[test]
    fn the_default_deployment_keeps_an_hour_and_a_long_one_gets_longer() {
        assert_eq!(TaskTimings::derive(Duration::from_secs(300), 3).ttl, DEFAULT_TTL);
        let long = TaskTimings::derive(Duration::from_secs(900), 10);
        assert!(long.ttl > Duration::from_secs(10 * 900), "{long:?}");
    }
}
