//! Per-owner creation counts (`mcp_stateless::quota`) in the table: one item
//! per owner, kind and window, `quota#<kind>#<sha256(owner)>#<window>`, with
//! `count` and `expires_at` (the TTL attribute). One conditional UpdateItem
//! per call, so concurrent creates on any instances never overshoot.
//!
//! Each update carries a per-call id (`last_op`) and refuses an item that
//! already carries it, so the SDK's retry of an update whose answer was
//! lost does not count (or uncount) twice; the refusal returns the item,
//! and a take that finds its own id knows it counted.

use aws_sdk_dynamodb::{
    operation::update_item::{UpdateItemError, builders::UpdateItemFluentBuilder},
    types::{AttributeValue, ReturnValuesOnConditionCheckFailure},
};
use futures::future::BoxFuture;
use mcp_stateless::{
    quota::{CreationQuota, QuotaKey},
    storage::StoreError,
};

use super::{DynamoStore, LAST_OP, PARTITION_KEY, TTL_ATTRIBUTE, condition_failed, n, operation_id, s};

/// Not applied before under this call's id.
const FIRST_TIME: &str = "(attribute_not_exists(#last_op) OR #last_op <> :op)";

impl DynamoStore {
    /// A conditional update of the counter `key` names (`#count`), under
    /// the per-call id `op` (`:op`, which `update` sets as `#last_op`).
    fn counter(&self, key: &QuotaKey, update: &str, condition: &str, op: &str) -> UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&self.table)
            .key(PARTITION_KEY, s(&key.partition_key))
            .update_expression(update)
            .condition_expression(format!("({condition}) AND {FIRST_TIME}"))
            .expression_attribute_names("#count", "count")
            .expression_attribute_names("#last_op", LAST_OP)
            .expression_attribute_values(":op", s(op))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
    }
}

impl CreationQuota for DynamoStore {
    fn take<'a>(&'a self, key: &'a QuotaKey, limit: u32) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let op = operation_id();
            let result = self
                .counter(
                    key,
                    "ADD #count :one SET #expires = :expires, #last_op = :op",
                    "attribute_not_exists(#count) OR #count < :limit",
                    &op,
                )
                .expression_attribute_names("#expires", TTL_ATTRIBUTE)
                .expression_attribute_values(":one", n(1))
                .expression_attribute_values(":limit", n(u64::from(limit)))
                .expression_attribute_values(":expires", n(key.expires_at))
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
                    Ok(seen.is_some_and(|item| item.get(LAST_OP) == Some(&s(&op))))
                }
            }
        })
    }

    fn give_back<'a>(&'a self, key: &'a QuotaKey) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let op = operation_id();
            let result = self
                .counter(key, "ADD #count :minus_one SET #last_op = :op", "#count > :zero", &op)
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
