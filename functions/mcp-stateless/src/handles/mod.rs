//! Explicit handles: opaque ids for state that spans tool calls (a basket, a
//! workflow), stored server-side, bound to their owner, expiring.
//!
//! A handle is `<prefix>_<128 random bits, base64url>`: nothing in it encodes
//! the owner, a counter or a time. The item's key is derived from the owner
//! *and* the handle, so another principal's lookup of a stolen handle finds
//! nothing at all ("State Handle Hijacking", security-best-practices).

pub mod access;
pub mod resource;

use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::{
    protocol::context::Principal,
    quota::QuotaKey,
    storage::{IdKind, StoreError},
};

/// Where one owner's handle lives (the same key as every owner-bound item).
pub use crate::storage::ItemKey;

/// A kind of handle and its lifetime policy.
#[derive(Debug, Clone, Copy)]
#[allow(clippy::exhaustive_structs, reason = "a fork declares its handle kinds as consts, by struct expression: that is the API")]
pub struct HandleKind {
    /// Short and readable, lowercase ASCII (`bsk`).
    pub prefix: &'static str,
    /// What the tools call it, for messages (`basket`).
    pub noun: &'static str,
    /// The tool that creates one, named in "create a new one" messages.
    pub created_by: &'static str,
    /// Sliding expiry: use pushes `expires_at` this far ahead. A read
    /// writes the new expiry only once a tenth of this has passed since the
    /// last write, so reads are billed as reads.
    pub idle_ttl: Duration,
    /// Absolute expiry: however often it is used, a handle ends this long
    /// after it was created.
    pub max_lifetime: Duration,
    /// Bound on the serialized data, well below DynamoDB's 400 KB item limit.
    pub max_data_bytes: usize,
    /// Handles of this kind one owner may create per `max_lifetime` (see
    /// [`crate::quota`]: at most twice this many are live at once).
    pub max_per_owner: u32,
}

impl HandleKind {
    /// The ids of this kind.
    pub fn ids(&self) -> IdKind {
        IdKind { prefix: self.prefix }
    }

    /// A new handle of this kind.
    pub fn mint(&self) -> String {
        self.ids().mint()
    }

    /// Checked before any store call: a malformed string costs nothing.
    pub fn is_well_formed(&self, handle: &str) -> bool {
        self.ids().is_well_formed(handle)
    }

    /// Where `owner`'s handle `handle` of this kind lives.
    pub fn key(&self, owner: &Principal, handle: &str) -> ItemKey {
        self.ids().key(owner.binding_id(), handle)
    }
}

/// One stored handle.
#[derive(Debug, Clone, PartialEq)]
#[allow(
    clippy::exhaustive_structs,
    reason = "records the storage adapters (mcp-aws) build: a new field must be filled by each, so adding one should not compile until it is"
)]
pub struct HandleRecord {
    /// The owner's [`Principal::binding_id`]: anyone else's lookup finds
    /// nothing.
    pub owner: String,
    /// The kind's id prefix (`bsk`).
    pub kind: String,
    /// The state itself, as the tools wrote it, within the kind's
    /// `max_data_bytes`.
    pub data: Value,
    /// Incremented by every write; compare-and-set updates check it.
    pub version: u64,
    /// Epoch seconds; the absolute lifetime counts from here.
    pub created_at: u64,
    /// Epoch seconds of the last write to the item, the expiry a read
    /// slides now and then included ([`Handles::read`](access::Handles::read)).
    pub last_used_at: u64,
    /// Epoch seconds; the table's TTL attribute. Slides with use, but
    /// [`Handles`](access::Handles) never reports one past `deadline`.
    pub expires_at: u64,
    /// Epoch seconds: `created_at` plus the kind's `max_lifetime`. The item
    /// is dead from then on, whatever `expires_at` says.
    pub deadline: u64,
}

impl HandleRecord {
    /// Dead at `now`: idle too long or past its absolute lifetime.
    pub fn is_expired(&self, now: u64) -> bool {
        self.expires_at <= now || self.deadline <= now
    }
}

/// A change the store applies in the same round trip as the read checks.
#[derive(Debug, Clone, PartialEq)]
#[allow(
    clippy::exhaustive_enums,
    reason = "a port's value that every adapter builds or matches (mcp-aws's, the in-memory ones): a new field or variant must be handled by each, so adding one should not compile until it is"
)]
pub enum Change {
    /// Only slides the expiry: a read that counts as use.
    Touch,
    /// Appends `value` to the list at top-level `field` of the data, unless
    /// the list already holds `max_len` entries.
    Append {
        /// The top-level field of the data that holds the list.
        field: String,
        /// The entry appended.
        value: Value,
        /// The most entries the list may hold: at that length nothing is
        /// written ([`Lookup::LimitReached`]).
        max_len: usize,
    },
}

