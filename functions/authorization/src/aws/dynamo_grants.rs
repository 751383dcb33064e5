//! Grants in the stack's table (see mcp-aws's `dynamo` for the item map),
//! keyed by the SHA-256 of the secret the client holds:
//!
//! | `pk` | attributes |
//! |---|---|
//! | `oauth#code#<sha256(code)>` | `grant` (JSON), `expires_at` |
//! | `oauth#refresh#<sha256(token)>` | `grant` (JSON), `expires_at`, `used_at` once used |
//! | `oauth#family#<family id>` | `expires_at`: the family is revoked until then |
//!
//! Costs: a code is one write to keep and one conditional delete to take;
//! a refresh is one conditional update (marking the token used), one
//! consistent read of the family and one write (the next token). A reused
//! token costs a read and a write more, revoking the family.

use aws_sdk_dynamodb::{
    Client,
    types::{AttributeValue, ReturnValue},
};
use futures::future::BoxFuture;
use mcp_aws::dynamo::{Item, PARTITION_KEY, TTL_ATTRIBUTE, condition_failed, n, number, unavailable};
use mcp_stateless::storage::StoreError;

use crate::grants::{CodeGrant, GrantStore, RefreshGrant, Rotation};

const CODE: &str = "oauth#code#";
const REFRESH: &str = "oauth#refresh#";
const FAMILY: &str = "oauth#family#";

/// The grants, in `table`.
pub struct DynamoGrants {
    client: Client,
    table: String,
}

impl DynamoGrants {
    /// In `table`.
    pub fn new(client: Client, table: &str) -> Self {
        Self { client, table: table.to_owned() }
    }

    async fn put(&self, pk: String, grant: &impl serde::Serialize, expires_at: u64) -> Result<(), StoreError> {
        let grant = serde_json::to_string(grant).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        self.client
            .put_item()
            .table_name(&self.table)
            .item(PARTITION_KEY, AttributeValue::S(pk))
            .item("grant", AttributeValue::S(grant))
            .item(TTL_ATTRIBUTE, n(expires_at))
            .send()
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    async fn get(&self, pk: String) -> Result<Option<Item>, StoreError> {
        let answer =
            self.client.get_item().table_name(&self.table).key(PARTITION_KEY, AttributeValue::S(pk)).consistent_read(true).send().await;
        Ok(answer.map_err(unavailable)?.item)
    }

    async fn family_revoked(&self, family: &str, now: u64) -> Result<bool, StoreError> {
        Ok(self.get(format!("{FAMILY}{family}")).await?.is_some_and(|item| expires_at(&item) > now))
    }

    async fn revoke_family(&self, family: &str, until: u64) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(&self.table)
            .item(PARTITION_KEY, AttributeValue::S(format!("{FAMILY}{family}")))
            .item(TTL_ATTRIBUTE, n(until))
            .send()
            .await
            .map_err(unavailable)?;
        Ok(())
    }
}

/// When `item` stops counting (its TTL attribute; absent reads as long past).
fn expires_at(item: &Item) -> u64 {
    number(item, TTL_ATTRIBUTE).unwrap_or(0)
}

fn grant<T: serde::de::DeserializeOwned>(item: &Item) -> Result<T, StoreError> {
    let text = item.get("grant").and_then(|v| v.as_s().ok()).ok_or_else(|| StoreError::Corrupt("grant is missing".into()))?;
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(e.to_string()))
}

impl GrantStore for DynamoGrants {
    fn put_code<'a>(&'a self, key: &'a str, grant: &'a CodeGrant) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.put(format!("{CODE}{key}"), grant, grant.expires_at))
    }

    fn take_code<'a>(&'a self, key: &'a str, now: u64) -> BoxFuture<'a, Result<Option<CodeGrant>, StoreError>> {
        Box::pin(async move {
            // The delete that finds the item is the one take that gets it.
            let answer = self
                .client
                .delete_item()
                .table_name(&self.table)
                .key(PARTITION_KEY, AttributeValue::S(format!("{CODE}{key}")))
                .condition_expression("attribute_exists(pk)")
                .return_values(ReturnValue::AllOld)
                .send()
                .await;
            let item = match answer {
                Ok(answer) => answer.attributes,
                Err(error) => condition_failed(error, |_| None).map(|_| None)?,
            };
            match item {
                Some(item) if expires_at(&item) > now => grant(&item).map(Some),
                _ => Ok(None),
            }
        })
    }

    fn put_refresh<'a>(&'a self, key: &'a str, grant: &'a RefreshGrant) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.put(format!("{REFRESH}{key}"), grant, grant.expires_at))
    }

    fn use_refresh<'a>(&'a self, key: &'a str, now: u64, revoked_until: u64) -> BoxFuture<'a, Result<Rotation, StoreError>> {
        Box::pin(async move {
            let pk = format!("{REFRESH}{key}");
            let answer = self
                .client
                .update_item()
                .table_name(&self.table)
                .key(PARTITION_KEY, AttributeValue::S(pk.clone()))
                .update_expression("SET used_at = :now")
                .condition_expression("attribute_exists(pk) AND attribute_not_exists(used_at) AND expires_at > :now")
                .expression_attribute_values(":now", n(now))
                .return_values(ReturnValue::AllNew)
                .send()
                .await;
            match answer {
                Ok(answer) => {
                    let current: RefreshGrant = grant(&answer.attributes.unwrap_or_default())?;
                    if self.family_revoked(&current.family, now).await? {
                        return Ok(Rotation::Unknown);
                    }
                    Ok(Rotation::Current(current))
                }
                Err(error) => {
                    condition_failed(error, |_| None)?;
                    // Unknown, expired, or used before: only the last ends the family.
                    let Some(item) = self.get(pk).await?.filter(|item| expires_at(item) > now && item.contains_key("used_at")) else {
                        return Ok(Rotation::Unknown);
                    };
                    let used: RefreshGrant = grant(&item)?;
                    self.revoke_family(&used.family, revoked_until).await?;
                    Ok(Rotation::Reused)
                }
            }
        })
    }

    fn revoke_refresh<'a>(&'a self, key: &'a str, client_id: &'a str, revoked_until: u64) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            if let Some(item) = self.get(format!("{REFRESH}{key}")).await? {
                let known: RefreshGrant = grant(&item)?;
                if known.client_id == client_id {
                    self.revoke_family(&known.family, revoked_until).await?;
                }
            }
            Ok(())
        })
    }
}
