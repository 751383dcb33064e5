//! Explicit handles as DynamoDB items (moto's DynamoDB, real AWS SDK):
//! owner-bound, expiring, safe under concurrency. Driven through the
//! fixture tools (`open_list`, `append`, `show_list`, `discard_list`).

use std::sync::Arc;

use e2e::{emulator::*, fixture_server::LIST, *};
use mcp_stateless::{
    Principal,
    clock::{ManualClock, SystemClock},
};
use serde_json::{Value, json};

async fn open_list(addr: std::net::SocketAddr, who: &str) -> String {
    text_of(&call_tool(addr, who, "open_list", json!({}), json!({}), json!({})).await)
}

async fn show(addr: std::net::SocketAddr, who: &str, list: &str) -> Value {
    call_tool(addr, who, "show_list", json!({"list": list}), json!({}), json!({})).await
}

async fn append(addr: std::net::SocketAddr, who: &str, list: &str, entry: &str) -> Value {
    call_tool(addr, who, "append", json!({"list": list, "entry": entry}), json!({}), json!({})).await
}

/// One instance on a fresh table and key whose clock the test moves, and
/// a list alice opened at its start.
struct Timed {
    sdk: aws_config::SdkConfig,
    settings: mcp_aws::AwsSettings,
    clock: ManualClock,
    addr: std::net::SocketAddr,
    list: String,
}

async fn timed(audience: &str) -> Timed {
    let sdk = sdk().await;
    let settings = settings(&fresh_key(&sdk).await, &fresh_table(&sdk).await, audience);
    let clock = ManualClock::at(1_800_000_000);
    let addr = start_fixtures(&settings, Arc::new(clock.clone())).await;
    let list = open_list(addr, "alice").await;
    Timed { sdk, settings, clock, addr, list }
}

