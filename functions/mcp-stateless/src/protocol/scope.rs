//! One request's scope: everything established about it outside its body,
//! carried from the edge to the handler as one HTTP extension. The entry
//! point attaches its [`EntryFacts`]; the edge makes them the scope's and
//! adds what admission found ([`CallContext`], what a listen stream is to
//! do). Handlers read it through [`CallContext::of`] and
//! `Subscriptions::listen`, never as loose extensions.

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::protocol::context::{CallContext, EntryFacts};

/// What one request carries beside its body.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct RequestScope {
    /// What the entry point established: the caller, the API's domain,
    /// the invocation's deadline.
    pub entry: EntryFacts,
    /// What the call declared, once the edge admitted it.
    pub call: Option<CallContext>,
    /// For `subscriptions/listen`: what the stream is to do.
    pub listen: ListenScope,
}

impl RequestScope {
    /// The scope of a request the entry point established `entry` for.
    pub fn new(entry: EntryFacts) -> Self {
        Self { entry, ..Self::default() }
    }

    /// The scope attached to `parts`, if the edge attached one.
    pub fn of(parts: &http::request::Parts) -> Option<&Self> {
        parts.extensions.get::<Self>()
    }
}

/// What a `subscriptions/listen` stream is to do, as the edge admitted it.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct ListenScope {
    /// The edge cannot hold the stream open (its answer is whole): it is
    /// acknowledged and ended at once, in the one answer.
    pub not_served: bool,
    /// The task ids it watches (`notifications.taskIds`, the caller's own
    /// only).
    pub task_ids: Vec<String>,
    /// What its opener runs once it is admitted.
    pub on_open: Option<OnOpen>,
}

/// What a stream's opener runs once the stream is admitted (its caller's
/// bound taken), before it watches anything; an error ends the stream with
/// that message. A 2025-era session's notification stream makes itself the
/// session's one here, so a stream refused at its bound replaces nothing.
#[derive(Clone)]
#[non_exhaustive]
pub struct OnOpen(pub Arc<dyn Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync>);
