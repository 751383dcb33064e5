//! `HandleStore`: owner-bound, expiring records with compare-and-set.

use crate::{
    handles::{Change, HandleKind, HandleRecord, HandleStore, ItemKey, Lookup},
    protocol::context::Principal,
};
use serde_json::{Value, json};

const NOTES: HandleKind = HandleKind {
    prefix: "nte",
    noun: "note",
    created_by: "create_note",
    idle_ttl: std::time::Duration::from_secs(600),
    max_lifetime: std::time::Duration::from_secs(3_600),
    max_data_bytes: 4_096,
    max_per_owner: 10,
};

fn principal(subject: &str) -> Principal {
    Principal::Verified { issuer: "https://issuer.example".into(), subject: subject.into() }
}

fn record(owner: &Principal, data: Value, now: u64) -> HandleRecord {
    HandleRecord {
        owner: owner.binding_id(),
        kind: NOTES.prefix.into(),
        data,
        version: 1,
        created_at: now,
        last_used_at: now,
        expires_at: now + 600,
        deadline: now + 3_600,
    }
}

fn found(lookup: Lookup) -> HandleRecord {
    match lookup {
        Lookup::Found(record) => record,
        other => panic!("expected a record, got {other:?}"),
    }
}

async fn behaviour(store: &dyn HandleStore) {
    let now = super::now();
    let (alice, bob) = (principal("alice"), principal("bob"));
    let handle = NOTES.mint();
    let key = NOTES.key(&alice, &handle);
    let created = record(&alice, json!({"title": "first", "lines": []}), now);
    store.create(&key, &created).await.unwrap();

    // Read back as written; unknown and somebody else's look the same,
    // even under the very partition key (the owner is checked too).
    assert_eq!(found(store.get(&key, now).await.unwrap()), created);
    assert_eq!(store.get(&NOTES.key(&bob, &handle), now).await.unwrap(), Lookup::Missing);
    let bobs_claim = ItemKey { owner: bob.binding_id(), ..key.clone() };
    assert_eq!(store.get(&bobs_claim, now).await.unwrap(), Lookup::Missing);
    assert_eq!(store.apply(&bobs_claim, &Change::Touch, now, now + 900).await.unwrap(), Lookup::Missing);
    assert_eq!(store.replace(&bobs_claim, 1, &json!({}), now, now + 900).await.unwrap(), Lookup::Missing);
    assert_eq!(store.delete(&bobs_claim, None, now).await.unwrap(), Lookup::Missing);
    assert_eq!(store.get(&NOTES.key(&alice, &NOTES.mint()), now).await.unwrap(), Lookup::Missing);

    // A create never overwrites (whether the adapter says so or not).
    let _ = store.create(&key, &record(&alice, json!({"title": "second"}), now)).await;
    assert_eq!(found(store.get(&key, now).await.unwrap()).data["title"], "first");

    // Compare-and-set: the expected version wins once, bumps the version
    // and slides the expiry; a stale one changes nothing.
    let replaced = found(store.replace(&key, 1, &json!({"title": "edited", "lines": []}), now + 1, now + 700).await.unwrap());
    assert_eq!((replaced.version, replaced.last_used_at, replaced.expires_at), (2, now + 1, now + 700));
    assert_eq!(replaced.data["title"], "edited");
    assert_eq!(store.replace(&key, 1, &json!({"title": "lost"}), now + 2, now + 700).await.unwrap(), Lookup::Conflict);
    assert_eq!(store.replace(&NOTES.key(&bob, &handle), 2, &json!({}), now + 2, now + 700).await.unwrap(), Lookup::Missing);
    assert_eq!(found(store.get(&key, now + 2).await.unwrap()).data["title"], "edited");

    // Appends are bounded and bump the version; a touch only slides the expiry.
    let append = |value: &str| Change::Append { field: "lines".into(), value: json!(value), max_len: 2 };
    assert_eq!(found(store.apply(&key, &append("a"), now + 3, now + 800).await.unwrap()).version, 3);
    let full = found(store.apply(&key, &append("b"), now + 4, now + 800).await.unwrap());
    assert_eq!((full.version, full.data["lines"].clone()), (4, json!(["a", "b"])));
    assert_eq!(store.apply(&key, &append("c"), now + 5, now + 800).await.unwrap(), Lookup::LimitReached);
    let touched = found(store.apply(&key, &Change::Touch, now + 6, now + 900).await.unwrap());
    assert_eq!((touched.version, touched.expires_at, touched.data["lines"].clone()), (4, now + 900, json!(["a", "b"])));
    assert_eq!(store.apply(&NOTES.key(&bob, &handle), &Change::Touch, now + 6, now + 900).await.unwrap(), Lookup::Missing);

    // Delete: only at the expected version, only by the owner, once.
    assert_eq!(store.delete(&key, Some(3), now + 7).await.unwrap(), Lookup::Conflict);
    assert_eq!(store.delete(&NOTES.key(&bob, &handle), None, now + 7).await.unwrap(), Lookup::Missing);
    assert_eq!(found(store.delete(&key, Some(4), now + 7).await.unwrap()).version, 4);
    assert_eq!(store.get(&key, now + 7).await.unwrap(), Lookup::Missing);
    assert_eq!(store.delete(&key, None, now + 7).await.unwrap(), Lookup::Missing);
}

/// Idle past `expires_at`, or past the absolute `deadline` however fresh:
/// reported expired once, then gone (the TTL deletes lazily, so the store
/// deletes what it finds dead), and no write revives it.
async fn expiry(store: &dyn HandleStore) {
    let now = super::now();
    let alice = principal("alice");
    let idle = NOTES.key(&alice, &NOTES.mint());
    store.create(&idle, &record(&alice, json!({"lines": []}), now)).await.unwrap();
    assert_eq!(store.replace(&idle, 1, &json!({}), now + 600, now + 1_200).await.unwrap(), Lookup::Expired);
    assert_eq!(store.get(&idle, now + 600).await.unwrap(), Lookup::Missing);

    let old = NOTES.key(&alice, &NOTES.mint());
    let mut past_deadline = record(&alice, json!({"lines": []}), now);
    past_deadline.expires_at = now + 10_000;
    past_deadline.deadline = now + 5;
    store.create(&old, &past_deadline).await.unwrap();
    assert!(matches!(store.get(&old, now + 4).await.unwrap(), Lookup::Found(_)));
    assert_eq!(store.get(&old, now + 5).await.unwrap(), Lookup::Expired);
    assert_eq!(store.apply(&old, &Change::Touch, now + 5, now + 10_000).await.unwrap(), Lookup::Missing);
}

/// The behaviour above, then expiry, on one store.
pub async fn handle_store(store: &dyn HandleStore) {
    behaviour(store).await;
    expiry(store).await;
}
