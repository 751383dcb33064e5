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
pub const CONTEXT_PURPOSE: &str = "mcp-request-state";
pub const CONTEXT_AUDIENCE_KEY: &str = "audience";

#[derive(Debug, Clone)]
pub struct KeyWindow {
    pub max_age: Duration,
    pub max_seals: u64,
    /// Unwrapped keys kept for opening tokens sealed elsewhere, and data keys
    /// KMS refused (so a forged token replayed costs one Decrypt, not one
    /// per replay).
    pub cache_entries: usize,
    pub cache_max_age: Duration,
    /// How long a refusal is remembered: short, since a key can be
    /// re-enabled or a policy fixed.
    pub refusal_max_age: Duration,
    /// Decrypt calls for data keys this instance has not seen, per minute.
    /// Honest traffic needs about one per sealing instance per `max_age`;
    /// beyond the bound a token is treated as invalid (the client retries
    /// without it) rather than spending the account's KMS quota.
    pub max_decrypts_per_minute: u32,
}

/// KMS ciphertext blobs of 32-byte data keys are under 200 bytes; anything
/// much longer was not made by KMS and is refused without a call.
pub const MAX_ENCRYPTED_KEY_BYTES: usize = 512;

impl Default for KeyWindow {
    fn default() -> Self {
        Self {
            max_age: Duration::from_secs(300),
            max_seals: 10_000,
            cache_entries: 64,
            // Longer than any state lives (default 10 minutes) plus a window.
            cache_max_age: Duration::from_secs(3_600),
            refusal_max_age: Duration::from_secs(300),
            max_decrypts_per_minute: 60,
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
pub struct KmsCallCounts {
    pub generate_data_key: AtomicU64,
    pub decrypt: AtomicU64,
}

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
    opened: Mutex<OpenedKeys>,
    pub calls: Arc<KmsCallCounts>,
}

impl KmsDataKeys {
    pub fn new(client: Client, key_id: impl Into<String>, audience: impl Into<String>, window: KeyWindow) -> Self {
        Self {
            client,
            key_id: key_id.into(),
            audience: audience.into(),
            window,
            current: tokio::sync::Mutex::new(None),
            current_for_open: Mutex::new(None),
            decrypt_budget: Mutex::new(DecryptBudget::new()),
            opened: Mutex::new(OpenedKeys::default()),
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

/// A key KMS will not decrypt makes the state invalid (-32602); KMS being
/// unreachable or throttled is the server's failure (-32603).
fn classify_decrypt_error(error: SdkError<DecryptError>) -> OpenError {
    let refused = match &error {
        SdkError::ServiceError(service) => matches!(
            service.err(),
            DecryptError::InvalidCiphertextException(_)
                | DecryptError::IncorrectKeyException(_)
                | DecryptError::DisabledException(_)
                | DecryptError::KmsInvalidStateException(_)
                | DecryptError::NotFoundException(_)
                | DecryptError::InvalidKeyUsageException(_)
        ) || service.err().code() == Some("AccessDeniedException"),
        _ => false,
    };
    if refused {
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
            let fresh = current
                .as_ref()
                .is_some_and(|k| k.created.elapsed() < self.window.max_age && k.seals < self.window.max_seals);
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
                    opened.insert(previous.encrypted, Some(previous.key), &self.window);
                }
            }
            let key = current.as_mut().expect("set above");
            key.seals += 1;
            Ok(SealingKey { key_ref: key.encrypted.clone(), key: key.key.clone() })
        })
    }

    fn opening_key<'a>(&'a self, key_ref: &'a [u8]) -> BoxFuture<'a, Result<Arc<LessSafeKey>, OpenError>> {
        Box::pin(async move {
            let current = self.current_for_open.lock().ok().and_then(|c| c.as_ref().filter(|(encrypted, _)| encrypted == key_ref).map(|(_, key)| key.clone()));
            if let Some(key) = current {
                metrics::count(Counter::DataKeyCacheHits);
                return Ok(key);
            }
            if key_ref.len() > MAX_ENCRYPTED_KEY_BYTES {
                return Err(OpenError::Malformed);
            }
            match self.opened.lock().ok().and_then(|mut opened| opened.get(key_ref, &self.window)) {
                Some(Some(key)) => {
                    metrics::count(Counter::DataKeyCacheHits);
                    return Ok(key);
                }
                Some(None) => return Err(OpenError::KeyRefused),
                None => {}
            }
            if !self.decrypt_budget.lock().is_ok_and(|mut budget| budget.take(self.window.max_decrypts_per_minute)) {
                tracing::warn!("requestState Decrypt budget spent for this minute; treating the token as invalid");
                return Err(OpenError::KeyRefused);
            }
            let outcome = self.decrypt(key_ref).await.map(Arc::new);
            let learnt = match &outcome {
                Ok(key) => Some(Some(key.clone())),
                Err(OpenError::KeyRefused) => Some(None),
                // Unreachable or throttled: nothing learnt about the key.
                Err(_) => None,
            };
            if let (Some(entry), Ok(mut opened)) = (learnt, self.opened.lock()) {
                opened.insert(key_ref.to_vec(), entry, &self.window);
            }
            outcome
        })
    }
}

/// What this instance knows of data keys, by encrypted-key bytes: the
/// unwrapped key, or `None` for one KMS refused. Bounded in count and age.
#[derive(Default)]
struct OpenedKeys {
    keys: HashMap<Vec<u8>, (Option<Arc<LessSafeKey>>, Instant)>,
    order: VecDeque<Vec<u8>>,
}

impl OpenedKeys {
    /// `Some(Some(key))`: known good; `Some(None)`: recently refused;
    /// `None`: not known (or forgotten).
    fn get(&mut self, encrypted: &[u8], window: &KeyWindow) -> Option<Option<Arc<LessSafeKey>>> {
        let (key, added) = self.keys.get(encrypted)?;
        let max_age = if key.is_some() { window.cache_max_age } else { window.refusal_max_age };
        if added.elapsed() < max_age {
            return Some(key.clone());
        }
        self.keys.remove(encrypted);
        None
    }

    fn insert(&mut self, encrypted: Vec<u8>, key: Option<Arc<LessSafeKey>>, window: &KeyWindow) {
        if self.keys.insert(encrypted.clone(), (key, Instant::now())).is_none() {
            self.order.push_back(encrypted);
        }
        while self.keys.len() > window.cache_entries {
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

/// Decrypt calls left in the current minute.
struct DecryptBudget {
    minute_started: Instant,
    spent: u32,
}

impl DecryptBudget {
    fn new() -> Self {
        Self { minute_started: Instant::now(), spent: 0 }
    }

    fn take(&mut self, per_minute: u32) -> bool {
        if self.minute_started.elapsed() >= Duration::from_secs(60) {
            *self = Self::new();
        }
        if self.spent >= per_minute {
            return false;
        }
        self.spent += 1;
        true
    }
}
