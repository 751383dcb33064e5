//! Grants in the stack's table (see mcp-aws's `dynamo` for the item map),
//! keyed by the SHA-256 of the secret the client holds:
//!
//! | `pk` | attributes |
//! |---|---|
//! | `oauth#code#<sha256(code)>` | `grant` (JSON), `expires_at` |
//! | `oauth#refresh#<sha256(token)>` | `grant` (JSON), `expires_at`; written once, never changed |
//! | `oauth#family#<family id>` | `current_token`, `previous_token` (token keys), `expires_at`; without `current_token`, the family is revoked until `expires_at` |
//!
//! Costs: a code is one write to keep and one conditional delete to take;
//! starting a family and each rotation is one `TransactWriteItems` of two
//! puts (the next token, the family's state: 4 write units), after two
//! consistent reads (the token, its family). A reused token costs one write
//! more, revoking the family. The transaction is conditional on the family
//! as read, so of two concurrent rotations one lands; the SDK gives it a
//! `ClientRequestToken`, so its own retry of a transaction that landed is
//! answered as done (for ten minutes) rather than as a conflict.
//!
//! Tokens issued before families kept their state (an item with `used_at`
//! once used, a family item only when revoked) are still taken: unused
//! with no family state, such a token is current.

use aws_sdk_dynamodb::{
    Client,
    operation::transact_write_items::TransactWriteItemsError,
    types::{AttributeValue, Put, ReturnValue, TransactWriteItem},
};
use futures::future::BoxFuture;
use mcp_aws::dynamo::{Item, PARTITION_KEY, TTL_ATTRIBUTE, condition_failed, n, number, unavailable};
use mcp_stateless::storage::StoreError;

use crate::grants::{CodeGrant, FamilyState, GrantStore, Presented, RefreshGrant, Revocation, Rotated, Usable, revocation_of};

const CODE: &str = "oauth#code#";
const REFRESH: &str = "oauth#refresh#";
const FAMILY: &str = "oauth#family#";
/// A family's current token key (`current` alone is a reserved word).
const CURRENT: &str = "current_token";
/// The token it replaced.
const PREVIOUS: &str = "previous_token";

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

    /// The family's state, if it has an item and it still counts.
    async fn family(&self, family: &str, now: u64) -> Result<Option<FamilyState>, StoreError> {
        Ok(self
            .get(format!("{FAMILY}{family}"))
            .await?
            .filter(|item| expires_at(item) > now)
            .map(|item| FamilyState { current: text(&item, CURRENT), previous: text(&item, PREVIOUS) }))
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

    /// The two puts of a family's new token, in one transaction: the token
    /// (new, so it must not exist) and the family's state, on `condition`.
    async fn write_rotation(
        &self,
        key: &str,
        grant: &RefreshGrant,
        state: &FamilyState,
        condition: (&str, Option<&str>),
    ) -> Result<Rotated, StoreError> {
        let serialized = serde_json::to_string(grant).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let token = Put::builder()
            .table_name(&self.table)
            .item(PARTITION_KEY, AttributeValue::S(format!("{REFRESH}{key}")))
            .item("grant", AttributeValue::S(serialized))
            .item(TTL_ATTRIBUTE, n(grant.expires_at))
            .condition_expression("attribute_not_exists(pk)")
            .build()
            .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let mut family = Put::builder()
            .table_name(&self.table)
            .item(PARTITION_KEY, AttributeValue::S(format!("{FAMILY}{}", grant.family)))
            .item(TTL_ATTRIBUTE, n(grant.expires_at))
            .condition_expression(condition.0);
        for (name, value) in [(CURRENT, &state.current), (PREVIOUS, &state.previous)] {
            if let Some(value) = value {
                family = family.item(name, AttributeValue::S(value.clone()));
            }
        }
        if let Some(expected) = condition.1 {
            family = family.expression_attribute_values(":current", AttributeValue::S(expected.to_owned()));
        }
        let family = family.build().map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let answer = self
            .client
            .transact_write_items()
            .transact_items(TransactWriteItem::builder().put(token).build())
            .transact_items(TransactWriteItem::builder().put(family).build())
            .send()
            .await;
        match answer {
            Ok(_) => Ok(Rotated::Done),
            // Only a failed condition (or a concurrent transaction on the
            // same items) is a race; throttling and the rest are the
            // store's failure, which spends nothing and is answered 503.
            Err(error)
                if matches!(
                    error.as_service_error(),
                    Some(TransactWriteItemsError::TransactionCanceledException(canceled))
                        if canceled.cancellation_reasons().iter().any(|reason| matches!(reason.code(), Some("ConditionalCheckFailed" | "TransactionConflict")))
                ) =>
            {
                mcp_stateless::metrics::count(mcp_stateless::metrics::Counter::ConditionalCheckFailures);
                Ok(Rotated::Raced)
            }
            Err(error) => Err(unavailable(error)),
        }
    }
}

