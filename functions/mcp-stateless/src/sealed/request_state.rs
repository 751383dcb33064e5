//! Sealing `requestState` for Multi Round-Trip Requests (basic/patterns/mrtr).
//!
//! The client echoes `requestState` back verbatim, so it is attacker-controlled
//! input. [`RequestStateSealer`] is the port: seal a continuation bound to the
//! caller, the request and an expiry; open it only if every binding matches.
//! [`EnvelopeSealer`] implements it with AES-256-GCM under a data key that a
//! [`DataKeySource`] provides; [`InProcessKey`] is the zero-setup source for
//! the local server, and a KMS-backed source swaps in without touching callers.

use std::{sync::Arc, time::Duration};

use aws_lc_rs::{
    aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey},
    digest::{SHA256, digest},
};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    clock::{Clock, SystemClock},
    protocol::context::CallContext,
    random,
};

/// Version prefix of every token; an unknown prefix fails to open.
const TOKEN_VERSION: &str = "v1";
/// Sealed state is kept small: large continuations belong behind a handle.
pub const DEFAULT_MAX_TOKEN_BYTES: usize = 4096;
/// How long a sealed state opens for, unless a tool sets its own
/// ([`RequestStates::with_ttl`](crate::sealed::mrtr::RequestStates::with_ttl)).
pub const DEFAULT_STATE_TTL: Duration = Duration::from_secs(600);

/// What a sealed state is bound to, authenticated as AES-GCM associated data.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(
    clippy::exhaustive_structs,
    reason = "what a seal is bound to: a new field changes what every sealer authenticates, so each one (the authorization server too) must say what it binds"
)]
pub struct StateBinding {
    /// [`crate::Principal::binding_id`] of the verified caller.
    pub principal: String,
    /// JSON-RPC method of the originating request (`tools/call`, ...).
    pub method: String,
    /// Tool or prompt name, or resource URI.
    pub target: String,
    /// SHA-256 of the canonical JSON of the arguments the tool chose to bind.
    pub arguments_digest: [u8; 32],
    /// This deployment, so state from one stage or stack does not open in another.
    pub audience: String,
}

impl StateBinding {
    /// The binding of a state for `method` on `target`, by `ctx`'s caller,
    /// in `audience`, over `salient_arguments` (digested as canonical JSON).
    pub fn new(ctx: &CallContext, method: &str, target: &str, salient_arguments: &Value, audience: &str) -> Self {
        let canonical = canonical_json(salient_arguments);
        let mut arguments_digest = [0u8; 32];
        arguments_digest.copy_from_slice(digest(&SHA256, canonical.as_bytes()).as_ref());
        Self {
            principal: ctx.principal.binding_id(),
            method: method.to_owned(),
            target: target.to_owned(),
            arguments_digest,
            audience: audience.to_owned(),
        }
    }

    /// Length-prefixed so that no two different bindings encode alike.
    fn associated_data(&self, key_ref: &[u8]) -> Vec<u8> {
        let mut aad = Vec::with_capacity(128);
        for field in [
            TOKEN_VERSION.as_bytes(),
            key_ref,
            self.principal.as_bytes(),
            self.method.as_bytes(),
            self.target.as_bytes(),
            &self.arguments_digest,
            self.audience.as_bytes(),
        ] {
            aad.extend_from_slice(&(field.len() as u32).to_be_bytes());
            aad.extend_from_slice(field);
        }
        aad
    }
}

/// JSON with object keys sorted at every depth, whatever map order serde_json
/// was built with, so equal arguments always digest alike.
pub fn canonical_json(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<_> = map.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&map[k]))).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

/// Why a continuation was not sealed. Each is the server's failure:
/// clients see -32603.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// The token would be longer than the sealer allows.
    #[error("sealed requestState would be {size} bytes, over the {limit}-byte limit; keep large continuations behind a handle")]
    TooLarge {
        /// The token's length, in bytes.
        size: usize,
        /// The sealer's limit ([`DEFAULT_MAX_TOKEN_BYTES`] unless set).
        limit: usize,
    },
    /// No data key could be had (KMS unreachable or refusing), or sealing
    /// under it failed.
    #[error("request state key unavailable: {0}")]
    KeyUnavailable(String),
    /// The continuation did not serialize to JSON.
    #[error("continuation is not serializable: {0}")]
    Serialize(String),
}

