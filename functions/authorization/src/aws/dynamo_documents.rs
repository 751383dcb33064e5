//! Last good copies of client metadata documents in the stack's table,
//! shared by every instance:
//!
//! | `pk` | attributes |
//! |---|---|
//! | `oauth#document#<sha256(client id)>` | `body` (the document, at most 5 KB), `fetched_at`, `expires_at` (7 days on) |
//!
//! One put per successful fetch (a few an hour per client, per instance),
//! conditional on being no older than the copy there; one consistent read
//! per fetch that fails; one delete when the host withdraws the document.
//! A put that lands twice writes the same copy.

use aws_lc_rs::digest::{SHA256, digest};
use aws_sdk_dynamodb::{Client, primitives::Blob, types::AttributeValue};
use bytes::Bytes;
use futures::future::BoxFuture;
use mcp_aws::dynamo::{PARTITION_KEY, TTL_ATTRIBUTE, condition_failed, n, number, unavailable};
use mcp_stateless::storage::{StoreError, hex};

use crate::clients::last_good::{LastGood, LastGoodCopies};

const DOCUMENT: &str = "oauth#document#";

/// The copies, in `table`.
pub struct DynamoDocuments {
    client: Client,
    table: String,
}

impl DynamoDocuments {
    /// In `table`.
    pub fn new(client: Client, table: &str) -> Self {
        Self { client, table: table.to_owned() }
    }
}

fn key(client_id: &str) -> AttributeValue {
    AttributeValue::S(format!("{DOCUMENT}{}", hex(digest(&SHA256, client_id.as_bytes()).as_ref())))
}

impl LastGoodCopies for DynamoDocuments {
    fn keep<'a>(&'a self, client_id: &'a str, copy: &'a LastGood, until: u64) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let kept = self
                .client
                .put_item()
                .table_name(&self.table)
                .item(PARTITION_KEY, key(client_id))
                .item("body", AttributeValue::B(Blob::new(copy.body.to_vec())))
                .item("fetched_at", n(copy.fetched_at))
                .item(TTL_ATTRIBUTE, n(until))
                // A slower instance's older fetch never replaces a newer copy.
                .condition_expression("attribute_not_exists(pk) OR fetched_at <= :fetched_at")
                .expression_attribute_values(":fetched_at", n(copy.fetched_at))
                .send()
                .await;
            match kept {
                Ok(_) => Ok(()),
                Err(error) => condition_failed(error, |_| None).map(|_| ()),
            }
        })
    }

    fn forget<'a>(&'a self, client_id: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            self.client.delete_item().table_name(&self.table).key(PARTITION_KEY, key(client_id)).send().await.map_err(unavailable)?;
            Ok(())
        })
    }

    fn last_good<'a>(&'a self, client_id: &'a str, now: u64) -> BoxFuture<'a, Result<Option<LastGood>, StoreError>> {
        Box::pin(async move {
            let answer =
                self.client.get_item().table_name(&self.table).key(PARTITION_KEY, key(client_id)).consistent_read(true).send().await;
            let Some(item) = answer.map_err(unavailable)?.item else { return Ok(None) };
            if number(&item, TTL_ATTRIBUTE)? <= now {
                return Ok(None);
            }
            let body = match item.get("body") {
                Some(AttributeValue::B(blob)) => Bytes::copy_from_slice(blob.as_ref()),
                _ => return Err(StoreError::Corrupt("a document copy has no body".into())),
            };
            Ok(Some(LastGood { body, fetched_at: number(&item, "fetched_at")? }))
        })
    }
}
