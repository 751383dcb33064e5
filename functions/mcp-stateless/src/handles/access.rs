//! What tools call to use handles: owner binding from the request context,
//! expiry policy, size limits, compare-and-set retries, and the messages a
//! model sees when a handle is unknown or expired.

use std::{sync::Arc, time::Duration};

use rmcp::model::{CallToolResult, ContentBlock, ErrorData};
use serde_json::Value;

use crate::{
    clock::Clock,
    handles::{Change, HandleKind, HandleRecord, HandleStore, ItemKey, Lookup},
    protocol::context::CallContext,
    quota::{CreationQuota, InMemoryQuota, QuotaKey},
    storage::{Backoff, StoreError},
};

/// Compare-and-set attempts before giving up with [`HandleFailure::Busy`].
const MAX_CAS_ATTEMPTS: u32 = 8;
const CAS_BACKOFF_START: Duration = Duration::from_millis(10);

/// Why a handle operation did not happen, in terms a tool can answer with
/// ([`into_tool_result`](Self::into_tool_result)).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum HandleFailure {
    /// Unknown, malformed or somebody else's: one answer for all three.
    Unknown,
    /// Past its sliding or its absolute expiry: a new one must be created.
    Expired,
    /// The data would outgrow the kind's byte budget, or one appended entry
    /// its share of it; nothing was written.
    TooLarge {
        /// The kind's `max_data_bytes`, as the message names it.
        limit: usize,
    },
    /// An append found its list full ([`Change::Append`]'s `max_len`);
    /// nothing was written.
    LimitReached,
    /// The owner holds as many of this kind as it may.
    TooMany,
    /// Lost every compare-and-set attempt to concurrent writers.
    Busy,
    /// The store failed: the tool answers -32603, and only the log has the
    /// detail.
    Store(StoreError),
}

impl HandleFailure {
    /// A tool error the model can act on, or -32603 for a store failure.
    pub fn into_tool_result(self, kind: &HandleKind) -> Result<CallToolResult, ErrorData> {
        let (noun, create) = (kind.noun, kind.created_by);
        let message = match self {
            Self::Unknown => format!("Unknown {noun} handle. Create a new {noun} with {create} and use the handle it returns."),
            Self::Expired => format!(
                "This {noun} expired ({} after its last use, or {} after it was created). Create a new {noun} with {create}.",
                describe(kind.idle_ttl),
                describe(kind.max_lifetime)
            ),
            Self::TooLarge { limit } => format!("The {noun} would exceed its size limit of {limit} bytes."),
            Self::LimitReached => format!("The {noun} is full."),
            Self::TooMany => {
                format!("You have too many open {noun}s. Finish or discard one you no longer need, or wait for one to expire.")
            }
            Self::Busy => format!("The {noun} is being changed by other calls right now; try again."),
            Self::Store(error) => {
                tracing::error!(%error, "handle store failed");
                return Err(ErrorData::internal_error("storage unavailable", None));
            }
        };
        Ok(CallToolResult::error(vec![ContentBlock::text(message)]))
    }
}

/// "24 hours", "30 minutes": for lifetime policies in messages and tool
/// descriptions.
pub fn describe(ttl: Duration) -> String {
    let secs = ttl.as_secs();
    match secs {
        s if s % 86_400 == 0 && s >= 86_400 * 2 => format!("{} days", s / 86_400),
        s if s % 3_600 == 0 && s >= 3_600 => format!("{} hours", s / 3_600),
        s if s % 60 == 0 && s >= 60 => format!("{} minutes", s / 60),
        s => format!("{s} seconds"),
    }
}

fn outcome(lookup: Result<Lookup, StoreError>) -> Result<HandleRecord, HandleFailure> {
    match lookup.map_err(HandleFailure::Store)? {
        Lookup::Found(mut record) => {
            // The store slides `expires_at` without knowing the deadline.
            record.expires_at = record.expires_at.min(record.deadline);
            Ok(record)
        }
        Lookup::Missing => Err(HandleFailure::Unknown),
        Lookup::Expired => Err(HandleFailure::Expired),
        Lookup::LimitReached => Err(HandleFailure::LimitReached),
        Lookup::Conflict => Err(HandleFailure::Busy),
    }
}

