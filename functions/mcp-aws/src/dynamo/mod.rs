//! The one DynamoDB table behind every port that stores (handles,
//! single-use records, quota counts, tasks, the change feed), and the
//! helpers its adapters share. Each adapter's header says what its calls
//! cost in round trips.
//!
//! # The item map
//! Key schema: a string partition key `pk` and nothing else; `expires_at`
//! (epoch seconds) is the table's TTL attribute (DynamoDB deletes expired
//! items within days, so every read checks expiry itself). Handles, tasks
//! and counts have keys derived from their owner; single-use records and
//! the feed are keyed by what they record. The roles'
//! `dynamodb:LeadingKeys` in `template.yaml` name exactly these prefixes.
//!
//! | `pk` | attributes | written by |
//! |---|---|---|
//! | `handle#<prefix>#<sha256(owner, handle)>` | `owner`, `kind`, `data` (a map), `version`, `created_at`, `last_used_at`, `expires_at` (sliding), `deadline` (absolute; items written before it existed have none), `last_op` (a replace's), `created_op`, `ops_0`..`ops_2` (recent appends' call ids, `RecentCalls`); once deleted, a tombstone for 15 minutes: `deleted_op`, `deleted_at` | [`handles`] |
//! | `handle#tsk#<sha256(owner, task id)>` | `task` (the record as one JSON string), `owner`, `kind`, `version`, `status` (for operators), `expires_at`, `last_op` | [`tasks`] |
//! | `handle#tsk#<...>#input` | `input` (the arguments and request context, one JSON string, written once), `owner`, `kind`, `expires_at`, `last_op` | [`tasks`] |
//! | `jti#<state id>` | `expires_at`, `last_op` | [`handles`] (single-use `requestState`) |
//! | `quota#<kind>#<sha256(owner)>#<window>` | `count`, `expires_at`, `ops_0`..`ops_2` (recent calls' ids, `RecentCalls`) | [`quota`]; for handles and tasks, in the same transaction as their item (`places.rs`) |
//! | `feed#lists` | per list (`tools`, `prompts`, `resources`): `<kind>_version`, `<kind>_changed_at` (epoch ms), `<kind>_digest`; no TTL (one small item for the table's life) | [`feed`] |
//!
//! `last_op` is a random id per write call: the SDK's retry of a write
//! whose answer was lost finds its own id and is not applied twice.

pub(crate) mod attribute_values;
mod counted_handles;
pub mod feed;
pub mod handles;
mod places;
pub mod quota;
pub mod tasks;

use std::collections::HashMap;

use aws_sdk_dynamodb::{
    Client,
    error::{ProvideErrorMetadata, SdkError},
    types::AttributeValue,
};
use mcp_stateless::{
    metrics::{self, Counter},
    random,
    storage::{StoreError, hex},
};

/// The names the code writes; `template.yaml` must declare the same.
pub const PARTITION_KEY: &str = "pk";
/// The table's TTL attribute (epoch seconds): `template.yaml` must name the
/// same, and reads still check expiry, since DynamoDB deletes late.
pub const TTL_ATTRIBUTE: &str = "expires_at";

/// An item as the SDK reads and writes it.
pub type Item = HashMap<String, AttributeValue>;

/// The table, shared by every adapter (each implements its port on it).
#[derive(Clone)]
pub struct DynamoStore {
    pub(crate) client: Client,
    pub(crate) table: String,
}

/// A number attribute.
pub fn n(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

pub(crate) fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_owned())
}

/// The number attribute `name` of `item`, or why it is not one.
pub fn number(item: &Item, name: &str) -> Result<u64, StoreError> {
    match item.get(name) {
        Some(AttributeValue::N(v)) => v.parse().map_err(|_| StoreError::Corrupt(format!("{name} is not a number"))),
        _ => Err(StoreError::Corrupt(format!("{name} is missing"))),
    }
}

/// Throttling, timeouts and outages after the SDK's own retries.
/// The store error for a call that failed (logged, with its AWS error code).
pub fn unavailable<E: ProvideErrorMetadata + std::error::Error + 'static, R: std::fmt::Debug>(error: SdkError<E, R>) -> StoreError {
    let detail = aws_sdk_dynamodb::error::DisplayErrorContext(&error).to_string();
    tracing::error!(error = %detail, "DynamoDB call failed");
    StoreError::Unavailable(error.code().unwrap_or("dispatch failure").to_owned())
}

