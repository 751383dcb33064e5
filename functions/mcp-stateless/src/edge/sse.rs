//! Server-sent events as Streamable HTTP carries them (HTML Living
//! Standard, "Server-sent events"): events end with a blank line; a
//! message is the JSON of its event's `data:` lines, joined by newlines
//! when there are several; other lines (`:` comments, which carry
//! keep-alives, `id:`, `event:`, `retry:`) belong to the event as they are.
//!
//! The one reader and writer of SSE in the edge: whole answers (collected
//! first) and streamed ones (event by event, [`EventReader`]) are read by
//! the same rules, and no framing byte is written anywhere else. A streamed
//! event keeps its other lines; a whole answer keeps only its messages (a
//! keep-alive comment means nothing in a collected body). Lines may end in
//! LF or CRLF.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, combinators::BoxBody};
use serde_json::Value;

/// A comment and nothing else: keeps an idle stream open through proxies,
/// and keeps a frame where a message was left out.
pub const KEEP_ALIVE: &str = ":\n\n";

/// The events of a body as they arrive: the one pump every stream the edge
/// reads goes through.
pub struct EventReader {
    body: BoxBody<Bytes, Infallible>,
    buffer: Vec<u8>,
    ended: bool,
}

impl EventReader {
    /// Reads `body`.
    pub fn new(body: BoxBody<Bytes, Infallible>) -> Self {
        Self { body, buffer: Vec::new(), ended: false }
    }

    /// The next complete event (without its blank line), waiting for the
    /// body as long as it takes; a last event without its blank line still
    /// counts. `None` once the body ended.
    pub async fn next(&mut self) -> Option<String> {
        loop {
            if let Some(event) = self.buffered() {
                return Some(event);
            }
            if self.ended() {
                return None;
            }
            self.fill().await;
        }
    }

    /// The next event already read in full, if any.
    pub fn buffered(&mut self) -> Option<String> {
        take_event(&mut self.buffer)
    }

    /// Whether the body ended and every event of it was taken.
    pub fn ended(&self) -> bool {
        self.ended && self.buffer.is_empty()
    }

    /// Reads the body's next frame into the buffer; at its end, a last
    /// event without its blank line is completed. Cancel-safe: a frame is
    /// buffered as soon as it is read, with no await in between.
    pub async fn fill(&mut self) {
        if self.ended {
            return;
        }
        match self.body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    self.buffer.extend_from_slice(&data);
                }
            }
            Some(Err(never)) => match never {},
            None => {
                self.ended = true;
                if !self.buffer.is_empty() {
                    self.buffer.extend_from_slice(b"\n\n");
                }
            }
        }
    }

    /// Reads nothing more: what is buffered is dropped.
    pub fn stop(&mut self) {
        self.ended = true;
        self.buffer.clear();
    }
}

/// `event` (without its blank line, as read) framed to be sent again.
pub fn frame(event: &str) -> String {
    format!("{event}\n\n")
}

/// The next complete event (without its blank line) from `buffer`, taken
/// out of it; `None` until one has fully arrived.
pub fn take_event(buffer: &mut Vec<u8>) -> Option<String> {
    let (end, blank) = event_end(buffer)?;
    let event: Vec<u8> = buffer.drain(..end + blank).take(end).collect();
    Some(String::from_utf8_lossy(&event).into_owned())
}

/// Where the first event of `bytes` ends, and the length of the blank
/// line that ends it (LF LF, or CRLF CRLF).
fn event_end(bytes: &[u8]) -> Option<(usize, usize)> {
    bytes.windows(2).enumerate().find_map(|(at, pair)| match pair {
        b"\n\n" => Some((at, 2)),
        b"\r\n" if bytes[at + 2..].starts_with(b"\r\n") => Some((at, 4)),
        _ => None,
    })
}

/// The events of a whole body, each without its blank line (a last one
/// without it included).
pub fn events(body: &str) -> impl Iterator<Item = &str> {
    let mut rest = body;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let (event, after) = match event_end(rest.as_bytes()) {
            Some((end, blank)) => (&rest[..end], &rest[end + blank..]),
            None => (rest, ""),
        };
        rest = after;
        Some(event)
    })
    .filter(|event| !event.trim().is_empty())
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

    #[tokio::test]
    async fn the_reader_yields_events_across_frames_and_a_last_one_without_its_blank_line() {
        let frames = [": keep-alive\r\n\r\ndata: {\"a\"", ":1}\n\ndata: {\"b\":2}"];
        let frames = frames.map(|frame| Ok::<_, Infallible>(hyper::body::Frame::data(Bytes::from(frame))));
        let mut reader = EventReader::new(BodyExt::boxed(http_body_util::StreamBody::new(futures::stream::iter(frames))));
        assert_eq!(reader.next().await.as_deref(), Some(": keep-alive"));
        assert_eq!(reader.next().await.as_deref(), Some("data: {\"a\":1}"));
        assert_eq!(reader.next().await.as_deref(), Some("data: {\"b\":2}"), "the body ended: the last event counts");
        assert_eq!(reader.next().await, None);
        assert_eq!(frame(": x"), ": x\n\n");
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

    #[test]
    fn lines_may_end_in_crlf() {
        let mut buffer = b": ping\r\n\r\nid: 1\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n".to_vec();
        assert_eq!(take_event(&mut buffer).as_deref(), Some(": ping"));
        let event = take_event(&mut buffer).unwrap();
        assert_eq!(message(&event), Some(json!({"a": 1})));
        assert_eq!(with_message(&event, &json!(2)), "id: 1\ndata: 2\n\n");
        let body = "data: 1\r\n\r\ndata: 2";
        assert_eq!(events(body).filter_map(message).collect::<Vec<_>>(), [json!(1), json!(2)]);
    }
}