/// Handles as tools use them: each call binds to the caller in its
/// [`CallContext`], applies the kind's expiry, size and quota rules, and
/// says what went wrong as a [`HandleFailure`]. Cheap to clone.
#[derive(Clone)]
pub struct Handles {
    store: Arc<dyn HandleStore>,
    clock: Arc<dyn Clock>,
    quota: Arc<dyn CreationQuota>,
}

impl Handles {
    /// With a per-process quota: right for the local server, wrong for
    /// Lambda, where [`with_quota`](Self::with_quota) gives it the table.
    pub fn new(store: Arc<dyn HandleStore>, clock: Arc<dyn Clock>) -> Self {
        Self { store, clock, quota: Arc::new(InMemoryQuota::default()) }
    }

    /// Where the records are kept, for what is kept alike
    /// (`LegacySessions::of`).
    #[cfg(feature = "legacy")]
    pub(crate) fn store(&self) -> Arc<dyn HandleStore> {
        self.store.clone()
    }

    /// Counts creations per owner in `quota` rather than in this process,
    /// for a store that does not count places itself
    /// ([`HandleStore::counts_places`]; the table does, in the same write
    /// as the item).
    pub fn with_quota(mut self, quota: Arc<dyn CreationQuota>) -> Self {
        self.quota = quota;
        self
    }

    fn key(&self, ctx: &CallContext, kind: &HandleKind, handle: &str) -> Result<ItemKey, HandleFailure> {
        if !kind.is_well_formed(handle) {
            return Err(HandleFailure::Unknown);
        }
        Ok(kind.key(&ctx.principal, handle))
    }

    fn check_size(kind: &HandleKind, data: &Value) -> Result<(), HandleFailure> {
        let size = serde_json::to_vec(data).map_or(usize::MAX, |bytes| bytes.len());
        if size > kind.max_data_bytes {
            return Err(HandleFailure::TooLarge { limit: kind.max_data_bytes });
        }
        Ok(())
    }

    /// Mints a handle owned by the caller, within the owner's quota for
    /// the kind. Where the store counts places itself (the table), the item
    /// and its place are one write; elsewhere two round trips (the quota,
    /// the item).
    pub async fn create(&self, ctx: &CallContext, kind: &HandleKind, data: Value) -> Result<String, HandleFailure> {
        Self::check_size(kind, &data)?;
        let handle = kind.mint();
        let now = self.clock.now();
        let key = kind.key(&ctx.principal, &handle);
        let quota = QuotaKey::new(&key.owner, kind.prefix, kind.max_lifetime, now);
        let record = HandleRecord {
            owner: key.owner.clone(),
            kind: kind.prefix.to_owned(),
            data,
            version: 1,
            created_at: now,
            last_used_at: now,
            expires_at: now + kind.idle_ttl.as_secs(),
            deadline: now + kind.max_lifetime.as_secs(),
        };
        if self.store.counts_places() {
            // Both or neither: an answer lost after it landed, or a give-back
            // that fails, can no longer leave a place counted for no item.
            return match self.store.create_counted(&key, &record, &quota, kind.max_per_owner).await {
                Ok(true) => Ok(handle),
                Ok(false) => Err(HandleFailure::TooMany),
                Err(error) => Err(HandleFailure::Store(error)),
            };
        }
        if !self.quota.take(&quota, kind.max_per_owner).await.map_err(HandleFailure::Store)? {
            return Err(HandleFailure::TooMany);
        }
        if let Err(error) = self.store.create(&key, &record).await {
            self.give_back(&quota).await;
            return Err(HandleFailure::Store(error));
        }
        Ok(handle)
    }

