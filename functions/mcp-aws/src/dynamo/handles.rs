//! Handles (`handle#...` items) and single-use `requestState` records
//! (`jti#...`) in the table; their attributes are in the item map
//! (`dynamo/mod.rs`).
//!
//! Round trips: create 1, get 1 (a consistent read), apply (append or
//! touch) 1, update 2 (read + compare-and-set) per attempt, delete 1; one
//! more, only when an expired item is found, to delete it. `Handles` uses
//! the counted create and delete instead (`counted_handles.rs`: the item
//! and its owner's place in one transaction).
//!
//! Writes mean the same when the SDK's retry lands after a lost answer, or
//! the first attempt lands late:
//! - a create carries its call's id (`created_op`); a retry that finds the
//!   item its own call created is that create, done;
//! - a delete leaves a tombstone (`deleted_op`, the call's id) for
//!   [`TOMBSTONE_SECONDS`] rather than removing the item: a retry that
//!   finds its own tombstone is that delete, done, and reports the handle
//!   it deleted (it reported "unknown handle" for a handle it had just
//!   deleted); a create that lands late finds the key taken and cannot
//!   bring the handle back. Every read and every condition takes a
//!   tombstone for no item. The tombstone keeps the handle's data (the
//!   retry's answer needs it), unreadable, until the table's TTL removes
//!   it after its 15 minutes.

use aws_sdk_dynamodb::{
    operation::{
        put_item::PutItemError,
        update_item::{UpdateItemError, builders::UpdateItemFluentBuilder},
    },
    types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure},
};
use futures::future::BoxFuture;
use mcp_stateless::{
    handles::{Change, HandleRecord, HandleStore, ItemKey, Lookup, PlaceOf},
    quota::QuotaKey,
    sealed::redemption::{Redemption, RedemptionLedger},
    storage::StoreError,
};
use serde_json::Value;

use super::{
    DynamoStore, Item, LAST_OP, PARTITION_KEY, RecentCalls, TTL_ATTRIBUTE,
    attribute_values::{from_attribute, from_map, to_attribute},
    condition_failed, n, number, operation_id, s,
};

fn string(item: &Item, name: &str) -> Result<String, StoreError> {
    match item.get(name) {
        Some(AttributeValue::S(v)) => Ok(v.clone()),
        _ => Err(StoreError::Corrupt(format!("{name} is missing"))),
    }
}

/// A new handle's item, created by the call `op`.
pub(super) fn handle_item(key: &ItemKey, record: &HandleRecord, op: &str) -> Item {
    Item::from([
        (PARTITION_KEY.to_owned(), s(&key.partition_key)),
        ("owner".to_owned(), s(&record.owner)),
        ("kind".to_owned(), s(&record.kind)),
        ("data".to_owned(), to_attribute(&record.data)),
        ("version".to_owned(), n(record.version)),
        ("created_at".to_owned(), n(record.created_at)),
        ("last_used_at".to_owned(), n(record.last_used_at)),
        (TTL_ATTRIBUTE.to_owned(), n(record.expires_at)),
        (DEADLINE.to_owned(), n(record.deadline)),
        (CREATED_OP.to_owned(), s(op)),
    ])
}

pub(super) fn record(item: &Item) -> Result<HandleRecord, StoreError> {
    let data = match item.get("data") {
        Some(AttributeValue::M(map)) => Value::Object(from_map(map).ok_or_else(|| StoreError::Corrupt("data".into()))?),
        Some(other) => from_attribute(other).ok_or_else(|| StoreError::Corrupt("data".into()))?,
        None => Value::Null,
    };
    Ok(HandleRecord {
        owner: string(item, "owner")?,
        kind: string(item, "kind")?,
        data,
        version: number(item, "version")?,
        created_at: number(item, "created_at")?,
        last_used_at: number(item, "last_used_at")?,
        expires_at: number(item, TTL_ATTRIBUTE)?,
        deadline: number(item, DEADLINE).unwrap_or(u64::MAX),
    })
}

