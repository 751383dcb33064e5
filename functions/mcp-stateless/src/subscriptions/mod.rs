//! `subscriptions/listen` (basic/patterns/subscriptions) across instances.
//!
//! A stream is held by one invocation for at most its lifetime; what it
//! reports happens anywhere: a list bumped through the [`feed`], a newer
//! deployment recorded in it, a task record another invocation or the
//! worker wrote. The stream polls those at [`ListenPolicy::poll_interval`]
//! and sends what changed; rmcp sends the acknowledgement first and the
//! final result (the graceful close) when [`Subscriptions::listen`]
//! returns. Streams exist only where responses stream: a buffered
//! transport advertises nothing and answers -32601.

pub mod feed;
mod listen;
mod task_ids;

use std::{
    sync::{Arc, OnceLock},
    time::Duration,
};

use rmcp::model::{ServerCapabilities, SubscriptionFilter};

use crate::{clock::Clock, quota::CreationQuota, storage::StoreError};
pub use feed::{ChangeFeed, InMemoryFeed, ListDigests, ListKind};
pub use listen::Watched;
pub use task_ids::{TaskIdsFilter, TaskIdsRefusal};

/// Task ids one stream may watch: each is read every poll interval.
pub const MAX_LISTEN_TASK_IDS: usize = 20;
/// Resources one stream may watch, for the same reason; the
/// acknowledgement names the ones it does.
pub const MAX_LISTEN_RESOURCES: usize = 20;

/// How streams behave; read once at start (`settings.rs`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ListenPolicy {
    /// Whether responses stream here (the local server, or Lambda with
    /// `MCP_TRANSPORT=streaming`); nothing is advertised otherwise.
    pub enabled: bool,
    /// A stream closes gracefully after this long (`MCP_LISTEN_SECONDS`),
    /// or sooner before the invocation's deadline, and the client listens
    /// again: no stream outlives the invocation that holds it.
    pub lifetime: Duration,
    /// How often a stream reads the feed and its tasks (`MCP_FEED_POLL_MS`).
    pub poll_interval: Duration,
    /// Open streams per caller, across instances (`MCP_LISTEN_MAX_PER_OWNER`).
    pub max_per_owner: u32,
}

impl ListenPolicy {
    /// How long a stream stays open when `MCP_LISTEN_SECONDS` is unset.
    pub const DEFAULT_LIFETIME: Duration = Duration::from_secs(300);
    /// How often a stream polls when `MCP_FEED_POLL_MS` is unset.
    pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(250);

    /// The defaults, with streams served only if `enabled`.
    pub fn new(enabled: bool) -> Self {
        Self { enabled, lifetime: Self::DEFAULT_LIFETIME, poll_interval: Self::DEFAULT_POLL_INTERVAL, max_per_owner: 5 }
    }
}

/// The request side of listen streams: cheap to clone, built once per
/// cold start and given to the handler in [`crate::Dependencies`].
#[derive(Clone)]
pub struct Subscriptions {
    feed: Arc<dyn ChangeFeed>,
    quota: Arc<dyn CreationQuota>,
    clock: Arc<dyn Clock>,
    policy: ListenPolicy,
    /// The lists this build serves, set by the handler it is built into.
    digests: Arc<OnceLock<ListDigests>>,
    /// Whether they are recorded in the feed (once per cold start).
    recorded: Arc<std::sync::atomic::AtomicBool>,
    /// When this instance started (epoch milliseconds): only a deployment
    /// recorded after it replaces it.
    started_ms: u64,
}

impl Subscriptions {
    /// Streams that read `feed`, with open streams counted per owner in
    /// `quota`, under `policy`.
    pub fn new(feed: Arc<dyn ChangeFeed>, quota: Arc<dyn CreationQuota>, clock: Arc<dyn Clock>, policy: ListenPolicy) -> Self {
        let started_ms = clock.now_ms();
        Self { feed, quota, clock, policy, digests: Arc::default(), recorded: Arc::default(), started_ms }
    }

    /// Zero setup: the feed and the open-stream counts in this process.
    pub fn in_process(clock: Arc<dyn Clock>) -> Self {
        Self::new(
            Arc::new(InMemoryFeed::default()),
            Arc::new(crate::quota::InMemoryQuota::default()),
            clock,
            // Served where answers stream, as they do locally by default;
            // the start applies the settings (`Settings::configure`).
            ListenPolicy::new(true),
        )
    }

    /// The same, under `policy` (tests shorten lifetimes and intervals).
    pub fn with_policy(mut self, policy: ListenPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// How streams behave here.
    pub fn policy(&self) -> &ListenPolicy {
        &self.policy
    }

    /// Whether streams are served here (answers stream).
    pub fn enabled(&self) -> bool {
        self.policy.enabled
    }

    /// Tells streams which lists this build serves, so that they see when
    /// a deployment serving other lists goes live. The handler calls it
    /// once, when it is built.
    pub fn serve_lists(&self, digests: ListDigests) {
        let _ = self.digests.set(digests);
    }

    /// The lists this build serves, once the handler told them.
    pub fn served_lists(&self) -> Option<&ListDigests> {
        self.digests.get()
    }

    /// Records this build's lists as the live ones (at a stream's start,
    /// until that succeeded once in this instance): streams held by older
    /// instances then notify their clients and close. Only where streams
    /// exist.
    pub async fn record_live(&self) -> Result<(), StoreError> {
        use std::sync::atomic::Ordering;
        match self.digests.get() {
            Some(digests) if self.enabled() && !self.recorded.load(Ordering::Relaxed) => {
                feed::record_live(self.feed.as_ref(), digests, self.clock.now_ms()).await?;
                self.recorded.store(true, Ordering::Relaxed);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Records a change of `kind`, for every stream that watches it, on
    /// any instance. A tool that changes what a list shows calls it.
    pub async fn list_changed(&self, kind: ListKind) -> Result<(), rmcp::ErrorData> {
        self.feed.bump(kind, self.clock.now_ms()).await.map_err(|error| {
            tracing::error!(%error, "change feed bump failed");
            rmcp::ErrorData::internal_error("The change could not be recorded. Try again.", None)
        })
    }

    /// Adds `listChanged` (and `subscribe` when `resource_updates`) to the
    /// capabilities the handler declares, where streams exist.
    pub fn advertise(&self, mut capabilities: ServerCapabilities, resource_updates: bool) -> ServerCapabilities {
        if !self.enabled() {
            return capabilities;
        }
        if let Some(tools) = capabilities.tools.as_mut() {
            tools.list_changed = Some(true);
        }
        if let Some(prompts) = capabilities.prompts.as_mut() {
            prompts.list_changed = Some(true);
        }
        if let Some(resources) = capabilities.resources.as_mut() {
            resources.list_changed = Some(true);
            if resource_updates {
                resources.subscribe = Some(true);
            }
        }
        capabilities
    }

    /// What a stream accepts of `requested` (never `None`, which rmcp
    /// answers -32601). rmcp narrows it further to what is advertised.
    ///
    /// Where streams are not served, the subset honoured is empty and the
    /// stream ends at once with its completion result ([`Self::listen`]):
    /// basic/patterns/subscriptions lets the acknowledgement omit what the
    /// server does not support, and a client that listens before it lists
    /// (Antigravity) goes on, where -32601 would stop it.
    pub fn accepted(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        if !self.enabled() {
            return Some(SubscriptionFilter::default());
        }
        let mut accepted = requested.clone();
        if let Some(uris) = accepted.resource_subscriptions.as_mut() {
            uris.truncate(MAX_LISTEN_RESOURCES);
        }
        Some(accepted)
    }
}
