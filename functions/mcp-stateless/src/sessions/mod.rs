//! Legacy (2025-era) sessions on a stateless server.
//!
//! A 2025-era client opens with `initialize` and then names its session
//! in every request's `Mcp-Session-Id`. On Lambda the next request may
//! reach any instance, so nothing of the session lives in a process: the
//! id *is* the session, sealed like `requestState` (AES-256-GCM under the
//! deployment's data keys, bound to the caller and this deployment, with
//! an expiry), carrying what `initialize` negotiated: the version, the
//! client's capabilities and its name. Any instance opens it; a forged,
//! foreign or expired one does not open, and the client is told to start
//! again (HTTP 404).
//!
//! What changes after `initialize` (the log level `logging/setLevel`
//! asks for, the resources subscribed to, a `DELETE` that ends the
//! session) cannot go back into an id the client already holds. It is
//! kept in one small item per session, written only when one of those
//! happens and read on each of the session's requests, expiring with the
//! session (the table's TTL attribute, and the expiry checked on read).

pub mod mailbox;
mod waiting;

pub use waiting::MAX_WAITING_CALLS;

use std::{sync::Arc, time::Duration};

use serde_json::{Map, Value, json};

use crate::{
    clock::Clock,
    handles::{HandleRecord, HandleStore, Lookup, access::Handles},
    protocol::context::{CallContext, Principal},
    sealed::{
        mrtr::RequestStates,
        request_state::{OpenError, RequestStateSealer, StateBinding},
    },
    storage::{Backoff, IdKind, ItemKey, StoreError},
};

/// How long a session opens after `initialize`: 30 days. Many clients
/// never initialize again after a 404, and fail until their user restarts
/// them (Claude Code, Copilot CLI, Positron, VS Code, the Python SDK's
/// client, older mcp-remote), so a session lasts as long as such a client
/// plausibly runs. A longer life grants nothing: the id is bound to its
/// caller, whose credentials every request must still carry, and it holds
/// no secret (SECURITY.md). After it, or once `DELETE` ended it, HTTP 404
/// tells the client to initialize again.
pub const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// The items that hold what changed in a session: `handle#ses#…`, under
/// the roles' existing `LeadingKeys`.
const SESSION_ITEMS: IdKind = IdKind { prefix: "ses" };
/// A session's notification streams: random, never sent.
const STREAM_IDS: IdKind = IdKind { prefix: "str" };
/// What a session binds its id to, besides the caller and the deployment.
const BINDING_METHOD: &str = "initialize";
const BINDING_TARGET: &str = "mcp-session";
/// The most resources one session may subscribe to: as many as its
/// notification stream watches (a listen stream's bound).
pub const MAX_SUBSCRIPTIONS: usize = crate::subscriptions::MAX_LISTEN_RESOURCES;
/// The longest URI a subscription may name: the item stays small.
pub const MAX_URI_BYTES: usize = 2048;
/// Writes to one item that lost to another writer are retried this often,
/// the first after [`FIRST_RETRY_DELAY`] and each later one twice as long
/// (with jitter): about 2.5 s at most in all, under Lambda's and a
/// client's patience, past which the client is told to retry (HTTP 503).
const MAX_WRITE_ATTEMPTS: u32 = 8;
const FIRST_RETRY_DELAY: Duration = Duration::from_millis(10);
/// When a wait of `wait` from `now` (epoch seconds, cut down) is surely
/// over: rounded up, plus the waiting call's last poll (it reads at most a
/// second apart) and a second for the clock's cut. An item that must
/// outlive the wait expires then.
pub(crate) fn wait_ends(now: u64, wait: Duration) -> u64 {
    now + wait.as_secs() + u64::from(wait.subsec_nanos() > 0) + 2
}

/// The absolute bound of the items kept here: longer than any session.
const ITEM_DEADLINE: Duration = Duration::from_secs(366 * 24 * 3600);

