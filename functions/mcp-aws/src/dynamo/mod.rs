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
//! | `handle#<prefix>#<sha256(owner, handle)>` | `owner`, `kind`, `data` (a map), `version`, `created_at`, `last_used_at`, `expires_at` (sliding), `deadline` (absolute; items written before it existed have none), `last_op`, `created_op`; once deleted, a tombstone for 15 minutes: `deleted_op`, `deleted_at` | [`handles`] |
//! | `handle#tsk#<sha256(owner, task id)>` | `task` (the record as one JSON string), `owner`, `kind`, `version`, `status` (for operators), `expires_at`, `last_op` | [`tasks`] |
//! | `handle#tsk#<...>#input` | `input` (the arguments and request context, one JSON string, written once), `owner`, `kind`, `expires_at`, `last_op` | [`tasks`] |
//! | `jti#<state id>` | `expires_at`, `last_op` | [`handles`] (single-use `requestState`) |
//! | `quota#<kind>#<sha256(owner)>#<window>` | `count`, `expires_at`, `last_op` | [`quota`] |
//! | `feed#lists` | per list (`tools`, `prompts`, `resources`): `<kind>_version`, `<kind>_changed_at` (epoch ms), `<kind>_digest`; no TTL (one small item for the table's life) | [`feed`] |
//!
//! `last_op` is a random id per write call: the SDK's retry of a write
//! whose answer was lost finds its own id and is not applied twice.

pub(crate) mod attribute_values;
pub mod feed;
pub mod handles;
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
