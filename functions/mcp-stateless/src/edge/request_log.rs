//! One log line per request: method, target, outcome, latency, trace id and
//! the request's counters. Never arguments, `requestState`, tokens or
//! response bodies.
//!
//! In Lambda the line is a CloudWatch Embedded Metric Format record: the
//! same JSON object carries an `_aws` block, and CloudWatch turns its values
//! into metrics (count and latency by method, tool and outcome, KMS calls,
//! data-key cache hits, conditional-check failures, store retries) with no
//! agent and no extra call. Dimensions only take values the server chose
//! (known method names, tools that answered): a caller inventing names must
//! not mint new metrics, each of which CloudWatch bills.

use std::{sync::OnceLock, time::Duration};

use http::StatusCode;
use serde_json::{Map, Value, json};

use crate::{
    clock::{Clock, SystemClock},
    deployment::LogFormat,
    edge::tolerance::Forgiven,
    metrics::{Counter, Counts},
    protocol::{message::MessageView, methods},
};

#[derive(Debug, Default)]
pub(crate) struct RequestLog {
    pub method: Option<String>,
    /// The method's row, when the server knows it (looked up once, at
    /// admission).
    pub known: Option<&'static methods::Method>,
    /// Tool or prompt name, or resource URI.
    pub target: Option<String>,
    pub result_type: Option<String>,
    pub error_code: Option<i32>,
    pub trace_id: Option<String>,
    /// The client shapes the edge forgave this request (`tolerance.rs`),
    /// counted once it is served.
    pub forgiven: Forgiven,
}

/// Names and methods come from the caller: a 900 KB tool name must not
/// become a 900 KB log line (CloudWatch bills ingestion by the byte).
pub const MAX_LOGGED_CHARS: usize = 128;

/// `value`, cut to [`MAX_LOGGED_CHARS`] characters with a marker saying so.
pub fn capped(value: &str) -> String {
    match value.char_indices().nth(MAX_LOGGED_CHARS) {
        None => value.to_owned(),
        Some((cut, _)) => format!("{}…(+{} bytes)", &value[..cut], value.len() - cut),
    }
}

static NAMESPACE: OnceLock<String> = OnceLock::new();

/// Names the metrics' namespace ([`crate::settings::Settings::metrics_namespace`]),
/// once at start; the first call wins.
pub fn use_metrics_namespace(namespace: &str) {
    let _ = NAMESPACE.set(namespace.to_owned());
}

/// An EMF record's `_aws` block: in the metrics' [`namespace`], these
/// `dimensions` (lists of field names) and `metrics` (`Name`, `Unit`), at
/// `timestamp_ms`. Every function's metric records are made with it.
pub fn emf_directive(dimensions: Value, metrics: Value, timestamp_ms: u64) -> Value {
    json!({
        "Timestamp": timestamp_ms,
        "CloudWatchMetrics": [{"Namespace": namespace(), "Dimensions": dimensions, "Metrics": metrics}],
    })
}

/// The metrics' namespace, as [`use_metrics_namespace`] named it (`MCP`
/// unless named): other functions' metric records go beside the requests'.
pub fn namespace() -> &'static str {
    NAMESPACE.get().map_or("MCP", String::as_str)
}

impl RequestLog {
    /// Takes the outcome (result type, error code) another log recorded.
    pub(crate) fn adopt(&mut self, outcome: RequestLog) {
        self.result_type = outcome.result_type;
        if outcome.error_code.is_some() {
            self.error_code = outcome.error_code;
        }
    }

    pub(crate) fn record_outcome(&mut self, message: &Value) {
        let view = MessageView::of(message);
        self.record(view.result_type(), view.error_code());
    }

    /// A result's type (`complete` when it names none) or an error's code.
    pub(crate) fn record(&mut self, result_type: Option<&str>, error_code: Option<i64>) {
        if let Some(code) = error_code {
            self.error_code = i32::try_from(code).ok();
        }
        if let Some(result_type) = result_type {
            self.result_type = Some(result_type.to_owned());
        }
    }

    /// `complete`, `input_required`..., `error -32602`, or `http 403`.
    fn outcome(&self, status: StatusCode) -> String {
        match (&self.result_type, self.error_code) {
            (Some(result_type), _) => result_type.clone(),
            (None, Some(code)) => format!("error {code}"),
            (None, None) => format!("http {}", status.as_u16()),
        }
    }

    fn method_dimension(&self) -> &str {
        match (self.known, self.method.as_deref()) {
            // Every method the server knows (protocol::methods) is its own
            // dimension; any other is `other`.
            (Some(row), _) => row.name,
            (None, Some(method)) if method.starts_with("notifications/") => "notification",
            (None, Some(_)) => "other",
            (None, None) => "-",
        }
    }

    /// The tool or prompt, once it answered with a result: an unknown name
    /// is a JSON-RPC error, so it never becomes a dimension value.
    fn tool_dimension(&self) -> String {
        match (self.method.as_deref(), &self.result_type, &self.target) {
            (Some("tools/call" | "prompts/get"), Some(_), Some(name)) => capped(name),
            _ => "-".into(),
        }
    }

