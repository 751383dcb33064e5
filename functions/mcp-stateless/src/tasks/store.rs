//! Where task records live: the port, the in-memory store for `cargo run`
//! and unit tests, and [`transition`], the one compare-and-set loop every
//! status change goes through.

use std::time::Duration;

use futures::future::BoxFuture;

use super::record::{MAX_RECORD_BYTES, TaskInput, TaskRecord};
use crate::{
    clock::Clock,
    quota::QuotaKey,
    storage::ItemKey,
    storage::{Backoff, StoreError},
};

/// What a compare-and-set write did.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Replaced {
    /// The record was written.
    Done,
    /// The version moved on (another writer won) or the item is gone.
    Conflict,
}

/// The port. Reads are strongly consistent: a `CreateTaskResult` is sent
/// only once `tasks/get` for it resolves (tasks.md, "Task Creation").
pub trait TaskStore: Send + Sync {
    /// Writes a new task, its input first; never overwrites.
    fn create<'a>(&'a self, key: &'a ItemKey, record: &'a TaskRecord, input: &'a TaskInput) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The owner's task input. Read after the record (which answers for
    /// expiry), by the worker, once per run.
    fn input<'a>(&'a self, key: &'a ItemKey) -> BoxFuture<'a, Result<Option<TaskInput>, StoreError>>;

    /// The owner's live record. An expired one is deleted and reported
    /// missing: expired, unknown and somebody else's look the same.
    fn get<'a>(&'a self, key: &'a ItemKey, now: u64) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>>;

    /// Writes `record` if the stored version is still `expected_version`.
    fn replace<'a>(
        &'a self,
        key: &'a ItemKey,
        expected_version: u64,
        record: &'a TaskRecord,
    ) -> BoxFuture<'a, Result<Replaced, StoreError>>;

    /// [`create`](Self::create), and a place taken in `quota` (at most
    /// `limit`), in one write: both or neither, however the SDK retries
    /// and whenever a first attempt lands. `Ok(false)`: no place left,
    /// nothing written. An error says the task is not there and will not
    /// be: a store settles a write whose every answer was lost before it
    /// answers (it reports the task created if it landed). Served where
    /// [`counts_places`](Self::counts_places) says so; the service counts
    /// apart, in its quota, for other stores.
    fn create_counted<'a>(
        &'a self,
        _key: &'a ItemKey,
        _record: &'a TaskRecord,
        _input: &'a TaskInput,
        _quota: &'a QuotaKey,
        _limit: u32,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(std::future::ready(Err(StoreError::Unavailable("this store does not count places".into()))))
    }

    /// [`replace`](Self::replace) with a record that ends the task, and
    /// the owner's place in `quota` given back, in one write.
    fn replace_ending<'a>(
        &'a self,
        _key: &'a ItemKey,
        _expected_version: u64,
        _record: &'a TaskRecord,
        _quota: &'a QuotaKey,
    ) -> BoxFuture<'a, Result<Replaced, StoreError>> {
        Box::pin(std::future::ready(Err(StoreError::Unavailable("this store does not count places".into()))))
    }

    /// Whether [`create_counted`](Self::create_counted) and
    /// [`replace_ending`](Self::replace_ending) are served.
    fn counts_places(&self) -> bool {
        false
    }
}

/// What a transition decided after looking at the current record.
#[non_exhaustive]
pub enum Decision {
    /// Write the record as edited, one version on.
    Write,
    /// Leave the record as it is (already terminal, nothing to change).
    Keep,
}

const MAX_ATTEMPTS: u32 = 6;
const BACKOFF_START: Duration = Duration::from_millis(5);

/// What [`transition`] left: the record as it now stands (`None` when the
/// task is unknown or expired), and the same record again when this call's
/// write is the one that ended the task (exactly one write does).
#[non_exhaustive]
pub struct Transition {
    /// The record as it now stands.
    pub record: Option<TaskRecord>,
    /// The record again, only when this call's write ended the task (a
    /// store that counts places gave the owner's place back in it).
    pub ended: Option<TaskRecord>,
}

