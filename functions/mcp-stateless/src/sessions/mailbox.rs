//! Answers to the server's own requests, across instances.
//!
//! A 2025-era client answers an `elicitation/create` (or
//! `sampling/createMessage`, `roots/list`) the server sent mid-call with a
//! separate POST, which on Lambda reaches any instance while the call's
//! own invocation waits. The waiting invocation opens one item per
//! request it sent (pending, naming the method, expiring with the wait);
//! the instance the answer reaches checks it against that item (the
//! session, the caller, the id, the answer's shape for the method) and
//! writes it once; the waiting invocation reads the items (consistent
//! reads, as listen streams read the feed) until every answer is in.

use serde_json::{Map, Value, json};

use crate::{
    handles::{HandleRecord, Lookup},
    protocol::context::Principal,
    sessions::{LegacySessions, Session, SessionError},
    storage::{IdKind, ItemKey},
};

/// The ids of the server's requests: `ask_<128 random bits>`, unguessable,
/// so an answer names the one request it answers and nothing else.
pub const ASK_IDS: IdKind = IdKind { prefix: "ask" };

/// The largest answer taken, serialized: what a person types into a form
/// or a model samples fits many times over, and the item stays far under
/// DynamoDB's 400 KB.
pub const MAX_ANSWER_BYTES: usize = 16 * 1024;

/// The methods a tool may ask a 2025-era client mid-call.
pub const ASKABLE: &[&str] = &["elicitation/create", "sampling/createMessage", "roots/list"];

/// What the client answered to one request.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Answer {
    /// Its JSON-RPC result.
    Result(Value),
    /// Its JSON-RPC error (the client refused or failed).
    Error(Value),
}