    /// The EMF record: the log fields, the metric values and `_aws`.
    pub(crate) fn emf_record(&self, status: StatusCode, latency: Duration, counts: &Counts, timestamp_ms: u64) -> Value {
        let mut metrics = vec![json!({"Name": "Requests", "Unit": "Count"}), json!({"Name": "Latency", "Unit": "Milliseconds"})];
        metrics.extend(Counter::ALL.iter().map(|c| json!({"Name": c.name(), "Unit": "Count"})));
        let mut record = Map::new();
        record.insert("_aws".into(), emf_directive(json!([["Method"], ["Method", "Tool"], ["Outcome"]]), metrics.into(), timestamp_ms));
        record.insert("level".into(), json!("INFO"));
        record.insert("target".into(), json!("mcp.request"));
        record.insert("message".into(), json!("request"));
        record.insert("Method".into(), json!(self.method_dimension()));
        record.insert("Tool".into(), json!(self.tool_dimension()));
        record.insert("Outcome".into(), json!(self.outcome(status)));
        record.insert("Requests".into(), json!(1));
        record.insert("Latency".into(), json!((latency.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0));
        for counter in Counter::ALL {
            record.insert(counter.name().into(), json!(counts.get(counter)));
        }
        // For reading the log: what the caller sent, capped.
        record.insert("method".into(), json!(capped(self.method.as_deref().unwrap_or("-"))));
        record.insert("name".into(), json!(capped(self.target.as_deref().unwrap_or("-"))));
        record.insert("status".into(), json!(status.as_u16()));
        record.insert("trace_id".into(), json!(self.trace_id.as_deref().unwrap_or("-")));
        Value::Object(record)
    }

    pub(crate) fn finish(self, format: LogFormat, status: StatusCode, latency: Duration, counts: &Counts) {
        if !tracing::enabled!(target: "mcp.request", tracing::Level::INFO) {
            return;
        }
        if format == LogFormat::Json {
            // One line on stderr, which Lambda sends to CloudWatch Logs.
            let record = self.emf_record(status, latency, counts, SystemClock.now_ms());
            eprintln!("{record}");
            return;
        }
        tracing::info!(
            target: "mcp.request",
            method = capped(self.method.as_deref().unwrap_or("-")),
            name = capped(self.target.as_deref().unwrap_or("-")),
            outcome = self.outcome(status),
            status = status.as_u16(),
            latency_ms = latency.as_secs_f64() * 1000.0,
            kms_calls = counts.get(Counter::KmsCalls),
            data_key_cache_hits = counts.get(Counter::DataKeyCacheHits),
            conditional_check_failures = counts.get(Counter::ConditionalCheckFailures),
            store_retries = counts.get(Counter::StoreRetries),
            mailbox_reads = counts.get(Counter::MailboxReads),
            tolerated = tolerated(counts),
            trace_id = self.trace_id.as_deref().unwrap_or("-"),
            "request"
        );
    }
}

/// The client shapes the edge tolerated in this request
/// (`edge::tolerance`), by metric name, or `-`.
fn tolerated(counts: &Counts) -> String {
    let names: Vec<&str> = Counter::ALL.iter().filter(|c| c.is_tolerance() && counts.get(**c) > 0).map(|c| c.name()).collect();
    if names.is_empty() { "-".into() } else { names.join(",") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logged(method: &str, target: &str, message: Value) -> RequestLog {
        let known = methods::method(method);
        let mut log = RequestLog { method: Some(method.into()), known, target: Some(target.into()), ..Default::default() };
        log.record_outcome(&message);
        log
    }

    #[test]
    fn the_lambda_line_is_an_emf_record_with_bounded_dimensions() {
        let counts = Counts::default();
        let called = logged("tools/call", "echo", json!({"result": {"content": []}}));
        let record = called.emf_record(StatusCode::OK, Duration::from_micros(1500), &counts, 1_700_000_000_000);
        let directive = &record["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(record["_aws"]["Timestamp"], 1_700_000_000_000u64);
        assert_eq!(directive["Dimensions"], json!([["Method"], ["Method", "Tool"], ["Outcome"]]));
        // Every metric and dimension the directive names is a value at the root.
        for name in directive["Metrics"].as_array().unwrap().iter().map(|m| m["Name"].as_str().unwrap()) {
            assert!(record[name].is_number(), "{name}");
        }
        assert_eq!(
            (record["Method"].as_str(), record["Tool"].as_str(), record["Outcome"].as_str()),
            (Some("tools/call"), Some("echo"), Some("complete"))
        );
        assert_eq!((record["Requests"].as_u64(), record["Latency"].as_f64()), (Some(1), Some(1.5)));

        // Names the caller made up stay out of the dimensions.
        let unknown_tool = logged("tools/call", "no-such-tool", json!({"error": {"code": -32602}}));
        let record = unknown_tool.emf_record(StatusCode::OK, Duration::ZERO, &counts, 0);
        assert_eq!((record["Tool"].as_str(), record["Outcome"].as_str()), (Some("-"), Some("error -32602")));
        assert_eq!(record["name"], "no-such-tool", "still in the log line");
        let invented = logged("made/up", "x", json!({"error": {"code": -32601}}));
        assert_eq!(invented.emf_record(StatusCode::OK, Duration::ZERO, &counts, 0)["Method"], "other");
        // Every method the server serves is counted as itself, both eras'.
        for served in ["subscriptions/listen", "initialize", "logging/setLevel", "tasks/update"] {
            let record = logged(served, "-", json!({"result": {}})).emf_record(StatusCode::OK, Duration::ZERO, &counts, 0);
            assert_eq!(record["Method"], served);
        }
    }

    #[test]
    fn caller_supplied_names_are_capped() {
        assert_eq!(capped("echo"), "echo");
        let long = "é".repeat(450_000);
        let logged = capped(&long);
        assert!(logged.chars().count() < MAX_LOGGED_CHARS + 30, "{}", logged.len());
        assert!(logged.ends_with(&format!("(+{} bytes)", long.len() - 2 * MAX_LOGGED_CHARS)));
    }
}