/// What `initialize` negotiated, as the sealed id carries it.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    /// The legacy protocol version agreed on (`2025-11-25`, ...).
    pub protocol_version: String,
    /// The `capabilities` object the client declared in `initialize`.
    pub client_capabilities: Map<String, Value>,
    /// The client's `clientInfo`, name and version only: its own claim,
    /// never an identity.
    pub client_info: Option<Value>,
    /// Random, 128 bits: names the session's item. Never sent.
    id: String,
    /// Epoch seconds.
    pub expires_at: u64,
}

/// What changed in a session since `initialize`.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SessionState {
    /// The level `logging/setLevel` asked for; none until then (and then
    /// no log messages are sent, as at 2026-07-28 without a level).
    pub log_level: Option<String>,
    /// The URIs `resources/subscribe` named and no unsubscribe removed.
    pub subscriptions: Vec<String>,
}

/// Why a session could not be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionError {
    /// Forged, foreign, expired or ended: all look alike to the client
    /// (HTTP 404, start a new session).
    #[error("session not found")]
    NotFound,
    /// What the client asked for does not fit (too many subscriptions,
    /// capabilities too large to seal); the message says which.
    #[error("{0}")]
    Refused(String),
    /// The keys or the table could not be reached: the server's failure.
    #[error("session service unavailable: {0}")]
    Unavailable(String),
    /// Other requests of the session kept changing it while this one
    /// tried to: the client may retry (HTTP 503 with `Retry-After`).
    #[error("the session is being changed by other requests; retry")]
    Busy,
    /// The caller presented more session ids with keys this instance has
    /// not seen than its budget allows this minute: nothing is known of
    /// the id, which may be genuine, so it is neither opened nor called
    /// ended (HTTP 503 with `Retry-After`, never 404, which strands a
    /// client that then never initializes again).
    #[error("too many unseen session keys from this caller this minute; retry")]
    OverBudget,
}

impl From<StoreError> for SessionError {
    fn from(error: StoreError) -> Self {
        SessionError::Unavailable(error.to_string())
    }
}

/// Mints, opens and changes legacy sessions. Cheap to clone.
#[derive(Clone)]
pub struct LegacySessions {
    sealer: Arc<dyn RequestStateSealer>,
    store: Arc<dyn HandleStore>,
    clock: Arc<dyn Clock>,
    audience: String,
    ttl: Duration,
}

impl LegacySessions {
    /// Sessions sealed by `sealer` for `audience` (this deployment, as for
    /// `requestState`), their changes kept in `store`, dated by `clock`.
    pub fn new(
        sealer: Arc<dyn RequestStateSealer>,
        store: Arc<dyn HandleStore>,
        clock: Arc<dyn Clock>,
        audience: impl Into<String>,
    ) -> Self {
        Self { sealer, store, clock, audience: audience.into(), ttl: DEFAULT_SESSION_TTL }
    }

    /// Sessions sealed as `request_states` seals (its keys, its audience,
    /// its clock) and kept where `handles` are: what a deployment's
    /// sessions are made of (`McpEndpoint::with_dependencies`).
    pub fn of(request_states: &RequestStates, handles: &Handles) -> Self {
        let (sealer, clock, audience) = request_states.parts();
        Self::new(sealer, handles.store(), clock, audience)
    }

    /// A copy whose sessions last `ttl`.
    pub fn with_ttl(&self, ttl: Duration) -> Self {
        Self { ttl, ..self.clone() }
    }

    fn binding(&self, principal: &Principal) -> StateBinding {
        let ctx = CallContext::with_capabilities(principal.clone(), Value::Null);
        StateBinding::new(&ctx, BINDING_METHOD, BINDING_TARGET, &Value::Null, &self.audience)
    }