fn text(item: &Item, name: &str) -> Option<String> {
    item.get(name).and_then(|value| value.as_s().ok()).cloned()
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

    fn start_family<'a>(&'a self, key: &'a str, grant: &'a RefreshGrant) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            match self.write_rotation(key, grant, &FamilyState::started(key), ("attribute_not_exists(pk)", None)).await? {
                Rotated::Done => Ok(()),
                // A new random family and token: only a retry of this very
                // call can have written them, and the SDK's token makes
                // that retry a success.
                Rotated::Raced => Err(StoreError::Unavailable("a new refresh token's family already exists".into())),
            }
        })
    }

    fn present_refresh<'a>(&'a self, key: &'a str, now: u64, revoked_until: u64) -> BoxFuture<'a, Result<Presented, StoreError>> {
        Box::pin(async move {
            let Some(item) = self.get(format!("{REFRESH}{key}")).await?.filter(|item| expires_at(item) > now) else {
                return Ok(Presented::Unknown);
            };
            let grant: RefreshGrant = grant(&item)?;
            let usable = match self.family(&grant.family, now).await? {
                Some(state) if state.current.is_none() => return Ok(Presented::Unknown),
                Some(state) if state.admits(key) => Usable { current: state.current, grant },
                // A token from before families kept state, never used.
                None if !item.contains_key("used_at") => Usable { current: None, grant },
                _ => {
                    self.revoke_family(&grant.family, revoked_until).await?;
                    return Ok(Presented::Reused(grant));
                }
            };
            Ok(Presented::Usable(usable))
        })
    }

    fn rotate_refresh<'a>(
        &'a self,
        presented: &'a str,
        usable: &'a Usable,
        successor_key: &'a str,
        successor: &'a RefreshGrant,
    ) -> BoxFuture<'a, Result<Rotated, StoreError>> {
        Box::pin(async move {
            let state = FamilyState::rotated(presented, successor_key);
            let condition = match &usable.current {
                Some(current) => ("current_token = :current", Some(current.as_str())),
                None => ("attribute_not_exists(pk)", None),
            };
            self.write_rotation(successor_key, successor, &state, condition).await
        })
    }

    fn revoke_refresh<'a>(
        &'a self,
        key: &'a str,
        client_id: &'a str,
        authenticated: bool,
        revoked_until: u64,
    ) -> BoxFuture<'a, Result<Revocation, StoreError>> {
        Box::pin(async move {
            let known: Option<RefreshGrant> = self.get(format!("{REFRESH}{key}")).await?.map(|item| grant(&item)).transpose()?;
            let revocation = revocation_of(known.as_ref(), client_id, authenticated);
            if let (Revocation::Ended, Some(known)) = (revocation, &known) {
                self.revoke_family(&known.family, revoked_until).await?;
            }
            Ok(revocation)
        })
    }
}
