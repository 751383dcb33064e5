//! The last good copy of each client metadata document, shared by every
//! instance (the table on AWS), for when a refetch fails: document hosts
//! behind bot protection sometimes answer a challenge page to cloud
//! addresses, and a client that signed in yesterday must not be locked
//! out by it. A copy is used only when a fetch fails that way, never when
//! the host serves another document, and is kept [`LAST_GOOD_LIFETIME`]
//! at most (documents change; peers cap their copies at 7 days too).

use std::{collections::HashMap, sync::Mutex, time::Duration};

use bytes::Bytes;
use futures::future::BoxFuture;
use mcp_stateless::storage::StoreError;

/// How long a last good copy may stand in for its document.
pub const LAST_GOOD_LIFETIME: Duration = Duration::from_secs(7 * 24 * 3600);
/// Copies an in-memory store keeps, at most.
const MAX_IN_MEMORY: usize = 256;

/// A document as last fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastGood {
    /// Its body, as fetched (at most the fetch's limit).
    pub body: Bytes,
    /// When it was fetched (epoch seconds).
    pub fetched_at: u64,
}

/// Where last good copies are kept.
pub trait LastGoodCopies: Send + Sync {
    /// Keeps `copy` of `client_id`'s document until `until` (epoch
    /// seconds), replacing any older one.
    fn keep<'a>(&'a self, client_id: &'a str, copy: &'a LastGood, until: u64) -> BoxFuture<'a, Result<(), StoreError>>;
    /// The copy of `client_id`'s document, if one is kept and not expired at `now`.
    fn last_good<'a>(&'a self, client_id: &'a str, now: u64) -> BoxFuture<'a, Result<Option<LastGood>, StoreError>>;
    /// Drops `client_id`'s copy: its host withdrew the document.
    fn forget<'a>(&'a self, client_id: &'a str) -> BoxFuture<'a, Result<(), StoreError>>;
}

/// One process's copies (local runs and unit tests).
#[derive(Default)]
pub struct InMemoryCopies {
    copies: Mutex<HashMap<String, (LastGood, u64)>>,
}

impl LastGoodCopies for InMemoryCopies {
    fn keep<'a>(&'a self, client_id: &'a str, copy: &'a LastGood, until: u64) -> BoxFuture<'a, Result<(), StoreError>> {
        let kept = self.copies.lock().map_err(|_| StoreError::Unavailable("document copies lock poisoned".into())).map(|mut copies| {
            if copies.len() >= MAX_IN_MEMORY && !copies.contains_key(client_id) {
                let now = copy.fetched_at;
                copies.retain(|_, (_, until)| *until > now);
                if let Some(any) = copies.keys().next().cloned().filter(|_| copies.len() >= MAX_IN_MEMORY) {
                    copies.remove(&any);
                }
            }
            copies.insert(client_id.to_owned(), (copy.clone(), until));
        });
        Box::pin(async move { kept })
    }

    fn last_good<'a>(&'a self, client_id: &'a str, now: u64) -> BoxFuture<'a, Result<Option<LastGood>, StoreError>> {
        let found = self
            .copies
            .lock()
            .map(|copies| copies.get(client_id).filter(|(_, until)| *until > now).map(|(copy, _)| copy.clone()))
            .map_err(|_| StoreError::Unavailable("document copies lock poisoned".into()));
        Box::pin(async move { found })
    }

    fn forget<'a>(&'a self, client_id: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        let forgotten = self
            .copies
            .lock()
            .map(|mut copies| {
                copies.remove(client_id);
            })
            .map_err(|_| StoreError::Unavailable("document copies lock poisoned".into()));
        Box::pin(async move { forgotten })
    }
}
