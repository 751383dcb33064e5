//! Handles under faults: each owner opens lists, appends to them from both
//! instances, reads them back, and discards one through the single-use
//! confirmation (two rounds, on different instances). What a reply
//! acknowledged must hold; what failed may or may not have happened, but
//! never twice, and nothing is reported that did not happen.

use std::net::SocketAddr;

use serde_json::{Value, json};

use crate::{
    client,
    verdict::{Outcome, Tally},
};

const CLASS: &str = "handles";
const UNKNOWN: &str = "Unknown list handle";

/// One list as its owner knows it.
pub(crate) struct List {
    pub(crate) owner: String,
    pub(crate) handle: String,
    /// Entries whose append was acknowledged: each there exactly once.
    pub(crate) acked: Vec<String>,
    /// Entries whose append failed: there at most once.
    pub(crate) unsure: Vec<String>,
    pub(crate) delete: Delete,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delete {
    NotAsked,
    /// A confirmed delete failed: the list may be gone.
    Unsure,
    /// "Discarded N entries.": gone, and must stay gone.
    Done,
}

async fn call(addr: SocketAddr, owner: &str, tool: &str, arguments: Value, extra: Value, tally: &Tally) -> Outcome {
    client::call(CLASS, addr, owner, tool, arguments, extra, tally).await
}

/// Whether `shown` (a list's entries) agrees with what its owner was told.
pub(crate) fn check_entries(list: &List, shown: &Value, tally: &Tally) {
    let shown: Vec<&str> = shown.as_array().map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    let times = |entry: &str| shown.iter().filter(|e| **e == entry).count();
    for entry in &list.acked {
        match times(entry) {
            1 => {}
            0 => tally.violation("lost", format!("acknowledged entry {entry} missing from {}", list.handle)),
            n => tally.violation("applied_twice", format!("entry {entry} there {n} times in {}", list.handle)),
        }
    }
    for entry in &list.unsure {
        match times(entry) {
            0 => tally.count("handles.unacknowledged_absent"),
            1 => tally.count("handles.unacknowledged_present"),
            n => tally.violation("applied_twice", format!("unacknowledged entry {entry} there {n} times in {}", list.handle)),
        }
    }
    for entry in &shown {
        if !list.acked.iter().chain(&list.unsure).any(|sent| sent == entry) {
            tally.violation("wrongly_reported", format!("entry {entry} never sent, in {}", list.handle));
        }
    }
}

/// One owner's work: `lists` lists of `appends` entries each, the first
/// discarded.
pub(crate) async fn owner_load(instances: [SocketAddr; 2], owner: String, lists: usize, appends: usize, tally: &Tally) -> Vec<List> {
    let mut opened = Vec::new();
    for l in 0..lists {
        if let Some(handle) = open(instances[l % 2], &owner, tally).await {
            opened.push(List { owner: owner.clone(), handle, acked: Vec::new(), unsure: Vec::new(), delete: Delete::NotAsked });
        }
    }
    for (l, list) in opened.iter_mut().enumerate() {
        for a in 0..appends {
            let entry = format!("{owner}-{l}-{a}");
            let outcome = call(instances[a % 2], &owner, "append", json!({"list": list.handle, "entry": entry}), json!({}), tally).await;
            match outcome {
                Outcome::Done(_) => list.acked.push(entry),
                Outcome::ToolError(text) if text.contains(UNKNOWN) => {
                    tally.violation("wrongly_reported", format!("append to a live list {}: {text}", list.handle));
                    list.unsure.push(entry);
                }
                _ => list.unsure.push(entry),
            }
        }
        if let Outcome::Done(shown) = call(instances[1], &owner, "show_list", json!({"list": list.handle}), json!({}), tally).await {
            check_entries(list, &shown["result"]["structuredContent"]["entries"], tally);
        }
    }
    if let Some(first) = opened.first_mut() {
        discard(instances, first, tally).await;
    }
    opened
}

async fn open(addr: SocketAddr, owner: &str, tally: &Tally) -> Option<String> {
    for _ in 0..3 {
        match call(addr, owner, "open_list", json!({}), json!({}), tally).await {
            Outcome::Done(message) => return message["result"]["content"][0]["text"].as_str().map(str::to_owned),
            Outcome::ToolError(text) => {
                tally.violation("wrongly_reported", format!("{owner}'s open_list within the cap: {text}"));
                return None;
            }
            _ => tally.count("handles.open_retried"),
        }
    }
    None
}

/// Discards `list` as a client would: round one asks, round two confirms on
/// the other instance; a failed round is sent again (round two with the
/// same state), a refused state starts over.
async fn discard(instances: [SocketAddr; 2], list: &mut List, tally: &Tally) {
    let arguments = json!({"list": list.handle});
    for _ in 0..4 {
        let asked = call(instances[0], &list.owner, "discard_list", arguments.clone(), json!({}), tally).await;
        let state = match asked {
            Outcome::Done(message) => {
                tally.secret(message["result"]["requestState"].as_str().unwrap_or_default());
                message["result"]["requestState"].clone()
            }
            Outcome::ToolError(text) if text.contains(UNKNOWN) && list.delete == Delete::Unsure => return,
            Outcome::ToolError(text) => {
                tally.violation("wrongly_reported", format!("discard of live list {}: {text}", list.handle));
                return;
            }
            _ => continue,
        };
        let confirm = json!({"requestState": state, "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}});
        let mut sent_before = false;
        for _ in 0..3 {
            match call(instances[1], &list.owner, "discard_list", arguments.clone(), confirm.clone(), tally).await {
                Outcome::Done(message) => {
                    let text = message["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned();
                    let discarded = text.strip_prefix("Discarded ").and_then(|t| t.strip_suffix(" entries.")).and_then(|n| n.parse().ok());
                    match discarded {
                        Some(n) if (list.acked.len()..=list.acked.len() + list.unsure.len()).contains(&n) => {}
                        _ => tally.violation("wrongly_reported", format!("discard of {} answered {text:?}", list.handle)),
                    }
                    list.delete = Delete::Done;
                    return after_delete(instances[0], list, tally).await;
                }
                Outcome::ToolError(text) if text.contains(UNKNOWN) && list.delete == Delete::Unsure => return,
                Outcome::ToolError(text) => {
                    tally.violation("wrongly_reported", format!("confirmed discard of {}: {text}", list.handle));
                    return;
                }
                Outcome::Refused(_, code, message) if !sent_before => {
                    tally.violation("wrongly_reported", format!("a fresh confirmation of {} refused: {code} {message}", list.handle));
                    return;
                }
                Outcome::Refused(..) => {
                    // Spent by an attempt whose answer failed: start over.
                    tally.count("handles.state_spent_start_over");
                    break;
                }
                _ => {
                    sent_before = true;
                    list.delete = Delete::Unsure;
                }
            }
        }
    }
}

/// A list whose delete was acknowledged is unknown from then on.
async fn after_delete(addr: SocketAddr, list: &List, tally: &Tally) {
    if let Outcome::Done(shown) = call(addr, &list.owner, "show_list", json!({"list": list.handle}), json!({}), tally).await {
        tally.violation("resurrected", format!("deleted {} still shows {shown}", list.handle));
    }
}

/// With the faults settled: every list as acknowledged.
pub(crate) async fn read_back(addr: SocketAddr, lists: &[List], tally: &Tally) {
    for list in lists {
        let shown = call(addr, &list.owner, "show_list", json!({"list": list.handle}), json!({}), tally).await;
        match (list.delete, shown) {
            (Delete::Done, Outcome::Done(shown)) => {
                tally.violation("resurrected", format!("deleted {} came back: {shown}", list.handle));
            }
            (Delete::Done | Delete::Unsure, Outcome::ToolError(text)) if text.contains(UNKNOWN) => tally.count("handles.deleted"),
            (_, Outcome::Done(shown)) => check_entries(list, &shown["result"]["structuredContent"]["entries"], tally),
            (_, other) => tally.violation("lost", format!("list {} read back as {other:?}", list.handle)),
        }
    }
}