/// Why a token did not open. Clients only ever see that it is invalid or
/// expired (-32602) or that the server failed (-32603): the variants exist
/// for logs and tests, never for the wire.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum OpenError {
    /// Not a token as this sealer writes them: too long, another version
    /// or encoding, truncated, a key reference too long to be one, or a
    /// payload that does not parse.
    #[error("requestState is malformed")]
    Malformed,
    /// The authentication failed: the token was altered, or it is bound to
    /// another caller, request, arguments or deployment.
    #[error("requestState failed authentication")]
    Forged,
    /// Past its expiry.
    #[error("requestState has expired")]
    Expired,
    /// The key source does not know, or will not unwrap, the token's data
    /// key (another process's in-process key, or a key KMS refuses).
    #[error("requestState data key was refused")]
    KeyRefused,
    /// The key source could not be asked (KMS unreachable or throttled):
    /// the state may be genuine, so this is the server's failure.
    #[error("request state key unavailable: {0}")]
    KeyUnavailable(String),
    /// The caller (or this instance, for all callers) spent this minute's
    /// budget of key lookups for keys the instance has not seen: nothing
    /// is known about the token, which may be genuine; the caller may try
    /// again once the minute is over.
    #[error("this minute's budget of key lookups is spent")]
    OverBudget,
}

/// The port tools seal their continuations through.
pub trait RequestStateSealer: Send + Sync {
    /// A token carrying `continuation`, bound to `binding`, that opens for
    /// `ttl`.
    fn seal<'a>(&'a self, binding: &'a StateBinding, continuation: &'a Value, ttl: Duration) -> BoxFuture<'a, Result<String, SealError>>;

    /// What `token` carries, if it was sealed for exactly `binding` and has
    /// not expired.
    fn open<'a>(&'a self, binding: &'a StateBinding, token: &'a str) -> BoxFuture<'a, Result<OpenedState, OpenError>>;

    /// [`open`](Self::open), with key lookups a source pays for budgeted to
    /// `budget_key` rather than to the binding's principal: for tokens not
    /// bound to a caller (a registered client's id, which anyone may
    /// present), so that forged ones spend their sender's budget (its
    /// address), not every honest client's.
    fn open_budgeted<'a>(
        &'a self,
        binding: &'a StateBinding,
        token: &'a str,
        budget_key: &'a str,
    ) -> BoxFuture<'a, Result<OpenedState, OpenError>> {
        let _ = budget_key;
        self.open(binding, token)
    }
}

/// A state that opened: the continuation, and what single use needs.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct OpenedState {
    /// The continuation that was sealed.
    pub data: Value,
    /// Random 128-bit id, base64url.
    pub jti: String,
    /// Epoch seconds.
    pub expires_at: u64,
}

/// A data key ready to seal with, and the reference that finds it again.
#[allow(
    clippy::exhaustive_structs,
    reason = "a port's value that every adapter builds or matches (mcp-aws's, the in-memory ones): a new field or variant must be handled by each, so adding one should not compile until it is"
)]
pub struct SealingKey {
    /// Carried in the token so any instance can recover the key (for KMS: the
    /// encrypted data key).
    pub key_ref: Vec<u8>,
    /// The AES-256-GCM key itself.
    pub key: Arc<LessSafeKey>,
}

/// Where data keys come from. The in-process source below serves the local
/// server; the KMS source serves Lambda.
pub trait DataKeySource: Send + Sync {
    /// The key to seal the next token under, and its reference.
    fn sealing_key(&self) -> BoxFuture<'_, Result<SealingKey, SealError>>;
    /// The key `key_ref` names, for a token `caller` (the binding's
    /// principal) presented: a source that pays per lookup (KMS) budgets
    /// the lookups per caller, so one caller's forged tokens cannot spend
    /// what other callers' genuine ones need.
    fn opening_key<'a>(&'a self, key_ref: &'a [u8], caller: &'a str) -> BoxFuture<'a, Result<Arc<LessSafeKey>, OpenError>>;
}

/// One random AES-256 key per process. Tokens do not survive a restart and do
/// not open on another instance: fine for `cargo run`, never for Lambda.
pub struct InProcessKey {
    key_ref: Vec<u8>,
    key: Arc<LessSafeKey>,
}

impl InProcessKey {
    /// A fresh random key, under a random reference.
    pub fn generate() -> Self {
        let key_ref = random::bytes::<16>().to_vec();
        let mut bytes = random::bytes::<32>();
        let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &bytes).expect("32-byte AES key"));
        bytes.fill(0);
        Self { key_ref, key: Arc::new(key) }
    }
}

impl DataKeySource for InProcessKey {
    fn sealing_key(&self) -> BoxFuture<'_, Result<SealingKey, SealError>> {
        let key = SealingKey { key_ref: self.key_ref.clone(), key: self.key.clone() };
        Box::pin(async move { Ok(key) })
    }

    fn opening_key<'a>(&'a self, key_ref: &'a [u8], _caller: &'a str) -> BoxFuture<'a, Result<Arc<LessSafeKey>, OpenError>> {
        let found = (key_ref == self.key_ref.as_slice()).then(|| self.key.clone());
        Box::pin(async move { found.ok_or(OpenError::KeyRefused) })
    }
}

