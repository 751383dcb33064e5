//! How long any one AWS call may take, and how often it is retried.
//!
//! The SDK's defaults have no operation timeout: a KMS or DynamoDB endpoint
//! that accepts the connection and never answers would hold the invocation
//! until Lambda kills it at the function's timeout, and the client would
//! see API Gateway's 504 instead of a JSON-RPC error. With these limits a
//! hanging or failing dependency costs at most [`CallLimits::operation`]
//! per call, then the request answers -32603.
//!
//! The budget: the request function's timeout is 25 s (template.yaml,
//! under API Gateway's 29 s). The heaviest request makes four AWS calls in
//! sequence (checkout round 2: Decrypt, the single-use record, GetItem,
//! the conditional delete), so 4 x 5 s = 20 s leaves time to answer.

use std::time::Duration;

use aws_config::{retry::RetryConfig, timeout::TimeoutConfig};
use mcp_stateless::settings::Variables;

/// The bounds and retries of every AWS call the adapters make:
/// [`CallLimits::LAMBDA`], as far as the settings leave it
/// ([`from_lookup`](Self::from_lookup), which [`crate::AwsSettings`] reads
/// at start).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(
    clippy::exhaustive_structs,
    reason = "per-call limits chosen together: a caller (the fault tests) sets them whole, as a const, and a new limit must be chosen by each"
)]
pub struct CallLimits {
    /// TCP and TLS set-up; in-region endpoints take milliseconds. Never
    /// longer than `attempt`.
    pub connect: Duration,
    /// `MCP_AWS_ATTEMPT_TIMEOUT_MS`: one attempt, from send to the last
    /// byte of the response.
    pub attempt: Duration,
    /// `MCP_AWS_OPERATION_TIMEOUT_MS`: the whole call, retries and backoff
    /// included.
    pub operation: Duration,
    /// Attempts per call, the first included (throttling and 5xx are
    /// retried by the SDK's standard policy, with jittered backoff).
    pub max_attempts: u32,
    /// First backoff, doubled per retry up to `max_backoff`.
    pub initial_backoff: Duration,
    /// The longest wait between two attempts.
    pub max_backoff: Duration,
}

impl CallLimits {
    /// For both functions (see the module's budget).
    pub const LAMBDA: Self = Self {
        connect: Duration::from_secs(1),
        attempt: Duration::from_millis(1_500),
        operation: Duration::from_secs(5),
        max_attempts: 3,
        initial_backoff: Duration::from_millis(50),
        max_backoff: Duration::from_millis(500),
    };

    /// [`LAMBDA`](Self::LAMBDA), unless `MCP_AWS_ATTEMPT_TIMEOUT_MS` or
    /// `MCP_AWS_OPERATION_TIMEOUT_MS` (as `lookup` finds them) say
    /// otherwise: the local emulator on a busy machine can take seconds
    /// where AWS takes milliseconds (`infra/common.sh` sets both for it). A
    /// value that is not a number of milliseconds is refused, naming it.
    /// Any source of variables: the process's, read once at start
    /// ([`crate::AwsSettings::from_env`]), or the tests' emulator
    /// environment, which they never write into the process's own.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let variables = Variables::new(lookup);
        let millis = |name: &str| Ok::<_, String>(variables.number(name, "a number of milliseconds")?.map(Duration::from_millis));
        let mut limits = Self::LAMBDA;
        if let Some(attempt) = millis("MCP_AWS_ATTEMPT_TIMEOUT_MS")? {
            limits.attempt = attempt;
            limits.connect = limits.connect.min(attempt);
        }
        if let Some(operation) = millis("MCP_AWS_OPERATION_TIMEOUT_MS")? {
            limits.operation = operation;
        }
        Ok(limits)
    }

    pub(crate) fn timeout_config(&self) -> TimeoutConfig {
        TimeoutConfig::builder()
            .connect_timeout(self.connect)
            .operation_attempt_timeout(self.attempt)
            .operation_timeout(self.operation)
            .build()
    }

    pub(crate) fn retry_config(&self) -> RetryConfig {
        RetryConfig::standard()
            .with_max_attempts(self.max_attempts)
            .with_initial_backoff(self.initial_backoff)
            .with_max_backoff(self.max_backoff)
    }
}

impl Default for CallLimits {
    fn default() -> Self {
        Self::LAMBDA
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_calls_in_sequence_fit_the_request_functions_timeout() {
        const FUNCTION_TIMEOUT: Duration = Duration::from_secs(25);
        let limits = CallLimits::LAMBDA;
        assert!(limits.operation * 4 < FUNCTION_TIMEOUT);
        assert!(limits.attempt < limits.operation && limits.connect < limits.attempt);
        let timeouts = limits.timeout_config();
        assert_eq!(timeouts.operation_timeout(), Some(limits.operation));
        assert_eq!(timeouts.operation_attempt_timeout(), Some(limits.attempt));
        assert_eq!(limits.retry_config().max_attempts(), 3);
    }
}
