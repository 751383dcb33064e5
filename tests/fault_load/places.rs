//! Every owner's places against what they count, read from the table once
//! the load is done: each `quota#lst#...` counter holds its window's live
//! lists, each `quota#tsk#...` its tasks not yet ended (a create whose
//! every answer failed is settled by the store, so none should be left).
//! Counter by counter, so a leak and a double give-back cannot cancel out.

use std::collections::{BTreeMap, HashMap};

use aws_sdk_dynamodb::types::AttributeValue;
use e2e::fixture_server::LIST;
use mcp_stateless::quota::QuotaKey;

use crate::verdict::Tally;

type Item = HashMap<String, AttributeValue>;

fn attribute<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    match item.get(name)? {
        AttributeValue::S(s) | AttributeValue::N(s) => Some(s),
        _ => None,
    }
}

fn pk(item: &Item) -> &str {
    attribute(item, "pk").unwrap_or_default()
}

/// Every item of `table`, page after page.
async fn everything(sdk: &aws_config::SdkConfig, table: &str) -> Vec<Item> {
    let mut pages = aws_sdk_dynamodb::Client::new(sdk).scan().table_name(table).consistent_read(true).into_paginator().items().send();
    let mut items = Vec::new();
    while let Some(item) = pages.next().await {
        items.push(item.expect("the table scans"));
    }
    items
}

/// The counter a live list counts in: its owner's, in its creation's window.
fn list_place(item: &Item) -> Option<String> {
    let created_at = attribute(item, "created_at")?.parse().ok()?;
    Some(QuotaKey::new(attribute(item, "owner")?, LIST.prefix, LIST.max_lifetime, created_at).partition_key)
}

/// The counter a task not ended counts in (its record names it).
fn task_place(item: &Item) -> Option<String> {
    let record: serde_json::Value = serde_json::from_str(attribute(item, "task")?).ok()?;
    record["quota_key"].as_str().map(str::to_owned)
}

pub(crate) async fn check(sdk: &aws_config::SdkConfig, table: &str, tally: &Tally) {
    let items = everything(sdk, table).await;
    let is_task = |item: &Item| pk(item).starts_with("handle#tsk#") && !pk(item).ends_with("#input");
    let ended = |item: &Item| matches!(attribute(item, "status"), Some("completed" | "failed" | "cancelled"));
    let live_lists: Vec<&Item> = items.iter().filter(|i| pk(i).starts_with("handle#lst#") && !i.contains_key("deleted_op")).collect();
    let open_tasks: Vec<&Item> = items.iter().filter(|i| is_task(i) && !ended(i)).collect();
    tally.add("tasks.stored", items.iter().filter(|i| is_task(i)).count() as u64);
    tally.add("tasks.stored_not_ended", open_tasks.len() as u64);
    tally.add("handles.live_at_end", live_lists.len() as u64);

    let mut expected: BTreeMap<String, i64> = BTreeMap::new();
    let counted = live_lists.iter().map(|i| list_place(i)).chain(open_tasks.iter().map(|i| task_place(i)));
    for place in counted {
        match place {
            Some(place) => *expected.entry(place).or_default() += 1,
            None => tally.violation("wrongly_reported", "an item that names no place".into()),
        }
    }
    let mut held: BTreeMap<String, i64> = items
        .iter()
        .filter(|i| pk(i).starts_with("quota#"))
        .map(|i| (pk(i).to_owned(), attribute(i, "count").and_then(|n| n.parse().ok()).unwrap_or(0)))
        .collect();
    for place in expected.keys() {
        held.entry(place.clone()).or_default();
    }
    for (place, count) in held {
        let items = expected.get(&place).copied().unwrap_or(0);
        match count - items {
            0 => {}
            leaked if leaked > 0 => tally.violation("leaked_places", format!("{place} holds {count} for {items} items")),
            _ => tally.violation("applied_twice", format!("{place} holds {count} for {items} items (given back twice)")),
        }
    }
}
