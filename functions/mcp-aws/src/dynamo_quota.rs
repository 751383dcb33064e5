//! Per-owner creation counts (`mcp_stateless::quota`) in the table: one item
//! per owner, kind and window, `quota#<kind>#<sha256(owner)>#<window>`, with
//! `count` and `expires_at` (the TTL attribute). One conditional UpdateItem
//! per call, so concurrent creates on any instances never overshoot.

use aws_sdk_dynamodb::{operation::update_item::builders::UpdateItemFluentBuilder, types::AttributeValue};
use futures::future::BoxFuture;
use mcp_stateless::{
    quota::{CreationQuota, QuotaKey},
    storage::StoreError,
};

use crate::dynamo_handles::{DynamoStore, PARTITION_KEY, TTL_ATTRIBUTE, condition_failed, n, s};

impl DynamoStore {
    /// A conditional update of the counter `key` names (`#count`).
    fn counter(&self, key: &QuotaKey, update: &str, condition: &str) -> UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&self.table)
            .key(PARTITION_KEY, s(&key.partition_key))
            .update_expression(update)
            .condition_expression(condition)
            .expression_attribute_names("#count", "count")
    }
}

impl CreationQuota for DynamoStore {
    fn take<'a>(&'a self, key: &'a QuotaKey, limit: u32) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let result = self
                .counter(key, "ADD #count :one SET #expires = :expires", "attribute_not_exists(#count) OR #count < :limit")
                .expression_attribute_names("#expires", TTL_ATTRIBUTE)
                .expression_attribute_values(":one", n(1))
                .expression_attribute_values(":limit", n(u64::from(limit)))
                .expression_attribute_values(":expires", n(key.expires_at))
                .send()
                .await;
            match result {
                Ok(_) => Ok(true),
                Err(error) => condition_failed(error, |_| None).map(|_| false),
            }
        })
    }

    fn give_back<'a>(&'a self, key: &'a QuotaKey) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let result = self
                .counter(key, "ADD #count :minus_one", "#count > :zero")
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
