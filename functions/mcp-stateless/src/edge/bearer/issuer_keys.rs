//! The issuer's signing keys, as this instance last fetched them.
//!
//! Three rules shape it:
//! - **A key the request needs is never waited for behind a fetch.** The
//!   set is swapped in whole once fetched; readers take a snapshot under a
//!   lock that is never held across an await. Fetches are single-flight: a
//!   request whose key id is unknown waits for the one fetch in flight (a
//!   rotation's new key arrives with it), never for a second one.
//! - **Forged key ids cannot make it hammer the issuer**: fetches are at
//!   least [`KeyTimings::refetch_floor`] apart, failed ones included.
//! - **A withdrawn key stops being trusted**: a set older than
//!   [`KeyTimings::refresh_after`] is refreshed in the background while
//!   requests go on using it; one older than [`KeyTimings::max_age`] (every
//!   refresh since failed, or none could finish) is not used at all: the
//!   next request fetches it again, and requests get 503 until the issuer
//!   answers.
//!
//! Fetches run as tasks of their own, holding the flight: a request that
//! gives up waiting (its client went away) does not abandon the fetch that
//! others wait for. On Lambda a task runs only while the instance serves a
//! request (it is frozen in between), so on an instance that idles for
//! minutes a background refresh may be cut off; one whose time ran out
//! across such a freeze does not count against the floor.
//!
//! Which key of a set verifies a token is `key_set.rs`'s rule.

use std::{
    sync::{Arc, PoisonError, RwLock},
    time::Duration,
};

use bytes::Bytes;
use http::StatusCode;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::TokioExecutor,
};
use jsonwebtoken::{Algorithm, DecodingKey, jwk::Jwk};
use serde::Deserialize;
use tokio::sync::OwnedMutexGuard;

use super::{
    key_set::{KeySet, Lookup},
    key_url::KeyUrl,
};
use crate::clock::Clock;

/// A document (configuration or key set) larger than this is not one.
const MAX_DOCUMENT_BYTES: usize = 256 * 1024;

/// How long the keys are kept and how often the issuer is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeyTimings {
    /// A set this old is refreshed in the background on its next use.
    pub refresh_after: Duration,
    /// A set this old is no longer trusted (its refreshes all failed).
    pub max_age: Duration,
    /// The least time between two fetches.
    pub refetch_floor: Duration,
    /// The bound on one fetch, the OpenID configuration and the key set
    /// together.
    pub fetch_timeout: Duration,
}

impl Default for KeyTimings {
    fn default() -> Self {
        Self {
            refresh_after: Duration::from_secs(10 * 60),
            max_age: Duration::from_secs(60 * 60),
            refetch_floor: Duration::from_secs(60),
            fetch_timeout: Duration::from_secs(5),
        }
    }
}

/// Where the keys are published.
#[derive(Debug, Clone)]
pub(crate) enum KeySource {
    /// A key set URL given outright (`MCP_JWT_JWKS_URL`).
    KeySet(KeyUrl),
    /// The issuer's OpenID configuration (at this URL), whose `jwks_uri`
    /// names the set; `issuer` is the configured issuer, which the
    /// document must name as its own.
    Discovery { configuration: KeyUrl, issuer: String },
}

/// What readers see: the last set fetched, and when a fetch last started.
#[derive(Default)]
struct Cache {
    current: Option<Arc<KeySet>>,
    attempted_at: Option<u64>,
}

type HttpsClient = Client<HttpsConnector<HttpConnector>, Empty<Bytes>>;

pub(crate) struct IssuerKeys {
    source: KeySource,
    timings: KeyTimings,
    clock: Arc<dyn Clock>,
    client: HttpsClient,
    /// Held only long enough to copy or swap an `Arc`.
    cache: RwLock<Cache>,
    /// Held by the one fetch in flight.
    flight: Arc<tokio::sync::Mutex<()>>,
}