    /// A new session id for `principal`: visible ASCII (`v1.` and
    /// base64url), opening on any instance of this deployment until the
    /// session's lifetime ends. No store call.
    pub async fn mint(
        &self,
        principal: &Principal,
        protocol_version: &str,
        client_capabilities: &Map<String, Value>,
        client_info: Option<&Value>,
    ) -> Result<String, SessionError> {
        // Only what identifies the client in logs: a clientInfo may carry
        // icons and links that would swell every request's header.
        let info = client_info.map(|info| json!({"name": info.get("name"), "version": info.get("version")}));
        let sealed = json!({"v": protocol_version, "caps": client_capabilities, "info": info});
        self.sealer.seal(&self.binding(principal), &sealed, self.ttl).await.map_err(|error| match error {
            crate::sealed::request_state::SealError::TooLarge { .. } => {
                SessionError::Refused("the client's capabilities are too large for a session".into())
            }
            other => SessionError::Unavailable(other.to_string()),
        })
    }

    /// The session `token` names, for `principal`, and what changed in it;
    /// [`SessionError::NotFound`] for any id that is not a live session of
    /// this caller. One store read.
    pub async fn open(&self, principal: &Principal, token: &str) -> Result<(Session, SessionState), SessionError> {
        self.open_budgeted(principal, token, &principal.binding_id()).await
    }

    /// [`open`](Self::open), with a lookup of a key this instance has not
    /// seen budgeted to `budget_key` (`EntryFacts::budget_key`: the caller,
    /// or without one the sender's address): ids beyond it this minute are
    /// [`SessionError::OverBudget`], and spend nobody else's.
    pub async fn open_budgeted(
        &self,
        principal: &Principal,
        token: &str,
        budget_key: &str,
    ) -> Result<(Session, SessionState), SessionError> {
        let opened = self.sealer.open_budgeted(&self.binding(principal), token, budget_key).await.map_err(|error| match error {
            OpenError::KeyUnavailable(detail) => SessionError::Unavailable(detail),
            OpenError::OverBudget => SessionError::OverBudget,
            _ => SessionError::NotFound,
        })?;
        let data = opened.data;
        let session = Session {
            protocol_version: data.get("v").and_then(Value::as_str).ok_or(SessionError::NotFound)?.to_owned(),
            client_capabilities: data.get("caps").and_then(Value::as_object).cloned().unwrap_or_default(),
            client_info: data.get("info").filter(|info| !info.is_null()).cloned(),
            id: opened.jti,
            expires_at: opened.expires_at,
        };
        let state = match self.store.get(&self.key(principal, &session), self.clock.now()).await? {
            Lookup::Found(record) if is_ended(&record.data) => {
                return Err(SessionError::NotFound);
            }
            Lookup::Found(record) => state_of(&record.data),
            _ => SessionState::default(),
        };
        Ok((session, state))
    }

    fn key(&self, principal: &Principal, session: &Session) -> ItemKey {
        SESSION_ITEMS.key(principal.binding_id(), &session.id)
    }

    /// Ends the session: every later request naming it gets
    /// [`SessionError::NotFound`], on any instance.
    pub async fn end(&self, principal: &Principal, session: &Session) -> Result<(), SessionError> {
        let call = crate::storage::hex(&crate::random::bytes::<12>());
        let ended = self
            .change(principal, session, |data| {
                data.insert("ended".into(), Value::Bool(true));
                data.insert("ended_by".into(), Value::String(call.clone()));
                Ok(())
            })
            .await;
        match ended {
            // This very DELETE's write, which landed though its answer was
            // lost (the write was sent again, and found the session ended):
            // ended, not "not found" (issue 44, `tests/fault_load`).
            Err(SessionError::NotFound)
                if self.read_item(principal, session).await.is_some_and(|data| data["ended_by"] == call.as_str()) =>
            {
                Ok(())
            }
            other => other,
        }
    }

    /// Makes a new notification stream (`GET`) the session's one, across
    /// instances: the stream it replaces ends at its next check
    /// ([`holds_stream`](Self::holds_stream)). Answers the stream's id.
    pub async fn hold_stream(&self, principal: &Principal, session: &Session) -> Result<String, SessionError> {
        let stream = STREAM_IDS.mint();
        self.change(principal, session, |data| {
            data.insert("stream".into(), Value::String(stream.clone()));
            Ok(())
        })
        .await?;
        Ok(stream)
    }

