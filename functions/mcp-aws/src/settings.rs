//! Configuration by environment, the same names in Lambda, in the local
//! server and in `template.yaml`. No key material here: only the KMS key's
//! id or alias, which is not a secret.
//!
//! The one module of this crate that reads the process's environment, once
//! at start: the resources behind the ports, the bounds of every AWS call
//! ([`CallLimits`]) and what the SDK's configuration takes beyond the SDK's
//! own reading ([`SdkEnvironment`]).

use std::collections::HashMap;

use mcp_stateless::{Deployment, settings::Variables};

use crate::{CallLimits, SdkEnvironment};

/// The variable naming the KMS key `requestState` data keys come from.
pub const STATE_KEY_ID: &str = "MCP_STATE_KEY_ID";
/// The variable naming the DynamoDB table behind every store.
pub const TABLE_NAME: &str = "MCP_TABLE_NAME";
/// The variable naming this deployment, which sealed state and data keys
/// are bound to.
pub const AUDIENCE: &str = "MCP_AUDIENCE";
/// The variable naming the SQS queue task messages go through.
pub const TASK_QUEUE_URL: &str = "MCP_TASK_QUEUE_URL";
/// The variable naming the task queue's dead-letter queue by URL (the
/// local worker polls it).
pub const TASK_DEAD_LETTER_QUEUE_URL: &str = "MCP_TASK_DEAD_LETTER_QUEUE_URL";
/// The variable naming the same dead-letter queue by ARN (the worker
/// Lambda tells its records by it).
pub const TASK_DEAD_LETTER_QUEUE_ARN: &str = "MCP_TASK_DEAD_LETTER_QUEUE_ARN";

/// What backs the ports: each resource these variables name, or, unset,
/// memory or this process, which only a deployment without shared state
/// may use ([`check`](Self::check)); and how the SDK reaches them.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct AwsSettings {
    /// `MCP_STATE_KEY_ID`: KMS key id, ARN or alias. Unset: an in-process
    /// key (local only).
    pub state_key_id: Option<String>,
    /// `MCP_TABLE_NAME`: the DynamoDB table for handles, single-use
    /// records, quota counts, tasks and the change feed. Unset: memory
    /// (local only).
    pub table_name: Option<String>,
    /// `MCP_AUDIENCE`: this deployment (stack and stage). Unset: `local`
    /// (local only).
    pub audience: Option<String>,
    /// `MCP_TASK_QUEUE_URL`: the SQS queue feeding the task worker. Unset:
    /// a worker in this process (local only).
    pub task_queue_url: Option<String>,
    /// `MCP_TASK_DEAD_LETTER_QUEUE_URL`: the task queue's dead-letter
    /// queue, which the local worker polls.
    pub dead_letter_queue_url: Option<String>,
    /// `MCP_TASK_DEAD_LETTER_QUEUE_ARN`: the same queue, by which the
    /// worker Lambda tells its records from the task queue's.
    pub dead_letter_queue_arn: Option<String>,
    /// `MCP_AWS_ATTEMPT_TIMEOUT_MS`, `MCP_AWS_OPERATION_TIMEOUT_MS`: the
    /// bounds of every AWS call.
    pub limits: CallLimits,
    /// On Lambda: the region and credentials Lambda sets, and the roots
    /// TLS to AWS trusts (`SSL_CERT_FILE` among them).
    pub sdk: SdkEnvironment,
}