#[derive(Serialize, Deserialize)]
struct SealedPayload {
    iat: u64,
    exp: u64,
    /// Random 128-bit id, base64url: what single-use redemption records.
    jti: String,
    data: Value,
}

/// AES-256-GCM envelope sealing under keys from `K`.
///
/// Token: `v1.` + base64url(`u16` key-ref length, key ref, 96-bit nonce,
/// ciphertext and tag). Everything in [`StateBinding`] is associated data.
pub struct EnvelopeSealer<K> {
    keys: K,
    clock: Arc<dyn Clock>,
    max_token_bytes: usize,
}

impl<K: DataKeySource> EnvelopeSealer<K> {
    /// Seals under keys from `keys`, on the system clock, in tokens of at
    /// most [`DEFAULT_MAX_TOKEN_BYTES`].
    pub fn new(keys: K) -> Self {
        Self { keys, clock: Arc::new(SystemClock), max_token_bytes: DEFAULT_MAX_TOKEN_BYTES }
    }

    /// Dates and expires tokens by `clock` (tests move it).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Neither seals nor opens a token longer than `limit` bytes.
    pub fn with_max_token_bytes(mut self, limit: usize) -> Self {
        self.max_token_bytes = limit;
        self
    }

    async fn seal_payload(&self, binding: &StateBinding, data: &Value, ttl: Duration) -> Result<String, SealError> {
        let iat = self.clock.now();
        let payload = SealedPayload {
            iat,
            exp: iat.saturating_add(ttl.as_secs()),
            jti: URL_SAFE_NO_PAD.encode(random::bytes::<16>()),
            data: data.clone(),
        };
        let mut in_out = serde_json::to_vec(&payload).map_err(|e| SealError::Serialize(e.to_string()))?;
        let SealingKey { key_ref, key } = self.keys.sealing_key().await?;
        let key_ref_len = u16::try_from(key_ref.len()).map_err(|_| SealError::KeyUnavailable("key reference too long".into()))?;
        let nonce = random::bytes::<NONCE_LEN>();
        key.seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(binding.associated_data(&key_ref)), &mut in_out)
            .map_err(|_| SealError::KeyUnavailable("AES-GCM seal failed".into()))?;

        let mut raw = Vec::with_capacity(2 + key_ref.len() + NONCE_LEN + in_out.len());
        raw.extend_from_slice(&key_ref_len.to_be_bytes());
        raw.extend_from_slice(&key_ref);
        raw.extend_from_slice(&nonce);
        raw.extend_from_slice(&in_out);
        let token = format!("{TOKEN_VERSION}.{}", URL_SAFE_NO_PAD.encode(raw));
        if token.len() > self.max_token_bytes {
            return Err(SealError::TooLarge { size: token.len(), limit: self.max_token_bytes });
        }
        Ok(token)
    }

    async fn open_payload(&self, binding: &StateBinding, token: &str, budget_key: &str) -> Result<OpenedState, OpenError> {
        // Oversized input is rejected before any decoding work or key lookup.
        if token.len() > self.max_token_bytes {
            return Err(OpenError::Malformed);
        }
        let encoded = token.strip_prefix(TOKEN_VERSION).and_then(|rest| rest.strip_prefix('.')).ok_or(OpenError::Malformed)?;
        let raw = URL_SAFE_NO_PAD.decode(encoded).map_err(|_| OpenError::Malformed)?;
        let (len, rest) = raw.split_first_chunk::<2>().ok_or(OpenError::Malformed)?;
        let key_ref_len = usize::from(u16::from_be_bytes(*len));
        if rest.len() < key_ref_len + NONCE_LEN + AES_256_GCM.tag_len() {
            return Err(OpenError::Malformed);
        }
        let (key_ref, rest) = rest.split_at(key_ref_len);
        let (nonce, ciphertext) = rest.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| OpenError::Malformed)?;

        let key = self.keys.opening_key(key_ref, budget_key).await?;
        let mut in_out = ciphertext.to_vec();
        let plaintext =
            key.open_in_place(nonce, Aad::from(binding.associated_data(key_ref)), &mut in_out).map_err(|_| OpenError::Forged)?;
        let payload: SealedPayload = serde_json::from_slice(plaintext).map_err(|_| OpenError::Malformed)?;
        if self.clock.now() >= payload.exp {
            return Err(OpenError::Expired);
        }
        Ok(OpenedState { data: payload.data, jti: payload.jti, expires_at: payload.exp })
    }

    /// The clock tokens are dated and expired by.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }
}

