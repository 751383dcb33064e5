//! Task records in the table, keyed as handles are (the item map is in
//! `dynamo/mod.rs`). The record is one JSON string beside the attributes
//! conditions need; the task's input is an item of its own, written once,
//! so the record, written on every change, stays small.
//!
//! Round trips: create 2 (conditional puts: input, record), read 1
//! (consistent get), every change 2 (consistent get + put conditioned on the
//! version), one more only when a read finds the task expired, to delete
//! it; a run reads the input once.
//!
//! Every put carries a random per-call id (`last_op`) and its condition
//! also accepts an item that already carries it: when the SDK retries a put
//! whose first attempt landed but whose answer was lost, the retry finds
//! its own write and succeeds (rewriting the same bytes), instead of
//! reporting a conflict (an update whose answers would be dropped) or a
//! failed create (a task left `working` that nobody enqueued).

use aws_sdk_dynamodb::types::AttributeValue;
use futures::future::BoxFuture;
use mcp_stateless::{
    storage::{ItemKey, StoreError},
    tasks::{
        record::{TaskInput, TaskRecord},
        store::{Replaced, TaskStore},
    },
};

use super::{DynamoStore, LAST_OP, PARTITION_KEY, TTL_ATTRIBUTE, condition_failed, n, operation_id, s};

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

impl DynamoStore {
    fn put_task(
        &self,
        key: &ItemKey,
        record: &TaskRecord,
    ) -> Result<aws_sdk_dynamodb::operation::put_item::builders::PutItemFluentBuilder, StoreError> {
        let op = operation_id();
        let json = serde_json::to_string(record).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        Ok(self
            .client
            .put_item()
            .table_name(&self.table)
            .item(PARTITION_KEY, s(&key.partition_key))
            .item("owner", s(&record.owner))
            .item("kind", s(key.kind))
            .item("status", s(&status_name(record)))
            .item("version", n(record.version))
            .item(TTL_ATTRIBUTE, n(record.expires_at))
            .item(RECORD, AttributeValue::S(json))
            .item(LAST_OP, s(&op))
            .expression_attribute_names("#last_op", LAST_OP)
            .expression_attribute_values(":op", s(&op)))
    }
}

impl TaskStore for DynamoStore {
    fn create<'a>(&'a self, key: &'a ItemKey, record: &'a TaskRecord, input: &'a TaskInput) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let json = serde_json::to_string(input).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            let op = operation_id();
            // The input first: a record is never there without its input (a
            // create that stops in between leaves an input its TTL removes).
            let put_input = self
                .client
                .put_item()
                .table_name(&self.table)
                .item(PARTITION_KEY, s(&input_key(key)))
                .item("owner", s(&record.owner))
                .item("kind", s(key.kind))
                .item(TTL_ATTRIBUTE, n(record.expires_at))
                .item(INPUT, AttributeValue::S(json))
                .item(LAST_OP, s(&op))
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
                Err(error) => condition_failed(error, |_| None).map(|_| Replaced::Conflict),
            }
        })
    }
}
