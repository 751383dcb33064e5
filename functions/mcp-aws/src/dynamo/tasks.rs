//! Task records in the table, keyed as handles are (the item map is in
//! `dynamo/mod.rs`). The record is one JSON string beside the attributes
//! conditions need; the task's input is an item of its own, written once,
//! so the record, written on every change, stays small.
//!
//! Round trips: create 1 (input, record and the owner's place in one
//! transaction, `places.rs`; 2 puts where places are counted apart), read 1
//! (consistent get), every change 2 (consistent get + put conditioned on the
//! version; the change that ends a task gives the place back in the same
//! transaction), one more only when a read finds the task expired, to delete
//! it; a run reads the input once.
//!
//! Every put carries a random per-call id (`last_op`) and its condition
//! also accepts an item that already carries it: when the SDK retries a put
//! whose first attempt landed but whose answer was lost, the retry finds
//! its own write and succeeds (rewriting the same bytes), instead of
//! reporting a conflict (an update whose answers would be dropped) or a
//! failed create (a task left `working` that nobody enqueued).

use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
use futures::future::BoxFuture;
use mcp_stateless::{
    quota::QuotaKey,
    storage::{ItemKey, StoreError},
    tasks::{
        record::{TaskInput, TaskRecord},
        store::{Replaced, TaskStore},
    },
};

use super::{
    DynamoStore, LAST_OP, PARTITION_KEY, TTL_ATTRIBUTE, condition_failed, met_transaction, n, operation_id,
    places::{Written, built},
    s,
};

const RECORD: &str = "task";
const INPUT: &str = "input";

fn input_key(key: &ItemKey) -> String {
    format!("{}#input", key.partition_key)
}

fn json_attribute<'a>(item: &'a super::Item, name: &str) -> Result<&'a str, StoreError> {
    match item.get(name) {
        Some(AttributeValue::S(json)) => Ok(json),
        _ => Err(StoreError::Corrupt(format!("task {name} missing"))),
    }
}

/// A put that only creates, or finds its own earlier attempt (`:op`).
const CREATE_ONLY: &str = "attribute_not_exists(pk) OR #last_op = :op";

fn created<R: std::fmt::Debug>(
    result: Result<(), aws_sdk_dynamodb::error::SdkError<aws_sdk_dynamodb::operation::put_item::PutItemError, R>>,
) -> Result<(), StoreError> {
    match result {
        Ok(()) => Ok(()),
        // Task ids are 128 random bits: a clash is not a real case.
        Err(error) => condition_failed(error, |_| None).and_then(|_| Err(StoreError::Unavailable("a task with this id exists".into()))),
    }
}

fn status_name(record: &TaskRecord) -> String {
    serde_json::to_value(record.status).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

/// The task's record item, written by the call `op`.
fn task_item(key: &ItemKey, record: &TaskRecord, op: &str) -> Result<super::Item, StoreError> {
    let json = serde_json::to_string(record).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    Ok(super::Item::from([
        (PARTITION_KEY.to_owned(), s(&key.partition_key)),
        ("owner".to_owned(), s(&record.owner)),
        ("kind".to_owned(), s(key.kind)),
        ("status".to_owned(), s(&status_name(record))),
        ("version".to_owned(), n(record.version)),
        (TTL_ATTRIBUTE.to_owned(), n(record.expires_at)),
        (RECORD.to_owned(), AttributeValue::S(json)),
        (LAST_OP.to_owned(), s(op)),
    ]))
}

/// The task's input item (written once, with the record), by the call `op`.
fn input_item(key: &ItemKey, record: &TaskRecord, input: &TaskInput, op: &str) -> Result<super::Item, StoreError> {
    let json = serde_json::to_string(input).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    Ok(super::Item::from([
        (PARTITION_KEY.to_owned(), s(&input_key(key))),
        ("owner".to_owned(), s(&record.owner)),
        ("kind".to_owned(), s(key.kind)),
        (TTL_ATTRIBUTE.to_owned(), n(record.expires_at)),
        (INPUT.to_owned(), AttributeValue::S(json)),
        (LAST_OP.to_owned(), s(op)),
    ]))
}

impl DynamoStore {
    fn put_task(
        &self,
        key: &ItemKey,
        record: &TaskRecord,
    ) -> Result<aws_sdk_dynamodb::operation::put_item::builders::PutItemFluentBuilder, StoreError> {
        let op = operation_id();
        Ok(self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(task_item(key, record, &op)?))
            .expression_attribute_names("#last_op", LAST_OP)
            .expression_attribute_values(":op", s(&op)))
    }
}

