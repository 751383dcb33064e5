//! Server-to-client requests for 2025-era clients, across instances.
//!
//! A tool is written once, in the 2026-07-28 style: it answers
//! `input_required` with the requests it needs answered, and is called
//! again with the answers (basic/patterns/mrtr). A modern client does the
//! calling again itself. A 2025-era client expects the server to send
//! those requests on the call's own event stream and to answer the call
//! when it has them; its answers come back as separate POSTs, on Lambda
//! to any instance. So the call's invocation holds the conversation: it
//! sends each request with an unguessable id, waits for the answers in the
//! session's mailbox (`sessions::mailbox`, written by whichever instance
//! each answer reached), calls the tool again with them as
//! `inputResponses` and the sealed `requestState`, and repeats, for at
//! most [`MAX_ROUNDS`] rounds and never past the invocation's deadline.
//! Everything else the tool streams (progress, log messages) is passed on
//! as it comes. A task tool's call is followed to its outcome the same way
//! (`task.rs`): a 2025-era client cannot poll a task, so the stream does.

use std::{
    convert::Infallible,
    sync::Arc,
    time::{Duration, Instant},
};

use bytes::Bytes;
use futures::{SinkExt, StreamExt, channel::mpsc, future::BoxFuture};
use http::{HeaderMap, Method, Uri};
use http_body_util::{BodyExt, Either, Full, StreamBody, combinators::BoxBody};
use hyper::body::Frame;
use rmcp::model::TASKS_EXTENSION_ID;
use serde_json::{Map, Value, json};

mod task;

use crate::{
    edge::{
        error::{Refusal, code},
        rewrite::FinalRewrite,
        sse,
        stream::{EdgeBody, Rewrite, STREAM_MARGIN, is_event_stream, out_of_time},
    },
    metrics,
    protocol::{
        capability_guard::missing_capabilities,
        context::{CallContext, EntryFacts, META_CLIENT_CAPABILITIES},
        message::MessageView,
        scope::RequestScope,
    },
    sessions::{
        LegacySessions, Session,
        mailbox::{ASK_IDS, ASKABLE, Answer},
    },
};

/// Rounds of questions one call may ask before it is stopped.
pub(super) const MAX_ROUNDS: usize = 8;
/// How long a call may run where no deadline bounds it (the local
/// server).
const LOCAL_WAIT: Duration = Duration::from_secs(600);
/// How long one round waits for its answers. Lambda does not tell a
/// function that its client left, so a question nobody answers would hold
/// the invocation to its deadline; clients time their own requests out
/// sooner (the TypeScript SDK after 60 s).
const MAX_ANSWER_WAIT: Duration = Duration::from_secs(120);
/// The first pause between reads of the mailbox, growing by half each
/// read up to [`MAX_POLL`]: a client that answers at once resumes the
/// tool within tens of milliseconds, one that waits for a person costs
/// about one read a second.
const FIRST_POLL: Duration = Duration::from_millis(25);
const MAX_POLL: Duration = Duration::from_secs(1);
/// How often a waiting call checks that its session was not ended by
/// `DELETE` meanwhile (one read).
const SESSION_CHECK: Duration = Duration::from_secs(5);

/// The handler, called once per round.
pub(super) type Handler =
    Arc<dyn Fn(http::Request<Full<Bytes>>) -> BoxFuture<'static, http::Response<BoxBody<Bytes, Infallible>>> + Send + Sync>;

/// The modern request a round re-sends, with fresh answers.
pub(super) struct Template {
    pub method: Method,
    pub uri: Uri,
    pub headers: HeaderMap,
    pub ctx: CallContext,
    pub facts: EntryFacts,
    pub message: Map<String, Value>,
}

impl Template {
    fn request(&self) -> http::Request<Full<Bytes>> {
        self.request_with(&self.message, &[])
    }