impl<K: DataKeySource> RequestStateSealer for EnvelopeSealer<K> {
    fn seal<'a>(&'a self, binding: &'a StateBinding, continuation: &'a Value, ttl: Duration) -> BoxFuture<'a, Result<String, SealError>> {
        Box::pin(self.seal_payload(binding, continuation, ttl))
    }

    fn open<'a>(&'a self, binding: &'a StateBinding, token: &'a str) -> BoxFuture<'a, Result<OpenedState, OpenError>> {
        Box::pin(self.open_payload(binding, token, &binding.principal))
    }

    fn open_budgeted<'a>(
        &'a self,
        binding: &'a StateBinding,
        token: &'a str,
        budget_key: &'a str,
    ) -> BoxFuture<'a, Result<OpenedState, OpenError>> {
        Box::pin(self.open_payload(binding, token, budget_key))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{clock::ManualClock, protocol::context::Principal};

    fn ctx(subject: &str) -> CallContext {
        CallContext::from_meta(
            Some(&json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                         "io.modelcontextprotocol/clientCapabilities": {}})),
            None,
            Principal::Verified { issuer: "https://issuer".into(), subject: subject.into() },
        )
        .unwrap()
    }

    fn binding(subject: &str, tool: &str, args: Value, audience: &str) -> StateBinding {
        StateBinding::new(&ctx(subject), "tools/call", tool, &args, audience)
    }

    fn sealer(clock: ManualClock) -> EnvelopeSealer<InProcessKey> {
        EnvelopeSealer::new(InProcessKey::generate()).with_clock(Arc::new(clock))
    }

    #[tokio::test]
    async fn round_trips_and_rejects_every_other_binding() {
        let clock = ManualClock::at(1_000);
        let s = sealer(clock.clone());
        let b = binding("alice", "pay", json!({"amount": 5, "to": "bob"}), "prod");
        let token = s.seal(&b, &json!({"step": 2}), Duration::from_secs(60)).await.unwrap();
        let opened = s.open(&b, &token).await.unwrap();
        assert_eq!(opened.data, json!({"step": 2}));
        assert_eq!(opened.expires_at, 1_060);
        assert_eq!(opened.jti.len(), 22, "128 bits, base64url");
        // Argument key order does not matter: the digest is over canonical JSON.
        let reordered = binding("alice", "pay", json!({"to": "bob", "amount": 5}), "prod");
        assert!(s.open(&reordered, &token).await.is_ok());

        for other in [
            binding("mallory", "pay", json!({"amount": 5, "to": "bob"}), "prod"),
            binding("alice", "refund", json!({"amount": 5, "to": "bob"}), "prod"),
            binding("alice", "pay", json!({"amount": 500, "to": "bob"}), "prod"),
            binding("alice", "pay", json!({"amount": 5, "to": "bob"}), "staging"),
        ] {
            assert_eq!(s.open(&other, &token).await.unwrap_err(), OpenError::Forged);
        }

        clock.advance(60);
        assert_eq!(s.open(&b, &token).await.unwrap_err(), OpenError::Expired);
    }

    #[tokio::test]
    async fn every_single_byte_change_and_truncation_fails() {
        let s = sealer(ManualClock::at(1));
        let b = binding("alice", "t", json!({}), "a");
        let token = s.seal(&b, &json!("x"), DEFAULT_STATE_TTL).await.unwrap();
        let bytes = token.as_bytes();
        for i in 0..bytes.len() {
            let mut changed = bytes.to_vec();
            changed[i] = if changed[i] == b'A' { b'B' } else { b'A' };
            let changed = String::from_utf8(changed).unwrap();
            assert!(s.open(&b, &changed).await.is_err(), "byte {i} changed and still opened");
        }
        for cut in [1, 10, token.len() / 2, token.len() - 1] {
            assert!(s.open(&b, &token[..cut]).await.is_err());
        }
        assert!(s.open(&b, &format!("{token}-TAMPERED")).await.is_err());
        assert_eq!(s.open(&b, &token.replacen("v1.", "v2.", 1)).await.unwrap_err(), OpenError::Malformed);
    }

    #[tokio::test]
    async fn another_instance_key_is_refused_and_size_is_bounded() {
        let b = binding("alice", "t", json!({}), "a");
        let token = sealer(ManualClock::at(1)).seal(&b, &json!(1), DEFAULT_STATE_TTL).await.unwrap();
        let other = sealer(ManualClock::at(1));
        assert_eq!(other.open(&b, &token).await.unwrap_err(), OpenError::KeyRefused);

        let big = json!("x".repeat(DEFAULT_MAX_TOKEN_BYTES));
        assert!(matches!(other.seal(&b, &big, DEFAULT_STATE_TTL).await, Err(SealError::TooLarge { .. })));
    }
}