/// Why no key could be had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyError {
    /// Not a key this issuer publishes for this algorithm and use.
    Unknown,
    /// The issuer's keys could not be fetched (or are past their age).
    Unavailable,
}

/// HTTP/1.1 over TLS with the system's roots (and `SSL_CERT_FILE`'s), or
/// plain http where [`KeyUrl`]'s rule allows it:
/// how the function calls an issuer (and the authorization server its
/// upstream provider).
pub fn https_connector() -> Result<HttpsConnector<HttpConnector>, String> {
    Ok(hyper_rustls::HttpsConnectorBuilder::new()
        .with_native_roots()
        .map_err(|e| format!("no TLS root certificates: {e}"))?
        .https_or_http()
        .enable_http1()
        .build())
}

impl IssuerKeys {
    pub(crate) fn new(source: KeySource, timings: KeyTimings, clock: Arc<dyn Clock>) -> Result<Self, String> {
        let client = Client::builder(TokioExecutor::new()).build(https_connector()?);
        Ok(Self { source, timings, clock, client, cache: RwLock::default(), flight: Arc::default() })
    }

    /// The key that verifies a token signed with `alg` under `kid`.
    pub(crate) async fn key(self: &Arc<Self>, kid: Option<&str>, alg: Algorithm) -> Result<DecodingKey, KeyError> {
        let current = self.usable_set();
        match current.as_ref().map(|set| (set.lookup(kid, alg), set.fetched_at)) {
            Some((Lookup::Usable(key), fetched_at)) => {
                self.refresh_if_due(fetched_at);
                return Ok(key);
            }
            Some((Lookup::Unusable, _)) => return Err(KeyError::Unknown),
            Some((Lookup::Absent, _)) | None => {}
        }
        match self.refetch(current).await.map(|set| set.lookup(kid, alg)) {
            Some(Lookup::Usable(key)) => Ok(key),
            Some(Lookup::Unusable | Lookup::Absent) => Err(KeyError::Unknown),
            None => Err(KeyError::Unavailable),
        }
    }

    /// The current set, unless it is past its maximum age.
    fn usable_set(&self) -> Option<Arc<KeySet>> {
        let now = self.clock.now();
        let cache = self.cache.read().unwrap_or_else(PoisonError::into_inner);
        cache.current.clone().filter(|set| now.saturating_sub(set.fetched_at) < self.timings.max_age.as_secs())
    }

    /// Starts a fetch unless one started within the floor; `true` if it did.
    fn claim_attempt(&self) -> bool {
        let now = self.clock.now();
        let mut cache = self.cache.write().unwrap_or_else(PoisonError::into_inner);
        // A clock that went back counts as time passed: a fetch too many
        // beats keys that cannot be refreshed until it catches up.
        let recent = cache.attempted_at.is_some_and(|at| at <= now && now - at < self.timings.refetch_floor.as_secs());
        if !recent {
            cache.attempted_at = Some(now);
        }
        !recent
    }

    /// Refreshes the set in the background once it is old enough, unless a
    /// fetch is in flight or tried within the floor. The request that
    /// noticed goes on with the set it has.
    fn refresh_if_due(self: &Arc<Self>, fetched_at: u64) {
        if self.clock.now().saturating_sub(fetched_at) < self.timings.refresh_after.as_secs() {
            return;
        }
        let Ok(flight) = self.flight.clone().try_lock_owned() else { return };
        if self.claim_attempt() {
            drop(self.start_fetch(flight));
        }
    }

    /// The set after a fetch for a key not in `seen` (the set the caller
    /// looked in): the one fetch in flight's, a newer one another request
    /// fetched meanwhile, or a fresh one unless the floor forbids.
    async fn refetch(self: &Arc<Self>, seen: Option<Arc<KeySet>>) -> Option<Arc<KeySet>> {
        let flight = self.flight.clone().lock_owned().await;
        let current = self.usable_set();
        let same = match (&current, &seen) {
            (Some(current), Some(seen)) => Arc::ptr_eq(current, seen),
            (None, None) => true,
            _ => false,
        };
        if !same || !self.claim_attempt() {
            return current;
        }
        // Joined, not run inline: see the module's comment.
        let _ = self.start_fetch(flight).await;
        self.usable_set()
    }