    /// `message` sent as this request was, with `headers` replacing its own.
    fn request_with(&self, message: &Map<String, Value>, headers: &[(&'static str, String)]) -> http::Request<Full<Bytes>> {
        let mut request = http::Request::new(Full::new(Bytes::from(serde_json::to_vec(message).unwrap_or_default())));
        *request.method_mut() = self.method.clone();
        *request.uri_mut() = self.uri.clone();
        *request.headers_mut() = self.headers.clone();
        for (name, value) in headers {
            if let Ok(value) = http::HeaderValue::from_str(value) {
                request.headers_mut().insert(*name, value);
            }
        }
        request.extensions_mut().insert(RequestScope { call: Some(self.ctx.clone()), ..RequestScope::new(self.facts.clone()) });
        request
    }

    /// Declares the tasks extension, in the request's `_meta` and its
    /// context alike.
    pub(super) fn declare_tasks(&mut self) {
        fn declare(capabilities: &mut Map<String, Value>) {
            let extensions = capabilities.entry("extensions").or_insert_with(|| json!({}));
            if !extensions.is_object() {
                *extensions = json!({});
            }
            extensions.as_object_mut().expect("made an object").insert(TASKS_EXTENSION_ID.into(), json!({}));
        }
        let meta = self.params().entry("_meta").or_insert_with(|| json!({}));
        if let Some(capabilities) = meta.get_mut(META_CLIENT_CAPABILITIES).and_then(Value::as_object_mut) {
            declare(capabilities);
        }
        declare(&mut self.ctx.client_capabilities);
    }

    fn params(&mut self) -> &mut Map<String, Value> {
        let params = self.message.entry("params").or_insert_with(|| json!({}));
        if !params.is_object() {
            *params = json!({});
        }
        params.as_object_mut().expect("made an object")
    }
}

/// One legacy call that may ask its client questions.
pub(in crate::edge) struct Conversation {
    pub(super) handler: Handler,
    pub(super) sessions: LegacySessions,
    pub(super) session: Session,
    pub(super) template: Template,
    pub(super) request_id: Value,
    pub(super) finish: FinalRewrite,
    pub(super) counts: Arc<metrics::Counts>,
    pub(super) keep_alive: Duration,
    /// When the call must have answered ([`cut`]).
    pub(super) cut: Instant,
    /// The caller's lease on a waiting call (`sessions/waiting.rs`), held
    /// from the first question to the end.
    pub(super) waiting: Option<String>,
    /// The first round's answer, when [`first_round`](Self::first_round)
    /// found it needs more.
    pub(super) first: Option<Kept>,
}

/// What the first round left for the conversation.
pub(super) enum Kept {
    /// Its event stream, still to relay.
    Stream(http::Response<BoxBody<Bytes, Infallible>>),
    /// Its whole answer, read once: it asks, or it started a task.
    Message(Value),
}

impl Conversation {
    /// The call's event stream. The conversation runs beside the body that
    /// carries it, and stops when the client leaves (the body is dropped).
    pub(super) fn into_body(self) -> EdgeBody {
        let (tx, rx) = mpsc::channel::<Bytes>(16);
        let counts = self.counts.clone();
        tokio::spawn(metrics::within(counts, self.run(tx)));
        Either::Right(StreamBody::new(rx.map(|bytes| Ok::<_, Infallible>(Frame::data(bytes))).boxed()))
    }

    async fn run(mut self, mut tx: mpsc::Sender<Bytes>) {
        let last = match tokio::time::timeout_at(self.cut.into(), self.converse(&mut tx)).await {
            Ok(last) => last,
            Err(_) => {
                tracing::warn!("legacy call stopped at the invocation's deadline");
                Some(out_of_time(self.request_id.clone()))
            }
        };
        if let Some(mut last) = last {
            self.finish.message(&mut last);
            // Bounded: a client that stopped reading must not keep the log
            // line (and the slot) from being written.
            let _ = tokio::time::timeout(STREAM_MARGIN, tx.send(Bytes::from(sse::encode(&last)))).await;
        }
        if let Some(lease) = self.waiting.take() {
            self.sessions.stop_waiting(&self.template.ctx.principal, &lease).await;
        }
        self.finish.ended();
    }

    /// Calls the handler once: its answer, whole, when the call is done
    /// with it (no question, no task, nothing streamed); otherwise none,
    /// and the answer is kept for the conversation.
    pub(super) async fn first_round(&mut self) -> Option<(http::response::Parts, Bytes)> {
        let response = (self.handler)(self.template.request()).await;
        if is_event_stream(response.headers()) {
            self.first = Some(Kept::Stream(response));
            return None;
        }
        let (parts, body) = response.into_parts();
        let body = match body.collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(never) => match never {},
        };
        let message: Value = serde_json::from_slice(&body).unwrap_or_default();
        let view = MessageView::of(&message);
        if view.input_requests().is_none() && view.created_task().is_none() {
            return Some((parts, body));
        }
        self.first = Some(Kept::Message(message));
        None
    }

    /// The final answer, or none when the client left.
    async fn converse(&mut self, tx: &mut mpsc::Sender<Bytes>) -> Option<Value> {
        for round in 0.. {
            let mut last = match self.first.take() {
                Some(Kept::Message(message)) => message,
                Some(Kept::Stream(response)) => self.relay(response, tx).await?,
                None => {
                    let response = (self.handler)(self.template.request()).await;
                    self.relay(response, tx).await?
                }
            };
            if let Some(task_id) = MessageView::of(&last).created_task().map(str::to_owned) {
                last = self.follow(&task_id, tx).await?;
            }
            let Some(requests) = MessageView::of(&last).input_requests() else { return Some(last) };
            if missing_capabilities(&self.template.ctx.client_capabilities, requests).is_some() {
                // Shaped into a refusal naming the capability.
                return Some(last);
            }
            if round == MAX_ROUNDS {
                return Some(self.error(format!("the call asked for input more than {MAX_ROUNDS} times and was stopped")));
            }
            let requests = requests.clone();
            let state = last.get("result").and_then(|r| r.get("requestState")).cloned();
            let answers = match self.ask(&requests, tx).await {
                Ok(answers) => answers?,
                Err(error) => return Some(error),
            };
            let params = self.template.params();
            params.insert("inputResponses".into(), Value::Object(answers));
            match state {
                Some(state) => params.insert("requestState".into(), state),
                None => params.remove("requestState"),
            };
        }
        None
    }

    /// Passes on what a round streams, and answers its final message
    /// unsent.
    pub(super) async fn relay(
        &mut self,
        response: http::Response<BoxBody<Bytes, Infallible>>,
        tx: &mut mpsc::Sender<Bytes>,
    ) -> Option<Value> {
        let event_stream = is_event_stream(response.headers());
        let body = response.into_body();
        if !event_stream {
            let bytes = match body.collect().await {
                Ok(collected) => collected.to_bytes(),
                Err(never) => match never {},
            };
            return Some(serde_json::from_slice(&bytes).unwrap_or_else(|_| self.error("the handler's answer is not JSON".into())));
        }
        let mut events = sse::EventReader::new(body);
        while let Some(event) = events.next().await {
            let Some(mut message) = sse::message(&event) else {
                tx.send(Bytes::from(sse::frame(&event))).await.ok()?;
                continue;
            };
            if message.get("id") == Some(&self.request_id) && MessageView::of(&message).is_response() {
                return Some(message);
            }
            self.finish.message(&mut message);
            tx.send(Bytes::from(sse::with_message(&event, &message))).await.ok()?;
        }
        Some(self.error("the handler ended its stream without an answer".into()))
    }

    /// Sends `requests` to the client and waits for every answer. `Ok(None)`:
    /// the client left.
    pub(super) async fn ask(
        &mut self,
        requests: &Map<String, Value>,
        tx: &mut mpsc::Sender<Bytes>,
    ) -> Result<Option<Map<String, Value>>, Value> {
        let asked: Vec<(String, String, String, Value)> = requests
            .iter()
            .map(|(key, request)| {
                let method = request.get("method").and_then(Value::as_str).unwrap_or_default().to_owned();
                (key.clone(), ASK_IDS.mint(), method, request.get("params").cloned().unwrap_or_else(|| json!({})))
            })
            .collect();
        if let Some((_, _, method, _)) = asked.iter().find(|(_, _, method, _)| !ASKABLE.contains(&method.as_str())) {
            return Err(self.error(format!("the tool asked for {method}, which a 2025-era client cannot be asked")));
        }
        let principal = self.template.ctx.principal.clone();
        let wait = self.cut.saturating_duration_since(Instant::now()).min(MAX_ANSWER_WAIT);
        // The caller's lease on a waiting call, taken at the first
        // question and renewed at each: it ends with this wait unless
        // renewed, should this instance die.
        let lease = self.waiting.clone().unwrap_or_else(|| ASK_IDS.mint());
        match self.sessions.keep_waiting(&principal, &lease, wait).await {
            Ok(true) => self.waiting = Some(lease),
            Ok(false) => return Err(self.error(TOO_MANY_WAITING.into())),
            Err(error) => {
                tracing::error!(%error, "counting the caller's waiting calls");
                return Err(self.internal("the server could not wait for the client's answers"));
            }
        }
        let until = Instant::now() + wait;
        let ids: Vec<(String, String)> = asked.iter().map(|(_, id, method, _)| (id.clone(), method.clone())).collect();
        if let Err(error) = self.sessions.await_answers(&principal, &self.session, &ids, wait).await {
            tracing::error!(%error, "opening the mailbox");
            return Err(self.internal("the server could not wait for the client's answers"));
        }
        let answers = self.wait_for_answers(&asked, wait, until, tx).await;
        // However the wait ended, an answer that comes later is refused:
        // nothing would read it.
        self.sessions.close_answers(&principal, &self.session, &ids).await;
        answers
    }

    /// Sends the questions and reads the mailbox until every answer is in,
    /// the client left (`Ok(None)`), or the wait ends.
    async fn wait_for_answers(
        &self,
        asked: &[(String, String, String, Value)],
        wait: Duration,
        until: Instant,
        tx: &mut mpsc::Sender<Bytes>,
    ) -> Result<Option<Map<String, Value>>, Value> {
        let principal = &self.template.ctx.principal;
        for (_, id, method, params) in asked {
            let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
            if tx.send(Bytes::from(sse::encode(&request))).await.is_err() {
                return Ok(None);
            }
        }
        let mut answers = Map::new();
        let mut pause = FIRST_POLL;
        let mut quiet_since = Instant::now();
        let mut session_checked = Instant::now();
        while answers.len() < asked.len() {
            if session_checked.elapsed() >= SESSION_CHECK {
                if self.sessions.ended(principal, &self.session).await {
                    return Err(self.error("the session ended (DELETE) while the call waited for the client's answers".into()));
                }
                session_checked = Instant::now();
            }
            if Instant::now() + pause > until {
                let waited = wait.as_secs();
                return Err(self.error(format!("the client did not answer within {waited} s; call the tool again to be asked again")));
            }
            tokio::time::sleep(pause).await;
            pause = (pause.mul_f32(1.5)).min(MAX_POLL);
            for (key, id, method, _) in asked {
                if answers.contains_key(key) {
                    continue;
                }
                metrics::count(metrics::Counter::MailboxReads);
                match self.sessions.collect(principal, &self.session, id).await {
                    Ok(None) => {}
                    Ok(Some(Answer::Result(result))) => {
                        answers.insert(key.clone(), result);
                    }
                    Ok(Some(Answer::Error(error))) => {
                        let said = error.get("message").and_then(Value::as_str).unwrap_or("no reason given");
                        return Err(self.error(format!("the client answered {method} with an error: {said}")));
                    }
                    Err(error) => {
                        tracing::error!(%error, "reading the mailbox");
                        return Err(self.internal("the server could not read the client's answers"));
                    }
                }
            }
            if quiet_since.elapsed() >= self.keep_alive {
                // Proxies drop idle streams; a comment is no message.
                if tx.send(Bytes::from_static(sse::KEEP_ALIVE.as_bytes())).await.is_err() {
                    return Ok(None);
                }
                quiet_since = Instant::now();
            }
        }
        Ok(Some(answers))
    }

    /// A refusal the client's era reads: an `isError` result for a tool
    /// call (the model can act on it), a JSON-RPC error otherwise.
    pub(super) fn error(&self, message: String) -> Value {
        super::outbound::refusal(self.request_id.clone(), self.finish.method.as_deref(), message)
    }

    fn internal(&self, message: &str) -> Value {
        Refusal::new(code::INTERNAL_ERROR, message).message(Some(self.request_id.clone()))
    }
}

/// When a call on `facts` must have answered: before the invocation's
/// deadline, or after [`LOCAL_WAIT`] where there is none.
pub(super) fn cut(facts: &EntryFacts) -> Instant {
    match facts.deadline {
        Some(deadline) => deadline.cut(STREAM_MARGIN).into_std(),
        None => Instant::now() + LOCAL_WAIT,
    }
}

/// What a caller is told when every one of its waiting slots is taken.
const TOO_MANY_WAITING: &str = "You have too many calls waiting for your answers. Answer or cancel one of them, or wait for one to end.";
