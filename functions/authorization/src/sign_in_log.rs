//! What an operator sees of sign-in: one structured line per registration,
//! sign-in, refresh, refresh reuse (its family revoked), revocation, and
//! client document that could not be fetched, with the client id, how the
//! client is known (a metadata document or a registration; a failed
//! fetch's `detail` says which copy stood in) and the user's subject where
//! there is one.
//!
//! No token, code, assertion or secret is ever an argument here, so none
//! can reach a line. On Lambda (JSON logs) each line is a CloudWatch
//! Embedded Metric Format record: the metric `AuthorizationEvents` by
//! `Event` and by `Event` and `ClientKind`, in the stack's namespace
//! (`MCP_METRICS_NAMESPACE`), whose dimension values are this module's
//! own words, never a caller's (docs/operations.md lists them).

use std::sync::OnceLock;

use mcp_stateless::{
    clock::{Clock, SystemClock},
    deployment::LogFormat,
    edge::request_log::{capped, emf_directive},
};
use serde_json::{Value, json};

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// A client registered (RFC 7591).
    Registration,
    /// A user signed in: a code became tokens.
    SignIn,
    /// A refresh token rotated.
    Refresh,
    /// A refresh token was used after its successor: the family is revoked.
    RefreshReuse,
    /// A client revoked a refresh token's family (RFC 7009).
    Revocation,
    /// A client's metadata document could not be fetched (a copy may have
    /// stood in: the line says which).
    DocumentFetchFailed,
}

impl Event {
    /// Its name in the line and the metric's `Event` dimension.
    pub fn name(self) -> &'static str {
        match self {
            Event::Registration => "registration",
            Event::SignIn => "sign_in",
            Event::Refresh => "refresh",
            Event::RefreshReuse => "refresh_reuse",
            Event::Revocation => "revocation",
            Event::DocumentFetchFailed => "document_fetch_failed",
        }
    }
}

/// How a client id is known, for the `ClientKind` dimension.
pub fn client_kind(client_id: &str) -> &'static str {
    if crate::clients::kind::is_metadata_document_id(client_id) { "metadata_document" } else { "registration" }
}

/// One event's facts.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Facts<'a> {
    /// What happened.
    pub event: Event,
    /// The client's id (a URL, or a sealed registration: neither is secret).
    pub client_id: &'a str,
    /// The user, where known.
    pub subject: Option<&'a str>,
    /// What else an operator needs: why a fetch failed, which copy stood in.
    pub detail: Option<&'a str>,
}

impl<'a> Facts<'a> {
    /// `event` of `client_id`.
    pub fn new(event: Event, client_id: &'a str) -> Self {
        Self { event, client_id, subject: None, detail: None }
    }

    /// For `subject`.
    pub fn of(mut self, subject: &'a str) -> Self {
        self.subject = Some(subject);
        self
    }

    /// With `detail`.
    pub fn saying(mut self, detail: &'a str) -> Self {
        self.detail = Some(detail);
        self
    }
}

static FORMAT: OnceLock<LogFormat> = OnceLock::new();

/// The process's log format, once at start (text until then).
pub fn use_format(format: LogFormat) {
    let _ = FORMAT.set(format);
}

/// Writes `facts`' line.
pub fn record(facts: Facts<'_>) {
    if !tracing::enabled!(target: "mcp.authorization", tracing::Level::INFO) {
        return;
    }
    if FORMAT.get() == Some(&LogFormat::Json) {
        // One line on stderr, which Lambda sends to CloudWatch Logs.
        eprintln!("{}", emf_record(&facts, SystemClock.now_ms()));
        return;
    }
    tracing::info!(
        target: "mcp.authorization",
        event = facts.event.name(),
        client_id = capped(facts.client_id),
        client_kind = client_kind(facts.client_id),
        subject = facts.subject.map(capped).as_deref().unwrap_or("-"),
        detail = facts.detail.map(capped).as_deref().unwrap_or("-"),
        "authorization"
    );
}

/// The EMF record of `facts`.
pub fn emf_record(facts: &Facts<'_>, timestamp_ms: u64) -> Value {
    let metrics = json!([{"Name": "AuthorizationEvents", "Unit": "Count"}]);
    json!({
        "_aws": emf_directive(json!([["Event"], ["Event", "ClientKind"]]), metrics, timestamp_ms),
        "level": "INFO",
        "target": "mcp.authorization",
        "message": "authorization",
        "Event": facts.event.name(),
        "ClientKind": client_kind(facts.client_id),
        "AuthorizationEvents": 1,
        "client_id": capped(facts.client_id),
        "subject": facts.subject.map(capped),
        "detail": facts.detail.map(capped),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_an_emf_record_with_the_modules_own_dimension_values() {
        let facts = Facts::new(Event::SignIn, "https://claude.ai/oauth/claude-code-client-metadata").of("https://idp#alice");
        let record = emf_record(&facts, 1_700_000_000_000);
        assert_eq!((record["Event"].as_str(), record["ClientKind"].as_str()), (Some("sign_in"), Some("metadata_document")));
        assert_eq!(record["AuthorizationEvents"], 1);
        assert_eq!(record["subject"], "https://idp#alice");
        let directive = &record["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(directive["Dimensions"], json!([["Event"], ["Event", "ClientKind"]]));
        let registered = emf_record(&Facts::new(Event::Registration, "v1.sealed-registration"), 0);
        assert_eq!(registered["ClientKind"], "registration");
        // A caller's made-up client id is a field, capped; never a dimension.
        let long = "https://x.example/".to_owned() + &"a".repeat(4000);
        let capped_record = emf_record(&Facts::new(Event::DocumentFetchFailed, &long), 0);
        assert!(capped_record["client_id"].as_str().unwrap().len() < 300);
        assert_eq!(capped_record["ClientKind"], "metadata_document");
    }
}