/// What a [`HandleStore`] call found, and so whether its write happened.
#[derive(Debug, Clone, PartialEq)]
#[allow(
    clippy::exhaustive_enums,
    reason = "a port's value that every adapter builds or matches (mcp-aws's, the in-memory ones): a new field or variant must be handled by each, so adding one should not compile until it is"
)]
pub enum Lookup {
    /// The live record: as it stands (after this call's write, if any), or
    /// as it was before a delete.
    Found(HandleRecord),
    /// Unknown, or somebody else's: the two are indistinguishable by design.
    Missing,
    /// Past `expires_at`. The store deletes the item when it sees this.
    Expired,
    /// The change would exceed its bound; nothing was written.
    LimitReached,
    /// A compare-and-set lost to another writer; nothing was written.
    Conflict,
}

/// Which place (the owner's counter, in the window of the item's creation)
/// a stored handle counts in: what a counted delete gives back.
pub type PlaceOf<'f> = dyn Fn(&HandleRecord) -> QuotaKey + Send + Sync + 'f;

/// The port. Every method is one store round trip unless documented.
pub trait HandleStore: Send + Sync {
    /// Writes a new item; never overwrites an existing one, and fails
    /// when the key is taken (a lost race for a first write).
    fn create<'a>(&'a self, key: &'a ItemKey, record: &'a HandleRecord) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Reads the item; `Expired` items are deleted (a second round trip,
    /// only then), since DynamoDB's TTL deletes lazily.
    fn get<'a>(&'a self, key: &'a ItemKey, now: u64) -> BoxFuture<'a, Result<Lookup, StoreError>>;

    /// Replaces the data if the version is still `expected_version`,
    /// bumping it and sliding the expiry.
    fn replace<'a>(
        &'a self,
        key: &'a ItemKey,
        expected_version: u64,
        data: &'a Value,
        now: u64,
        expires_at: u64,
    ) -> BoxFuture<'a, Result<Lookup, StoreError>>;

    /// Checks existence and expiry, applies `change` and slides the expiry,
    /// in one round trip; an append also bumps the version (a touch changes
    /// no data, so compare-and-set writers need not retry). Answers the new
    /// record.
    fn apply<'a>(&'a self, key: &'a ItemKey, change: &'a Change, now: u64, expires_at: u64) -> BoxFuture<'a, Result<Lookup, StoreError>>;

    /// Deletes the item if it is live (and still at `expected_version`,
    /// when given: `Conflict` otherwise); answers what it found.
    fn delete<'a>(&'a self, key: &'a ItemKey, expected_version: Option<u64>, now: u64) -> BoxFuture<'a, Result<Lookup, StoreError>>;

    /// [`create`](Self::create), and a place taken for it in `quota` (at
    /// most `limit`), in one write: both or neither, however the SDK
    /// retries and whenever a first attempt lands. `Ok(false)`: no place
    /// left, nothing written. An error says the handle is not there and
    /// will not be: a store settles a write whose every answer was lost
    /// before it answers (it reports the handle created if it landed). A
    /// store that counts in the same write says so in
    /// [`counts_places`](Self::counts_places); `Handles` counts apart, in
    /// its [`CreationQuota`](crate::quota::CreationQuota), for any other.
    fn create_counted<'a>(
        &'a self,
        _key: &'a ItemKey,
        _record: &'a HandleRecord,
        _quota: &'a QuotaKey,
        _limit: u32,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(std::future::ready(Err(StoreError::Unavailable("this store does not count places".into()))))
    }

    /// [`delete`](Self::delete), and the place `quota_of` the record names
    /// given back, in one write (see [`create_counted`](Self::create_counted)).
    fn delete_counted<'a>(
        &'a self,
        _key: &'a ItemKey,
        _expected_version: Option<u64>,
        _now: u64,
        _quota_of: &'a PlaceOf<'a>,
    ) -> BoxFuture<'a, Result<Lookup, StoreError>> {
        Box::pin(std::future::ready(Err(StoreError::Unavailable("this store does not count places".into()))))
    }

    /// Whether [`create_counted`](Self::create_counted) and
    /// [`delete_counted`](Self::delete_counted) are served.
    fn counts_places(&self) -> bool {
        false
    }
}

pub mod memory {
    //! The zero-setup store for `cargo run` and unit tests.

    use std::collections::HashMap;

    use super::*;
    use crate::storage::LockedMap;

    /// Handles in a map in this process: lost when it ends, and unseen by
    /// any other instance.
    #[derive(Default)]
    pub struct InMemoryHandleStore {
        items: LockedMap<HandleRecord>,
    }

    impl InMemoryHandleStore {
        fn with_items<T>(&self, f: impl FnOnce(&mut HashMap<String, HandleRecord>) -> T) -> Result<T, StoreError> {
            self.items.with(f)
        }

