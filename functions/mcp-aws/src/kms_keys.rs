//! `requestState` data keys from KMS (envelope encryption).
//!
//! An instance asks KMS `GenerateDataKey` for an AES-256 key at most once
//! per window (default 5 minutes or 10,000 seals) and seals with it locally.
//! The token carries the KMS-encrypted data key, so any instance can open
//! it: the instance that sealed finds the key in its window, another calls
//! `Decrypt` once and caches the result. The encryption context names the
//! purpose and the deployment, and the IAM policy is conditioned on it.

use std::{
    collections::{HashMap, VecDeque},
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use aws_lc_rs::aead::{AES_256_GCM, LessSafeKey, UnboundKey};
use aws_sdk_kms::{
    Client,
    error::{ProvideErrorMetadata, SdkError},
    operation::decrypt::DecryptError,
    primitives::Blob,
    types::DataKeySpec,
};
use futures::future::BoxFuture;
use mcp_stateless::{
    metrics::{self, Counter},
    sealed::request_state::{DataKeySource, OpenError, SealError, SealingKey},
};
use zeroize::Zeroize;

/// The encryption context key the IAM policy conditions on
/// (`kms:EncryptionContext:purpose`).
pub const CONTEXT_PURPOSE_KEY: &str = "purpose";
/// The purpose every data key is bound to, under [`CONTEXT_PURPOSE_KEY`].
pub const CONTEXT_PURPOSE: &str = "mcp-request-state";
/// The encryption context key naming the deployment (`MCP_AUDIENCE`),
/// which the IAM policy conditions on too: a key of one deployment does
/// not unwrap in another.
pub const CONTEXT_AUDIENCE_KEY: &str = "audience";

/// How long a data key seals, and what an instance keeps of the keys it
/// opened or was refused.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct KeyWindow {
    /// A data key seals for at most this long before a new one is
    /// generated.
    pub max_age: Duration,
    /// Nor for more seals than this.
    pub max_seals: u64,
    /// Unwrapped keys kept for opening tokens sealed elsewhere (refused
    /// ones are kept apart, [`refusal_entries`](Self::refusal_entries)).
    pub cache_entries: usize,
    /// How long an unwrapped key is kept: longer than a state lives plus a
    /// sealing window, so an instance unwraps each key about once.
    pub cache_max_age: Duration,
    /// How long a refusal is remembered: short, since a key can be
    /// re-enabled or a policy fixed.
    pub refusal_max_age: Duration,
    /// How many refused data keys are remembered, apart from the good
    /// ones, so a flood of forged tokens never evicts a key honest tokens use.
    pub refusal_entries: usize,
    /// Decrypt calls for data keys this instance has not seen, per minute,
    /// for all callers together. Honest traffic needs about one per sealing
    /// instance per `max_age`; the bound keeps a flood from spending the
    /// account's KMS quota.
    pub max_decrypts_per_minute: u32,
    /// The same, for one caller (a principal): a caller with forged tokens
    /// spends its own budget, not the one other callers' tokens need.
    pub max_decrypts_per_caller_per_minute: u32,
}

/// KMS ciphertext blobs of 32-byte data keys are under 200 bytes; anything
/// much longer was not made by KMS and is refused without a call.
pub const MAX_ENCRYPTED_KEY_BYTES: usize = 512;

impl Default for KeyWindow {
    fn default() -> Self {
        Self {
            max_age: Duration::from_secs(300),
            max_seals: 10_000,
            // One key per 2025-era session started in another instance's
            // window (each lives 30 days): a few hundred at 1,000 requests
            // a second (docs/operations.md, "What binds first"). An entry
            // is about 1 KB (the key's reference twice, the unwrapped key),
            // so these are about a megabyte.
            cache_entries: 1_024,
            // Longer than any state lives (default 10 minutes) plus a window.
            cache_max_age: Duration::from_secs(3_600),
            refusal_max_age: Duration::from_secs(300),
            refusal_entries: 1_024,
            max_decrypts_per_minute: 120,
            max_decrypts_per_caller_per_minute: 10,
        }
    }
}