    /// Whether `stream` is still the session's notification stream: not
    /// replaced by a newer `GET`, and the session not ended. One read; a
    /// store that cannot be read leaves the stream as it is.
    pub async fn holds_stream(&self, principal: &Principal, session: &Session, stream: &str) -> bool {
        self.read_item(principal, session)
            .await
            .is_none_or(|data| !is_ended(&data) && data.get("stream").and_then(Value::as_str) == Some(stream))
    }

    /// Whether `DELETE` ended the session since it was opened. One read; a
    /// store that cannot be read says no.
    pub async fn ended(&self, principal: &Principal, session: &Session) -> bool {
        self.read_item(principal, session).await.is_some_and(|data| is_ended(&data))
    }

    /// The data of the session's item (`null` when it has none), or none
    /// when the store cannot be read, which is logged.
    async fn read_item(&self, principal: &Principal, session: &Session) -> Option<Value> {
        match self.store.get(&self.key(principal, session), self.clock.now()).await {
            Ok(Lookup::Found(record)) => Some(record.data),
            Ok(_) => Some(Value::Null),
            Err(error) => {
                tracing::warn!(%error, "could not read the session's item");
                None
            }
        }
    }

    /// Sets the level of the log messages the session's requests receive.
    pub async fn set_log_level(&self, principal: &Principal, session: &Session, level: &str) -> Result<(), SessionError> {
        self.change(principal, session, |data| {
            data.insert("logLevel".into(), Value::String(level.to_owned()));
            Ok(())
        })
        .await
    }

    /// Adds (`subscribed`) or removes the session's subscription to `uri`.
    pub async fn subscribe(&self, principal: &Principal, session: &Session, uri: &str, subscribed: bool) -> Result<(), SessionError> {
        if uri.len() > MAX_URI_BYTES {
            return Err(SessionError::Refused(format!("a subscribed URI may be at most {MAX_URI_BYTES} bytes")));
        }
        self.change(principal, session, |data| {
            let list = data.entry("subscriptions").or_insert_with(|| json!([]));
            let Some(list) = list.as_array_mut() else { return Ok(()) };
            list.retain(|entry| entry.as_str() != Some(uri));
            if subscribed {
                if list.len() >= MAX_SUBSCRIPTIONS {
                    return Err(SessionError::Refused(format!("a session may subscribe to at most {MAX_SUBSCRIPTIONS} resources")));
                }
                list.push(Value::String(uri.to_owned()));
            }
            Ok(())
        })
        .await
    }

    /// Read, modify, compare-and-set on the session's item, created on
    /// its first change; retried when another writer got there first.
    async fn change(
        &self,
        principal: &Principal,
        session: &Session,
        mut modify: impl FnMut(&mut Map<String, Value>) -> Result<(), SessionError>,
    ) -> Result<(), SessionError> {
        self.compare_and_set(&self.key(principal, session), |data, now| {
            if now >= session.expires_at || data.get("ended").and_then(Value::as_bool) == Some(true) {
                return Err(SessionError::NotFound);
            }
            modify(data)?;
            Ok(session.expires_at)
        })
        .await
    }

