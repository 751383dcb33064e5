//! `TaskStore`: task records and inputs, owner-bound, expiring, compare-and-set.

use crate::{
    protocol::context::Principal,
    storage::ItemKey,
    tasks::{
        record::{TASK_IDS, TaskInput, TaskRecord},
        store::{Replaced, TaskStore},
    },
};
use serde_json::json;

fn key(owner: &Principal, id: &str) -> ItemKey {
    TASK_IDS.key(owner.binding_id(), id)
}

fn record(owner: &Principal, id: &str, now: u64) -> TaskRecord {
    serde_json::from_value(json!({
        "task_id": id, "owner": owner.binding_id(), "tool": "build_report", "status": "working",
        "created_at_ms": now * 1_000, "updated_at_ms": now * 1_000, "ttl_ms": 600_000, "poll_interval_ms": 1_000,
        "expires_at": now + 600, "version": 1,
    }))
    .expect("a task record")
}

fn input(owner: &Principal) -> TaskInput {
    TaskInput {
        principal: owner.clone(),
        tool: "build_report".into(),
        arguments: json!({"topic": "tides", "sections": 2}),
        protocol_version: "2026-07-28".into(),
        client_capabilities: serde_json::Map::new(),
    }
}

/// A `TaskStore`: task records and inputs, owner-bound, expiring,
/// compare-and-set.
pub async fn task_store(store: &dyn TaskStore) {
    let now = super::now();
    let alice = Principal::Verified { issuer: "https://issuer.example".into(), subject: "alice".into() };
    let bob = Principal::Verified { issuer: "https://issuer.example".into(), subject: "bob".into() };
    let id = TASK_IDS.mint();
    let created = record(&alice, &id, now);
    store.create(&key(&alice, &id), &created, &input(&alice)).await.unwrap();

    // Read back whole, by its owner only; the input too.
    assert_eq!(store.get(&key(&alice, &id), now).await.unwrap(), Some(created.clone()));
    assert_eq!(store.input(&key(&alice, &id)).await.unwrap(), Some(input(&alice)));
    assert_eq!(store.get(&key(&bob, &id), now).await.unwrap(), None);
    assert_eq!(store.input(&key(&bob, &id)).await.unwrap(), None);
    // Somebody else's claim on the very partition key finds nothing either.
    let bobs_claim = ItemKey { owner: bob.binding_id(), ..key(&alice, &id) };
    assert_eq!(store.get(&bobs_claim, now).await.unwrap(), None);
    assert_eq!(store.input(&bobs_claim).await.unwrap(), None);
    assert_eq!(store.replace(&bobs_claim, 1, &created).await.unwrap(), Replaced::Conflict);
    assert_eq!(store.get(&key(&alice, &TASK_IDS.mint()), now).await.unwrap(), None);

    // A create never overwrites (whether the adapter says so or not).
    let mut other = record(&alice, &id, now);
    other.tool = "another".into();
    let _ = store.create(&key(&alice, &id), &other, &input(&alice)).await;
    assert_eq!(store.get(&key(&alice, &id), now).await.unwrap().unwrap().tool, "build_report");

    // Compare-and-set on the version: once, and never for another owner.
    let mut next = created.clone();
    next.version = 2;
    next.status_message = Some("half way".into());
    assert_eq!(store.replace(&key(&alice, &id), 1, &next).await.unwrap(), Replaced::Done);
    assert_eq!(store.replace(&key(&alice, &id), 1, &created).await.unwrap(), Replaced::Conflict);
    assert_eq!(store.replace(&key(&bob, &id), 2, &created).await.unwrap(), Replaced::Conflict);
    assert_eq!(store.get(&key(&alice, &id), now).await.unwrap(), Some(next));

    // Past its expiry a task is gone, as unknown ones are.
    assert_eq!(store.get(&key(&alice, &id), now + 600).await.unwrap(), None);
    assert_eq!(store.get(&key(&alice, &id), now).await.unwrap(), None, "an expired record is deleted when found");
}
