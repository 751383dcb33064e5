//! What the server remembers between requests: authorization codes (single
//! use, a minute) and refresh tokens (rotated on every use, a reused one
//! ending its whole family). Both are kept by the SHA-256 of the secret the
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
}

/// What presenting a refresh token came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rotation {
    /// It was current: it is used now, and this is its grant.
    Current(RefreshGrant),
    /// It was used before (or raced another use and lost): its family is
    /// revoked now.
    Reused,
    /// Unknown, expired, or of a revoked family.
    Unknown,
}

/// The port the server keeps grants through.
pub trait GrantStore: Send + Sync {
    /// Keeps `grant` under `key` until it expires.
    fn put_code<'a>(&'a self, key: &'a str, grant: &'a CodeGrant) -> BoxFuture<'a, Result<(), StoreError>>;
    /// The grant under `key`, removed as it is read: of two concurrent
    /// takes, one gets it. `None` when unknown, taken or expired.
    fn take_code<'a>(&'a self, key: &'a str, now: u64) -> BoxFuture<'a, Result<Option<CodeGrant>, StoreError>>;
    /// Keeps a refresh token's grant under `key`.
    fn put_refresh<'a>(&'a self, key: &'a str, grant: &'a RefreshGrant) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Marks the token under `key` used: of two concurrent uses, one gets
    /// [`Rotation::Current`]; any later use revokes the family until
    /// `revoked_until` (when its newest token would have expired).
    fn use_refresh<'a>(&'a self, key: &'a str, now: u64, revoked_until: u64) -> BoxFuture<'a, Result<Rotation, StoreError>>;
    /// Revokes the family of the token under `key` until `revoked_until`,
    /// if it is `client_id`'s (RFC 7009, 2.1).
    fn revoke_refresh<'a>(&'a self, key: &'a str, client_id: &'a str, revoked_until: u64) -> BoxFuture<'a, Result<(), StoreError>>;
}

#[derive(Default)]
struct Memory {
    codes: HashMap<String, CodeGrant>,
    /// Grant, and whether it was used.
    refresh: HashMap<String, (RefreshGrant, bool)>,
    /// Revoked families, until when.
    revoked: HashMap<String, u64>,
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

    fn put_refresh<'a>(&'a self, key: &'a str, grant: &'a RefreshGrant) -> BoxFuture<'a, Result<(), StoreError>> {
        let done = self.with(|m| {
            m.refresh.insert(key.to_owned(), (grant.clone(), false));
        });
        Box::pin(async move { done })
    }

    fn use_refresh<'a>(&'a self, key: &'a str, now: u64, revoked_until: u64) -> BoxFuture<'a, Result<Rotation, StoreError>> {
        let rotation = self.with(|m| {
            let Some((grant, used)) = m.refresh.get_mut(key).filter(|(grant, _)| grant.expires_at > now) else {
                return Rotation::Unknown;
            };
            if m.revoked.get(&grant.family).is_some_and(|until| *until > now) {
                return Rotation::Unknown;
            }
            if *used {
                let family = grant.family.clone();
                m.revoked.insert(family, revoked_until);
                return Rotation::Reused;
            }
            *used = true;
            Rotation::Current(grant.clone())
        });
        Box::pin(async move { rotation })
    }

    fn revoke_refresh<'a>(&'a self, key: &'a str, client_id: &'a str, revoked_until: u64) -> BoxFuture<'a, Result<(), StoreError>> {
        let done = self.with(|m| {
            if let Some((grant, _)) = m.refresh.get(key).filter(|(grant, _)| grant.client_id == client_id) {
                let family = grant.family.clone();
                m.revoked.insert(family, revoked_until);
            }
        });
        Box::pin(async move { done })
    }
}
