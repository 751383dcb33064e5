//! How long each thing the server hands out lives, in one place.

use std::time::Duration;

/// Lifetimes of codes, tokens, registrations, the pages between and
/// remembered approvals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lifetimes {
    /// An authorization code: single use, about a minute (OAuth 2.1, 4.1.2).
    pub code: Duration,
    /// An access token (a JWT nothing can revoke, so short).
    pub access_token: Duration,
    /// A refresh token, renewed by each rotation.
    pub refresh_token: Duration,
    /// A client id made by registration (a sealed record: nothing stored).
    pub registration: Duration,
    /// The consent page and the upstream sign-in, end to end.
    pub sign_in: Duration,
    /// A client metadata document kept in this instance, at most.
    pub metadata_cache: Duration,
    /// An approval a browser remembers (and its binding cookie, while it
    /// remembers one): bounded, so a forgotten approval ends by itself.
    pub remembered_consent: Duration,
}

impl Default for Lifetimes {
    fn default() -> Self {
        Self {
            code: Duration::from_secs(60),
            access_token: Duration::from_secs(3600),
            refresh_token: Duration::from_secs(30 * 24 * 3600),
            registration: Duration::from_secs(365 * 24 * 3600),
            sign_in: Duration::from_secs(600),
            metadata_cache: Duration::from_secs(3600),
            remembered_consent: Duration::from_secs(30 * 24 * 3600),
        }
    }
}
