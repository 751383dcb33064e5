//! Per-owner creation counts (`mcp_stateless::quota`) in the table: one item
//! per owner, kind and window, `quota#<kind>#<sha256(owner)>#<window>`, with
//! `count` and `expires_at` (the TTL attribute). One conditional UpdateItem
//! per call, so concurrent creates on any instances never overshoot.
//!
//! Each update carries its call's id into the item's recent calls
//! (`RecentCalls`) and refuses an item that holds it
//! already, so the SDK's retry of an update whose answer was lost, or a
//! first attempt that lands late, never counts (or uncounts) twice, even
//! with other calls' updates in between; the refusal returns the item, and
//! a take that finds its own id knows it counted.

use aws_sdk_dynamodb::{
    operation::update_item::{UpdateItemError, builders::UpdateItemFluentBuilder},
    types::{AttributeValue, ReturnValuesOnConditionCheckFailure},
};
use futures::future::BoxFuture;
use mcp_stateless::{
    quota::{CreationQuota, QuotaKey},
    storage::StoreError,
};

use super::{DynamoStore, PARTITION_KEY, RecentCalls, TTL_ATTRIBUTE, condition_failed, n, s};

/// The recent calls' minute comes from the system clock (the quota's own
/// windows come with its key).
fn now_seconds() -> u64 {
    use mcp_stateless::clock::{Clock, SystemClock};
    SystemClock.now()
}

impl DynamoStore {
    /// A conditional update of the counter `key` names (`#count`), adding
    /// `step` (`ADD` clauses), refused where `condition` fails or `calls`'s
    /// id is there already. Only a take sets the window's end (`sets_end`):
    /// a give-back may not know it (a task's place is named by its
    /// partition key alone), and a TTL in the past would have DynamoDB
    /// delete the count.
    fn counter(&self, key: &QuotaKey, step: &str, sets_end: bool, condition: &str, calls: &RecentCalls) -> UpdateItemFluentBuilder {
        let set = if sets_end { " SET #expires = :expires" } else { "" };
        let mut update = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(PARTITION_KEY, s(&key.partition_key))
            .update_expression(format!("ADD {step}, {}{set} REMOVE {}", RecentCalls::ADD, RecentCalls::REMOVE))
            .condition_expression(format!("({condition}) AND {}", RecentCalls::CONDITION))
            .expression_attribute_names("#count", "count")
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        if sets_end {
            update =
                update.expression_attribute_names("#expires", TTL_ATTRIBUTE).expression_attribute_values(":expires", n(key.expires_at));
        }
        calls.bind(update)
    }
}

impl CreationQuota for DynamoStore {
    fn take<'a>(&'a self, key: &'a QuotaKey, limit: u32) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let calls = RecentCalls::new(now_seconds());
            let result = self
                .counter(key, "#count :one", true, "attribute_not_exists(#count) OR #count < :limit", &calls)
                .expression_attribute_values(":one", n(1))
                .expression_attribute_values(":limit", n(u64::from(limit)))
                .send()
                .await;
            match result {
                Ok(_) => Ok(true),
                Err(error) => {
                    let seen = condition_failed(error, |e| match e {
                        UpdateItemError::ConditionalCheckFailedException(c) => c.item.clone(),
                        _ => None,
                    })?;
                    // Refused because this very call counted already.
                    Ok(seen.is_some_and(|item| calls.landed_in(&item)))
                }
            }
        })
    }

    fn give_back<'a>(&'a self, key: &'a QuotaKey) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let calls = RecentCalls::new(now_seconds());
            let result = self
                .counter(key, "#count :minus_one", false, "#count > :zero", &calls)
                .expression_attribute_values(":minus_one", AttributeValue::N("-1".into()))
                .expression_attribute_values(":zero", n(0))
                .send()
                .await;
            match result {
                // Nothing to give back (the window was forgotten): fine.
                Ok(_) => Ok(()),
                Err(error) => condition_failed(error, |_| None).map(|_| ()),
            }
        })
    }
}
