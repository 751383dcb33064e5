//! 2025-era sessions under faults: `initialize` on one instance, calls on
//! both, then `DELETE`. A session the server handed out is never answered
//! as ended (404) until its client ends it; an acknowledged end holds.

use std::net::SocketAddr;

use e2e::legacy::{LegacyClient, initialize};
use serde_json::json;

use crate::verdict::{Outcome, Tally};

const CLASS: &str = "sessions";

async fn open(addr: SocketAddr, caller: &str, tally: &Tally) -> Option<LegacyClient> {
    for _ in 0..3 {
        let reply = initialize(addr, caller, "2025-11-25", json!({})).await;
        let session = reply.headers.get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
        if let (Outcome::Done(message), Some(session)) = (tally.judge(CLASS, &reply), session) {
            tally.secret(&session);
            let version = message["result"]["protocolVersion"].as_str().unwrap_or_default().to_owned();
            return Some(LegacyClient { principal: caller.to_owned(), session: Some(session), version });
        }
    }
    None
}

pub(crate) async fn one_session(instances: [SocketAddr; 2], caller: String, calls: usize, tally: &Tally) {
    let Some(client) = open(instances[0], &caller, tally).await else { return };
    tally.count("sessions.opened");
    for n in 0..calls {
        let reply = client.request(instances[(n + 1) % 2], "tools/call", json!({"name": "test_simple_text"})).await;
        match tally.judge(CLASS, &reply) {
            // A broken answer is its own violation, counted by the judge.
            Outcome::Done(_) | Outcome::Retry | Outcome::Broken(_) => {}
            other => tally.violation("wrongly_reported", format!("{caller}'s live session answered {other:?}")),
        }
    }
    let ended = client.delete(instances[1]).await;
    match ended.status {
        200..300 => {}
        503 if ended.headers.contains_key(http::header::RETRY_AFTER) => {
            tally.count("sessions.end_failed");
            return;
        }
        status @ 500.. => {
            tally.violation("bare_5xx_or_malformed", format!("{caller}'s DELETE answered {status}"));
            return;
        }
        status => {
            tally.violation("wrongly_reported", format!("{caller}'s DELETE of a live session answered {status}"));
            return;
        }
    }
    tally.count("sessions.ended");
    let after = client.request(instances[0], "tools/list", json!({})).await;
    match tally.judge(CLASS, &after) {
        Outcome::Refused(404, ..) | Outcome::Retry | Outcome::Broken(_) => {}
        other => tally.violation("resurrected", format!("{caller}'s ended session answered {other:?}")),
    }
}
