//! Streamed responses: rmcp's event stream passed on frame by frame, as
//! the handler emits them, with the edge's rewrites applied to each
//! JSON-RPC message and every stream bounded by the invocation's deadline.
//!
//! Lambda does not tell a function that its client hung up, so a stream
//! that waits on its client would run (and bill) until the function's
//! timeout; each stream therefore ends on its own: a call cut at its
//! deadline gets a final error frame, listen streams close themselves
//! earlier (`subscriptions`).

use std::convert::Infallible;

use bytes::Bytes;
use futures::{StreamExt, stream::BoxStream};
use http_body_util::{Either, Full, StreamBody, combinators::BoxBody};
use hyper::body::Frame;
use serde_json::Value;

use crate::{
    edge::{
        error::{Refusal, code},
        sse,
    },
    protocol::message::MessageView,
};

/// How one answer leaves the edge: whole, once the handler has finished
/// (the buffered transport, and a client that cannot read an event
/// stream), or streamed as it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// Collected first; an event stream keeps only its messages.
    Whole,
    /// Event streams pass frame by frame: they may carry the server's
    /// own requests and stay open for `subscriptions/listen`.
    Streamed,
}

/// The events of a stream, as they are written.
pub type Frames = StreamBody<BoxStream<'static, Result<Frame<Bytes>, Infallible>>>;

/// What both entry points send: a whole answer (with its length, as
/// before streaming existed) or a stream of events.
pub type EdgeBody = Either<Full<Bytes>, Frames>;

/// A body that is already whole.
pub fn whole(bytes: Bytes) -> EdgeBody {
    Either::Left(Full::new(bytes))
}

/// What the edge does to each message of a stream, and once when it ends
/// (the request's log line, written when the stream is done).
pub trait Rewrite: Send + 'static {
    /// Rewrites `message` in place.
    fn message(&mut self, message: &mut Value);
    /// The stream ended: after its final response, at its deadline, or
    /// because the client left (the body was dropped).
    fn ended(&mut self);
}

/// A streamed call is cut this long before the invocation's deadline, so
/// its final error still reaches the client.
pub const STREAM_MARGIN: std::time::Duration = std::time::Duration::from_secs(1);

/// Whether a stream may go on: asked before each of its messages leaves,
/// and every [`GUARD_INTERVAL`] while it is idle. A 2025-era session's
/// notification stream may not once a newer one replaced it or the session
/// ended (2025-11-25 transport: the same message is never sent on two
/// streams); the stream then ends, sending nothing more.
pub type Guard = std::sync::Arc<dyn Fn() -> futures::future::BoxFuture<'static, bool> + Send + Sync>;

/// How often an idle guarded stream asks its [`Guard`].
pub const GUARD_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5);

/// Whether a body is an event stream.
pub fn is_event_stream(headers: &http::HeaderMap) -> bool {
    headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("text/event-stream"))
}

/// [`out_of_time`] as a whole JSON answer.
pub fn out_of_time_response(id: Value) -> http::Response<Bytes> {
    let mut response = http::Response::new(Bytes::from(out_of_time(id).to_string()));
    response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    response
}

/// The message sent in place of a final response that did not come before
/// the deadline.
pub fn out_of_time(id: Value) -> Value {
    Refusal::new(code::INTERNAL_ERROR, "The call did not finish within the function's time limit. Make it shorter, or run it as a task.")
        .message(Some(id))
}

struct State<R: Rewrite> {
    events: sse::EventReader,
    rewrite: R,
    /// When the stream is cut, and the id its final error answers.
    deadline: Option<(tokio::time::Instant, Value)>,
    /// The stream's guard, and when it is next asked while idle.
    guard: Option<(Guard, tokio::time::Instant)>,
    answered: bool,
}

impl<R: Rewrite> Drop for State<R> {
    fn drop(&mut self) {
        self.rewrite.ended();
    }
}