impl TaskStore for DynamoStore {
    fn create<'a>(&'a self, key: &'a ItemKey, record: &'a TaskRecord, input: &'a TaskInput) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let op = operation_id();
            // The input first: a record is never there without its input (a
            // create that stops in between leaves an input its TTL removes).
            let put_input = self
                .client
                .put_item()
                .table_name(&self.table)
                .set_item(Some(input_item(key, record, input, &op)?))
                .condition_expression(CREATE_ONLY)
                .expression_attribute_names("#last_op", LAST_OP)
                .expression_attribute_values(":op", s(&op));
            created(put_input.send().await.map(|_| ()))?;
            created(self.put_task(key, record)?.condition_expression(CREATE_ONLY).send().await.map(|_| ()))
        })
    }

    fn input<'a>(&'a self, key: &'a ItemKey) -> BoxFuture<'a, Result<Option<TaskInput>, StoreError>> {
        Box::pin(async move {
            let input_key = ItemKey { partition_key: input_key(key), owner: key.owner.clone(), kind: key.kind };
            let Some(item) = self.owned_item(&input_key).await? else { return Ok(None) };
            serde_json::from_str(json_attribute(&item, INPUT)?).map(Some).map_err(|e| StoreError::Corrupt(e.to_string()))
        })
    }

    fn get<'a>(&'a self, key: &'a ItemKey, now: u64) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        Box::pin(async move {
            let Some(item) = self.owned_item(key).await? else {
                return Ok(None);
            };
            let record: TaskRecord =
                serde_json::from_str(json_attribute(&item, RECORD)?).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            // DynamoDB's TTL deletes lazily, up to days late.
            if record.expires_at <= now {
                self.delete_expired(key, now).await?;
                return Ok(None);
            }
            Ok(Some(record))
        })
    }

    fn replace<'a>(
        &'a self,
        key: &'a ItemKey,
        expected_version: u64,
        record: &'a TaskRecord,
    ) -> BoxFuture<'a, Result<Replaced, StoreError>> {
        Box::pin(async move {
            let result = self
                .put_task(key, record)?
                .condition_expression("#owner = :owner AND (#version = :expected OR #last_op = :op)")
                .expression_attribute_names("#version", "version")
                .expression_attribute_names("#owner", "owner")
                .expression_attribute_values(":expected", n(expected_version))
                .expression_attribute_values(":owner", s(&key.owner))
                .send()
                .await;
            match result {
                Ok(_) => Ok(Replaced::Done),
                // A transaction on the record at that moment (a cancel, an
                // ending): read again, as after any other writer.
                Err(error) if met_transaction(&error) => Ok(Replaced::Conflict),
                Err(error) => condition_failed(error, |_| None).map(|_| Replaced::Conflict),
            }
        })
    }

    fn create_counted<'a>(
        &'a self,
        key: &'a ItemKey,
        record: &'a TaskRecord,
        input: &'a TaskInput,
        quota: &'a QuotaKey,
        limit: u32,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let op = operation_id();
            let put = |item| {
                built(Put::builder().table_name(&self.table).set_item(Some(item)).condition_expression("attribute_not_exists(pk)").build())
            };
            let take = self.take_place(quota, limit)?;
            let writes = vec![
                TransactWriteItem::builder().put(put(input_item(key, record, input, &op)?)?).build(),
                TransactWriteItem::builder().put(put(task_item(key, record, &op)?)?).build(),
                TransactWriteItem::builder().update(take).build(),
            ];
            let refused = match self.transact(&op, writes).await {
                Ok(Written::Done) => return Ok(true),
                Ok(Written::Refused(failed)) => failed,
                // Settled by a failed record, counting no place, where nothing is.
                Err(error) => {
                    let mut failed = record.clone();
                    failed.quota_key = None;
                    failed.fail(rmcp::model::ErrorCode::INTERNAL_ERROR.0, "The task could not be created.");
                    let claim = task_item(key, &failed, &format!("{op}-settled"))?;
                    return self.settle_failed_create(claim, LAST_OP, &op, error).await;
                }
            };
            // The record's condition held: only the place was missing.
            if refused.get(1) != Some(&true) {
                return Ok(false);
            }
            // This very create, landed before its retry; or a task id taken
            // (128 random bits: not a real case).
            if self.written_by(key, LAST_OP, &op).await? {
                return Ok(true);
            }
            Err(StoreError::Unavailable("a task with this id exists".into()))
        })
    }

    fn replace_ending<'a>(
        &'a self,
        key: &'a ItemKey,
        expected_version: u64,
        record: &'a TaskRecord,
        quota: &'a QuotaKey,
    ) -> BoxFuture<'a, Result<Replaced, StoreError>> {
        Box::pin(async move {
            let op = operation_id();
            // Strictly the version read: a retry of this write that landed
            // is recognised by reading it back, never by applying it again
            // (which would give the place back twice).
            let ending = built(
                Put::builder()
                    .table_name(&self.table)
                    .set_item(Some(task_item(key, record, &op)?))
                    .condition_expression("#owner = :owner AND #version = :expected")
                    .expression_attribute_names("#owner", "owner")
                    .expression_attribute_names("#version", "version")
                    .expression_attribute_values(":owner", s(&key.owner))
                    .expression_attribute_values(":expected", n(expected_version))
                    .build(),
            )?;
            let give_back = self.give_back_place(quota)?;
            let writes = vec![TransactWriteItem::builder().put(ending).build(), TransactWriteItem::builder().update(give_back).build()];
            match self.transact(&op, writes).await? {
                Written::Done => Ok(Replaced::Done),
                Written::Refused(_) if self.written_by(key, LAST_OP, &op).await? => Ok(Replaced::Done),
                // No place to give back (its window was forgotten): end it alone.
                Written::Refused(failed) if failed == [false, true] => self.replace(key, expected_version, record).await,
                Written::Refused(_) => Ok(Replaced::Conflict),
            }
        })
    }

    fn counts_places(&self) -> bool {
        true
    }
}
