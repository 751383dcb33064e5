//! Multi-round calls under faults: `two_questions` asks one question a
//! round under sealed multi-use state, each round on the other instance.
//! A failed round is sent again with the same state; the answer must be
//! the caller's own two answers, and a state the server sealed is never
//! refused.

use std::net::SocketAddr;

use serde_json::{Value, json};

use crate::{
    client::call,
    verdict::{Outcome, Tally},
};

const CLASS: &str = "rounds";

fn answer(state: &Value, key: &str, value: &str) -> Value {
    json!({"requestState": state, "inputResponses": {key: {"action": "accept", "content": {key: value}}}})
}

/// Up to four sends of one round; the result, or `None` after failures.
async fn round(addr: SocketAddr, caller: &str, extra: Value, tally: &Tally) -> Option<Value> {
    for _ in 0..4 {
        match call(CLASS, addr, caller, "two_questions", json!({}), extra.clone(), tally).await {
            Outcome::Done(message) => {
                tally.secret(message["result"]["requestState"].as_str().unwrap_or_default());
                return Some(message["result"].clone());
            }
            Outcome::Retry => tally.count(format!("{CLASS}.round_sent_again")),
            other => {
                tally.violation("wrongly_reported", format!("{caller}'s round refused: {other:?}"));
                return None;
            }
        }
    }
    None
}

pub(crate) async fn one_call(instances: [SocketAddr; 2], caller: String, tally: &Tally) {
    tally.count(format!("{CLASS}.calls"));
    let (first, second) = (format!("{caller}-a"), format!("{caller}-b"));
    let Some(asked) = round(instances[0], &caller, json!({}), tally).await else { return };
    let Some(asked) = round(instances[1], &caller, answer(&asked["requestState"], "first", &first), tally).await else { return };
    let Some(done) = round(instances[0], &caller, answer(&asked["requestState"], "second", &second), tally).await else { return };
    let text = done["content"][0]["text"].as_str().unwrap_or_default();
    if text == format!("{first}, {second}") {
        tally.count(format!("{CLASS}.completed"));
    } else {
        tally.violation("wrongly_reported", format!("{caller}'s two answers came back as {done}"));
    }
}