struct CurrentKey {
    encrypted: Vec<u8>,
    key: Arc<LessSafeKey>,
    created: Instant,
    seals: u64,
}

/// Counters for the bench and for logs: how often KMS was called.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct KmsCallCounts {
    /// `GenerateDataKey` calls made.
    pub generate_data_key: AtomicU64,
    /// `Decrypt` calls made.
    pub decrypt: AtomicU64,
}

/// The KMS [`DataKeySource`]: data keys generated under one KMS key, bound
/// by encryption context to the deployment, and reused as the
/// [`KeyWindow`] allows.
pub struct KmsDataKeys {
    client: Client,
    key_id: String,
    audience: String,
    window: KeyWindow,
    current: tokio::sync::Mutex<Option<CurrentKey>>,
    /// The current key for opening, in a lock never held across a call:
    /// opens must not queue behind a slow GenerateDataKey.
    current_for_open: Mutex<Option<(Vec<u8>, Arc<LessSafeKey>)>>,
    decrypt_budget: Mutex<DecryptBudget>,
    /// Unwrapped keys, and apart from them the keys KMS refused.
    opened: Mutex<RecentKeys<Arc<LessSafeKey>>>,
    refused: Mutex<RecentKeys<()>>,
    /// The KMS calls this source made; clone the `Arc` to read them later.
    pub calls: Arc<KmsCallCounts>,
}

impl KmsDataKeys {
    /// Data keys under the KMS key `key_id` (`MCP_STATE_KEY_ID`: an id, ARN
    /// or alias) for `audience`, paced by `window`. No call is made before
    /// the first seal or open.
    pub fn new(client: Client, key_id: impl Into<String>, audience: impl Into<String>, window: KeyWindow) -> Self {
        let opened = Mutex::new(RecentKeys::new(window.cache_entries, window.cache_max_age));
        let refused = Mutex::new(RecentKeys::new(window.refusal_entries, window.refusal_max_age));
        Self {
            client,
            key_id: key_id.into(),
            audience: audience.into(),
            window,
            current: tokio::sync::Mutex::new(None),
            current_for_open: Mutex::new(None),
            decrypt_budget: Mutex::new(DecryptBudget::new()),
            opened,
            refused,
            calls: Arc::default(),
        }
    }

    async fn generate(&self) -> Result<CurrentKey, SealError> {
        self.calls.generate_data_key.fetch_add(1, Ordering::Relaxed);
        metrics::count(Counter::KmsCalls);
        let output = self
            .client
            .generate_data_key()
            .key_id(&self.key_id)
            .key_spec(DataKeySpec::Aes256)
            .encryption_context(CONTEXT_PURPOSE_KEY, CONTEXT_PURPOSE)
            .encryption_context(CONTEXT_AUDIENCE_KEY, &self.audience)
            .send()
            .await
            .map_err(|error| {
                tracing::error!(error = %describe(&error), "KMS GenerateDataKey failed");
                SealError::KeyUnavailable("KMS GenerateDataKey failed".into())
            })?;
        let encrypted = output.ciphertext_blob.map(Blob::into_inner).unwrap_or_default();
        let plaintext = output.plaintext.map(Blob::into_inner).unwrap_or_default();
        let key = aead_key(plaintext).ok_or_else(|| SealError::KeyUnavailable("KMS returned no usable data key".into()))?;
        Ok(CurrentKey { encrypted, key: Arc::new(key), created: Instant::now(), seals: 0 })
    }

    async fn decrypt(&self, encrypted: &[u8]) -> Result<LessSafeKey, OpenError> {
        self.calls.decrypt.fetch_add(1, Ordering::Relaxed);
        metrics::count(Counter::KmsCalls);
        let output = self
            .client
            .decrypt()
            .key_id(&self.key_id)
            .ciphertext_blob(Blob::new(encrypted))
            .encryption_context(CONTEXT_PURPOSE_KEY, CONTEXT_PURPOSE)
            .encryption_context(CONTEXT_AUDIENCE_KEY, &self.audience)
            .send()
            .await
            .map_err(classify_decrypt_error)?;
        aead_key(output.plaintext.map(Blob::into_inner).unwrap_or_default()).ok_or(OpenError::KeyRefused)
    }
}