    /// Fetches and stores the set in a task of its own, which holds the
    /// flight until it is done.
    fn start_fetch(self: &Arc<Self>, flight: OwnedMutexGuard<()>) -> tokio::task::JoinHandle<()> {
        let keys = self.clone();
        tokio::spawn(async move {
            keys.fetch_and_store().await;
            drop(flight);
        })
    }

    async fn fetch_and_store(&self) {
        let started = self.clock.now();
        let fetched = tokio::time::timeout(self.timings.fetch_timeout, self.fetch()).await.unwrap_or_else(|_| Err("timed out".into()));
        match fetched {
            Ok(keys) => {
                let set = Arc::new(KeySet { keys, fetched_at: self.clock.now() });
                self.cache.write().unwrap_or_else(PoisonError::into_inner).current = Some(set);
            }
            Err(error) => {
                // Far longer than the fetch's bound by the wall clock: the
                // instance was frozen mid-fetch (Lambda, between requests),
                // which says nothing of the issuer, so the next request may
                // try again at once.
                let frozen = self.clock.now().saturating_sub(started) > 2 * self.timings.fetch_timeout.as_secs().max(1);
                if frozen {
                    self.cache.write().unwrap_or_else(PoisonError::into_inner).attempted_at = None;
                }
                tracing::error!(%error, frozen, "the issuer's keys could not be fetched");
            }
        }
    }

    async fn fetch(&self) -> Result<Vec<(Jwk, DecodingKey)>, String> {
        #[derive(Deserialize)]
        struct Configuration {
            issuer: String,
            jwks_uri: String,
        }
        #[derive(Deserialize)]
        struct RawKeySet {
            keys: Vec<serde_json::Value>,
        }
        let url = match &self.source {
            KeySource::KeySet(url) => url.clone(),
            KeySource::Discovery { configuration, issuer } => {
                let document: Configuration = self.get_json(configuration).await?;
                // OpenID Connect Discovery 1.0, 4.3: the document is the
                // issuer's only if it names the issuer it was fetched for.
                if document.issuer != *issuer {
                    return Err(format!("the OpenID configuration names the issuer {:?}, not {issuer:?}", document.issuer));
                }
                KeyUrl::parse_beside(&document.jwks_uri, configuration)
                    .map_err(|why| format!("the OpenID configuration's jwks_uri {why}"))?
            }
        };
        let set: RawKeySet = self.get_json(&url).await?;
        let published = set.keys.len();
        let keys = super::key_set::readable_keys(set.keys);
        if keys.len() < published {
            tracing::warn!(published, read = keys.len(), "skipped keys of the issuer's set that this build cannot read");
        }
        // An empty answer is an outage, not a withdrawal of every key: the
        // set in hand is kept.
        if keys.is_empty() {
            return Err(format!("{}: no key this build can read", url.as_str()));
        }
        Ok(keys)
    }

    async fn get_json<T: serde::de::DeserializeOwned>(&self, url: &KeyUrl) -> Result<T, String> {
        let url = url.as_str();
        let uri: http::Uri = url.parse().map_err(|e| format!("{url}: {e}"))?;
        let response = self.client.get(uri).await.map_err(|e| format!("{url}: {e}"))?;
        if response.status() != StatusCode::OK {
            return Err(format!("{url}: HTTP {}", response.status()));
        }
        let body = Limited::new(response.into_body(), MAX_DOCUMENT_BYTES).collect().await.map_err(|e| format!("{url}: {e}"))?.to_bytes();
        serde_json::from_slice(&body).map_err(|e| format!("{url}: {e}"))
    }
}