    /// Read, modify, compare-and-set on the item at `key` (created when
    /// there is none): `modify` changes its data at `now` and answers when
    /// the item expires. Retried with jittered backoff while other writers
    /// get there first; [`SessionError::Busy`] when they always did.
    pub(crate) async fn compare_and_set(
        &self,
        key: &ItemKey,
        mut modify: impl FnMut(&mut Map<String, Value>, u64) -> Result<u64, SessionError>,
    ) -> Result<(), SessionError> {
        let mut backoff = Backoff::new(MAX_WRITE_ATTEMPTS, FIRST_RETRY_DELAY);
        loop {
            let now = self.clock.now();
            let written = match self.store.get(key, now).await? {
                Lookup::Found(record) => {
                    let mut data = record.data.as_object().cloned().unwrap_or_default();
                    let expires_at = modify(&mut data, now)?;
                    let replaced = self.store.replace(key, record.version, &Value::Object(data), now, expires_at).await?;
                    matches!(replaced, Lookup::Found(_))
                }
                _ => {
                    let mut data = Map::new();
                    let expires_at = modify(&mut data, now)?;
                    let record = HandleRecord {
                        owner: key.owner.clone(),
                        kind: key.kind.to_owned(),
                        data: Value::Object(data),
                        version: 1,
                        created_at: now,
                        last_used_at: now,
                        expires_at,
                        // Only `expires_at`, which every write sets, ends it.
                        deadline: now + ITEM_DEADLINE.as_secs(),
                    };
                    match self.store.create(key, &record).await {
                        Ok(()) => true,
                        // A concurrent first change made it fail: read
                        // again and apply on top of it. Anything else is
                        // the store failing, not contention.
                        Err(error) => match self.store.get(key, now).await? {
                            Lookup::Found(_) => false,
                            _ => return Err(error.into()),
                        },
                    }
                }
            };
            if written {
                return Ok(());
            }
            if !backoff.retry().await {
                return Err(SessionError::Busy);
            }
        }
    }
}

/// Whether a session's item says `DELETE` ended it.
fn is_ended(data: &Value) -> bool {
    data.get("ended").and_then(Value::as_bool) == Some(true)
}