        /// The live record for `key`, deleting it if expired.
        fn live<'m>(items: &'m mut HashMap<String, HandleRecord>, key: &ItemKey, now: u64) -> Result<&'m mut HandleRecord, Lookup> {
            match items.get(&key.partition_key) {
                None => Err(Lookup::Missing),
                Some(record) if record.owner != key.owner => Err(Lookup::Missing),
                Some(record) if record.is_expired(now) => {
                    items.remove(&key.partition_key);
                    Err(Lookup::Expired)
                }
                Some(_) => Ok(items.get_mut(&key.partition_key).expect("present")),
            }
        }
    }

    fn ready<'a, T: Send + 'a>(value: T) -> BoxFuture<'a, T> {
        Box::pin(async move { value })
    }

    impl HandleStore for InMemoryHandleStore {
        fn create<'a>(&'a self, key: &'a ItemKey, record: &'a HandleRecord) -> BoxFuture<'a, Result<(), StoreError>> {
            ready(
                self.with_items(|items| match items.entry(key.partition_key.clone()) {
                    std::collections::hash_map::Entry::Occupied(_) => Err(StoreError::Unavailable("the item exists".into())),
                    std::collections::hash_map::Entry::Vacant(slot) => {
                        slot.insert(record.clone());
                        Ok(())
                    }
                })
                .and_then(|created| created),
            )
        }

        fn get<'a>(&'a self, key: &'a ItemKey, now: u64) -> BoxFuture<'a, Result<Lookup, StoreError>> {
            ready(self.with_items(|items| match Self::live(items, key, now) {
                Ok(record) => Lookup::Found(record.clone()),
                Err(outcome) => outcome,
            }))
        }

        fn replace<'a>(
            &'a self,
            key: &'a ItemKey,
            expected_version: u64,
            data: &'a Value,
            now: u64,
            expires_at: u64,
        ) -> BoxFuture<'a, Result<Lookup, StoreError>> {
            ready(self.with_items(|items| match Self::live(items, key, now) {
                Ok(record) if record.version != expected_version => Lookup::Conflict,
                Ok(record) => {
                    record.data = data.clone();
                    record.version += 1;
                    record.last_used_at = now;
                    record.expires_at = expires_at;
                    Lookup::Found(record.clone())
                }
                Err(outcome) => outcome,
            }))
        }

        fn apply<'a>(
            &'a self,
            key: &'a ItemKey,
            change: &'a Change,
            now: u64,
            expires_at: u64,
        ) -> BoxFuture<'a, Result<Lookup, StoreError>> {
            ready(self.with_items(|items| {
                let record = match Self::live(items, key, now) {
                    Ok(record) => record,
                    Err(outcome) => return outcome,
                };
                let Change::Append { field, value, max_len } = change else {
                    record.last_used_at = now;
                    record.expires_at = expires_at;
                    return Lookup::Found(record.clone());
                };
                let Some(list) = record.data.get_mut(field).and_then(Value::as_array_mut) else {
                    return Lookup::LimitReached;
                };
                if list.len() >= *max_len {
                    return Lookup::LimitReached;
                }
                list.push(value.clone());
                record.version += 1;
                record.last_used_at = now;
                record.expires_at = expires_at;
                Lookup::Found(record.clone())
            }))
        }

        fn delete<'a>(&'a self, key: &'a ItemKey, expected_version: Option<u64>, now: u64) -> BoxFuture<'a, Result<Lookup, StoreError>> {
            ready(self.with_items(|items| match Self::live(items, key, now) {
                Ok(record) if expected_version.is_some_and(|v| v != record.version) => Lookup::Conflict,
                Ok(_) => Lookup::Found(items.remove(&key.partition_key).expect("present")),
                Err(outcome) => outcome,
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIND: HandleKind = HandleKind {
        prefix: "bsk",
        noun: "basket",
        created_by: "create_basket",
        idle_ttl: Duration::from_secs(60),
        max_lifetime: Duration::from_secs(600),
        max_data_bytes: 1024,
        max_per_owner: 10,
    };

    #[test]
    fn minted_handles_are_well_formed_and_distinct() {
        let a = KIND.mint();
        let b = KIND.mint();
        assert_ne!(a, b);
        assert!(a.starts_with("bsk_") && a.len() == 4 + 22);
        assert!(KIND.is_well_formed(&a));
        for bad in ["", "bsk_", "bsk_short", "xyz_AAAAAAAAAAAAAAAAAAAAAA", "bsk_AAAAAAAAAAAAAAAAAAAA!A", &format!("{a}A")] {
            assert!(!KIND.is_well_formed(bad), "{bad}");
        }
    }

    #[test]
    fn keys_depend_on_owner_and_handle() {
        let alice = Principal::Verified { issuer: "i".into(), subject: "alice".into() };
        let bob = Principal::Verified { issuer: "i".into(), subject: "bob".into() };
        let h = KIND.mint();
        assert_ne!(KIND.key(&alice, &h), KIND.key(&bob, &h));
        assert_eq!(KIND.key(&alice, &h), KIND.key(&alice, &h));
        assert!(!KIND.key(&alice, &h).partition_key.contains("alice"));
    }
}
