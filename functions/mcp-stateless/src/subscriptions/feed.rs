//! The change feed: how a `subscriptions/listen` stream held by one
//! invocation learns what another invocation changed.
//!
//! A stream is held by one Lambda invocation; the event it waits for (a
//! trigger call, a newer deployment going live) happens in another. Both
//! share only the table, so the feed is one small item there: for each
//! list (tools, prompts, resources) a counter that any invocation bumps
//! when the list changes, and the digest of the list the live deployment
//! serves. A stream reads it every poll interval and compares. Task and
//! resource updates need no feed of their own: their items carry their
//! own version, which the stream reads the same way.

use futures::future::BoxFuture;

use crate::storage::{LockedMap, StoreError};

/// The three lists a client can watch for changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ListKind {
    /// `tools/list`, task tools included.
    Tools,
    /// `prompts/list`.
    Prompts,
    /// `resources/list` and `resources/templates/list`.
    Resources,
}

impl ListKind {
    /// Every kind, once each.
    pub const ALL: [ListKind; 3] = [ListKind::Tools, ListKind::Prompts, ListKind::Resources];

    /// The attribute prefix in the feed item.
    pub fn name(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Prompts => "prompts",
            ListKind::Resources => "resources",
        }
    }
}

/// One list's state in the feed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListState {
    /// Bumped on every change; streams compare it with what they saw.
    pub version: u64,
    /// Digest of the list the newest deployment serves ("" before any
    /// deployment recorded one).
    pub digest: String,
    /// When it last changed (epoch milliseconds, the changer's clock).
    pub changed_at_ms: u64,
}

/// The feed item: every list's state, read in one call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Lists {
    /// The tools list's state.
    pub tools: ListState,
    /// The prompts list's state.
    pub prompts: ListState,
    /// The resources list's state (templates included).
    pub resources: ListState,
}

impl Lists {
    /// The state of the `kind` list.
    pub fn get(&self, kind: ListKind) -> &ListState {
        match kind {
            ListKind::Tools => &self.tools,
            ListKind::Prompts => &self.prompts,
            ListKind::Resources => &self.resources,
        }
    }

    /// The state of the `kind` list, to fill in or change (feeds reading
    /// their item, or recording a bump).
    pub fn get_mut(&mut self, kind: ListKind) -> &mut ListState {
        match kind {
            ListKind::Tools => &mut self.tools,
            ListKind::Prompts => &mut self.prompts,
            ListKind::Resources => &mut self.resources,
        }
    }
}

/// The port. One store round trip per call.
pub trait ChangeFeed: Send + Sync {
    /// The current state of every list.
    fn lists(&self) -> BoxFuture<'_, Result<Lists, StoreError>>;

    /// Records a change of `kind` at `now_ms` (streams that watch it
    /// notify their clients).
    fn bump(&self, kind: ListKind, now_ms: u64) -> BoxFuture<'_, Result<(), StoreError>>;

    /// Makes `digests` the lists of the live deployment, bumping each kind
    /// whose digest differs from the recorded one; `seen` is what the
    /// caller read, so a concurrent recorder wins instead of both bumping.
    /// False when another deployment recorded its digests since `seen`
    /// (read again and retry); bumps in between do not matter. Digests
    /// equal to `seen`'s need no write: true, whatever changed since.
    fn record<'a>(&'a self, seen: &'a Lists, digests: &'a ListDigests, now_ms: u64) -> BoxFuture<'a, Result<bool, StoreError>>;
}

/// The digests of the lists this build serves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListDigests {
    /// The tools list's digest.
    pub tools: String,
    /// The prompts list's digest.
    pub prompts: String,
    /// The digest of the resources list and templates together.
    pub resources: String,
}

impl ListDigests {
    /// Digests of the lists as their JSON: a deployment that changes a
    /// tool's name, description or schema changes its list's digest.
    pub fn of(tools: &serde_json::Value, prompts: &serde_json::Value, resources: &serde_json::Value) -> Self {
        let digest = |value: &serde_json::Value| {
            let bytes = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, value.to_string().as_bytes());
            crate::storage::hex(&bytes.as_ref()[..16])
        };
        Self { tools: digest(tools), prompts: digest(prompts), resources: digest(resources) }
    }

    /// The digest of the `kind` list.
    pub fn get(&self, kind: ListKind) -> &str {
        match kind {
            ListKind::Tools => &self.tools,
            ListKind::Prompts => &self.prompts,
            ListKind::Resources => &self.resources,
        }
    }

    /// The kinds `lists` records another digest for (a deployment other
    /// than this build's is live, or none recorded yet).
    pub fn differing(&self, lists: &Lists) -> Vec<ListKind> {
        ListKind::ALL.into_iter().filter(|kind| lists.get(*kind).digest != self.get(*kind)).collect()
    }
}

