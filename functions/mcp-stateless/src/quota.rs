//! Per-owner caps on what callers can make the server store (handles,
//! tasks), so one principal cannot fill the table or the bill.
//!
//! Counting live items exactly would take a transaction per create and per
//! expiry (and DynamoDB's TTL expires items without telling anyone).
//! Instead each owner gets a counter per window of the kind's absolute
//! lifetime: a create takes one from the current window's counter, in one
//! conditional write. Every item ends within its lifetime, so an item live
//! now was created in the current window or the one before: no owner holds
//! more than twice the limit at once. An item its owner deletes gives its
//! count back; one that expires does not (its window ends soon anyway).

use std::time::Duration;

use aws_lc_rs::digest::{SHA256, digest};
use futures::future::BoxFuture;

use crate::storage::{LockedMap, StoreError, hex};

/// One owner's counter for one kind and window.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct QuotaKey {
    /// `quota#<kind>#<hex SHA-256 of owner>#<window number>`.
    pub partition_key: String,
    /// When the counter may be forgotten: the end of the window after this
    /// one (the table's TTL attribute).
    pub expires_at: u64,
}

impl QuotaKey {
    /// The counter for items of `kind` that `owner` creates at `created_at`
    /// (epoch seconds), in windows `lifetime` long.
    pub fn new(owner: &str, kind: &str, lifetime: Duration, created_at: u64) -> Self {
        let window = lifetime.as_secs().max(1);
        let number = created_at / window;
        let hash = hex(digest(&SHA256, owner.as_bytes()).as_ref());
        Self { partition_key: format!("quota#{kind}#{hash}#{number}"), expires_at: (number + 2) * window }
    }
}

/// The port: one store round trip per call.
pub trait CreationQuota: Send + Sync {
    /// Counts one creation unless `limit` are counted already; false then,
    /// and nothing is written.
    fn take<'a>(&'a self, key: &'a QuotaKey, limit: u32) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Uncounts one (an item its owner deleted, or one whose create failed).
    fn give_back<'a>(&'a self, key: &'a QuotaKey) -> BoxFuture<'a, Result<(), StoreError>>;
}

/// For `cargo run` and unit tests: correct for one process, which is all
/// the local server is.
#[derive(Default)]
pub struct InMemoryQuota {
    counts: LockedMap<u32>,
}

impl CreationQuota for InMemoryQuota {
    fn take<'a>(&'a self, key: &'a QuotaKey, limit: u32) -> BoxFuture<'a, Result<bool, StoreError>> {
        let taken = self.counts.with(|counts| {
            let count = counts.entry(key.partition_key.clone()).or_default();
            let free = *count < limit;
            if free {
                *count += 1;
            }
            free
        });
        Box::pin(async move { taken })
    }

    fn give_back<'a>(&'a self, key: &'a QuotaKey) -> BoxFuture<'a, Result<(), StoreError>> {
        let given = self.counts.with(|counts| {
            if let Some(count) = counts.get_mut(&key.partition_key) {
                *count = count.saturating_sub(1);
            }
        });
        Box::pin(async move { given })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WEEK: Duration = Duration::from_secs(7 * 86_400);

    #[test]
    fn windows_are_per_owner_kind_and_lifetime_and_outlive_their_items() {
        let monday = QuotaKey::new("alice", "bsk", WEEK, 1_000);
        assert_eq!(monday, QuotaKey::new("alice", "bsk", WEEK, 2_000), "same window");
        assert_ne!(monday, QuotaKey::new("bob", "bsk", WEEK, 1_000));
        assert_ne!(monday, QuotaKey::new("alice", "tsk", WEEK, 1_000));
        assert_ne!(monday, QuotaKey::new("alice", "bsk", WEEK, WEEK.as_secs() + 1_000), "next window");
        assert!(!monday.partition_key.contains("alice"), "the owner is hashed");
        // An item created at the window's last second lives until at most
        // one lifetime later, before the counter is forgotten.
        assert!(monday.expires_at >= WEEK.as_secs() - 1 + WEEK.as_secs());
    }

    #[tokio::test]
    async fn a_full_window_refuses_until_one_is_given_back() {
        let quota = InMemoryQuota::default();
        let key = QuotaKey::new("alice", "bsk", WEEK, 0);
        for _ in 0..3 {
            assert!(quota.take(&key, 3).await.unwrap());
        }
        assert!(!quota.take(&key, 3).await.unwrap());
        quota.give_back(&key).await.unwrap();
        assert!(quota.take(&key, 3).await.unwrap());
        assert!(quota.take(&QuotaKey::new("bob", "bsk", WEEK, 0), 3).await.unwrap(), "bob has his own");
    }
}
