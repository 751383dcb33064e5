//! An owner's place (`quota#...`, the counter `dynamo/quota.rs` keeps)
//! written in one `TransactWriteItems` with the item it counts: a handle
//! (`counted_handles.rs`) or a task (`tasks.rs`). Apart, the two disagreed
//! under faults (issue 44, `tests/fault_load`): a take whose answer was lost
//! before a failed create, or a give-back that failed after a delete, left
//! a place counted for no item.
//!
//! The transaction carries the call's id as its `ClientRequestToken`, so
//! DynamoDB answers a retry within ten minutes as it answered the first
//! attempt. Where a retry is refused anyway (the emulator keeps no tokens),
//! the item tells whether this call's write landed (its call id); a first
//! attempt that lands after its retry finds its condition false and
//! changes nothing.

use std::time::Duration;

use aws_sdk_dynamodb::{
    operation::transact_write_items::TransactWriteItemsError,
    types::{AttributeValue, TransactWriteItem, Update},
};
use mcp_stateless::{
    metrics::{self, Counter},
    quota::QuotaKey,
    storage::{Backoff, ItemKey, StoreError},
};

/// Sends of a transaction that keeps meeting others on its items.
const CONFLICT_ATTEMPTS: u32 = 4;

use super::{DynamoStore, Item, PARTITION_KEY, TTL_ATTRIBUTE, n, s, unavailable};

/// How a transaction ended.
pub(super) enum Written {
    Done,
    /// Cancelled: which of its writes' conditions failed, in order.
    Refused(Vec<bool>),
}

pub(super) fn built<T, E: std::fmt::Display>(built: Result<T, E>) -> Result<T, StoreError> {
    built.map_err(|e| StoreError::Corrupt(e.to_string()))
}

impl DynamoStore {
    /// The place's counter moved by `step` under `condition`, whose other
    /// value is `bound` (`:bound`); a take also sets when the counter may
    /// be forgotten (its window's end).
    pub(super) fn place(&self, quota: &QuotaKey, step: i64, condition: &str, bound: u64) -> Result<Update, StoreError> {
        let update = Update::builder()
            .table_name(&self.table)
            .key(PARTITION_KEY, s(&quota.partition_key))
            .condition_expression(condition)
            .expression_attribute_names("#count", "count")
            .expression_attribute_values(":step", AttributeValue::N(step.to_string()))
            .expression_attribute_values(":bound", n(bound));
        let update = if step > 0 {
            update
                .update_expression("ADD #count :step SET #expires = :expires")
                .expression_attribute_names("#expires", TTL_ATTRIBUTE)
                .expression_attribute_values(":expires", n(quota.expires_at))
        } else {
            update.update_expression("ADD #count :step")
        };
        built(update.build())
    }

    /// One transaction of `writes`, idempotent under `token` for ten
    /// minutes (the call's id). Another transaction on one of its items at
    /// the same moment (two creates of one owner meet on its counter)
    /// cancels it with `TransactionConflict`, which the SDK does not retry:
    /// it is sent again here, a few times with jittered backoff, under a
    /// token of its own each time (what identifies the call's write is the
    /// id it carries in the item, not the token).
    pub(super) async fn transact(&self, token: &str, writes: Vec<TransactWriteItem>) -> Result<Written, StoreError> {
        let mut backoff = Backoff::new(CONFLICT_ATTEMPTS, Duration::from_millis(10));
        let mut attempt = 1;
        loop {
            let token = if attempt == 1 { token.to_owned() } else { format!("{token}-{attempt}") };
            let answer =
                self.client.transact_write_items().set_transact_items(Some(writes.clone())).client_request_token(token).send().await;
            let reasons: Vec<Option<String>> = match answer {
                Ok(_) => return Ok(Written::Done),
                Err(error) => match error.as_service_error() {
                    Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) => {
                        cancelled.cancellation_reasons().iter().map(|r| r.code().map(str::to_owned)).collect()
                    }
                    _ => return Err(unavailable(error)),
                },
            };
            let failed: Vec<bool> = reasons.iter().map(|code| code.as_deref() == Some("ConditionalCheckFailed")).collect();
            if failed.contains(&true) {
                metrics::count(Counter::ConditionalCheckFailures);
                return Ok(Written::Refused(failed));
            }
            let conflict = reasons.iter().any(|code| code.as_deref() == Some("TransactionConflict"));
            if !conflict || !backoff.retry().await {
                tracing::error!(?reasons, "DynamoDB transaction cancelled");
                return Err(StoreError::Unavailable("TransactionCanceledException".into()));
            }
            attempt += 1;
        }
    }

    /// The item under `key` as stored, a tombstone too, read strongly
    /// consistent, whoever owns it: the callers check what they need (a
    /// call id no other call has, or the owner).
    pub(crate) async fn stored(&self, key: &ItemKey) -> Result<Option<Item>, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(PARTITION_KEY, s(&key.partition_key))
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable)?;
        Ok(output.item)
    }
}
