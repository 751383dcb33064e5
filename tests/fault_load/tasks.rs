//! Tasks under faults: created on one instance, some cancelled from the
//! other, run by the worker (whose AWS calls meet the faults too), and
//! polled from both until they end. Every acknowledged task ends; a
//! completed one carries its own result; an acknowledged cancel holds.
//! Runs past the first are counted, not failed: delivery is at least once,
//! and the task's idempotency key is what makes them safe.

use std::{
    net::SocketAddr,
    time::{Duration, Instant},
};

use mcp_stateless::{
    clock::{Clock, SystemClock},
    tasks::record::iso8601,
};
use serde_json::{Value, json};

use crate::{
    client::{call, rpc},
    verdict::{Outcome, Tally},
};

const CLASS: &str = "tasks";

/// Far beyond a task's end under faults: the queue's redeliveries (a few
/// visibility timeouts) included. Reaching it is a lost task, not a slow one.
const ENDS_WITHIN: Duration = Duration::from_secs(180);

pub(crate) async fn one_task(instances: [SocketAddr; 2], owner: String, label: String, cancel: bool, tally: &Tally) {
    let created = call(CLASS, instances[0], &owner, "says_its_attempt", json!({"seconds": 1, "label": label}), json!({}), tally).await;
    let Some(id) = created.result().filter(|r| r["resultType"] == "task").and_then(|r| r["taskId"].as_str()).map(str::to_owned) else {
        tally.count("tasks.not_accepted");
        return;
    };
    tally.count("tasks.accepted");
    // When the cancel's acknowledgement arrived: a task that ended
    // otherwise after it broke the acknowledged cancel; one that ended
    // before it had finished first, which the extension allows ("MAY
    // ultimately reach a terminal status other than cancelled").
    let cancel_acknowledged = if cancel {
        let answer = rpc(CLASS, instances[1], &owner, "tasks/cancel", json!({"taskId": id}), tally).await;
        answer.result().filter(|r| r["resultType"] == "complete").map(|_| iso8601(SystemClock.now_ms()))
    } else {
        None
    };
    if cancel_acknowledged.is_some() {
        tally.count("tasks.cancel_acknowledged");
    }
    let Some(ended) = ending(instances, &owner, &id, tally).await else { return };
    let ended_at = ended["lastUpdatedAt"].as_str().unwrap_or_default();
    // Both instants in one format (ISO 8601, milliseconds, UTC) compare as text.
    let after_the_cancel = cancel_acknowledged.as_deref().is_some_and(|acknowledged| ended_at > acknowledged);
    match (ended["status"].as_str().unwrap_or_default(), after_the_cancel) {
        ("cancelled", _) => tally.count("tasks.cancelled"),
        (status, true) => tally.violation("wrongly_reported", format!("task {id} cancelled, then ended {status}: {ended}")),
        ("completed", false) => completed(&id, &label, &ended, tally),
        (status, false) => {
            tally.count(format!("tasks.{status}"));
            eprintln!("fault load: task {id} ended {status}: {ended}");
        }
    }
}

/// Polls `tasks/get` from both instances until the task ends.
async fn ending(instances: [SocketAddr; 2], owner: &str, id: &str, tally: &Tally) -> Option<Value> {
    let started = Instant::now();
    for poll in 0.. {
        if started.elapsed() > ENDS_WITHIN {
            tally.violation("lost", format!("task {id} did not end within {ENDS_WITHIN:?}"));
            return None;
        }
        match rpc(CLASS, instances[poll % 2], owner, "tasks/get", json!({"taskId": id}), tally).await {
            Outcome::Done(message) if matches!(message["result"]["status"].as_str(), Some("completed" | "failed" | "cancelled")) => {
                return Some(message["result"].clone());
            }
            Outcome::Done(_) | Outcome::Retry => tokio::time::sleep(Duration::from_millis(250)).await,
            other => {
                tally.violation("lost", format!("acknowledged task {id} read as {other:?}"));
                return None;
            }
        }
    }
    None
}

/// "attempt N key K for LABEL": its own label, and which run it was.
fn completed(id: &str, label: &str, ended: &Value, tally: &Tally) {
    let text = ended["result"]["content"][0]["text"].as_str().unwrap_or_default();
    let attempt = text.strip_prefix("attempt ").and_then(|t| t.split(' ').next()).and_then(|n| n.parse::<u32>().ok());
    match attempt {
        Some(n) if text.ends_with(&format!(" for {label}")) => {
            tally.count("tasks.completed");
            if n > 1 {
                tally.count("tasks.run_more_than_once");
            }
        }
        _ => tally.violation("wrongly_reported", format!("task {id} ({label}) completed with {text:?}")),
    }
}