    /// Reads, sliding the expiry only when a tenth of the idle lifetime has
    /// passed since the last write: one read round trip, and now and then a
    /// write.
    pub async fn read(&self, ctx: &CallContext, kind: &HandleKind, handle: &str) -> Result<HandleRecord, HandleFailure> {
        let key = self.key(ctx, kind, handle)?;
        let now = self.clock.now();
        let record = outcome(self.store.get(&key, now).await)?;
        if now.saturating_sub(record.last_used_at) < kind.idle_ttl.as_secs() / 10 {
            return Ok(record);
        }
        outcome(self.store.apply(&key, &Change::Touch, now, now + kind.idle_ttl.as_secs()).await)
    }

    /// Reads without sliding the expiry: for watchers, whose reads are not
    /// the owner using the handle.
    pub async fn peek(&self, ctx: &CallContext, kind: &HandleKind, handle: &str) -> Result<HandleRecord, HandleFailure> {
        let key = self.key(ctx, kind, handle)?;
        outcome(self.store.get(&key, self.clock.now()).await)
    }

    /// Best effort: a count not given back only lowers the owner's quota
    /// until its window ends.
    async fn give_back(&self, quota: &QuotaKey) {
        if let Err(error) = self.quota.give_back(quota).await {
            tracing::warn!(%error, "could not give back a handle quota count");
        }
    }

    /// Deletes the item under `key` (at `version`, if given) and gives its
    /// place back: in the store's one write where it counts places, else
    /// the quota's own (best effort) after the delete.
    async fn delete_item(&self, kind: &HandleKind, key: &ItemKey, version: Option<u64>) -> Result<HandleRecord, HandleFailure> {
        let now = self.clock.now();
        let quota_of = |record: &HandleRecord| QuotaKey::new(&record.owner, kind.prefix, kind.max_lifetime, record.created_at);
        if self.store.counts_places() {
            return outcome(self.store.delete_counted(key, version, now, &quota_of).await);
        }
        let record = outcome(self.store.delete(key, version, now).await)?;
        self.give_back(&quota_of(&record)).await;
        Ok(record)
    }

    /// One round trip: existence, owner and expiry checks, the change, the
    /// version bump and the new expiry in a single conditional write.
    pub async fn apply(&self, ctx: &CallContext, kind: &HandleKind, handle: &str, change: &Change) -> Result<HandleRecord, HandleFailure> {
        if let Change::Append { value, max_len, .. } = change {
            // The store's condition counts elements, not bytes: each element
            // gets an equal share of the kind's byte budget, so a full list
            // still fits in it (and far under DynamoDB's 400 KB item limit).
            let share = kind.max_data_bytes / (*max_len).max(1);
            if serde_json::to_vec(value).map_or(usize::MAX, |bytes| bytes.len()) > share {
                return Err(HandleFailure::TooLarge { limit: kind.max_data_bytes });
            }
        }
        let key = self.key(ctx, kind, handle)?;
        let now = self.clock.now();
        outcome(self.store.apply(&key, change, now, now + kind.idle_ttl.as_secs()).await)
    }

    /// Read, modify, compare-and-set; retried with backoff when another
    /// writer got there first. Two round trips when uncontended.
    pub async fn update(
        &self,
        ctx: &CallContext,
        kind: &HandleKind,
        handle: &str,
        mut modify: impl FnMut(&mut Value),
    ) -> Result<HandleRecord, HandleFailure> {
        let key = self.key(ctx, kind, handle)?;
        let mut backoff = Backoff::new(MAX_CAS_ATTEMPTS, CAS_BACKOFF_START);
        loop {
            let now = self.clock.now();
            let mut record = outcome(self.store.get(&key, now).await)?;
            modify(&mut record.data);
            Self::check_size(kind, &record.data)?;
            let expires_at = now + kind.idle_ttl.as_secs();
            match outcome(self.store.replace(&key, record.version, &record.data, now, expires_at).await) {
                Err(HandleFailure::Busy) if backoff.retry().await => {}
                done => return done,
            }
        }
    }