fn state_of(data: &Value) -> SessionState {
    SessionState {
        log_level: data.get("logLevel").and_then(Value::as_str).map(str::to_owned),
        subscriptions: data
            .get("subscriptions")
            .and_then(Value::as_array)
            .map(|list| list.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::{
        clock::ManualClock,
        handles::memory::InMemoryHandleStore,
        sealed::request_state::{EnvelopeSealer, InProcessKey},
    };

    pub(crate) fn sessions() -> (LegacySessions, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::at(1_000_000));
        let sealer = EnvelopeSealer::new(InProcessKey::generate()).with_clock(clock.clone());
        (LegacySessions::new(Arc::new(sealer), Arc::new(InMemoryHandleStore::default()), clock.clone(), "test"), clock)
    }

    pub(crate) fn alice() -> Principal {
        Principal::Verified { issuer: "https://issuer".into(), subject: "alice".into() }
    }

    fn caps() -> Map<String, Value> {
        json!({"elicitation": {}}).as_object().cloned().unwrap()
    }

    #[tokio::test]
    async fn a_session_opens_for_its_caller_only_until_it_expires() {
        let (sessions, clock) = sessions();
        let token = sessions.mint(&alice(), "2025-11-25", &caps(), Some(&json!({"name": "c", "version": "1", "icons": []}))).await.unwrap();
        assert!(token.bytes().all(|b| (0x21..=0x7e).contains(&b)), "visible ASCII: {token}");
        let (session, state) = sessions.open(&alice(), &token).await.unwrap();
        assert_eq!(session.protocol_version, "2025-11-25");
        assert_eq!(session.client_capabilities, caps());
        assert_eq!(session.client_info, Some(json!({"name": "c", "version": "1"})), "only name and version are sealed");
        assert_eq!(state, SessionState::default());

        assert_eq!(sessions.open(&Principal::Anonymous, &token).await.unwrap_err(), SessionError::NotFound, "foreign");
        // A character in the middle carries six bits of ciphertext (the
        // last may carry padding bits, which fail as malformed instead).
        let mut tampered = token.clone().into_bytes();
        let middle = tampered.len() / 2;
        tampered[middle] = if tampered[middle] == b'A' { b'B' } else { b'A' };
        assert_eq!(sessions.open(&alice(), &String::from_utf8(tampered).unwrap()).await.unwrap_err(), SessionError::NotFound);
        clock.advance(25 * 3600);
        assert!(sessions.open(&alice(), &token).await.is_ok(), "a day on, the session still opens");
        clock.advance(DEFAULT_SESSION_TTL.as_secs() - 25 * 3600 - 1);
        assert!(sessions.open(&alice(), &token).await.is_ok(), "until the last second of its 30 days");
        clock.advance(1);
        assert_eq!(sessions.open(&alice(), &token).await.unwrap_err(), SessionError::NotFound, "expired");
    }

    #[tokio::test]
    async fn changes_are_kept_per_session_and_an_ended_session_is_gone() {
        let (sessions, clock) = sessions();
        let one = sessions.mint(&alice(), "2025-06-18", &Map::new(), None).await.unwrap();
        let two = sessions.mint(&alice(), "2025-06-18", &Map::new(), None).await.unwrap();
        let (session, _) = sessions.open(&alice(), &one).await.unwrap();
        sessions.set_log_level(&alice(), &session, "debug").await.unwrap();
        sessions.subscribe(&alice(), &session, "test://a", true).await.unwrap();
        sessions.subscribe(&alice(), &session, "test://b", true).await.unwrap();
        sessions.subscribe(&alice(), &session, "test://a", false).await.unwrap();
        let (_, state) = sessions.open(&alice(), &one).await.unwrap();
        assert_eq!(state, SessionState { log_level: Some("debug".into()), subscriptions: vec!["test://b".into()] });
        assert_eq!(sessions.open(&alice(), &two).await.unwrap().1, SessionState::default(), "another session is untouched");

        sessions.end(&alice(), &session).await.unwrap();
        assert_eq!(sessions.open(&alice(), &one).await.unwrap_err(), SessionError::NotFound);
        // The item that says so lives as long as the id opens.
        clock.advance(DEFAULT_SESSION_TTL.as_secs() - 1);
        assert_eq!(sessions.open(&alice(), &one).await.unwrap_err(), SessionError::NotFound, "ended stays ended");
        assert_eq!(sessions.set_log_level(&alice(), &session, "info").await.unwrap_err(), SessionError::NotFound);
        assert!(sessions.open(&alice(), &two).await.is_ok());
    }

    #[tokio::test]
    async fn a_session_holds_one_notification_stream_and_delete_ends_it() {
        let (sessions, _) = sessions();
        let token = sessions.mint(&alice(), "2025-11-25", &Map::new(), None).await.unwrap();
        let (session, _) = sessions.open(&alice(), &token).await.unwrap();
        let first = sessions.hold_stream(&alice(), &session).await.unwrap();
        assert!(sessions.holds_stream(&alice(), &session, &first).await);
        let second = sessions.hold_stream(&alice(), &session).await.unwrap();
        assert!(!sessions.holds_stream(&alice(), &session, &first).await, "replaced by the newer GET");
        assert!(sessions.holds_stream(&alice(), &session, &second).await);
        assert!(!sessions.holds_stream(&Principal::Anonymous, &session, &second).await, "another caller's");
        assert!(!sessions.ended(&alice(), &session).await);
        sessions.end(&alice(), &session).await.unwrap();
        assert!(!sessions.holds_stream(&alice(), &session, &second).await, "ended by DELETE");
        assert!(sessions.ended(&alice(), &session).await);
    }

    #[tokio::test]
    async fn subscriptions_are_bounded() {
        let (sessions, _) = sessions();
        let token = sessions.mint(&alice(), "2025-11-25", &Map::new(), None).await.unwrap();
        let (session, _) = sessions.open(&alice(), &token).await.unwrap();
        for i in 0..MAX_SUBSCRIPTIONS {
            sessions.subscribe(&alice(), &session, &format!("test://{i}"), true).await.unwrap();
        }
        assert!(matches!(sessions.subscribe(&alice(), &session, "test://more", true).await, Err(SessionError::Refused(_))));
        let long = format!("test://{}", "x".repeat(MAX_URI_BYTES));
        sessions.subscribe(&alice(), &session, "test://0", false).await.unwrap();
        assert!(matches!(sessions.subscribe(&alice(), &session, &long, true).await, Err(SessionError::Refused(_))), "too long");
        sessions.subscribe(&alice(), &session, "test://0", true).await.expect("an existing one may be named again");
    }
}