const DEADLINE: &str = "deadline";
/// The call that created the item.
pub(super) const CREATED_OP: &str = "created_op";
/// The call that deleted it: the item is a tombstone from then on.
pub(super) const DELETED_OP: &str = "deleted_op";
pub(super) const LIVE: &str = "attribute_exists(pk) AND #owner = :owner AND expires_at > :now AND (attribute_not_exists(deadline) OR deadline > :now) \
                    AND attribute_not_exists(deleted_op)";

/// How long a tombstone stands: far beyond the SDK's retries of a delete
/// and any create's late arrival (both bounded by the call limits, seconds).
pub const TOMBSTONE_SECONDS: u64 = 15 * 60;

/// Whether `item` is a deleted handle's tombstone.
fn is_tombstone(item: &Item) -> bool {
    item.contains_key(DELETED_OP)
}

impl DynamoStore {
    /// Why a write conditioned on [`LIVE`] failed, deleting the item if it
    /// turned out to be expired.
    pub(super) async fn explain(&self, key: &ItemKey, seen: Option<Item>, now: u64) -> Result<Lookup, StoreError> {
        let Some(item) = seen else { return Ok(Lookup::Missing) };
        if item.get("owner") != Some(&s(&key.owner)) || is_tombstone(&item) {
            return Ok(Lookup::Missing);
        }
        if record(&item)?.is_expired(now) {
            self.delete_expired(key, now).await?;
            return Ok(Lookup::Expired);
        }
        Ok(Lookup::LimitReached)
    }

    /// An update of the caller's live item that slides its expiry and
    /// returns the new item, or the old one when its condition fails.
    fn live_update(&self, key: &ItemKey, now: u64, expires_at: u64) -> UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&self.table)
            .key(PARTITION_KEY, s(&key.partition_key))
            .expression_attribute_names("#owner", "owner")
            .expression_attribute_values(":owner", s(&key.owner))
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":exp", n(expires_at))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
    }

    /// `own`: whether an item a refused write saw holds that write's own
    /// earlier landing (a replace's `last_op`, an append's recent calls).
    async fn finish_update(
        &self,
        key: &ItemKey,
        update: UpdateItemFluentBuilder,
        now: u64,
        own: impl Fn(&Item) -> bool,
    ) -> Result<Lookup, StoreError> {
        match update.send().await {
            Ok(output) => Ok(Lookup::Found(record(&output.attributes.unwrap_or_default())?)),
            Err(error) => {
                let seen = condition_failed(error, |e| match e {
                    UpdateItemError::ConditionalCheckFailedException(c) => c.item.clone(),
                    _ => None,
                })?;
                // The SDK retried a write whose first attempt was applied
                // but whose answer was lost: that attempt is the result.
                if let Some(item) = seen.as_ref().filter(|item| own(item)) {
                    return Ok(Lookup::Found(record(item)?));
                }
                self.explain(key, seen, now).await
            }
        }
    }

    /// The owner's item under `key`, read strongly consistent; somebody
    /// else's item reads as none.
    pub(crate) async fn owned_item(&self, key: &ItemKey) -> Result<Option<Item>, StoreError> {
        Ok(self.stored(key).await?.filter(|item| item.get("owner") == Some(&s(&key.owner)) && !is_tombstone(item)))
    }

    /// DynamoDB deletes expired items lazily (up to days later): one seen
    /// expired is deleted now, unless it was renewed in between. (A
    /// tombstone is never seen: it reads as no item.)
    pub(crate) async fn delete_expired(&self, key: &ItemKey, now: u64) -> Result<(), StoreError> {
        let result = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key(PARTITION_KEY, s(&key.partition_key))
            .condition_expression("expires_at <= :now OR deadline <= :now")
            .expression_attribute_values(":now", n(now))
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(error) => condition_failed(error, |_| None).map(|_| ()),
        }
    }
}