/// An AES-256-GCM key from raw bytes, wiping the bytes afterwards.
fn aead_key(mut bytes: Vec<u8>) -> Option<LessSafeKey> {
    let key = UnboundKey::new(&AES_256_GCM, &bytes).ok().map(LessSafeKey::new);
    bytes.zeroize();
    key
}

/// Whether KMS answered that it will never open this ciphertext under this
/// key, encryption context and role (a refusal, which asking again does not
/// change), rather than failing to answer. Also read by the authorization
/// server's sealed upstream secret.
pub fn decrypt_refused(error: &SdkError<DecryptError>) -> bool {
    match error {
        SdkError::ServiceError(service) => {
            matches!(
                service.err(),
                DecryptError::InvalidCiphertextException(_)
                    | DecryptError::IncorrectKeyException(_)
                    | DecryptError::DisabledException(_)
                    | DecryptError::KmsInvalidStateException(_)
                    | DecryptError::NotFoundException(_)
                    | DecryptError::InvalidKeyUsageException(_)
            ) || service.err().code() == Some("AccessDeniedException")
        }
        _ => false,
    }
}

/// A key KMS will not decrypt makes the state invalid (-32602); KMS being
/// unreachable or throttled is the server's failure (-32603).
fn classify_decrypt_error(error: SdkError<DecryptError>) -> OpenError {
    if decrypt_refused(&error) {
        tracing::info!(error = %describe(&error), "KMS refused a requestState data key");
        OpenError::KeyRefused
    } else {
        tracing::error!(error = %describe(&error), "KMS Decrypt failed");
        OpenError::KeyUnavailable("KMS Decrypt failed".into())
    }
}

fn describe<E: ProvideErrorMetadata + std::error::Error + 'static, R: std::fmt::Debug>(error: &SdkError<E, R>) -> String {
    match error {
        SdkError::ServiceError(service) => format!("{}: {}", service.err().code().unwrap_or("?"), service.err().message().unwrap_or("")),
        other => aws_sdk_kms::error::DisplayErrorContext(other).to_string(),
    }
}

impl DataKeySource for KmsDataKeys {
    fn sealing_key(&self) -> BoxFuture<'_, Result<SealingKey, SealError>> {
        Box::pin(async move {
            // Held across the KMS call so concurrent seals share one request.
            let mut current = self.current.lock().await;
            let fresh = current.as_ref().is_some_and(|k| k.created.elapsed() < self.window.max_age && k.seals < self.window.max_seals);
            if fresh {
                metrics::count(Counter::DataKeyCacheHits);
            } else {
                let fresh = self.generate().await?;
                if let Ok(mut for_open) = self.current_for_open.lock() {
                    *for_open = Some((fresh.encrypted.clone(), fresh.key.clone()));
                }
                let previous = current.replace(fresh);
                // Tokens sealed under the previous key keep opening until they expire.
                if let (Some(previous), Ok(mut opened)) = (previous, self.opened.lock()) {
                    opened.insert(previous.encrypted, previous.key);
                }
            }
            let key = current.as_mut().expect("set above");
            key.seals += 1;
            Ok(SealingKey { key_ref: key.encrypted.clone(), key: key.key.clone() })
        })
    }

    fn opening_key<'a>(&'a self, key_ref: &'a [u8], caller: &'a str) -> BoxFuture<'a, Result<Arc<LessSafeKey>, OpenError>> {
        Box::pin(async move {
            let current = self
                .current_for_open
                .lock()
                .ok()
                .and_then(|c| c.as_ref().filter(|(encrypted, _)| encrypted == key_ref).map(|(_, key)| key.clone()));
            if let Some(key) = current {
                metrics::count(Counter::DataKeyCacheHits);
                return Ok(key);
            }
            if key_ref.len() > MAX_ENCRYPTED_KEY_BYTES {
                return Err(OpenError::Malformed);
            }
            if let Some(key) = self.opened.lock().ok().and_then(|mut opened| opened.get(key_ref)) {
                metrics::count(Counter::DataKeyCacheHits);
                return Ok(key);
            }
            if self.refused.lock().is_ok_and(|mut refused| refused.get(key_ref).is_some()) {
                return Err(OpenError::KeyRefused);
            }
            let window = &self.window;
            let allowed = self
                .decrypt_budget
                .lock()
                .is_ok_and(|mut budget| budget.take(caller, window.max_decrypts_per_minute, window.max_decrypts_per_caller_per_minute));
            if !allowed {
                // Nothing is known about the key: the state may well be
                // genuine, so this is the server's condition (retryable
                // -32603), never "invalid".
                tracing::warn!("requestState Decrypt budget spent for this minute");
                return Err(OpenError::OverBudget);
            }
            let outcome = self.decrypt(key_ref).await.map(Arc::new);
            match &outcome {
                Ok(key) => {
                    if let Ok(mut opened) = self.opened.lock() {
                        opened.insert(key_ref.to_vec(), key.clone());
                    }
                }
                Err(OpenError::KeyRefused) => {
                    if let Ok(mut refused) = self.refused.lock() {
                        refused.insert(key_ref.to_vec(), ());
                    }
                }
                // Unreachable or throttled: nothing learnt about the key.
                Err(_) => {}
            }
            outcome
        })
    }
}

