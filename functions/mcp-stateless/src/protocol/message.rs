//! Typed views over one JSON-RPC message, read where it lies: whether it
//! is a response, its result's type, what it asks the client, the task it
//! created and its error's code. What the edge asks of a handler's
//! answers, asked here alone.

use serde_json::{Map, Value};

/// The result type of a result that asks the client for input (MRTR).
pub const INPUT_REQUIRED: &str = "input_required";
/// The result type of a result that names none.
pub const COMPLETE: &str = "complete";
/// The result type of a `CreateTaskResult` (`io.modelcontextprotocol/tasks`).
pub const TASK: &str = "task";

/// One message, as the edge reads it.
#[derive(Debug, Clone, Copy)]
pub struct MessageView<'a>(&'a Value);

impl<'a> MessageView<'a> {
    /// A view of `message`.
    pub fn of(message: &'a Value) -> Self {
        Self(message)
    }

    /// Whether it answers a request: it has an `id` and a `result` or an
    /// `error` (a request or a notification has a `method` instead).
    pub fn is_response(self) -> bool {
        self.0.get("id").is_some() && (self.0.get("result").is_some() || self.0.get("error").is_some())
    }

    /// Its result, if it has one.
    pub fn result(self) -> Option<&'a Value> {
        self.0.get("result")
    }

    /// Its result's `resultType`, [`COMPLETE`] when the result names none;
    /// `None` without a result.
    pub fn result_type(self) -> Option<&'a str> {
        self.result().map(|result| result.get("resultType").and_then(Value::as_str).unwrap_or(COMPLETE))
    }

    /// The requests an [`INPUT_REQUIRED`] result asks the client to answer.
    pub fn input_requests(self) -> Option<&'a Map<String, Value>> {
        if self.result_type() != Some(INPUT_REQUIRED) {
            return None;
        }
        self.result()?.get("inputRequests")?.as_object()
    }

    /// The id of the task a [`TASK`] result created.
    pub fn created_task(self) -> Option<&'a str> {
        if self.result_type() != Some(TASK) {
            return None;
        }
        self.result()?.get("taskId")?.as_str()
    }

    /// Its error's `code`, if it is an error.
    pub fn error_code(self) -> Option<i64> {
        self.0.get("error")?.get("code")?.as_i64()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn each_view_reads_only_the_message_it_names() {
        let asking = json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "input_required", "inputRequests": {"a": {}}}});
        let view = MessageView::of(&asking);
        assert!(view.is_response());
        assert_eq!(view.result_type(), Some(INPUT_REQUIRED));
        assert_eq!(view.input_requests().map(Map::len), Some(1));
        assert_eq!(view.created_task(), None);

        let task = json!({"jsonrpc": "2.0", "id": 2, "result": {"resultType": "task", "taskId": "t-1", "inputRequests": {}}});
        assert_eq!(MessageView::of(&task).created_task(), Some("t-1"));
        assert_eq!(MessageView::of(&task).input_requests(), None, "only an input_required result asks");

        let plain = json!({"jsonrpc": "2.0", "id": 3, "result": {}});
        assert_eq!(MessageView::of(&plain).result_type(), Some(COMPLETE));

        let error = json!({"jsonrpc": "2.0", "id": 4, "error": {"code": -32602, "message": "bad"}});
        assert_eq!((MessageView::of(&error).error_code(), MessageView::of(&error).result_type()), (Some(-32602), None));
        assert!(MessageView::of(&error).is_response());

        let notification = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}});
        assert!(!MessageView::of(&notification).is_response());
        let request = json!({"jsonrpc": "2.0", "id": 5, "method": "ping"});
        assert!(!MessageView::of(&request).is_response());
    }
}
