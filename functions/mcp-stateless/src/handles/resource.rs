//! Handle-backed state a client reads as a resource, `<scheme>://<handle>`
//! (a basket at `basket://bsk_...`), and watches with
//! `subscriptions/listen`'s `resourceSubscriptions`: `resources/read`
//! renders it for its owner, a listen stream sends
//! `notifications/resources/updated` when its version moves. Another
//! principal's handle reads and watches exactly like an unknown one.

use rmcp::model::{ErrorData, ReadResourceResult, ResourceContents, ResourceTemplate};
use serde_json::Value;

use crate::{
    CallContext,
    handles::{
        HandleKind, HandleRecord,
        access::{HandleFailure, Handles},
    },
    storage::StoreError,
};

/// One kind of handle exposed as resources.
#[derive(Clone, Copy)]
#[allow(clippy::exhaustive_structs, reason = "a fork declares its handle resources as consts, by struct expression: that is the API")]
pub struct HandleResource {
    /// The URI scheme: `basket` gives `basket://<handle>`.
    pub scheme: &'static str,
    /// The kind behind the URIs; its `noun` names the template.
    pub kind: &'static HandleKind,
    /// The template's description in `resources/templates/list`.
    pub description: &'static str,
    /// The resource's JSON contents, from the stored item.
    pub render: fn(&HandleRecord) -> Value,
}

/// Every handle kind a server exposes; `+=` adds one.
#[derive(Clone, Default)]
pub struct HandleResources(Vec<HandleResource>);

impl std::ops::AddAssign<HandleResource> for HandleResources {
    fn add_assign(&mut self, resource: HandleResource) {
        self.0.push(resource);
    }
}

impl std::ops::AddAssign for HandleResources {
    fn add_assign(&mut self, other: HandleResources) {
        self.0.extend(other.0);
    }
}

/// What a client gets for a resource it may not see: the same for
/// unknown, malformed, expired and somebody else's.
fn not_found(uri: &str) -> ErrorData {
    crate::protocol::resource_not_found(uri)
}

impl HandleResources {
    /// Whether no kind is exposed: then nothing is advertised or watched
    /// for them.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `resources/templates/list`: one template per kind.
    pub fn templates(&self) -> Vec<ResourceTemplate> {
        self.0
            .iter()
            .map(|r| {
                ResourceTemplate::new(format!("{}://{{handle}}", r.scheme), r.kind.noun)
                    .with_mime_type("application/json")
                    .with_description(r.description)
            })
            .collect()
    }

    /// Whether `uri` names a handle kind of these (read through them).
    pub fn claims(&self, uri: &str) -> bool {
        self.resolve(uri).is_some()
    }

    fn resolve<'a>(&self, uri: &'a str) -> Option<(HandleResource, &'a str)> {
        let (scheme, handle) = uri.split_once("://")?;
        self.0.iter().find(|r| r.scheme == scheme).map(|r| (*r, handle))
    }

    /// `resources/read` of `uri` for `ctx`'s principal.
    pub async fn read(&self, handles: &Handles, ctx: &CallContext, uri: &str) -> Result<ReadResourceResult, ErrorData> {
        let (resource, handle) = self.resolve(uri).ok_or_else(|| not_found(uri))?;
        match handles.read(ctx, resource.kind, handle).await {
            Ok(record) => {
                let text = (resource.render)(&record).to_string();
                Ok(ReadResourceResult::new(vec![ResourceContents::text(text, uri).with_mime_type("application/json")]))
            }
            Err(HandleFailure::Store(error)) => {
                tracing::error!(%error, "resource read failed");
                Err(ErrorData::internal_error("storage unavailable", None))
            }
            Err(_) => Err(not_found(uri)),
        }
    }

    /// The version of `uri` and when it last changed (epoch seconds), as
    /// `ctx` may see it; `Ok(None)` for anything it may not see (unknown,
    /// somebody else's, expired, deleted); `Err` when the store failed and
    /// nothing is known. Reads without sliding the handle's expiry:
    /// watching is not using.
    pub async fn version(&self, handles: &Handles, ctx: &CallContext, uri: &str) -> Result<Option<(u64, u64)>, StoreError> {
        let Some((resource, handle)) = self.resolve(uri) else { return Ok(None) };
        match handles.peek(ctx, resource.kind, handle).await {
            Ok(record) => Ok(Some((record.version, record.last_used_at))),
            Err(HandleFailure::Store(error)) => Err(error),
            Err(_) => Ok(None),
        }
    }
}