/// Data keys this instance has learnt something about, by encrypted-key
/// bytes: bounded in count (oldest first out) and in age.
struct RecentKeys<V> {
    keys: HashMap<Vec<u8>, (V, Instant)>,
    order: VecDeque<Vec<u8>>,
    max_entries: usize,
    max_age: Duration,
}

impl<V: Clone> RecentKeys<V> {
    fn new(max_entries: usize, max_age: Duration) -> Self {
        Self { keys: HashMap::new(), order: VecDeque::new(), max_entries, max_age }
    }

    fn get(&mut self, encrypted: &[u8]) -> Option<V> {
        let (value, added) = self.keys.get(encrypted)?;
        if added.elapsed() < self.max_age {
            return Some(value.clone());
        }
        // From the order too: a stale place there would later evict the
        // key's fresh entry early.
        self.keys.remove(encrypted);
        self.order.retain(|k| k.as_slice() != encrypted);
        None
    }

    fn insert(&mut self, encrypted: Vec<u8>, value: V) {
        if self.keys.insert(encrypted.clone(), (value, Instant::now())).is_none() {
            self.order.push_back(encrypted);
        }
        while self.keys.len() > self.max_entries {
            match self.order.pop_front() {
                Some(oldest) => {
                    self.keys.remove(&oldest);
                }
                None => break,
            }
        }
        self.order.retain(|k| self.keys.contains_key(k));
    }
}

/// Decrypt calls left in the current minute, in all and per caller.
struct DecryptBudget {
    minute_started: Instant,
    spent: u32,
    /// Per caller this minute; cleared when the minute turns. A caller is
    /// added only by a Decrypt it was allowed, so this holds at most the
    /// minute's budget in all.
    by_caller: HashMap<String, u32>,
}

impl DecryptBudget {
    fn new() -> Self {
        Self { minute_started: Instant::now(), spent: 0, by_caller: HashMap::new() }
    }

    fn take(&mut self, caller: &str, per_minute: u32, per_caller: u32) -> bool {
        if self.minute_started.elapsed() >= Duration::from_secs(60) {
            *self = Self::new();
        }
        let caller_spent = self.by_caller.get(caller).copied().unwrap_or(0);
        if self.spent >= per_minute || caller_spent >= per_caller {
            return false;
        }
        self.spent += 1;
        self.by_caller.insert(caller.to_owned(), caller_spent + 1);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_caller_spends_its_own_decrypt_budget_not_the_others() {
        let mut budget = DecryptBudget::new();
        for _ in 0..3 {
            assert!(budget.take("mallory", 10, 3));
        }
        assert!(!budget.take("mallory", 10, 3), "mallory's own bound");
        assert!(budget.take("alice", 10, 3), "alice still has hers");
        for _ in 0..6 {
            budget.take(&format!("sybil-{}", budget.spent), 10, 3);
        }
        assert!(!budget.take("bob", 10, 3), "and the bound for all callers holds");
    }
}
