//! One `subscriptions/listen` stream: poll what it watches, send what
//! changed, close gracefully at its bound.

use std::time::Duration;

use rmcp::{
    ErrorData,
    model::{NotificationMetaObject, ServerNotification, TaskStatusNotification, TaskStatusNotificationParams},
    service::SubscriptionContext,
};
use serde_json::Value;

use super::{ListKind, Subscriptions, feed::Lists};
use crate::{
    CallContext,
    handles::{access::Handles, resource::HandleResources},
    protocol::scope::{OnOpen, RequestScope},
    quota::QuotaKey,
    tasks::Tasks,
};

/// What a stream can watch beyond the lists: the caller's tasks, and the
/// handle-backed resources a server exposes.
#[derive(Clone, Copy, Default)]
#[non_exhaustive]
pub struct Watched<'a> {
    /// The server's tasks, read for the ids in the request's
    /// `notifications.taskIds` (the caller's own only).
    pub tasks: Option<&'a Tasks>,
    /// The handle kinds exposed as resources and the handles behind them,
    /// read for the request's `resourceSubscriptions`.
    pub resources: Option<(&'a HandleResources, &'a Handles)>,
}

const TOO_MANY_STREAMS: &str = "You have too many subscriptions/listen streams open. Close one you no longer need, or wait for one to end.";

/// How far back a change counts as made after the acknowledgement: the
/// time between it and the first read, plus clock skew between instances.
const RECENT: Duration = Duration::from_secs(1);

/// What is left of the invocation's time when the stream closes itself:
/// room for the final result to leave before Lambda stops the function.
const DEADLINE_MARGIN: Duration = Duration::from_secs(2);

impl Subscriptions {
    /// Runs one stream until the client leaves, its lifetime ends, the
    /// invocation's deadline nears, or a newer deployment goes live.
    /// Returning `Ok` makes rmcp send the final result.
    pub async fn listen(&self, context: SubscriptionContext, watched: Watched<'_>) -> Result<(), ErrorData> {
        // rmcp acknowledged before this ran, so a change the client made
        // right after the acknowledgement may precede the first read: one
        // that recent is reported (a spare notification costs a client
        // one list call; a lost one, a stale list).
        let recent = self.clock.now_ms().saturating_sub(RECENT.as_millis() as u64);
        let request = context.request_context();
        let scope = request.extensions.get::<http::request::Parts>().and_then(RequestScope::of);
        if !self.enabled() || scope.is_some_and(|scope| scope.listen.not_served) {
            // Acknowledged with what is honoured here; ended at once,
            // gracefully, so the client goes on (Subscriptions::accepted).
            return Ok(());
        }
        let ctx = CallContext::of(request)?;
        let task_ids = scope.map(|scope| scope.listen.task_ids.clone()).unwrap_or_default();
        let on_open = scope.and_then(|scope| scope.listen.on_open.clone());
        let deadline = scope.and_then(|scope| scope.entry.deadline);

        let key = QuotaKey::new(&ctx.principal.binding_id(), "lst", self.policy.lifetime, self.clock.now());
        if !self.quota.take(&key, self.policy.max_per_owner).await.map_err(internal)? {
            return Err(ErrorData::invalid_request(TOO_MANY_STREAMS, None));
        }
        let mut lifetime = self.policy.lifetime;
        if let Some(deadline) = deadline {
            lifetime = lifetime.min(deadline.remaining(DEADLINE_MARGIN));
        }
        // This build's lists become the live ones at its first stream (and
        // at each later one until that succeeded): older builds' streams
        // then notify their clients and close.
        if let Err(error) = self.record_live().await {
            tracing::warn!(%error, "could not record this deployment's lists in the change feed");
        }
        let outcome = match on_open {
            Some(OnOpen(open)) => open().await.map_err(|reason| ErrorData::invalid_request(reason, None)),
            None => Ok(()),
        };
        let outcome = match outcome {
            Ok(()) => self.watch(&context, &ctx, watched, &task_ids, lifetime, recent).await,
            refused => refused,
        };
        if let Err(error) = self.quota.give_back(&key).await {
            tracing::warn!(%error, "open-stream count not given back; it lapses with its window");
        }
        outcome
    }