impl AwsSettings {
    /// This process's variables, blank counting as unset, for
    /// `deployment`. Fails naming a malformed call limit or an unusable
    /// `SSL_CERT_FILE`; [`check`](Self::check) says what a Lambda lacks.
    pub fn from_env(deployment: &Deployment) -> Result<Self, String> {
        // `vars()` would panic on a variable that is not UTF-8; such a one
        // is none of those read here.
        let variables = std::env::vars_os().filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)));
        Self::read(deployment, variables.collect())
    }

    /// The settings `variables` give for `deployment`.
    pub fn read(deployment: &Deployment, variables: HashMap<String, String>) -> Result<Self, String> {
        let lookup = Variables::new(|name| variables.get(name).cloned());
        let var = |name| lookup.text(name);
        Ok(Self {
            state_key_id: var(STATE_KEY_ID),
            table_name: var(TABLE_NAME),
            audience: var(AUDIENCE),
            task_queue_url: var(TASK_QUEUE_URL),
            dead_letter_queue_url: var(TASK_DEAD_LETTER_QUEUE_URL),
            dead_letter_queue_arn: var(TASK_DEAD_LETTER_QUEUE_ARN),
            limits: CallLimits::from_lookup(|name| variables.get(name).cloned())?,
            sdk: SdkEnvironment::from_variables(&deployment.entry, variables.clone())?,
        })
    }

    /// Where state is shared (Lambda), all four must be set: any instance
    /// serves any request, so nothing may fall back to per-instance memory
    /// (nor task work to a process Lambda freezes after answering). Fails
    /// naming what is missing.
    pub fn check(&self, deployment: &Deployment) -> Result<(), String> {
        if !deployment.shared_state {
            return Ok(());
        }
        let missing: Vec<&str> = [
            (STATE_KEY_ID, self.state_key_id.is_none()),
            (TABLE_NAME, self.table_name.is_none()),
            (AUDIENCE, self.audience.is_none()),
            (TASK_QUEUE_URL, self.task_queue_url.is_none()),
        ]
        .into_iter()
        .filter_map(|(name, absent)| absent.then_some(name))
        .collect();
        if missing.is_empty() { Ok(()) } else { Err(format!("{} must be set in Lambda (see template.yaml)", missing.join(", "))) }
    }

    /// The deployment's audience: `MCP_AUDIENCE`, or `local` when unset.
    pub fn audience(&self) -> &str {
        self.audience.as_deref().unwrap_or("local")
    }
}

#[cfg(test)]
mod tests {
    use mcp_stateless::Mode;

    use super::*;

    fn read(mode: Mode, pairs: &[(&str, &str)]) -> Result<AwsSettings, String> {
        let variables = pairs.iter().map(|(name, value)| ((*name).to_owned(), (*value).to_owned())).collect();
        AwsSettings::read(&Deployment::defaults(mode, "127.0.0.1:0"), variables)
    }

    #[test]
    fn lambda_names_every_missing_variable() {
        let half = read(Mode::Lambda, &[(STATE_KEY_ID, "alias/x"), (TABLE_NAME, " ")]).unwrap();
        let error = half.check(&Deployment::defaults(Mode::Lambda, "")).unwrap_err();
        assert!(
            error.contains(TABLE_NAME) && error.contains(AUDIENCE) && error.contains(TASK_QUEUE_URL) && !error.contains(STATE_KEY_ID),
            "{error}"
        );
        assert!(half.check(&Deployment::defaults(Mode::Local, "")).is_ok());
    }

    #[test]
    fn the_call_limits_and_the_sdk_environment_are_read_with_the_rest() {
        let lambda = [("AWS_ACCESS_KEY_ID", "a"), ("AWS_SECRET_ACCESS_KEY", "s"), ("AWS_REGION", "eu-west-1")];
        let settings = read(Mode::Lambda, &[&lambda[..], &[("MCP_AWS_OPERATION_TIMEOUT_MS", "9000")]].concat()).unwrap();
        assert_eq!(settings.limits.operation, std::time::Duration::from_millis(9000));
        assert!(settings.sdk.reads_lambda_variables() && settings.sdk.trusts_amazon_roots());
        assert!(!read(Mode::Local, &lambda).unwrap().sdk.reads_lambda_variables(), "only on Lambda");
        let error = read(Mode::Local, &[("MCP_AWS_ATTEMPT_TIMEOUT_MS", "1s")]).unwrap_err();
        assert!(error.contains("MCP_AWS_ATTEMPT_TIMEOUT_MS"), "{error}");
        let error = read(Mode::Lambda, &[&lambda[..], &[("SSL_CERT_FILE", "/nonexistent/roots.pem")]].concat()).unwrap_err();
        assert!(error.contains("SSL_CERT_FILE"), "{error}");
    }
}