/// Whether a plain write met a transaction writing its item at that moment
/// (`TransactionConflictException`): another writer, as a failed version
/// condition is, to read again after.
pub fn met_transaction<E: ProvideErrorMetadata, R>(error: &SdkError<E, R>) -> bool {
    error.as_service_error().is_some_and(|e| e.code() == Some("TransactionConflictException"))
}

/// The item a failed condition saw, if the failure was a condition check.
pub fn condition_failed<E: ProvideErrorMetadata + std::error::Error + 'static, R: std::fmt::Debug>(
    error: SdkError<E, R>,
    item_of: impl FnOnce(&E) -> Option<Item>,
) -> Result<Option<Item>, StoreError> {
    match &error {
        SdkError::ServiceError(service) if service.err().code() == Some("ConditionalCheckFailedException") => {
            metrics::count(Counter::ConditionalCheckFailures);
            Ok(item_of(service.err()))
        }
        _ => Err(unavailable(error)),
    }
}

/// A write that adds (an append, a counter's step) and so must never apply
/// twice under one call: its id goes into a string set of the item's
/// recent calls, and the write is refused where the id is there already.
/// `last_op` alone remembers one call, so a retry whose first attempt landed
/// before another call's write, or a first attempt that lands late, after
/// its retry, applied twice (issue 44). The sets are per minute, three in
/// turn: the current one and the one before are checked, the one before
/// that is dropped by the same write, so an item holds the ids of two or
/// three minutes of writes, far beyond the SDK's retries (seconds).
pub(crate) struct RecentCalls {
    op: String,
    current: &'static str,
    previous: &'static str,
    stale: &'static str,
}

const RECENT_CALL_SETS: [&str; 3] = ["ops_0", "ops_1", "ops_2"];

impl RecentCalls {
    /// A new call's id, at `now` (epoch seconds).
    pub(crate) fn new(now: u64) -> Self {
        let minute = usize::try_from(now / 60 % 3).unwrap_or(0);
        Self {
            op: operation_id(),
            current: RECENT_CALL_SETS[minute],
            previous: RECENT_CALL_SETS[(minute + 2) % 3],
            stale: RECENT_CALL_SETS[(minute + 1) % 3],
        }
    }

    /// The condition clause: not applied before under this call.
    pub(crate) const CONDITION: &str = "NOT contains(#ops_current, :op) AND NOT contains(#ops_previous, :op)";
    /// The `ADD` clause's element.
    pub(crate) const ADD: &str = "#ops_current :op_set";
    /// The `REMOVE` clause's element.
    pub(crate) const REMOVE: &str = "#ops_stale";

    /// `update` with the names and values the clauses above use.
    pub(crate) fn bind(
        &self,
        update: aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder,
    ) -> aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder {
        update
            .expression_attribute_names("#ops_current", self.current)
            .expression_attribute_names("#ops_previous", self.previous)
            .expression_attribute_names("#ops_stale", self.stale)
            .expression_attribute_values(":op", s(&self.op))
            .expression_attribute_values(":op_set", AttributeValue::Ss(vec![self.op.clone()]))
    }

    /// Whether `item` (as a refused write saw it) holds this call's id:
    /// the call's own write landed before.
    pub(crate) fn landed_in(&self, item: &Item) -> bool {
        [self.current, self.previous].iter().any(|set| matches!(item.get(*set), Some(AttributeValue::Ss(ids)) if ids.contains(&self.op)))
    }
}

/// A random id per write call, so the SDK's retry of a write that did land
/// (its answer lost to a timeout or a reset) is recognised as done rather
/// than applied twice (an append) or mistaken for a conflict (a replace).
pub(crate) const LAST_OP: &str = "last_op";

pub(crate) fn operation_id() -> String {
    hex(&random::bytes::<12>())
}

impl DynamoStore {
    /// The adapters on `table`, through `client`.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self { client, table: table.into() }
    }
}
