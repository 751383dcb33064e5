//! A handle's item and its owner's place (`quota#...`) in one
//! `TransactWriteItems`, so the two never disagree (issue 44): a create
//! counts exactly the items it wrote, a delete gives back exactly the
//! places of the items it deleted, whatever the SDK retries, whenever a
//! first attempt lands, and whether or not an answer was lost.
//!
//! Why one transaction, and how its retries are recognised: `places.rs`.
//! Here a create's retry finds its own `created_op`, a delete's its own
//! tombstone; a first attempt that lands after its retry finds the item
//! there (or tombstoned) and changes nothing.
//!
//! Round trips: a create 1 (one more only when every attempt failed: the
//! tombstone that settles it); a delete 2 (a consistent read
//! names the place's window, from the item's creation time, and its
//! version; then the transaction). The place is the quota's own item (`dynamo/places.rs`).

use std::time::Duration;

use aws_sdk_dynamodb::types::{Put, TransactWriteItem, Update};
use mcp_stateless::{
    handles::{HandleRecord, HandleStore, ItemKey, Lookup, PlaceOf},
    quota::QuotaKey,
    storage::{Backoff, StoreError},
};

use super::{
    DynamoStore, Item, PARTITION_KEY, TTL_ATTRIBUTE,
    handles::{CREATED_OP, DELETED_OP, LIVE, TOMBSTONE_SECONDS, handle_item, record},
    n, operation_id,
    places::{Written, built, carries},
    s,
};

/// A deleted handle's tombstone, written by the call `op` where nothing is.
fn tombstone_claim(key: &ItemKey, record: &HandleRecord, op: &str) -> Item {
    Item::from([
        (PARTITION_KEY.to_owned(), s(&key.partition_key)),
        ("owner".to_owned(), s(&record.owner)),
        ("kind".to_owned(), s(&record.kind)),
        (DELETED_OP.to_owned(), s(op)),
        ("deleted_at".to_owned(), n(record.created_at)),
        (TTL_ATTRIBUTE.to_owned(), n(record.created_at + TOMBSTONE_SECONDS)),
    ])
}

/// Reads and sends of a delete without a version that other writes to
/// the item keep overtaking.
const UNVERSIONED_DELETE_ATTEMPTS: u32 = 4;

impl DynamoStore {
    pub(super) async fn create_with_place(
        &self,
        key: &ItemKey,
        record: &HandleRecord,
        quota: &QuotaKey,
        limit: u32,
    ) -> Result<bool, StoreError> {
        let op = operation_id();
        let take = self.take_place(quota, limit)?;
        let put = built(
            Put::builder()
                .table_name(&self.table)
                .set_item(Some(handle_item(key, record, &op)))
                .condition_expression("attribute_not_exists(pk)")
                .build(),
        )?;
        let writes = vec![TransactWriteItem::builder().update(take).build(), TransactWriteItem::builder().put(put).build()];
        let refused = match self.transact(&op, writes).await {
            Ok(Written::Done) => return Ok(true),
            Ok(Written::Refused(failed)) => failed,
            // Settled by a tombstone where nothing is.
            Err(error) => return self.settle_failed_create(tombstone_claim(key, record, &op), CREATED_OP, &op, error).await,
        };
        // The put's condition held: the key was free, and only the place
        // was missing.
        if refused.get(1) != Some(&true) {
            return Ok(false);
        }
        // The key is there: this very create, landed before its retry, or
        // (a random id's key is never taken by chance) a tombstone that a
        // late create cannot bring back.
        if self.written_by(key, CREATED_OP, &op).await? {
            return Ok(true);
        }
        Err(StoreError::Unavailable("the handle's key is taken".into()))
    }

    /// A delete without a version (`Handles::delete`) is read again and
    /// sent again when another write changed the item between its read and
    /// its transaction, as the plain conditional delete never saw them.
    pub(super) async fn delete_with_place(
        &self,
        key: &ItemKey,
        expected_version: Option<u64>,
        now: u64,
        quota_of: &PlaceOf<'_>,
    ) -> Result<Lookup, StoreError> {
        let mut backoff = Backoff::new(UNVERSIONED_DELETE_ATTEMPTS, Duration::from_millis(10));
        loop {
            match self.delete_once(key, expected_version, now, quota_of).await? {
                Lookup::Conflict if expected_version.is_none() && backoff.retry().await => {}
                other => return Ok(other),
            }
        }
    }

    async fn delete_once(
        &self,
        key: &ItemKey,
        expected_version: Option<u64>,
        now: u64,
        quota_of: &PlaceOf<'_>,
    ) -> Result<Lookup, StoreError> {
        let Some(item) = self.owned_item(key).await? else {
            return Ok(Lookup::Missing);
        };
        let found = record(&item)?;
        if found.is_expired(now) {
            self.delete_expired(key, now).await?;
            return Ok(Lookup::Expired);
        }
        if expected_version.is_some_and(|version| version != found.version) {
            return Ok(Lookup::Conflict);
        }
        let op = operation_id();
        let tombstone = built(
            Update::builder()
                .table_name(&self.table)
                .key(PARTITION_KEY, s(&key.partition_key))
                .update_expression("SET deleted_op = :op, deleted_at = :now, expires_at = :tombstone")
                .condition_expression(format!("{LIVE} AND #version = :seen"))
                .expression_attribute_names("#owner", "owner")
                .expression_attribute_names("#version", "version")
                .expression_attribute_values(":owner", s(&key.owner))
                .expression_attribute_values(":now", n(now))
                .expression_attribute_values(":op", s(&op))
                .expression_attribute_values(":seen", n(found.version))
                .expression_attribute_values(":tombstone", n(now + TOMBSTONE_SECONDS))
                .build(),
        )?;
        let give_back = self.give_back_place(&quota_of(&found))?;
        let writes = vec![TransactWriteItem::builder().update(tombstone).build(), TransactWriteItem::builder().update(give_back).build()];
        match self.transact(&op, writes).await? {
            Written::Done => Ok(Lookup::Found(found)),
            Written::Refused(failed) => {
                let now_stored = self.stored(key).await?;
                // This very delete, landed before its retry: what it deleted.
                if now_stored.as_ref().is_some_and(|item| carries(item, DELETED_OP, &op)) {
                    return Ok(Lookup::Found(found));
                }
                match failed.as_slice() {
                    // No place to give back (its window was forgotten, or
                    // counted apart before this store counted): delete alone.
                    [false, true] => HandleStore::delete(self, key, Some(found.version), now).await,
                    _ => match self.explain(key, now_stored, now).await? {
                        // Live and owned, so the version moved on.
                        Lookup::LimitReached => Ok(Lookup::Conflict),
                        other => Ok(other),
                    },
                }
            }
        }
    }
}