    /// Deletes the caller's live handle (revoking it) and gives its quota
    /// count back. Two round trips.
    pub async fn delete(&self, ctx: &CallContext, kind: &HandleKind, handle: &str) -> Result<HandleRecord, HandleFailure> {
        let key = self.key(ctx, kind, handle)?;
        self.delete_item(kind, &key, None).await
    }

    /// Deletes the caller's live handle only if it is still at `version`
    /// (the version a confirmation described): [`HandleFailure::Busy`] if it
    /// changed since. Two round trips.
    pub async fn delete_at(&self, ctx: &CallContext, kind: &HandleKind, handle: &str, version: u64) -> Result<HandleRecord, HandleFailure> {
        let key = self.key(ctx, kind, handle)?;
        self.delete_item(kind, &key, Some(version)).await
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{clock::ManualClock, handles::memory::InMemoryHandleStore, protocol::context::Principal};

    const BASKET: HandleKind = HandleKind {
        prefix: "bsk",
        noun: "basket",
        created_by: "create_basket",
        idle_ttl: Duration::from_secs(3_600),
        max_lifetime: Duration::from_secs(3 * 3_600),
        max_data_bytes: 200,
        max_per_owner: 3,
    };

    fn ctx(subject: &str) -> CallContext {
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
        CallContext::from_meta(Some(&meta), None, Principal::Verified { issuer: "i".into(), subject: subject.into() }).unwrap()
    }

    #[tokio::test]
    async fn owner_binding_expiry_and_limits() {
        let clock = ManualClock::at(1_000);
        let handles = Handles::new(Arc::new(InMemoryHandleStore::default()), Arc::new(clock.clone()));
        let alice = ctx("alice");
        let h = handles.create(&alice, &BASKET, json!({"items": []})).await.unwrap();
        let add = Change::Append { field: "items".into(), value: json!("apple"), max_len: 2 };
        assert_eq!(handles.apply(&alice, &BASKET, &h, &add).await.unwrap().data, json!({"items": ["apple"]}));

        assert_eq!(handles.read(&ctx("bob"), &BASKET, &h).await.unwrap_err(), HandleFailure::Unknown);
        assert_eq!(handles.read(&alice, &BASKET, "bsk_nope").await.unwrap_err(), HandleFailure::Unknown);
        let unknown = handles.read(&alice, &BASKET, &BASKET.mint()).await.unwrap_err();
        let foreign = handles.read(&ctx("bob"), &BASKET, &h).await.unwrap_err();
        assert_eq!(unknown.into_tool_result(&BASKET), foreign.into_tool_result(&BASKET));

        handles.apply(&alice, &BASKET, &h, &add).await.unwrap();
        assert_eq!(handles.apply(&alice, &BASKET, &h, &add).await.unwrap_err(), HandleFailure::LimitReached);
        let big = handles.update(&alice, &BASKET, &h, |d| d["note"] = json!("x".repeat(300))).await;
        assert_eq!(big.unwrap_err(), HandleFailure::TooLarge { limit: 200 });

        // Sliding expiry: a use at +50 min keeps it alive at +100 min.
        clock.advance(3_000);
        handles.read(&alice, &BASKET, &h).await.unwrap();
        clock.advance(3_000);
        assert!(handles.read(&alice, &BASKET, &h).await.is_ok());
        clock.advance(3_600);
        assert_eq!(handles.read(&alice, &BASKET, &h).await.unwrap_err(), HandleFailure::Expired);
        assert_eq!(handles.read(&alice, &BASKET, &h).await.unwrap_err(), HandleFailure::Unknown, "deleted once seen expired");
    }

    #[tokio::test]
    async fn appends_cannot_grow_a_handle_past_its_byte_budget() {
        let handles = Handles::new(Arc::new(InMemoryHandleStore::default()), Arc::new(ManualClock::at(1_000)));
        let alice = ctx("alice");
        let h = handles.create(&alice, &BASKET, json!({"items": []})).await.unwrap();
        // A 200-byte budget over at most 4 elements: 50 bytes each.
        let fits = Change::Append { field: "items".into(), value: json!("x".repeat(40)), max_len: 4 };
        for _ in 0..4 {
            handles.apply(&alice, &BASKET, &h, &fits).await.unwrap();
        }
        assert_eq!(handles.apply(&alice, &BASKET, &h, &fits).await.unwrap_err(), HandleFailure::LimitReached);
        let full = handles.read(&alice, &BASKET, &h).await.unwrap();
        assert!(serde_json::to_vec(&full.data).unwrap().len() <= BASKET.max_data_bytes, "a full list fits the budget");

        let other = handles.create(&alice, &BASKET, json!({"items": []})).await.unwrap();
        let too_big = Change::Append { field: "items".into(), value: json!("x".repeat(60)), max_len: 4 };
        assert_eq!(handles.apply(&alice, &BASKET, &other, &too_big).await.unwrap_err(), HandleFailure::TooLarge { limit: 200 });
        assert_eq!(handles.read(&alice, &BASKET, &other).await.unwrap().data, json!({"items": []}), "nothing written");
    }

    #[tokio::test]
    async fn use_cannot_keep_a_handle_past_its_absolute_lifetime() {
        let clock = ManualClock::at(1_000);
        let handles = Handles::new(Arc::new(InMemoryHandleStore::default()), Arc::new(clock.clone()));
        let alice = ctx("alice");
        let h = handles.create(&alice, &BASKET, json!({"items": []})).await.unwrap();
        for _ in 0..5 {
            clock.advance(2_000);
            let record = handles.read(&alice, &BASKET, &h).await.unwrap();
            assert!(record.expires_at <= 1_000 + 3 * 3_600, "never reported past the deadline");
        }
        clock.advance(1_000);
        assert_eq!(handles.read(&alice, &BASKET, &h).await.unwrap_err(), HandleFailure::Expired, "11,000 s > 3 h, though used");
    }

    #[tokio::test]
    async fn reads_write_the_expiry_only_now_and_then() {
        let clock = ManualClock::at(1_000);
        let handles = Handles::new(Arc::new(InMemoryHandleStore::default()), Arc::new(clock.clone()));
        let alice = ctx("alice");
        let h = handles.create(&alice, &BASKET, json!({"items": []})).await.unwrap();
        clock.advance(100);
        assert_eq!(handles.read(&alice, &BASKET, &h).await.unwrap().last_used_at, 1_000, "a read, not a write");
        clock.advance(300);
        let touched = handles.read(&alice, &BASKET, &h).await.unwrap();
        assert_eq!((touched.last_used_at, touched.expires_at), (1_400, 1_400 + 3_600), "a tenth of the idle TTL passed");
    }

    #[tokio::test]
    async fn an_owner_holds_a_bounded_number_and_deleting_one_frees_a_place() {
        let handles = Handles::new(Arc::new(InMemoryHandleStore::default()), Arc::new(ManualClock::at(1_000)));
        let alice = ctx("alice");
        let mut held = Vec::new();
        for _ in 0..3 {
            held.push(handles.create(&alice, &BASKET, json!({})).await.unwrap());
        }
        assert_eq!(handles.create(&alice, &BASKET, json!({})).await.unwrap_err(), HandleFailure::TooMany);
        assert!(handles.create(&ctx("bob"), &BASKET, json!({})).await.is_ok(), "per owner");
        handles.delete(&alice, &BASKET, &held[0]).await.unwrap();
        assert!(handles.create(&alice, &BASKET, json!({})).await.is_ok(), "a revoked handle gives its place back");
    }

    #[test]
    fn lifetimes_read_naturally() {
        assert_eq!(describe(Duration::from_secs(86_400)), "24 hours");
        assert_eq!(describe(Duration::from_secs(1_800)), "30 minutes");
        assert_eq!(describe(Duration::from_secs(3 * 86_400)), "3 days");
    }
}