    async fn watch(
        &self,
        context: &SubscriptionContext,
        ctx: &CallContext,
        watched: Watched<'_>,
        task_ids: &[String],
        lifetime: Duration,
        recent: u64,
    ) -> Result<(), ErrorData> {
        let ends = tokio::time::Instant::now() + lifetime;
        let accepted = context.accepted();
        let kinds: Vec<ListKind> = [
            (ListKind::Tools, accepted.tools_list_changed),
            (ListKind::Prompts, accepted.prompts_list_changed),
            (ListKind::Resources, accepted.resources_list_changed),
        ]
        .into_iter()
        .filter_map(|(kind, wanted)| (wanted == Some(true)).then_some(kind))
        .collect();
        // A build that knows its lists closes its streams once another
        // deployment is live, even if the client watches no list.
        let watch_feed = !kinds.is_empty() || self.digests.get().is_some();
        let mut seen_lists = if watch_feed { Some(self.feed.lists().await.map_err(internal)?) } else { None };
        if let Some(seen) = &seen_lists {
            for kind in &kinds {
                if seen.get(*kind).changed_at_ms >= recent && !within(ends, send_list_changed(context, *kind)).await {
                    return Ok(());
                }
            }
        }
        // Each task's state as the stream opens, then every change.
        let tasks = watched.tasks;
        let mut seen_tasks: Vec<(&str, Option<String>)> = task_ids.iter().map(|id| (id.as_str(), None)).collect();
        // Each resource's version as the stream opens (one changed in the
        // last second is reported, as for lists), then every change.
        let uris = accepted.resource_subscriptions.clone().unwrap_or_default();
        let mut seen_resources = Vec::new();
        for uri in &uris {
            let state = resource_state(watched, ctx, uri).await.unwrap_or(None);
            if state.is_some_and(|(_, changed_at_s)| changed_at_s.saturating_add(1) * 1000 >= recent)
                && !within(ends, send_resource_updated(context, uri)).await
            {
                return Ok(());
            }
            seen_resources.push((uri.as_str(), state.map(|(version, _)| version)));
        }
        loop {
            for (id, seen) in seen_tasks.iter_mut() {
                let Some((fingerprint, task)) = task_state(tasks, ctx, id).await else { continue };
                if seen.as_ref() != Some(&fingerprint) {
                    *seen = Some(fingerprint);
                    if !within(ends, send_task(context, task)).await {
                        return Ok(());
                    }
                }
            }
            tokio::select! {
                _ = context.cancelled() => return Ok(()),
                _ = tokio::time::sleep_until(ends) => return Ok(()),
                _ = tokio::time::sleep(self.policy.poll_interval) => {}
            }
            for (uri, seen) in seen_resources.iter_mut() {
                // A store that failed tells nothing: the next poll reads again.
                let Ok(state) = resource_state(watched, ctx, uri).await else { continue };
                // A change, and a resource the caller saw going away (deleted
                // or expired), are updates; one never seen stays silent.
                let now = state.map(|(version, _)| version);
                if *seen != now && (now.is_some() || seen.is_some()) {
                    *seen = now;
                    if !within(ends, send_resource_updated(context, uri)).await {
                        return Ok(());
                    }
                }
            }
            if let Some(seen) = seen_lists.as_mut() {
                match self.feed.lists().await {
                    Ok(now) => {
                        let replaced = self.replaced(&now);
                        for kind in &kinds {
                            if now.get(*kind).version != seen.get(*kind).version && !within(ends, send_list_changed(context, *kind)).await {
                                return Ok(());
                            }
                        }
                        *seen = now;
                        if replaced {
                            tracing::info!("a newer deployment is live: closing the stream so the client listens to it");
                            return Ok(());
                        }
                    }
                    // The next poll reads again; a stream outlives a blip.
                    Err(error) => tracing::warn!(%error, "change feed read failed"),
                }
            }
        }
    }

    /// Whether `lists` records a deployment other than this build, made
    /// live after this instance started (an older one's lists, still
    /// there because this instance could not record its own, are not).
    fn replaced(&self, lists: &Lists) -> bool {
        self.digests.get().is_some_and(|digests| {
            digests.differing(lists).into_iter().any(|kind| {
                let state = lists.get(kind);
                !state.digest.is_empty() && state.changed_at_ms > self.started_ms
            })
        })
    }
}

/// The task as `tasks/get` gives it to `ctx`, and what identifies its
/// state (everything but `lastUpdatedAt`, which heartbeats move). None for
/// a task that is unknown or someone else's: both are never notified.
async fn task_state(tasks: Option<&Tasks>, ctx: &CallContext, id: &str) -> Option<(String, rmcp::model::DetailedTask)> {
    let result = tasks?.get(ctx, id).await.ok()?;
    let mut value = serde_json::to_value(&result.task).ok()?;
    if let Value::Object(object) = &mut value {
        object.remove("lastUpdatedAt");
    }
    Some((value.to_string(), result.task))
}

/// Whether `send` delivered before the stream's end: a client that stops
/// reading (and a full connection) cannot hold a stream past its bound.
async fn within(ends: tokio::time::Instant, send: impl Future<Output = bool>) -> bool {
    tokio::select! {
        sent = send => sent,
        _ = tokio::time::sleep_until(ends) => false,
    }
}

async fn resource_state(watched: Watched<'_>, ctx: &CallContext, uri: &str) -> Result<Option<(u64, u64)>, crate::storage::StoreError> {
    let Some((resources, handles)) = watched.resources else { return Ok(None) };
    resources.version(handles, ctx, uri).await
}

async fn send_resource_updated(context: &SubscriptionContext, uri: &str) -> bool {
    context.sink().notify_resource_updated(uri).await.is_ok()
}

/// False once the stream is gone.
async fn send_list_changed(context: &SubscriptionContext, kind: ListKind) -> bool {
    let sink = context.sink();
    let sent = match kind {
        ListKind::Tools => sink.notify_tool_list_changed().await,
        ListKind::Prompts => sink.notify_prompt_list_changed().await,
        ListKind::Resources => sink.notify_resource_list_changed().await,
    };
    sent.is_ok()
}

/// `notifications/tasks` with the full task (ext-tasks, "Task Status
/// Notifications"). rmcp's sink does not route these yet, so the
/// subscription id is set here as the sink would.
async fn send_task(context: &SubscriptionContext, task: rmcp::model::DetailedTask) -> bool {
    let request = context.request_context();
    let mut meta = NotificationMetaObject::new();
    meta.set_subscription_id(request.id.clone());
    let params = TaskStatusNotificationParams::new(task).with_meta(meta);
    let notification = ServerNotification::TaskStatusNotification(TaskStatusNotification::new(params));
    request.peer.send_notification(notification).await.is_ok()
}

fn internal(error: crate::storage::StoreError) -> ErrorData {
    tracing::error!(%error, "listen stream store call failed");
    ErrorData::internal_error("The server could not read its state. Listen again shortly.", None)
}
