//! What the server remembers between requests: authorization codes (single
//! use, a minute) and refresh tokens (rotated on every use, a reused one
//! ending its whole family). A family keeps which of its tokens may be
//! used: the current one, and the one before it until the current one is
//! used, so a client that lost the answer to a refresh can retry it
//! (SECURITY.md argues this against RFC 9700, 4.14.2). Both are kept by the SHA-256 of the secret the
//! client holds, never the secret: the table alone grants nothing.
//! DynamoDB on AWS ([`crate::aws::DynamoGrants`]), memory locally.

use std::{collections::HashMap, sync::Mutex};

use aws_lc_rs::digest::{SHA256, digest};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use futures::future::BoxFuture;
use mcp_stateless::{random, storage::StoreError};
use serde::{Deserialize, Serialize};

/// A new secret for a client to hold: 256 random bits, base64url.
pub fn new_secret() -> String {
    URL_SAFE_NO_PAD.encode(random::bytes::<32>())
}

/// What a secret is stored under: its SHA-256, hex.
pub fn key_of(secret: &str) -> String {
    mcp_stateless::storage::hex(digest(&SHA256, secret.as_bytes()).as_ref())
}

/// What an authorization code was issued for; each must match at the token endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeGrant {
    /// The client it was issued to.
    pub client_id: String,
    /// The redirect URI it was sent to, as the client sent it.
    pub redirect_uri: String,
    /// The PKCE S256 challenge.
    pub code_challenge: String,
    /// The MCP endpoint.
    pub resource: String,
    /// Granted scopes, space-separated.
    pub scope: String,
    /// The user.
    pub subject: String,
    /// Epoch seconds.
    pub expires_at: u64,
    /// Whether the client must authenticate to exchange it (its document
    /// publishes keys and offers no `none`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub must_authenticate: bool,
}

/// A refresh token's grant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefreshGrant {
    /// The family: every token rotated from one sign-in.
    pub family: String,
    /// The client it was issued to.
    pub client_id: String,
    /// The MCP endpoint.
    pub resource: String,
    /// Granted scopes, space-separated.
    pub scope: String,
    /// The user.
    pub subject: String,
    /// Epoch seconds.
    pub expires_at: u64,
    /// Whether the family was started by a client that authenticated
    /// (`private_key_jwt`): each refresh must then authenticate too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub authenticated: bool,
}

/// What presenting a refresh token came to. Reading it changes nothing
/// unless it is reused: a failure after this (signing, storing the
/// successor) leaves the token as it was, so the client's retry works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Presented {
    /// It may be rotated: it is its family's current token, or the one
    /// before it whose successor was never used (the client lost the
    /// answer that carried the successor, and retries).
    Usable(Usable),
    /// Used before, and its successor too: the family is revoked now.
    /// The grant it carried (whose client and user the log names).
    Reused(RefreshGrant),
    /// Unknown, expired, or of a revoked family.
    Unknown,
}

/// A usable refresh token: its grant, and the family's state the rotation
/// is conditional on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Usable {
    /// The grant it carries.
    pub grant: RefreshGrant,
    /// The family's current token (its key) when read; `None` for a token
    /// issued before families kept their state (it is current if unused).
    pub current: Option<String>,
}

/// What a rotation came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rotated {
    /// The successor is stored and is the family's current token now.
    Done,
    /// Another use of the family rotated it first (concurrent refreshes):
    /// nothing was written, the presented token is as it was.
    Raced,
}

/// The port the server keeps grants through.
pub trait GrantStore: Send + Sync {
    /// Keeps `grant` under `key` until it expires.
    fn put_code<'a>(&'a self, key: &'a str, grant: &'a CodeGrant) -> BoxFuture<'a, Result<(), StoreError>>;
    /// The grant under `key`, removed as it is read: of two concurrent
    /// takes, one gets it. `None` when unknown, taken or expired.
    fn take_code<'a>(&'a self, key: &'a str, now: u64) -> BoxFuture<'a, Result<Option<CodeGrant>, StoreError>>;
    /// Starts a family with its first refresh token, under `key`.
    fn start_family<'a>(&'a self, key: &'a str, grant: &'a RefreshGrant) -> BoxFuture<'a, Result<(), StoreError>>;
    /// What the token under `key` is now. A token that is neither its
    /// family's current one nor the retried previous one revokes the family
    /// until `revoked_until` (when its newest token would have expired).
    fn present_refresh<'a>(&'a self, key: &'a str, now: u64, revoked_until: u64) -> BoxFuture<'a, Result<Presented, StoreError>>;
    /// Makes `successor` (under `successor_key`) the family's current token
    /// and `presented` the previous one, in one write conditional on the
    /// family being as `usable` read it: of concurrent rotations, one is
    /// [`Rotated::Done`]. The same call landing twice (the SDK's retry)
    /// means the same.
    fn rotate_refresh<'a>(
        &'a self,
        presented: &'a str,
        usable: &'a Usable,
        successor_key: &'a str,
        successor: &'a RefreshGrant,
    ) -> BoxFuture<'a, Result<Rotated, StoreError>>;
    /// Revokes the family of the token under `key` until `revoked_until`,
    /// if [`revocation_of`] its grant by `client_id` (`authenticated` if
    /// the request's client assertion held) says [`Revocation::Ended`].
    fn revoke_refresh<'a>(
        &'a self,
        key: &'a str,
        client_id: &'a str,
        authenticated: bool,
        revoked_until: u64,
    ) -> BoxFuture<'a, Result<Revocation, StoreError>>;
}