/// rmcp's SSE body, event by event, each JSON-RPC message rewritten.
pub fn rewritten<R: Rewrite>(
    inner: BoxBody<Bytes, Infallible>,
    rewrite: R,
    deadline: Option<(tokio::time::Instant, Value)>,
    guard: Option<Guard>,
) -> EdgeBody {
    let state = State {
        events: sse::EventReader::new(inner),
        rewrite,
        deadline,
        guard: guard.map(|guard| (guard, tokio::time::Instant::now() + GUARD_INTERVAL)),
        answered: false,
    };
    let frames = futures::stream::unfold(state, |mut state| async move {
        loop {
            // An event already read leaves before anything else is looked at.
            if let Some(event) = state.events.buffered() {
                if state.guard.is_some() && sse::data(&event).is_some() && !state.may_go_on().await {
                    return None;
                }
                let event = state.render(&event);
                return Some((Ok(Frame::data(Bytes::from(event))), state));
            }
            if state.events.ended() {
                return None;
            }
            let cut = state.deadline.as_ref().map(|(at, _)| *at);
            let check = state.guard.as_ref().map(|(_, at)| *at);
            tokio::select! {
                () = state.events.fill() => {}
                _ = sleep_until(check) => {
                    if !state.may_go_on().await {
                        return None;
                    }
                }
                _ = sleep_until(cut) => {
                    state.events.stop();
                    if let Some((_, id)) = state.deadline.take().filter(|_| !state.answered) {
                        tracing::warn!("streamed call cut at the invocation's deadline");
                        let mut message = out_of_time(id);
                        state.rewrite.message(&mut message);
                        // A stream of notifications only has no answer to give.
                        if !message.is_null() {
                            return Some((Ok(Frame::data(Bytes::from(sse::encode(&message)))), state));
                        }
                    }
                    return None;
                }
            }
        }
    });
    Either::Right(StreamBody::new(frames.boxed()))
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

impl<R: Rewrite> State<R> {
    /// Asks the guard, if any: false ends the stream.
    async fn may_go_on(&mut self) -> bool {
        let Some((guard, next)) = self.guard.as_mut() else { return true };
        *next = tokio::time::Instant::now() + GUARD_INTERVAL;
        if guard().await {
            return true;
        }
        self.events.stop();
        false
    }

    /// The event with its message rewritten; other lines (comments, which
    /// carry keep-alives) unchanged.
    fn render(&mut self, event: &str) -> String {
        let Some(mut message) = sse::message(event) else {
            return sse::frame(event);
        };
        self.rewrite.message(&mut message);
        if message.is_null() {
            // Left out by the rewrite; a comment keeps the frame.
            return sse::KEEP_ALIVE.to_owned();
        }
        if MessageView::of(&message).is_response() {
            self.answered = true;
        }
        sse::with_message(event, &message)
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;
    use serde_json::json;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Marks(Arc<Mutex<Vec<String>>>);

    impl Rewrite for Marks {
        fn message(&mut self, message: &mut Value) {
            message["seen"] = json!(true);
            self.0.lock().unwrap().push("message".into());
        }
        fn ended(&mut self) {
            self.0.lock().unwrap().push("ended".into());
        }
    }

    fn body_of(chunks: Vec<&'static str>) -> BoxBody<Bytes, Infallible> {
        let frames = futures::stream::iter(chunks.into_iter().map(|c| Ok::<_, Infallible>(Frame::data(Bytes::from(c)))));
        BodyExt::boxed(StreamBody::new(frames))
    }

    async fn text(body: EdgeBody) -> String {
        String::from_utf8(BodyExt::collect(body).await.unwrap().to_bytes().to_vec()).unwrap()
    }

    #[tokio::test]
    async fn events_split_across_chunks_are_rewritten_whole_and_comments_pass() {
        let marks = Marks::default();
        let body = body_of(vec![":\n\ndata: {\"a\"", ":1}\n\ndata: {\"id\":1,\"result\":{}}\n\n"]);
        let out = text(rewritten(body, marks.clone(), None, None)).await;
        assert_eq!(out, ":\n\ndata: {\"a\":1,\"seen\":true}\n\ndata: {\"id\":1,\"result\":{},\"seen\":true}\n\n");
        assert_eq!(*marks.0.lock().unwrap(), ["message", "message", "ended"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_guarded_stream_ends_when_its_guard_says_so_idle_or_not() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let holds = Arc::new(AtomicBool::new(true));
        let guard_of = |holds: &Arc<AtomicBool>| -> Guard {
            let holds = holds.clone();
            Arc::new(move || {
                let held = holds.load(Ordering::SeqCst);
                Box::pin(async move { held })
            })
        };
        // Replaced before its second message: that one never leaves.
        let (tx, rx) = futures::channel::mpsc::unbounded::<Result<Frame<Bytes>, Infallible>>();
        let body = BodyExt::boxed(StreamBody::new(rx));
        let mut out = rewritten(body, Marks::default(), None, Some(guard_of(&holds)));
        tx.unbounded_send(Ok(Frame::data(Bytes::from("data: {\"method\":\"a\"}\n\n")))).unwrap();
        let first = BodyExt::frame(&mut out).await.unwrap().unwrap().into_data().unwrap();
        assert!(std::str::from_utf8(&first).unwrap().contains("\"a\""));
        holds.store(false, Ordering::SeqCst);
        tx.unbounded_send(Ok(Frame::data(Bytes::from("data: {\"method\":\"b\"}\n\n")))).unwrap();
        assert!(BodyExt::frame(&mut out).await.is_none(), "ended without sending b");

        // Idle: it ends at its next check.
        holds.store(true, Ordering::SeqCst);
        let idle = BodyExt::boxed(StreamBody::new(futures::stream::pending::<Result<Frame<Bytes>, Infallible>>()));
        let mut out = rewritten(idle, Marks::default(), None, Some(guard_of(&holds)));
        let flag = holds.clone();
        tokio::spawn(async move {
            tokio::time::sleep(GUARD_INTERVAL * 3).await;
            flag.store(false, Ordering::SeqCst);
        });
        assert!(BodyExt::frame(&mut out).await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_without_an_answer_by_its_deadline_gets_a_final_error() {
        let pending = futures::stream::iter(vec![Ok::<_, Infallible>(Frame::data(Bytes::from("data: {\"method\":\"x\"}\n\n")))])
            .chain(futures::stream::pending());
        let body = BodyExt::boxed(StreamBody::new(pending));
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        let out = text(rewritten(body, Marks::default(), Some((deadline, json!(7))), None)).await;
        let last: Value = serde_json::from_str(out.trim_end().rsplit("data: ").next().unwrap()).unwrap();
        assert_eq!(last["id"], 7);
        assert_eq!(last["error"]["code"], -32603);
    }
}