/// Reads the record, lets `change` edit it, and writes it back if the
/// version did not move; retried with jittered backoff (no sleep after the
/// last attempt). A record that would outgrow the item limit is written as
/// failed instead, so nothing is half-written.
pub async fn transition(
    store: &dyn TaskStore,
    clock: &dyn Clock,
    key: &ItemKey,
    mut change: impl FnMut(&mut TaskRecord) -> Decision,
) -> Result<Transition, StoreError> {
    let mut backoff = Backoff::new(MAX_ATTEMPTS, BACKOFF_START);
    loop {
        let Some(mut record) = store.get(key, clock.now()).await? else {
            return Ok(Transition { record: None, ended: None });
        };
        let expected = record.version;
        let was_terminal = record.is_terminal();
        if let Decision::Keep = change(&mut record) {
            return Ok(Transition { record: Some(record), ended: None });
        }
        record.version = expected + 1;
        record.updated_at_ms = clock.now_ms().max(record.updated_at_ms);
        if record.encoded_len() > MAX_RECORD_BYTES {
            let message = format!("the task's state outgrew its {MAX_RECORD_BYTES}-byte storage limit");
            record.result = None;
            record.input_responses.clear();
            record.fail(rmcp::model::ErrorCode::INTERNAL_ERROR.0, &message);
        }
        let ends = !was_terminal && record.is_terminal();
        // The write that ends the task gives its place back in the same
        // write where the store can: never twice, never lost in between.
        let place = record.quota_key.clone().filter(|_| ends && store.counts_places());
        let replaced = match &place {
            Some(partition_key) => {
                let quota = QuotaKey { partition_key: partition_key.clone(), expires_at: 0 };
                store.replace_ending(key, expected, &record, &quota).await?
            }
            None => store.replace(key, expected, &record).await?,
        };
        match replaced {
            Replaced::Done => {
                let ended = ends.then(|| record.clone());
                return Ok(Transition { record: Some(record), ended });
            }
            Replaced::Conflict if backoff.retry().await => {}
            Replaced::Conflict => {
                return Err(StoreError::Unavailable("task record kept changing under concurrent writers".into()));
            }
        }
    }
}

pub mod memory {
    //! The zero-setup store: one map, lost when the process ends.

    use super::*;
    use crate::storage::LockedMap;

    /// Tasks and their inputs in maps in this process: lost when it ends,
    /// and unseen by any other instance.
    #[derive(Default)]
    pub struct InMemoryTaskStore {
        items: LockedMap<TaskRecord>,
        inputs: LockedMap<(String, TaskInput)>,
    }

    impl TaskStore for InMemoryTaskStore {
        fn create<'a>(&'a self, key: &'a ItemKey, record: &'a TaskRecord, input: &'a TaskInput) -> BoxFuture<'a, Result<(), StoreError>> {
            let outcome = self.inputs.with(|inputs| {
                inputs.entry(key.partition_key.clone()).or_insert_with(|| (key.owner.clone(), input.clone()));
            });
            let outcome = outcome.and_then(|()| {
                self.items.with(|items| {
                    items.entry(key.partition_key.clone()).or_insert_with(|| record.clone());
                })
            });
            Box::pin(async move { outcome })
        }

        fn input<'a>(&'a self, key: &'a ItemKey) -> BoxFuture<'a, Result<Option<TaskInput>, StoreError>> {
            let outcome = self.inputs.with(|inputs| match inputs.get(&key.partition_key) {
                Some((owner, input)) if *owner == key.owner => Some(input.clone()),
                _ => None,
            });
            Box::pin(async move { outcome })
        }

        fn get<'a>(&'a self, key: &'a ItemKey, now: u64) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
            let outcome = self.items.with(|items| match items.get(&key.partition_key) {
                Some(record) if record.owner != key.owner => None,
                Some(record) if record.expires_at <= now => {
                    items.remove(&key.partition_key);
                    None
                }
                other => other.cloned(),
            });
            Box::pin(async move { outcome })
        }

        fn replace<'a>(
            &'a self,
            key: &'a ItemKey,
            expected_version: u64,
            record: &'a TaskRecord,
        ) -> BoxFuture<'a, Result<Replaced, StoreError>> {
            let outcome = self.items.with(|items| match items.get_mut(&key.partition_key) {
                Some(stored) if stored.owner == key.owner && stored.version == expected_version => {
                    *stored = record.clone();
                    Replaced::Done
                }
                _ => Replaced::Conflict,
            });
            Box::pin(async move { outcome })
        }
    }
}