#[tokio::test]
async fn handle_lifecycle_across_two_instances() {
    let sdk = sdk().await;
    let settings = settings(&fresh_key(&sdk).await, &fresh_table(&sdk).await, "e2e-life");
    let a = start_fixtures(&settings, Arc::new(SystemClock)).await;
    let b = start_fixtures(&settings, Arc::new(SystemClock)).await;

    let list = open_list(a, "alice").await;
    assert!(LIST.is_well_formed(&list), "{list}");
    append(b, "alice", &list, "bread").await;
    append(a, "alice", &list, "jam").await;
    assert_eq!(show(b, "alice", &list).await["result"]["structuredContent"]["entries"], json!(["bread", "jam"]));

    let round1 = call_tool(a, "alice", "discard_list", json!({"list": list}), json!({"elicitation": {}}), json!({})).await;
    let state = round1["result"]["requestState"].as_str().unwrap();
    let reply = json!({"requestState": state, "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}});
    let discarded = call_tool(b, "alice", "discard_list", json!({"list": list}), json!({"elicitation": {}}), reply).await;
    assert_eq!(text_of(&discarded), "Discarded 2 entries.");
    let gone = show(a, "alice", &list).await;
    assert_eq!(gone["result"]["isError"], true);
    assert!(text_of(&gone).starts_with("Unknown list handle"), "{gone}");
    // What is left is a tombstone, for a quarter of an hour (issue 44: a
    // late create cannot bring the list back), then the table's TTL.
    let items = scan(&sdk, &settings.table_name.clone().unwrap()).await;
    let handles: Vec<_> = items.iter().filter(|i| i["pk"].as_s().unwrap().starts_with("handle#")).collect();
    let expires_at = |item: &&std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>| -> u64 {
        item["expires_at"].as_n().unwrap().parse().unwrap()
    };
    let now = jsonwebtoken::get_current_timestamp();
    assert!(
        handles.iter().all(|item| item.contains_key("deleted_op") && expires_at(item) <= now + mcp_aws::dynamo::handles::TOMBSTONE_SECONDS),
        "{handles:?}"
    );
}

#[tokio::test]
async fn foreign_unknown_and_malformed_handles_get_the_same_answer() {
    let sdk = sdk().await;
    let addr = start_fixtures(&settings(&fresh_key(&sdk).await, &fresh_table(&sdk).await, "e2e-foreign"), Arc::new(SystemClock)).await;
    let list = open_list(addr, "alice").await;

    let results: Vec<Value> = futures::future::join_all([
        call_tool(addr, "bob", "show_list", json!({"list": list}), json!({}), json!({})),
        call_tool(addr, "alice", "show_list", json!({"list": LIST.mint()}), json!({}), json!({})),
        call_tool(addr, "alice", "show_list", json!({"list": "lst_../../etc"}), json!({}), json!({})),
        call_tool(addr, "bob", "append", json!({"list": list, "entry": "x"}), json!({}), json!({})),
    ])
    .await
    .into_iter()
    .map(|m| m["result"].clone())
    .collect();
    for result in &results[1..] {
        assert_eq!(result, &results[0]);
    }
    assert_eq!(results[0]["isError"], true);
    // Bob's attempt changed nothing.
    assert_eq!(show(addr, "alice", &list).await["result"]["structuredContent"]["entries"], json!([]));
}

#[tokio::test]
async fn an_expired_handle_says_so_and_is_deleted() {
    let Timed { sdk, settings, clock, addr, list } = timed("e2e-expiry").await;

    // Sliding expiry: used after 20 hours, still alive 20 hours later.
    clock.advance(20 * 3600);
    append(addr, "alice", &list, "rice").await;
    clock.advance(20 * 3600);
    assert_eq!(show(addr, "alice", &list).await["result"]["structuredContent"]["entries"][0], "rice");

    clock.advance(24 * 3600 + 1);
    let expired = show(addr, "alice", &list).await;
    assert_eq!(expired["result"]["isError"], true);
    assert_eq!(
        text_of(&expired),
        "This list expired (24 hours after its last use, or 2 days after it was created). Create a new list with open_list."
    );
    // DynamoDB's TTL sweep may lag by days (moto never runs it): the read deleted it.
    let key = LIST.key(&Principal::Verified { issuer: "local-dev".into(), subject: "alice".into() }, &list);
    let item = aws_sdk_dynamodb::Client::new(&sdk)
        .get_item()
        .table_name(settings.table_name.as_deref().unwrap())
        .key("pk", aws_sdk_dynamodb::types::AttributeValue::S(key.partition_key))
        .send()
        .await
        .unwrap()
        .item;
    assert!(item.is_none(), "expired item still stored: {item:?}");
    assert!(text_of(&show(addr, "alice", &list).await).starts_with("Unknown list handle"));
}

#[tokio::test]
async fn use_cannot_keep_a_handle_past_its_absolute_lifetime() {
    let Timed { clock, addr, list, .. } = timed("e2e-deadline").await;
    for hours in [20, 20] {
        clock.advance(hours * 3600);
        assert_eq!(text_of(&append(addr, "alice", &list, "x").await).split(' ').nth(1), Some("entries"));
    }
    // 49 hours after opening, used 9 hours ago: past the 2-day lifetime.
    clock.advance(9 * 3600);
    assert!(text_of(&show(addr, "alice", &list).await).starts_with("This list expired"));
    assert!(text_of(&append(addr, "alice", &list, "late").await).starts_with("Unknown list handle"), "and deleted");
}

#[tokio::test]
async fn reads_are_reads_until_the_expiry_needs_moving() {
    let Timed { sdk, settings, clock, addr, list } = timed("e2e-reads").await;
    let table = settings.table_name.clone().unwrap();
    let last_used = || async {
        let items = scan(&sdk, &table).await;
        let item = items.iter().find(|i| i["pk"].as_s().unwrap().starts_with("handle#")).expect("the list").clone();
        item["last_used_at"].as_n().unwrap().parse::<u64>().unwrap()
    };
    clock.advance(3600);
    show(addr, "alice", &list).await;
    assert_eq!(last_used().await, 1_800_000_000, "an hour in, a read writes nothing");
    clock.advance(2 * 3600);
    show(addr, "alice", &list).await;
    assert_eq!(last_used().await, 1_800_000_000 + 3 * 3600, "past a tenth of the idle lifetime, it slides");
}

#[tokio::test]
async fn each_owner_is_capped_across_instances_and_a_discard_frees_a_place() {
    let sdk = sdk().await;
    let settings = settings(&fresh_key(&sdk).await, &fresh_table(&sdk).await, "e2e-quota");
    let a = start_fixtures(&settings, Arc::new(SystemClock)).await;
    let b = start_fixtures(&settings, Arc::new(SystemClock)).await;
    let opened = futures::future::join_all((0..12).map(|i| open_list(if i % 2 == 0 { a } else { b }, "alice"))).await;
    let lists: Vec<&String> = opened.iter().filter(|reply| LIST.is_well_formed(reply)).collect();
    assert_eq!(lists.len(), LIST.max_per_owner as usize, "{opened:?}");
    assert!(opened.iter().filter(|reply| !LIST.is_well_formed(reply)).all(|reply| reply.starts_with("You have too many open lists")));
    assert!(LIST.is_well_formed(&open_list(a, "bob").await), "per owner");

    let elicit = json!({"elicitation": {}});
    let round1 = call_tool(a, "alice", "discard_list", json!({"list": lists[0]}), elicit.clone(), json!({})).await;
    let confirm = json!({"requestState": round1["result"]["requestState"], "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}});
    assert_eq!(text_of(&call_tool(b, "alice", "discard_list", json!({"list": lists[0]}), elicit, confirm).await), "Discarded 0 entries.");
    assert!(LIST.is_well_formed(&open_list(b, "alice").await), "the discarded list's place is free again");
    assert!(!LIST.is_well_formed(&open_list(a, "alice").await), "and only that one");
}

#[tokio::test]
async fn a_hundred_concurrent_appends_over_two_instances_lose_nothing() {
    let sdk = sdk().await;
    let settings = settings(&fresh_key(&sdk).await, &fresh_table(&sdk).await, "e2e-race");
    let a = start_fixtures(&settings, Arc::new(SystemClock)).await;
    let b = start_fixtures(&settings, Arc::new(SystemClock)).await;
    let list = open_list(a, "alice").await;

    let appends = (0..100).map(|i| {
        let list = list.clone();
        let addr = if i % 2 == 0 { a } else { b };
        tokio::spawn(async move { append(addr, "alice", &list, &format!("entry-{i}")).await })
    });
    for appended in futures::future::join_all(appends).await {
        let appended = appended.unwrap();
        assert!(text_of(&appended).ends_with("entries"), "{appended}");
    }
    let view = show(a, "alice", &list).await;
    let entries = view["result"]["structuredContent"]["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 100);
    let mut names: Vec<&str> = entries.iter().map(|e| e.as_str().unwrap()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 100, "every append landed exactly once");
}

#[tokio::test]
async fn dynamodb_down_is_an_internal_error_and_bad_handles_never_reach_it() {
    use mcp_stateless::{
        Dependencies, Handles, RequestStates,
        sealed::redemption::InMemoryLedger,
        sealed::request_state::{EnvelopeSealer, InProcessKey},
    };
    let sdk = sdk().await;
    let config = aws_sdk_dynamodb::config::Builder::from(&sdk).endpoint_url("http://127.0.0.1:1").build();
    let store = Arc::new(mcp_aws::DynamoStore::new(aws_sdk_dynamodb::Client::from_conf(config), "unreachable"));
    let clock: Arc<dyn mcp_stateless::clock::Clock> = Arc::new(SystemClock);
    let sealer = Arc::new(EnvelopeSealer::new(InProcessKey::generate()));
    let deps = Dependencies::new(
        RequestStates::new(sealer, Arc::new(InMemoryLedger::default()), clock.clone(), "e2e"),
        Handles::new(store, clock.clone()),
        mcp_stateless::tasks::TaskBackend::in_process(clock.clone()),
        mcp_stateless::subscriptions::Subscriptions::in_process(clock),
    );
    let addr = start_fixtures_with(deps).await;
    let created = call_tool(addr, "alice", "open_list", json!({}), json!({}), json!({})).await;
    assert_eq!(created["error"]["code"], -32603, "{created}");
    assert_eq!(created["error"]["message"], "storage unavailable");
    // A malformed handle is answered without any DynamoDB call (which would fail).
    let malformed = show(addr, "alice", "nope").await;
    assert!(text_of(&malformed).starts_with("Unknown list handle"), "{malformed}");
}

/// Read-modify-write through `Handles::update`: each writer reads the
/// version and writes only if it is unchanged, retrying on conflict.
#[tokio::test]
async fn compare_and_set_updates_lose_nothing_under_contention() {
    use mcp_stateless::{HandleFailure, Handles};
    let sdk = sdk().await;
    let table = fresh_table(&sdk).await;
    let handles = Handles::new(Arc::new(mcp_aws::DynamoStore::new(aws_sdk_dynamodb::Client::new(&sdk), &table)), Arc::new(SystemClock));
    let alice = caller("alice");
    let handle = handles.create(&alice, &LIST, json!({"count": 0})).await.unwrap();

    let writers = (0..10).map(|_| {
        let (handles, alice, handle) = (handles.clone(), alice.clone(), handle.clone());
        tokio::spawn(async move {
            handles.update(&alice, &LIST, &handle, |data| data["count"] = json!(data["count"].as_u64().unwrap() + 1)).await
        })
    });
    let outcomes: Vec<_> = futures::future::join_all(writers).await.into_iter().map(Result::unwrap).collect();
    let succeeded = outcomes.iter().filter(|o| o.is_ok()).count();
    assert!(outcomes.iter().all(|o| matches!(o, Ok(_) | Err(HandleFailure::Busy))), "{outcomes:?}");
    assert!(succeeded >= 5, "backoff should let most writers through: {succeeded}/10");
    let record = handles.read(&alice, &LIST, &handle).await.unwrap();
    assert_eq!(record.data["count"], json!(succeeded), "every successful update counted once");
    assert_eq!(record.version, 1 + succeeded as u64);

    // Somebody else's compare-and-set finds nothing, and changes nothing.
    let bob = caller("bob");
    assert_eq!(handles.update(&bob, &LIST, &handle, |data| data["count"] = json!(999)).await.unwrap_err(), HandleFailure::Unknown);
    assert_eq!(handles.read(&alice, &LIST, &handle).await.unwrap().data["count"], json!(succeeded));
}

/// Issue 44: a delete leaves a tombstone, so a create of the same handle
/// that lands late (its first attempt held up in the network after the
/// SDK's retry succeeded, then the handle deleted) cannot bring it back.
#[tokio::test]
async fn a_create_that_lands_after_the_delete_does_not_bring_the_handle_back() {
    use mcp_stateless::handles::{HandleStore, Lookup};
    let sdk = sdk().await;
    let store = mcp_aws::DynamoStore::new(aws_sdk_dynamodb::Client::new(&sdk), fresh_table(&sdk).await);
    let alice = Principal::Verified { issuer: "i".into(), subject: "alice".into() };
    let key = LIST.key(&alice, &LIST.mint());
    let now = jsonwebtoken::get_current_timestamp();
    let record = alices_list(&alice, now);
    store.create(&key, &record).await.unwrap();
    assert!(matches!(store.delete(&key, None, now).await.unwrap(), Lookup::Found(_)));
    assert!(store.create(&key, &record).await.is_err(), "the late create finds the key taken");
    assert_eq!(store.get(&key, now).await.unwrap(), Lookup::Missing, "deleted stays deleted");
    assert_eq!(store.delete(&key, None, now).await.unwrap(), Lookup::Missing, "and a second delete finds nothing");
}

/// Issue 44: the counted writes, each item and its owner's place in one
/// transaction. A create takes one place; its delete gives it back once; a
/// create that lands after the delete is refused, place and all; a delete
/// whose place is not there (counted apart, before the store counted)
/// deletes alone and leaves no negative count; an expired item says so.
#[tokio::test]
async fn counted_creates_and_deletes_keep_one_place_per_item() {
    use mcp_stateless::{
        handles::{HandleRecord, HandleStore, Lookup},
        quota::QuotaKey,
    };
    let sdk = sdk().await;
    let table = fresh_table(&sdk).await;
    let store = mcp_aws::DynamoStore::new(aws_sdk_dynamodb::Client::new(&sdk), table.clone());
    let alice = Principal::Verified { issuer: "i".into(), subject: "alice".into() };
    let now = jsonwebtoken::get_current_timestamp();
    let record = alices_list(&alice, now);
    let quota_of = |r: &HandleRecord| QuotaKey::new(&r.owner, LIST.prefix, LIST.max_lifetime, r.created_at);
    let quota = quota_of(&record);
    let count = || async {
        let item = aws_sdk_dynamodb::Client::new(&sdk)
            .get_item()
            .table_name(&table)
            .key("pk", aws_sdk_dynamodb::types::AttributeValue::S(quota.partition_key.clone()))
            .consistent_read(true)
            .send()
            .await
            .unwrap()
            .item
            .unwrap_or_default();
        item.get("count").and_then(|n| n.as_n().ok()).map_or(0, |n| n.parse::<i64>().unwrap())
    };

    let key = LIST.key(&alice, &LIST.mint());
    assert!(store.create_counted(&key, &record, &quota, 1).await.unwrap());
    assert_eq!(count().await, 1);
    let other = LIST.key(&alice, &LIST.mint());
    assert!(!store.create_counted(&other, &record, &quota, 1).await.unwrap(), "a cap of one, taken");
    assert_eq!(store.get(&other, now).await.unwrap(), Lookup::Missing, "refused whole: no item");
    assert!(matches!(store.delete_counted(&key, None, now, &quota_of).await.unwrap(), Lookup::Found(_)));
    assert_eq!(count().await, 0, "given back once");
    assert!(store.create_counted(&key, &record, &quota, 1).await.is_err(), "a late create finds the key taken");
    assert_eq!((store.get(&key, now).await.unwrap(), count().await), (Lookup::Missing, 0), "refused, place and all");
    assert_eq!(store.delete_counted(&key, None, now, &quota_of).await.unwrap(), Lookup::Missing, "a second delete finds nothing");
    assert_eq!(count().await, 0);

    let uncounted = LIST.key(&alice, &LIST.mint());
    store.create(&uncounted, &record).await.unwrap();
    assert!(matches!(store.delete_counted(&uncounted, None, now, &quota_of).await.unwrap(), Lookup::Found(_)), "deleted alone");
    assert_eq!(count().await, 0, "never below zero");

    let expired = LIST.key(&alice, &LIST.mint());
    let old = HandleRecord { expires_at: now - 1, ..record.clone() };
    assert!(store.create_counted(&expired, &old, &quota, 1).await.unwrap());
    assert_eq!(store.delete_counted(&expired, None, now, &quota_of).await.unwrap(), Lookup::Expired);
}

/// A new list's record as a store writes it for `owner`, created `now`.
fn alices_list(owner: &Principal, now: u64) -> mcp_stateless::handles::HandleRecord {
    mcp_stateless::handles::HandleRecord {
        owner: owner.binding_id(),
        kind: "list".into(),
        data: json!({"entries": []}),
        version: 1,
        created_at: now,
        last_used_at: now,
        expires_at: now + 3_600,
        deadline: now + 7_200,
    }
}