/// Why an answer was not taken.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum AnswerRefusal {
    /// No pending request of this session has this id (unknown, another
    /// caller's or session's, expired, or already answered): all alike.
    #[error("no request of this session is waiting for an answer with this id")]
    NotWaiting,
    /// The result does not have the shape the method's answer has.
    #[error("the answer to {method} is malformed: {reason}")]
    Malformed {
        /// The method the request was.
        method: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The session did not open, or the table could not be reached.
    #[error(transparent)]
    Session(#[from] SessionError),
}

impl LegacySessions {
    fn ask_key(&self, principal: &Principal, session: &Session, id: &str) -> ItemKey {
        ASK_IDS.key(principal.binding_id(), &format!("{}:{id}", session.id))
    }

    /// Opens a pending item for each `(id, method)` the server is about to
    /// send, until the wait is surely over (two seconds after it can end):
    /// an answer that comes when nothing waits for it any more finds no
    /// item (the call closes them when it stops waiting,
    /// [`close_answers`](Self::close_answers), and they expire), and is
    /// refused. One write each.
    pub async fn await_answers(
        &self,
        principal: &Principal,
        session: &Session,
        asked: &[(String, String)],
        wait: std::time::Duration,
    ) -> Result<(), SessionError> {
        let now = self.clock.now();
        let expires_at = super::wait_ends(now, wait);
        for (id, method) in asked {
            let key = self.ask_key(principal, session, id);
            let record = HandleRecord {
                owner: key.owner.clone(),
                kind: key.kind.to_owned(),
                data: json!({"method": method}),
                version: 1,
                created_at: now,
                last_used_at: now,
                expires_at,
                deadline: expires_at,
            };
            self.store.create(&key, &record).await?;
        }
        Ok(())
    }

    /// Takes the client's answer (a JSON-RPC response object) to the
    /// server's request `id`, once: a second answer to the same request is
    /// [`AnswerRefusal::NotWaiting`]. A malformed answer to a waiting
    /// request is refused, and the refusal is what the waiting call gets,
    /// so it ends at once rather than at its deadline.
    pub async fn answer(
        &self,
        principal: &Principal,
        session: &Session,
        id: &str,
        response: &Map<String, Value>,
    ) -> Result<(), AnswerRefusal> {
        if !ASK_IDS.is_well_formed(id) {
            return Err(AnswerRefusal::NotWaiting);
        }
        let key = self.ask_key(principal, session, id);
        let now = self.clock.now();
        let Lookup::Found(record) = self.store.get(&key, now).await.map_err(SessionError::from)? else {
            return Err(AnswerRefusal::NotWaiting);
        };
        if record.data.get("answer").is_some() {
            return Err(AnswerRefusal::NotWaiting);
        }
        let method = record.data.get("method").and_then(Value::as_str).unwrap_or_default().to_owned();
        let checked = match (response.get("result"), response.get("error")) {
            _ if serde_json::to_vec(response).map_or(usize::MAX, |bytes| bytes.len()) > MAX_ANSWER_BYTES => {
                Err("the answer is larger than this server takes")
            }
            (Some(result), None) => check_shape(&method, result).map(|()| json!({"result": result})),
            (None, Some(error)) if error.is_object() => Ok(json!({"error": error})),
            _ => Err("a response has exactly one of result and error"),
        };
        let answer = match &checked {
            Ok(answer) => answer.clone(),
            Err(reason) => json!({"error": {"code": -32602, "message": format!("the client's answer to {method} was refused: {reason}")}}),
        };
        let data = json!({"method": method, "answer": answer});
        // Compare-and-set on the pending version: of two answers racing,
        // one is written.
        let written = self.store.replace(&key, record.version, &data, now, record.expires_at).await.map_err(SessionError::from)?;
        match (written, checked) {
            (Lookup::Found(_), Ok(_)) => Ok(()),
            (Lookup::Found(_), Err(reason)) => Err(AnswerRefusal::Malformed { method, reason }),
            _ => Err(AnswerRefusal::NotWaiting),
        }
    }

    /// Closes the pending items of `asked` once their call stopped waiting
    /// (answered, refused, out of time, or its client gone): a later answer
    /// is refused (HTTP 400) rather than taken for nobody. Best effort: an
    /// item left open expires with its wait. One write each.
    pub async fn close_answers(&self, principal: &Principal, session: &Session, asked: &[(String, String)]) {
        let now = self.clock.now();
        for (id, _) in asked {
            if let Err(error) = self.store.delete(&self.ask_key(principal, session, id), None, now).await {
                tracing::warn!(%error, "a pending answer not closed; it expires with its wait");
            }
        }
    }

    /// The answer to request `id`, once it is in. One consistent read.
    pub async fn collect(&self, principal: &Principal, session: &Session, id: &str) -> Result<Option<Answer>, SessionError> {
        let key = self.ask_key(principal, session, id);
        let Lookup::Found(record) = self.store.get(&key, self.clock.now()).await? else {
            return Ok(None);
        };
        let Some(answer) = record.data.get("answer") else { return Ok(None) };
        Ok(match (answer.get("result"), answer.get("error")) {
            (Some(result), _) => Some(Answer::Result(result.clone())),
            (_, Some(error)) => Some(Answer::Error(error.clone())),
            _ => None,
        })
    }
}

/// Whether `result` has the shape of an answer to `method` (the fields
/// the 2025-11-25 schema requires), so that a malformed one is refused to
/// the client that sent it rather than handed to the tool.
fn check_shape(method: &str, result: &Value) -> Result<(), &'static str> {
    let text = |field: &str| result.get(field).and_then(Value::as_str);
    match method {
        "elicitation/create" => match text("action") {
            Some("accept" | "decline" | "cancel") => match result.get("content") {
                None | Some(Value::Object(_)) => Ok(()),
                Some(_) => Err("content must be an object"),
            },
            _ => Err("action must be accept, decline or cancel"),
        },
        "sampling/createMessage" => {
            if text("model").is_none() || text("role").is_none() || result.get("content").is_none() {
                Err("model, role and content are required")
            } else {
                Ok(())
            }
        }
        "roots/list" => match result.get("roots").and_then(Value::as_array) {
            Some(roots) if roots.iter().all(|root| root.get("uri").and_then(Value::as_str).is_some()) => Ok(()),
            _ => Err("roots must be a list of objects with a uri"),
        },
        _ => Err("not a method this server asks"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sessions::tests::{alice, sessions};

    #[tokio::test]
    async fn an_answer_is_taken_once_for_its_own_session_and_checked() {
        let (sessions, _) = sessions();
        let token = sessions.mint(&alice(), "2025-11-25", &Map::new(), None).await.unwrap();
        let other = sessions.mint(&alice(), "2025-11-25", &Map::new(), None).await.unwrap();
        let (session, _) = sessions.open(&alice(), &token).await.unwrap();
        let (other, _) = sessions.open(&alice(), &other).await.unwrap();
        let id = ASK_IDS.mint();
        sessions
            .await_answers(&alice(), &session, &[(id.clone(), "elicitation/create".into())], std::time::Duration::from_secs(60))
            .await
            .unwrap();
        assert_eq!(sessions.collect(&alice(), &session, &id).await.unwrap(), None);

        let response = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result}).as_object().cloned().unwrap();
        let good = response(json!({"action": "accept", "content": {"name": "Ada"}}));
        assert_eq!(sessions.answer(&alice(), &other, &id, &good).await, Err(AnswerRefusal::NotWaiting), "another session's");
        assert_eq!(sessions.answer(&Principal::Anonymous, &session, &id, &good).await, Err(AnswerRefusal::NotWaiting), "another caller's");
        assert_eq!(sessions.answer(&alice(), &session, "ask_forged", &good).await, Err(AnswerRefusal::NotWaiting));
        sessions.answer(&alice(), &session, &id, &good).await.unwrap();
        assert_eq!(sessions.answer(&alice(), &session, &id, &good).await, Err(AnswerRefusal::NotWaiting), "written once");
        assert_eq!(
            sessions.collect(&alice(), &session, &id).await.unwrap(),
            Some(Answer::Result(json!({"action": "accept", "content": {"name": "Ada"}})))
        );
    }

    #[tokio::test]
    async fn an_answer_nothing_waits_for_is_refused() {
        let (sessions, clock) = sessions();
        let token = sessions.mint(&alice(), "2025-11-25", &Map::new(), None).await.unwrap();
        let (session, _) = sessions.open(&alice(), &token).await.unwrap();
        let response = |id: &str| json!({"jsonrpc": "2.0", "id": id, "result": {"action": "decline"}}).as_object().cloned().unwrap();
        // The call stopped waiting and said so.
        let closed = ASK_IDS.mint();
        let asked = [(closed.clone(), "elicitation/create".to_owned())];
        sessions.await_answers(&alice(), &session, &asked, std::time::Duration::from_secs(120)).await.unwrap();
        sessions.close_answers(&alice(), &session, &asked).await;
        assert_eq!(sessions.answer(&alice(), &session, &closed, &response(&closed)).await, Err(AnswerRefusal::NotWaiting));
        // Its instance died: the item ends with the wait (and the last
        // poll's grace), not a minute after.
        let orphan = ASK_IDS.mint();
        let asked = [(orphan.clone(), "elicitation/create".to_owned())];
        sessions.await_answers(&alice(), &session, &asked, std::time::Duration::from_millis(119_500)).await.unwrap();
        clock.advance(122);
        assert_eq!(sessions.answer(&alice(), &session, &orphan, &response(&orphan)).await, Err(AnswerRefusal::NotWaiting));
    }

    #[tokio::test]
    async fn a_refused_answer_is_what_the_waiting_call_collects() {
        let (sessions, _) = sessions();
        let token = sessions.mint(&alice(), "2025-11-25", &Map::new(), None).await.unwrap();
        let (session, _) = sessions.open(&alice(), &token).await.unwrap();
        let (malformed, oversized) = (ASK_IDS.mint(), ASK_IDS.mint());
        let asked = [(malformed.clone(), "elicitation/create".to_owned()), (oversized.clone(), "elicitation/create".to_owned())];
        sessions.await_answers(&alice(), &session, &asked, std::time::Duration::from_secs(60)).await.unwrap();
        let response = |id: &str, result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result}).as_object().cloned().unwrap();

        let refused = sessions.answer(&alice(), &session, &malformed, &response(&malformed, json!({"action": "maybe"}))).await;
        assert!(matches!(refused, Err(AnswerRefusal::Malformed { .. })), "{refused:?}");
        let Some(Answer::Error(error)) = sessions.collect(&alice(), &session, &malformed).await.unwrap() else { panic!("an error") };
        assert!(error["message"].as_str().unwrap().contains("action must be"), "{error}");

        let big = response(&oversized, json!({"action": "accept", "content": {"text": "x".repeat(MAX_ANSWER_BYTES)}}));
        assert!(matches!(sessions.answer(&alice(), &session, &oversized, &big).await, Err(AnswerRefusal::Malformed { .. })));
        assert!(matches!(sessions.collect(&alice(), &session, &oversized).await.unwrap(), Some(Answer::Error(_))));
    }

    #[test]
    fn answers_are_checked_against_their_method() {
        assert!(
            check_shape("sampling/createMessage", &json!({"model": "m", "role": "assistant", "content": {"type": "text", "text": "hi"}}))
                .is_ok()
        );
        assert!(check_shape("sampling/createMessage", &json!({"role": "assistant"})).is_err());
        assert!(check_shape("roots/list", &json!({"roots": [{"uri": "file:///a"}]})).is_ok());
        assert!(check_shape("roots/list", &json!({"roots": [{}]})).is_err());
        assert!(check_shape("elicitation/create", &json!({"action": "decline"})).is_ok());
        assert!(check_shape("elicitation/create", &json!({"action": "accept", "content": "text"})).is_err());
    }
}