/// Records `digests` as live unless they already are, trying again when
/// another instance recorded at the same time. Returns what is recorded.
pub async fn record_live(feed: &dyn ChangeFeed, digests: &ListDigests, now_ms: u64) -> Result<Lists, StoreError> {
    for _ in 0..3 {
        let seen = feed.lists().await?;
        if digests.differing(&seen).is_empty() || feed.record(&seen, digests, now_ms).await? {
            return feed.lists().await;
        }
    }
    Err(StoreError::Unavailable("the change feed kept changing while recording a deployment".into()))
}

/// For `cargo run` and unit tests: one process, so every stream and every
/// change are in it.
#[derive(Default)]
pub struct InMemoryFeed {
    lists: LockedMap<Lists>,
}

const ITEM: &str = "lists";

impl ChangeFeed for InMemoryFeed {
    fn lists(&self) -> BoxFuture<'_, Result<Lists, StoreError>> {
        let lists = self.lists.with(|items| items.get(ITEM).cloned().unwrap_or_default());
        Box::pin(async move { lists })
    }

    fn bump(&self, kind: ListKind, now_ms: u64) -> BoxFuture<'_, Result<(), StoreError>> {
        let done = self.lists.with(|items| {
            let state = items.entry(ITEM.into()).or_default().get_mut(kind);
            state.version += 1;
            state.changed_at_ms = now_ms;
        });
        Box::pin(async move { done })
    }

    fn record<'a>(&'a self, seen: &'a Lists, digests: &'a ListDigests, now_ms: u64) -> BoxFuture<'a, Result<bool, StoreError>> {
        let recorded = self.lists.with(|items| {
            let lists = items.entry(ITEM.into()).or_default();
            // Nothing to write: as the DynamoDB adapter, no check either.
            if digests.differing(seen).is_empty() {
                return true;
            }
            if ListKind::ALL.into_iter().any(|kind| lists.get(kind).digest != seen.get(kind).digest) {
                return false;
            }
            for kind in digests.differing(lists) {
                let state = lists.get_mut(kind);
                state.version += 1;
                state.digest = digests.get(kind).to_owned();
                state.changed_at_ms = now_ms;
            }
            true
        });
        Box::pin(async move { recorded })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn a_new_deployment_bumps_only_the_lists_it_changed_and_only_once() {
        let feed = InMemoryFeed::default();
        let old = ListDigests::of(&json!(["a"]), &json!(["p"]), &json!([]));
        let first = record_live(&feed, &old, 1).await.unwrap();
        assert_eq!((first.tools.version, first.prompts.version, first.resources.version), (1, 1, 1));

        let same = record_live(&feed, &old, 1).await.unwrap();
        assert_eq!(same, first, "recording the live deployment again changes nothing");

        let new = ListDigests::of(&json!(["a", "b"]), &json!(["p"]), &json!([]));
        let after = record_live(&feed, &new, 2).await.unwrap();
        assert_eq!(after.tools.version, 2);
        assert_eq!(after.tools.digest, new.tools);
        assert_eq!(after.prompts, first.prompts, "prompts did not change");
        assert_eq!((after.tools.changed_at_ms, after.prompts.changed_at_ms), (2, 1));
        assert_eq!(old.differing(&after), vec![ListKind::Tools], "the old build sees it is no longer live");
    }

    #[tokio::test]
    async fn a_record_made_since_the_read_wins_and_bumps_do_not_stop_one() {
        let feed = InMemoryFeed::default();
        let seen = feed.lists().await.unwrap();
        feed.bump(ListKind::Prompts, 1).await.unwrap();
        let digests = ListDigests::of(&json!([]), &json!([]), &json!([]));
        assert!(feed.record(&seen, &digests, 2).await.unwrap(), "a bump in between does not matter");
        let other = ListDigests::of(&json!(["x"]), &json!([]), &json!([]));
        assert!(!feed.record(&seen, &other, 3).await.unwrap(), "another deployment recorded since the read");
        assert_eq!(feed.lists().await.unwrap().tools.digest, digests.tools);
    }
}