impl HandleStore for DynamoStore {
    fn create<'a>(&'a self, key: &'a ItemKey, record: &'a HandleRecord) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let op = operation_id();
            let created = self
                .client
                .put_item()
                .table_name(&self.table)
                .set_item(Some(handle_item(key, record, &op)))
                .condition_expression("attribute_not_exists(pk)")
                .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
                .send()
                .await;
            let Err(error) = created else { return Ok(()) };
            let seen = condition_failed(error, |e| match e {
                PutItemError::ConditionalCheckFailedException(c) => c.item.clone(),
                _ => None,
            })?;
            // The SDK's retry of this very create, whose first attempt landed.
            match seen {
                Some(item) if item.get(CREATED_OP) == Some(&s(&op)) => Ok(()),
                // A random id's key taken: never by chance; by a tombstone,
                // this create came too late to bring the handle back.
                _ => Err(StoreError::Unavailable("the handle's key is taken".into())),
            }
        })
    }

    fn get<'a>(&'a self, key: &'a ItemKey, now: u64) -> BoxFuture<'a, Result<Lookup, StoreError>> {
        Box::pin(async move {
            let Some(item) = self.owned_item(key).await? else {
                return Ok(Lookup::Missing);
            };
            let record = record(&item)?;
            if record.is_expired(now) {
                self.delete_expired(key, now).await?;
                return Ok(Lookup::Expired);
            }
            Ok(Lookup::Found(record))
        })
    }

    fn replace<'a>(
        &'a self,
        key: &'a ItemKey,
        expected_version: u64,
        data: &'a Value,
        now: u64,
        expires_at: u64,
    ) -> BoxFuture<'a, Result<Lookup, StoreError>> {
        Box::pin(async move {
            // The version check already stops a retried replace from landing
            // twice; `last_op` tells that retry it was its own write that won.
            let op = operation_id();
            let update = self
                .live_update(key, now, expires_at)
                .update_expression("SET #data = :data, #version = :next, last_used_at = :now, expires_at = :exp, last_op = :op")
                .condition_expression(format!("{LIVE} AND #version = :expected"))
                .expression_attribute_names("#data", "data")
                .expression_attribute_names("#version", "version")
                .expression_attribute_values(":data", to_attribute(data))
                .expression_attribute_values(":expected", n(expected_version))
                .expression_attribute_values(":next", n(expected_version + 1))
                .expression_attribute_values(":op", s(&op));
            match self.finish_update(key, update, now, |item| item.get(LAST_OP) == Some(&s(&op))).await? {
                // Live and owned, so the version moved on: another writer won.
                Lookup::LimitReached => Ok(Lookup::Conflict),
                other => Ok(other),
            }
        })
    }

    fn apply<'a>(&'a self, key: &'a ItemKey, change: &'a Change, now: u64, expires_at: u64) -> BoxFuture<'a, Result<Lookup, StoreError>> {
        Box::pin(async move {
            let update = self.live_update(key, now, expires_at);
            // An append carries its call's id, so its retry never applies
            // twice; a touch (every read) needs none.
            let (update, calls) = match change {
                Change::Touch => (update.update_expression("SET last_used_at = :now, expires_at = :exp").condition_expression(LIVE), None),
                Change::Append { field, value, max_len } => {
                    let calls = RecentCalls::new(now);
                    let update = calls
                        .bind(update)
                        .update_expression(format!(
                            "SET #data.#field = list_append(#data.#field, :new), last_used_at = :now, expires_at = :exp \
                             ADD #version :one, {} REMOVE {}",
                            RecentCalls::ADD,
                            RecentCalls::REMOVE
                        ))
                        .condition_expression(format!("{LIVE} AND size(#data.#field) < :max AND {}", RecentCalls::CONDITION))
                        .expression_attribute_names("#data", "data")
                        .expression_attribute_names("#field", field)
                        .expression_attribute_names("#version", "version")
                        .expression_attribute_values(":new", AttributeValue::L(vec![to_attribute(value)]))
                        .expression_attribute_values(":one", n(1))
                        .expression_attribute_values(":max", n(*max_len as u64));
                    (update, Some(calls))
                }
            };
            self.finish_update(key, update, now, |item| calls.as_ref().is_some_and(|calls| calls.landed_in(item))).await
        })
    }

    fn create_counted<'a>(
        &'a self,
        key: &'a ItemKey,
        record: &'a HandleRecord,
        quota: &'a QuotaKey,
        limit: u32,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(self.create_with_place(key, record, quota, limit))
    }

    fn delete_counted<'a>(
        &'a self,
        key: &'a ItemKey,
        expected_version: Option<u64>,
        now: u64,
        quota_of: &'a PlaceOf<'a>,
    ) -> BoxFuture<'a, Result<Lookup, StoreError>> {
        Box::pin(self.delete_with_place(key, expected_version, now, quota_of))
    }

    fn counts_places(&self) -> bool {
        true
    }

    fn delete<'a>(&'a self, key: &'a ItemKey, expected_version: Option<u64>, now: u64) -> BoxFuture<'a, Result<Lookup, StoreError>> {
        Box::pin(async move {
            // A tombstone for a while (the table's TTL then removes it),
            // marked with this call's id.
            let op = operation_id();
            let delete = self
                .client
                .update_item()
                .table_name(&self.table)
                .key(PARTITION_KEY, s(&key.partition_key))
                .update_expression("SET deleted_op = :op, deleted_at = :now, expires_at = :tombstone")
                .expression_attribute_values(":tombstone", n(now + TOMBSTONE_SECONDS))
                .expression_attribute_names("#owner", "owner")
                .expression_attribute_values(":owner", s(&key.owner))
                .expression_attribute_values(":now", n(now))
                .expression_attribute_values(":op", s(&op))
                .return_values(ReturnValue::AllOld)
                .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
            let delete = match expected_version {
                None => delete.condition_expression(LIVE),
                Some(version) => delete
                    .condition_expression(format!("{LIVE} AND #version = :expected"))
                    .expression_attribute_names("#version", "version")
                    .expression_attribute_values(":expected", n(version)),
            };
            match delete.send().await {
                Ok(output) => Ok(Lookup::Found(record(&output.attributes.unwrap_or_default())?)),
                Err(error) => {
                    let seen = condition_failed(error, |e| match e {
                        UpdateItemError::ConditionalCheckFailedException(c) => c.item.clone(),
                        _ => None,
                    })?;
                    // The SDK's retry of this very delete, whose first
                    // attempt landed: the handle it deleted, as it was.
                    if let Some(item) = seen.as_ref().filter(|item| item.get(DELETED_OP) == Some(&s(&op))) {
                        return Ok(Lookup::Found(record(item)?));
                    }
                    match self.explain(key, seen, now).await? {
                        // Live and owned, so the version moved on.
                        Lookup::LimitReached => Ok(Lookup::Conflict),
                        other => Ok(other),
                    }
                }
            }
        })
    }
}

impl RedemptionLedger for DynamoStore {
    fn redeem<'a>(&'a self, jti: &'a str, expires_at: u64, _now: u64) -> BoxFuture<'a, Result<Redemption, StoreError>> {
        Box::pin(async move {
            // The call's id: the SDK's retry of a redemption that landed
            // finds its own record, and is the first use, not a replay.
            let op = operation_id();
            let result = self
                .client
                .put_item()
                .table_name(&self.table)
                .item(PARTITION_KEY, s(&format!("jti#{jti}")))
                .item(TTL_ATTRIBUTE, n(expires_at))
                .item(LAST_OP, s(&op))
                .condition_expression("attribute_not_exists(pk)")
                .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
                .send()
                .await;
            let Err(error) = result else { return Ok(Redemption::First) };
            let seen = condition_failed(error, |e| match e {
                PutItemError::ConditionalCheckFailedException(c) => c.item.clone(),
                _ => None,
            })?;
            Ok(if seen.is_some_and(|item| item.get(LAST_OP) == Some(&s(&op))) { Redemption::First } else { Redemption::Replay })
        })
    }
}
