//! Configuration by environment, the same names in Lambda, in the local
//! server and in `template.yaml`. No key material here: only the KMS key's
//! id or alias, which is not a secret.

use mcp_stateless::{Mode, settings::Variables};

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
/// memory or this process, which only the local server may use
/// ([`check`](Self::check)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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
}

impl AwsSettings {
    /// The variables as set, blank counting as unset. Never fails:
    /// [`check`](Self::check) says what a Lambda lacks.
    pub fn from_env() -> Self {
        let variables = Variables::new(|name| std::env::var(name).ok());
        let var = |name| variables.text(name);
        Self {
            state_key_id: var(STATE_KEY_ID),
            table_name: var(TABLE_NAME),
            audience: var(AUDIENCE),
            task_queue_url: var(TASK_QUEUE_URL),
            dead_letter_queue_url: var(TASK_DEAD_LETTER_QUEUE_URL),
            dead_letter_queue_arn: var(TASK_DEAD_LETTER_QUEUE_ARN),
        }
    }

    /// A Lambda must have all four: any instance serves any request, so
    /// nothing may fall back to per-instance memory (nor task work to a
    /// process Lambda freezes after answering). Fails naming what is missing.
    pub fn check(&self, mode: Mode) -> Result<(), String> {
        if mode == Mode::Local {
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
    use super::*;

    #[test]
    fn lambda_names_every_missing_variable() {
        let half = AwsSettings { state_key_id: Some("alias/x".into()), ..Default::default() };
        let error = half.check(Mode::Lambda).unwrap_err();
        assert!(
            error.contains(TABLE_NAME) && error.contains(AUDIENCE) && error.contains(TASK_QUEUE_URL) && !error.contains(STATE_KEY_ID),
            "{error}"
        );
        assert!(half.check(Mode::Local).is_ok());
    }
}
