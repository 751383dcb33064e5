//! Server-sent events as Streamable HTTP carries them (HTML Living
//! Standard, "Server-sent events"): events end with a blank line; a
//! message is the JSON of its event's `data:` lines, joined by newlines
//! when there are several; other lines (`:` comments, which carry
//! keep-alives, `id:`, `event:`, `retry:`) belong to the event as they are.
//!
//! The one reader and writer of SSE in the edge: whole answers (collected
//! first) and streamed ones (event by event) are read and written alike.

use serde_json::Value;

/// The next complete event (without its blank line) from `buffer`, taken
/// out of it; `None` until one has fully arrived.
pub fn take_event(buffer: &mut Vec<u8>) -> Option<String> {
    let end = buffer.windows(2).position(|pair| pair == b"\n\n")?;
    let event: Vec<u8> = buffer.drain(..end + 2).take(end).collect();
    Some(String::from_utf8_lossy(&event).into_owned())
}

/// The events of a whole body, each without its blank line.
pub fn events(body: &str) -> impl Iterator<Item = &str> {
    body.split("\n\n").filter(|event| !event.trim().is_empty())
}

/// The event's data: its `data:` lines' values (one leading space
/// dropped), joined by newlines; `None` for an event without data.
pub fn data(event: &str) -> Option<String> {
    let lines: Vec<&str> =
        event.lines().filter_map(|line| line.strip_prefix("data:")).map(|value| value.strip_prefix(' ').unwrap_or(value)).collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// The JSON-RPC message an event carries, if its data is one.
pub fn message(event: &str) -> Option<Value> {
    serde_json::from_str(&data(event)?).ok()
}

/// `event` with its data replaced by `message`: its other lines as they
/// were, then one `data:` line, then the blank line that ends it.
pub fn with_message(event: &str, message: &Value) -> String {
    let mut out: String = event.lines().filter(|line| !line.starts_with("data:")).map(|line| format!("{line}\n")).collect();
    out.push_str(&encode(message));
    out
}

/// An event that carries `message` and nothing else.
pub fn encode(message: &Value) -> String {
    format!("data: {message}\n\n")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn events_are_taken_whole_as_they_arrive() {
        let mut buffer = b": keep-alive\n\ndata: {\"a\"".to_vec();
        assert_eq!(take_event(&mut buffer).as_deref(), Some(": keep-alive"));
        assert_eq!(take_event(&mut buffer), None, "half an event waits for the rest");
        buffer.extend_from_slice(b":1}\n\n");
        assert_eq!(take_event(&mut buffer).as_deref(), Some("data: {\"a\":1}"));
        assert!(buffer.is_empty());
    }

    #[test]
    fn a_message_may_span_several_data_lines() {
        let event = "id: 7\ndata: {\"jsonrpc\": \"2.0\",\ndata:\"id\": 1}";
        assert_eq!(data(event).as_deref(), Some("{\"jsonrpc\": \"2.0\",\n\"id\": 1}"));
        assert_eq!(message(event), Some(json!({"jsonrpc": "2.0", "id": 1})));
        assert_eq!(with_message(event, &json!({"id": 2})), "id: 7\ndata: {\"id\":2}\n\n");
        assert_eq!(data(": only a comment"), None);
        let body = "data: 1\n\n: ping\n\ndata: 2\n\n";
        assert_eq!(events(body).filter_map(message).collect::<Vec<_>>(), [json!(1), json!(2)]);
    }
}
