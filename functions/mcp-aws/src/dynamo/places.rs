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
    operation::{put_item::PutItemError, transact_write_items::TransactWriteItemsError},
    types::{AttributeValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update, builders::UpdateBuilder},
};
use mcp_stateless::{
    metrics::{self, Counter},
    quota::QuotaKey,
    storage::{Backoff, ItemKey, StoreError},
};

/// Whether `item` carries the call id `op` in `attribute`: the one sign
/// that a write whose answer was lost landed (ids are 96 random bits).
pub(super) fn carries(item: &Item, attribute: &str, op: &str) -> bool {
    item.get(attribute).and_then(|value| value.as_s().ok()).is_some_and(|value| value == op)
}

/// Sends of a transaction DynamoDB keeps cancelling for a passing reason.
const RESENDS: u32 = 4;

/// Cancellation reasons that pass: the same transaction, sent again, may
/// be served.
const PASSING_REASONS: [&str; 3] = ["TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"];

use super::{DynamoStore, Item, PARTITION_KEY, TTL_ATTRIBUTE, condition_failed, n, s, unavailable};

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
    /// The take of a place in `quota`'s counter, refused at `limit`; it
    /// also sets when the counter may be forgotten (its window's end).
    pub(super) fn take_place(&self, quota: &QuotaKey, limit: u32) -> Result<Update, StoreError> {
        built(
            self.place(quota, "attribute_not_exists(#count) OR #count < :limit")
                .update_expression("ADD #count :one SET #expires = :expires")
                .expression_attribute_names("#expires", TTL_ATTRIBUTE)
                .expression_attribute_values(":one", n(1))
                .expression_attribute_values(":limit", n(u64::from(limit)))
                .expression_attribute_values(":expires", n(quota.expires_at))
                .build(),
        )
    }

    /// The give-back of a place in `quota`'s counter, refused where it
    /// holds none (the window's end stays as the take set it).
    pub(super) fn give_back_place(&self, quota: &QuotaKey) -> Result<Update, StoreError> {
        built(
            self.place(quota, "#count > :zero")
                .update_expression("ADD #count :minus_one")
                .expression_attribute_values(":minus_one", AttributeValue::N("-1".into()))
                .expression_attribute_values(":zero", n(0))
                .build(),
        )
    }

    fn place(&self, quota: &QuotaKey, condition: &str) -> UpdateBuilder {
        Update::builder()
            .table_name(&self.table)
            .key(PARTITION_KEY, s(&quota.partition_key))
            .condition_expression(condition)
            .expression_attribute_names("#count", "count")
    }

    /// One transaction of `writes`, idempotent under `token` for ten
    /// minutes (the call's id). The SDK retries a transaction that failed
    /// whole (a 5xx, a reset, `TransactionInProgressException`), but not one
    /// DynamoDB cancelled because one of its items was throttled (a hot
    /// key: `ThrottlingError`, `ProvisionedThroughputExceeded`) or met
    /// another transaction (`TransactionConflict`: two creates of one owner
    /// meet on its counter): those are sent again here, a few times with
    /// jittered backoff, under a token of their own each time (what
    /// identifies the call's write is the id it carries in the item, not
    /// the token).
    pub(super) async fn transact(&self, token: &str, writes: Vec<TransactWriteItem>) -> Result<Written, StoreError> {
        let mut backoff = Backoff::new(RESENDS, Duration::from_millis(20));
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
            let passing = reasons.iter().any(|code| code.as_deref().is_some_and(|code| PASSING_REASONS.contains(&code)));
            if !passing || !backoff.retry().await {
                tracing::error!(?reasons, "DynamoDB transaction cancelled");
                return Err(StoreError::Unavailable("TransactionCanceledException".into()));
            }
            attempt += 1;
        }
    }

    /// Whether the item under `key` is the one the call `op` wrote, as its
    /// `attribute` says.
    pub(super) async fn written_by(&self, key: &ItemKey, attribute: &str, op: &str) -> Result<bool, StoreError> {
        Ok(self.stored(key).await?.is_some_and(|item| carries(&item, attribute, op)))
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

    /// After a create whose every attempt failed (`error`): its item may be
    /// there, or land later still. `claim` put under the key only where
    /// there is nothing settles which: written, nothing was created and
    /// nothing will be (a late attempt finds the key taken and is cancelled
    /// whole, its place with it); refused, the item is there, and is this
    /// call's if its `id_attribute` holds the call's id `op`.
    pub(super) async fn settle_failed_create(
        &self,
        claim: Item,
        id_attribute: &str,
        op: &str,
        error: StoreError,
    ) -> Result<bool, StoreError> {
        let claimed = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(claim))
            .condition_expression("attribute_not_exists(pk)")
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let Err(refused) = claimed else { return Err(error) };
        let seen = condition_failed(refused, |e| match e {
            PutItemError::ConditionalCheckFailedException(c) => c.item.clone(),
            _ => None,
        });
        match seen {
            Ok(Some(item)) if carries(&item, id_attribute, op) => Ok(true),
            _ => Err(error),
        }
    }
}
