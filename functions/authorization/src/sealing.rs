//! Records the server hands out and reads back, sealed (AES-256-GCM under
//! a KMS data key on AWS, the same envelope `requestState` uses): a
//! registered client's id, the request behind a consent page, the sign-in
//! in flight at the upstream provider, and the approvals a browser
//! remembers. Each purpose is bound as associated data, so one never opens
//! as another, and so is what it is for (the browser, for the pages), so
//! it opens nowhere else.

use std::{sync::Arc, time::Duration};

use mcp_stateless::sealed::request_state::{OpenError, OpenedState, RequestStateSealer, SealError, StateBinding};
use serde::{Serialize, de::DeserializeOwned};

/// The longest sealed record: a consent page's carries the client's id (up
/// to 2 KB when registered) and its redirect URI and `state`; the upstream
/// `state` travels in a URL, which stays under API Gateway's and browsers'
/// limits at this size.
pub const MAX_SEALED_BYTES: usize = 8 * 1024;

/// What a sealed record is for: each opens only as what it was sealed as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Purpose {
    /// A client id from registration (RFC 7591).
    ClientId,
    /// The authorization request a consent page shows.
    Consent,
    /// The sign-in at the upstream provider, as its `state`.
    UpstreamState,
    /// The approvals a browser remembers, as its cookie.
    RememberedConsent,
    /// The form that forgets them (its CSRF proof).
    ForgetConsent,
}

impl Purpose {
    fn method(self) -> &'static str {
        match self {
            Purpose::ClientId => "oauth/client-id",
            Purpose::Consent => "oauth/consent",
            Purpose::UpstreamState => "oauth/upstream-state",
            Purpose::RememberedConsent => "oauth/remembered-consent",
            Purpose::ForgetConsent => "oauth/forget-consent",
        }
    }
}

/// Why a sealed record was not made or did not open.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SealingError {
    /// Forged, altered, expired, for another purpose, browser or
    /// deployment, or not a record at all: the client's fault.
    #[error("not a record this server sealed")]
    Invalid,
    /// Too large to seal.
    #[error("too large to seal")]
    TooLarge,
    /// The keys could not be had: the server's fault.
    #[error("sealing keys unavailable: {0}")]
    Unavailable(String),
}

/// A record opened, and what single use needs.
pub struct Opened<T> {
    /// The record.
    pub value: T,
    /// Its random id.
    pub jti: String,
    /// When it stops opening (epoch seconds).
    pub expires_at: u64,
}

/// Seals and opens the server's records for one deployment.
#[derive(Clone)]
pub struct Seals {
    sealer: Arc<dyn RequestStateSealer>,
    audience: String,
}

impl Seals {
    /// Through `sealer`, bound to the deployment `audience`.
    pub fn new(sealer: Arc<dyn RequestStateSealer>, audience: &str) -> Self {
        Self { sealer, audience: audience.to_owned() }
    }

    fn binding(&self, purpose: Purpose, bound_to: &str) -> StateBinding {
        StateBinding {
            principal: bound_to.to_owned(),
            method: purpose.method().to_owned(),
            target: String::new(),
            arguments_digest: [0; 32],
            audience: self.audience.clone(),
        }
    }

    /// `value` sealed for `purpose`, opening only with `bound_to` for `ttl`.
    pub async fn seal<T: Serialize>(&self, purpose: Purpose, bound_to: &str, value: &T, ttl: Duration) -> Result<String, SealingError> {
        let value = serde_json::to_value(value).map_err(|e| SealingError::Unavailable(e.to_string()))?;
        self.sealer.seal(&self.binding(purpose, bound_to), &value, ttl).await.map_err(|error| match error {
            SealError::TooLarge { .. } => SealingError::TooLarge,
            other => SealingError::Unavailable(other.to_string()),
        })
    }

    /// What `token` holds, if sealed here for `purpose` and `bound_to`.
    /// Key lookups it costs are budgeted to `sender` (the request's source
    /// address): a record anyone may present, forged, spends its sender's
    /// budget, not every honest client's.
    pub async fn open<T: DeserializeOwned>(
        &self,
        purpose: Purpose,
        bound_to: &str,
        token: &str,
        sender: &str,
    ) -> Result<Opened<T>, SealingError> {
        let OpenedState { data, jti, expires_at, .. } =
            self.sealer.open_budgeted(&self.binding(purpose, bound_to), token, sender).await.map_err(|error| match error {
                OpenError::KeyUnavailable(why) => SealingError::Unavailable(why),
                // Nothing is known of the record: it may be genuine.
                OpenError::OverBudget => SealingError::Unavailable(OpenError::OverBudget.to_string()),
                _ => SealingError::Invalid,
            })?;
        let value = serde_json::from_value(data).map_err(|_| SealingError::Invalid)?;
        Ok(Opened { value, jti, expires_at })
    }
}
