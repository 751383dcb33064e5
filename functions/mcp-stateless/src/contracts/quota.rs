//! `CreationQuota`: per-owner counts, never past the limit, given back on delete.

use std::time::Duration;

use crate::quota::{CreationQuota, QuotaKey};

/// A `CreationQuota`: per-owner counts, never past the limit, given back
/// on delete.
pub async fn creation_quota(quota: &dyn CreationQuota) {
    let now = super::now();
    let hour = Duration::from_secs(3_600);
    let alice = QuotaKey::new("jwt:alice", "nte", hour, now);
    let bob = QuotaKey::new("jwt:bob", "nte", hour, now);

    for _ in 0..3 {
        assert!(quota.take(&alice, 3).await.unwrap());
    }
    assert!(!quota.take(&alice, 3).await.unwrap(), "a full count refuses");
    assert!(!quota.take(&alice, 3).await.unwrap(), "and a refusal counts nothing");
    // Another owner, another kind and the next window count apart.
    assert!(quota.take(&bob, 3).await.unwrap());
    assert!(quota.take(&QuotaKey::new("jwt:alice", "bsk", hour, now), 3).await.unwrap());
    assert!(quota.take(&QuotaKey::new("jwt:alice", "nte", hour, now + 3_600), 3).await.unwrap());

    // One given back makes room for exactly one.
    quota.give_back(&alice).await.unwrap();
    assert!(quota.take(&alice, 3).await.unwrap());
    assert!(!quota.take(&alice, 3).await.unwrap());

    // Giving back more than was taken never makes room past the limit.
    let carol = QuotaKey::new("jwt:carol", "nte", hour, now);
    quota.give_back(&carol).await.unwrap();
    quota.give_back(&carol).await.unwrap();
    assert!(quota.take(&carol, 1).await.unwrap());
    assert!(!quota.take(&carol, 1).await.unwrap());
}
