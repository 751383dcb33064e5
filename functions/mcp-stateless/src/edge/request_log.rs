//! One log line per request: method, target, outcome, latency, trace id.
//! Never arguments, `requestState`, tokens or response bodies.

use std::time::Duration;

use http::StatusCode;
use serde_json::Value;

#[derive(Debug, Default)]
pub struct RequestLog {
    pub method: Option<String>,
    /// Tool or prompt name, or resource URI.
    pub target: Option<String>,
    pub result_type: Option<String>,
    pub error_code: Option<i32>,
    pub trace_id: Option<String>,
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

impl RequestLog {
    pub fn record_outcome(&mut self, message: &Value) {
        if let Some(code) = message.pointer("/error/code").and_then(Value::as_i64) {
            self.error_code = i32::try_from(code).ok();
        }
        if let Some(result) = message.get("result") {
            self.result_type = Some(result.get("resultType").and_then(Value::as_str).unwrap_or("complete").to_owned());
        }
    }

    pub fn finish(self, status: StatusCode, latency: Duration) {
        tracing::info!(
            target: "mcp.request",
            method = capped(self.method.as_deref().unwrap_or("-")),
            name = capped(self.target.as_deref().unwrap_or("-")),
            result_type = self.result_type.as_deref().unwrap_or("-"),
            error_code = self.error_code,
            status = status.as_u16(),
            latency_ms = latency.as_secs_f64() * 1000.0,
            trace_id = self.trace_id.as_deref().unwrap_or("-"),
            "request"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caller_supplied_names_are_capped() {
        assert_eq!(capped("echo"), "echo");
        let long = "é".repeat(450_000);
        let logged = capped(&long);
        assert!(logged.chars().count() < MAX_LOGGED_CHARS + 30, "{}", logged.len());
        assert!(logged.ends_with(&format!("(+{} bytes)", long.len() - 2 * MAX_LOGGED_CHARS)));
    }
}
