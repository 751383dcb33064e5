//! What each reply was, as a client would take it, and the run's tally:
//! counts by class for the closing table, and every violation with what
//! showed it.

use std::{collections::BTreeMap, sync::Mutex};

use e2e::Reply;
use mcp_stateless::edge::sse as edge_sse;
use serde_json::Value;

/// A reply, judged.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// A result (the final JSON-RPC message).
    Done(Value),
    /// A tool's result with `isError`: its text.
    ToolError(String),
    /// The documented answer to a failing dependency: -32603 (HTTP 200),
    /// or 503 with `Retry-After` and a JSON-RPC error. Nothing is known
    /// of what the request did; the client may send it again.
    Retry,
    /// Any other JSON-RPC error: its HTTP status, code and message.
    Refused(u16, i64, String),
    /// A 5xx that is not the documented 503, or a body that is no
    /// JSON-RPC message: a violation in itself.
    Broken(String),
}

impl Outcome {
    pub(crate) fn result(&self) -> Option<&Value> {
        match self {
            Self::Done(message) => Some(&message["result"]),
            _ => None,
        }
    }
}

/// The final JSON-RPC message of a reply's body, JSON or event stream.
fn message(reply: &Reply) -> Option<Value> {
    let content_type = reply.headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    if content_type.starts_with("text/event-stream") {
        let text = std::str::from_utf8(&reply.body).ok()?;
        edge_sse::events(text).filter_map(edge_sse::message).filter(|m| m.get("id").is_some()).last()
    } else {
        serde_json::from_slice(&reply.body).ok()
    }
}

/// Counts by name and the violations, shared by the load's tasks.
#[derive(Default)]
pub(crate) struct Tally {
    counts: Mutex<BTreeMap<String, u64>>,
    violations: Mutex<Vec<String>>,
    /// What the servers handed out that must never be logged: sealed
    /// `requestState`s and 2025-era session ids.
    secrets: Mutex<Vec<String>>,
}

impl Tally {
    pub(crate) fn count(&self, name: impl Into<String>) {
        self.add(name, 1);
    }

    pub(crate) fn add(&self, name: impl Into<String>, amount: u64) {
        *self.counts.lock().unwrap().entry(name.into()).or_default() += amount;
    }

    pub(crate) fn get(&self, name: &str) -> u64 {
        self.counts.lock().unwrap().get(name).copied().unwrap_or(0)
    }

    pub(crate) fn violation(&self, kind: &str, what: String) {
        self.count(format!("violation.{kind}"));
        self.violations.lock().unwrap().push(format!("{kind}: {what}"));
    }

    /// Remembers `secret` (a sealed state, a session id) for the log check.
    pub(crate) fn secret(&self, secret: &str) {
        if !secret.is_empty() {
            self.secrets.lock().unwrap().push(secret.to_owned());
        }
    }

    pub(crate) fn secrets(&self) -> Vec<String> {
        self.secrets.lock().unwrap().clone()
    }

    pub(crate) fn violations(&self) -> Vec<String> {
        self.violations.lock().unwrap().clone()
    }

    /// Judges `reply` to a request of `class`, counting it and its outcome
    /// (a retryable error by its message too).
    pub(crate) fn judge(&self, class: &str, reply: &Reply) -> Outcome {
        self.count(format!("{class}.requests"));
        let outcome = judged(reply);
        if let (Outcome::Retry, Some(message)) = (&outcome, message(reply)) {
            let said = message["error"]["message"].as_str().unwrap_or_default().chars().take(48).collect::<String>();
            self.count(format!("{class}.retry {} {said:?}", reply.status));
        }
        let name = match &outcome {
            Outcome::Done(_) => "done",
            Outcome::ToolError(_) => "tool_error",
            Outcome::Retry => "retry",
            Outcome::Refused(..) => "refused",
            Outcome::Broken(what) => {
                self.violation("bare_5xx_or_malformed", format!("{class}: {what}"));
                "broken"
            }
        };
        self.count(format!("{class}.{name}"));
        outcome
    }

    /// One line per count, then the violations.
    pub(crate) fn report(&self, title: &str) -> String {
        let counts = self.counts.lock().unwrap();
        let mut lines = vec![format!("== {title}")];
        lines.extend(counts.iter().map(|(name, n)| format!("  {name} {n}")));
        lines.extend(self.violations().iter().map(|v| format!("  VIOLATION {v}")));
        lines.join("\n")
    }
}

fn judged(reply: &Reply) -> Outcome {
    let Some(message) = message(reply) else {
        return Outcome::Broken(format!("HTTP {} with no JSON-RPC message: {:?}", reply.status, String::from_utf8_lossy(&reply.body)));
    };
    if reply.status >= 500 {
        let documented = reply.status == 503 && reply.headers.contains_key(http::header::RETRY_AFTER) && message.get("error").is_some();
        return if documented { Outcome::Retry } else { Outcome::Broken(format!("HTTP {}: {message}", reply.status)) };
    }
    if let Some(error) = message.get("error") {
        let code = error["code"].as_i64().unwrap_or_default();
        let text = error["message"].as_str().unwrap_or_default().to_owned();
        return if code == -32603 && reply.status == 200 { Outcome::Retry } else { Outcome::Refused(reply.status, code, text) };
    }
    if message["result"]["isError"] == true {
        return Outcome::ToolError(message["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned());
    }
    Outcome::Done(message)
}
