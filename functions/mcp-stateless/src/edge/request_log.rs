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
            method = self.method.as_deref().unwrap_or("-"),
            name = self.target.as_deref().unwrap_or("-"),
            result_type = self.result_type.as_deref().unwrap_or("-"),
            error_code = self.error_code,
            status = status.as_u16(),
            latency_ms = latency.as_secs_f64() * 1000.0,
            trace_id = self.trace_id.as_deref().unwrap_or("-"),
            "request"
        );
    }
}
