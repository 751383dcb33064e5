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

use aws_sdk_dynamodb::{
    operation::transact_write_items::TransactWriteItemsError,
    types::{AttributeValue, TransactWriteItem, Update},
};
use mcp_stateless::{
    metrics::{self, Counter},
    quota::QuotaKey,
    storage::{ItemKey, StoreError},
};

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
    /// minutes (the call's id).
    pub(super) async fn transact(&self, token: &str, writes: Vec<TransactWriteItem>) -> Result<Written, StoreError> {
        let answer = self.client.transact_write_items().set_transact_items(Some(writes)).client_request_token(token).send().await;
        match answer {
            Ok(_) => Ok(Written::Done),
            Err(error) => match error.as_service_error() {
                Some(TransactWriteItemsError::TransactionCanceledException(cancelled))
                    if cancelled.cancellation_reasons().iter().any(|r| r.code() == Some("ConditionalCheckFailed")) =>
                {
                    metrics::count(Counter::ConditionalCheckFailures);
                    Ok(Written::Refused(
                        cancelled.cancellation_reasons().iter().map(|r| r.code() == Some("ConditionalCheckFailed")).collect(),
                    ))
                }
                _ => Err(unavailable(error)),
            },
        }
    }

    /// The item under `key` as stored, tombstone or not.
    pub(super) async fn stored(&self, key: &ItemKey) -> Result<Option<Item>, StoreError> {
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
