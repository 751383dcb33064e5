//! The change feed (`mcp_stateless::subscriptions::feed`) as one item of
//! the table, `feed#lists`: for each list `<kind>_version` (a counter),
//! `<kind>_changed_at` (epoch milliseconds) and `<kind>_digest` (the live
//! deployment's list). No TTL: it is one small
//! item for the table's whole life.
//!
//! Round trips: a stream's poll is one consistent GetItem (1 read unit);
//! a bump is one UpdateItem; recording a deployment is a read and, only
//! when the lists changed, one conditional UpdateItem and a read back.

use aws_sdk_dynamodb::types::AttributeValue;
use futures::future::BoxFuture;
use mcp_stateless::{
    storage::StoreError,
    subscriptions::feed::{ChangeFeed, ListDigests, ListKind, ListState, Lists},
};

use super::{DynamoStore, PARTITION_KEY, condition_failed, n, number, s, unavailable};

/// The feed item's key; the request function's IAM policy allows `feed#*`.
pub const FEED_KEY: &str = "feed#lists";

fn version(kind: ListKind) -> String {
    format!("{}_version", kind.name())
}

fn changed_at(kind: ListKind) -> String {
    format!("{}_changed_at", kind.name())
}

fn digest(kind: ListKind) -> String {
    format!("{}_digest", kind.name())
}

impl ChangeFeed for DynamoStore {
    fn lists(&self) -> BoxFuture<'_, Result<Lists, StoreError>> {
        Box::pin(async move {
            let output = self
                .client
                .get_item()
                .table_name(&self.table)
                .key(PARTITION_KEY, s(FEED_KEY))
                .consistent_read(true)
                .send()
                .await
                .map_err(unavailable)?;
            let mut lists = Lists::default();
            if let Some(item) = output.item {
                for kind in ListKind::ALL {
                    let state = lists.get_mut(kind);
                    state.version = number(&item, &version(kind)).unwrap_or(0);
                    state.changed_at_ms = number(&item, &changed_at(kind)).unwrap_or(0);
                    state.digest = match item.get(&digest(kind)) {
                        Some(AttributeValue::S(digest)) => digest.clone(),
                        _ => String::new(),
                    };
                }
            }
            Ok(lists)
        })
    }

    fn bump(&self, kind: ListKind, now_ms: u64) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            // A retried bump whose answer was lost bumps twice: streams
            // then notify once more, which clients tolerate.
            self.client
                .update_item()
                .table_name(&self.table)
                .key(PARTITION_KEY, s(FEED_KEY))
                .update_expression("ADD #v :one SET #at = :now")
                .expression_attribute_names("#v", version(kind))
                .expression_attribute_names("#at", changed_at(kind))
                .expression_attribute_values(":one", n(1))
                .expression_attribute_values(":now", n(now_ms))
                .send()
                .await
                .map(drop)
                .map_err(unavailable)
        })
    }

    fn record<'a>(&'a self, seen: &'a Lists, digests: &'a ListDigests, now_ms: u64) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let changed = digests.differing(seen);
            if changed.is_empty() {
                return Ok(true);
            }
            let mut update = self.client.update_item().table_name(&self.table).key(PARTITION_KEY, s(FEED_KEY));
            let mut conditions = Vec::new();
            // No other deployment recorded since `seen` was read: every
            // digest as it was (bumps, which change only versions, may
            // come between and do not stop the record).
            for (i, kind) in ListKind::ALL.into_iter().enumerate() {
                update = update.expression_attribute_names(format!("#d{i}"), digest(kind));
                match seen.get(kind) {
                    ListState { digest, .. } if digest.is_empty() => conditions.push(format!("attribute_not_exists(#d{i})")),
                    ListState { digest, .. } => {
                        conditions.push(format!("#d{i} = :seen{i}"));
                        update = update.expression_attribute_values(format!(":seen{i}"), s(digest));
                    }
                }
            }
            let mut adds = Vec::new();
            let mut sets = Vec::new();
            for kind in changed {
                let i = ListKind::ALL.iter().position(|k| *k == kind).unwrap_or_default();
                adds.push(format!("#v{i} :one"));
                sets.push(format!("#d{i} = :d{i}, #at{i} = :now"));
                // Names only for the lists this write changes: DynamoDB
                // refuses a request that declares a name it does not use.
                update = update
                    .expression_attribute_names(format!("#v{i}"), version(kind))
                    .expression_attribute_names(format!("#at{i}"), changed_at(kind))
                    .expression_attribute_values(format!(":d{i}"), s(digests.get(kind)));
            }
            let result = update
                .update_expression(format!("ADD {} SET {}", adds.join(", "), sets.join(", ")))
                .condition_expression(conditions.join(" AND "))
                .expression_attribute_values(":one", n(1))
                .expression_attribute_values(":now", n(now_ms))
                .send()
                .await;
            match result {
                Ok(_) => Ok(true),
                Err(error) => condition_failed(error, |_| None).map(|_| false),
            }
        })
    }
}