/// What a revocation request (RFC 7009) comes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revocation {
    /// The token's family is ended.
    Ended,
    /// The token is unknown, or another client's: nothing changes, and
    /// the answer is 200 all the same (RFC 7009, 2.2).
    Unknown,
    /// The family was started by a client that authenticated, and this
    /// request did not: nothing changes. Its client is asked to
    /// authenticate (RFC 7009, 2.1, the server first checks the client's
    /// credentials), as its refreshes are; otherwise whoever saw its
    /// current token could end the family without the client's key. Said of an
    /// expired token of such a family too: only its holder learns that
    /// its client authenticates.
    Unauthenticated,
}

/// What revoking `grant` comes to for `client_id`, `authenticated` or
/// not: one rule for every store.
pub fn revocation_of(grant: Option<&RefreshGrant>, client_id: &str, authenticated: bool) -> Revocation {
    match grant {
        Some(grant) if grant.client_id == client_id => {
            if grant.authenticated && !authenticated {
                Revocation::Unauthenticated
            } else {
                Revocation::Ended
            }
        }
        _ => Revocation::Unknown,
    }
}

/// Which tokens of a family may be used: the current one, and the
/// previous one while the current one was never used.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FamilyState {
    /// The newest token's key; `None` once the family is revoked.
    pub current: Option<String>,
    /// The token it replaced.
    pub previous: Option<String>,
}

impl FamilyState {
    /// A new family's: `first` is current.
    pub fn started(first: &str) -> Self {
        Self { current: Some(first.to_owned()), previous: None }
    }

    /// After `presented` was rotated into `successor`.
    pub fn rotated(presented: &str, successor: &str) -> Self {
        Self { current: Some(successor.to_owned()), previous: Some(presented.to_owned()) }
    }

    /// Whether the token under `key` may be rotated.
    pub fn admits(&self, key: &str) -> bool {
        self.current.as_deref() == Some(key) || (self.current.is_some() && self.previous.as_deref() == Some(key))
    }
}

#[derive(Default)]
struct Memory {
    codes: HashMap<String, CodeGrant>,
    refresh: HashMap<String, RefreshGrant>,
    /// Families' states, and until when each counts.
    families: HashMap<String, (FamilyState, u64)>,
}

/// For the local server and unit tests: one process only.
#[derive(Default)]
pub struct InMemoryGrants {
    memory: Mutex<Memory>,
}

impl InMemoryGrants {
    fn with<T>(&self, f: impl FnOnce(&mut Memory) -> T) -> Result<T, StoreError> {
        self.memory.lock().map(|mut memory| f(&mut memory)).map_err(|_| StoreError::Unavailable("grant lock poisoned".into()))
    }
}

impl GrantStore for InMemoryGrants {
    fn put_code<'a>(&'a self, key: &'a str, grant: &'a CodeGrant) -> BoxFuture<'a, Result<(), StoreError>> {
        let done = self.with(|m| {
            m.codes.insert(key.to_owned(), grant.clone());
        });
        Box::pin(async move { done })
    }

    fn take_code<'a>(&'a self, key: &'a str, now: u64) -> BoxFuture<'a, Result<Option<CodeGrant>, StoreError>> {
        let taken = self.with(|m| m.codes.remove(key).filter(|grant| grant.expires_at > now));
        Box::pin(async move { taken })
    }

    fn start_family<'a>(&'a self, key: &'a str, grant: &'a RefreshGrant) -> BoxFuture<'a, Result<(), StoreError>> {
        let done = self.with(|m| {
            m.refresh.insert(key.to_owned(), grant.clone());
            m.families.insert(grant.family.clone(), (FamilyState::started(key), grant.expires_at));
        });
        Box::pin(async move { done })
    }

    fn present_refresh<'a>(&'a self, key: &'a str, now: u64, revoked_until: u64) -> BoxFuture<'a, Result<Presented, StoreError>> {
        let presented = self.with(|m| {
            let Some(grant) = m.refresh.get(key).filter(|grant| grant.expires_at > now).cloned() else {
                return Presented::Unknown;
            };
            let Some((state, _)) = m.families.get(&grant.family).filter(|(state, until)| *until > now && state.current.is_some()) else {
                return Presented::Unknown;
            };
            if state.admits(key) {
                return Presented::Usable(Usable { current: state.current.clone(), grant });
            }
            m.families.insert(grant.family.clone(), (FamilyState::default(), revoked_until));
            Presented::Reused(grant)
        });
        Box::pin(async move { presented })
    }

    fn rotate_refresh<'a>(
        &'a self,
        presented: &'a str,
        usable: &'a Usable,
        successor_key: &'a str,
        successor: &'a RefreshGrant,
    ) -> BoxFuture<'a, Result<Rotated, StoreError>> {
        let rotated = self.with(|m| {
            let as_read = match (m.families.get(&usable.grant.family), &usable.current) {
                (Some((state, _)), Some(current)) => state.current.as_ref() == Some(current),
                (None, None) => true,
                _ => false,
            };
            if !as_read {
                return Rotated::Raced;
            }
            m.refresh.insert(successor_key.to_owned(), successor.clone());
            m.families.insert(successor.family.clone(), (FamilyState::rotated(presented, successor_key), successor.expires_at));
            Rotated::Done
        });
        Box::pin(async move { rotated })
    }

    fn revoke_refresh<'a>(
        &'a self,
        key: &'a str,
        client_id: &'a str,
        authenticated: bool,
        revoked_until: u64,
    ) -> BoxFuture<'a, Result<Revocation, StoreError>> {
        let done = self.with(|m| {
            let grant = m.refresh.get(key);
            let revocation = revocation_of(grant, client_id, authenticated);
            if let (Revocation::Ended, Some(grant)) = (revocation, grant) {
                let family = grant.family.clone();
                m.families.insert(family, (FamilyState::default(), revoked_until));
            }
            revocation
        });
        Box::pin(async move { done })
    }
}
