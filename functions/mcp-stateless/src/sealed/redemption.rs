//! Single-use `requestState`: a ledger of redeemed state ids (`jti`).
//!
//! A tool that must act at most once per state (a payment, a one-time
//! redemption) opens its state through the ledger: the first redemption
//! wins, a replay is refused. Entries live until the state's own expiry.

use std::{collections::HashMap, sync::Mutex};

use futures::future::BoxFuture;

use crate::storage::StoreError;

/// What a redemption found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(
    clippy::exhaustive_enums,
    reason = "each redeemer handles every outcome of a single-use redemption; a new one must not fall into a wildcard arm"
)]
pub enum Redemption {
    /// Not redeemed before: recorded now, and the step may go ahead.
    First,
    /// Redeemed already: the step must not happen again.
    Replay,
}

/// The port that remembers redeemed state ids (the table in Lambda, memory
/// locally).
pub trait RedemptionLedger: Send + Sync {
    /// Records `jti` until `expires_at` (epoch seconds) unless it is
    /// already recorded. Atomic: of two concurrent redemptions, one wins.
    fn redeem<'a>(&'a self, jti: &'a str, expires_at: u64, now: u64) -> BoxFuture<'a, Result<Redemption, StoreError>>;
}

/// For the local server and unit tests: one process only.
#[derive(Default)]
pub struct InMemoryLedger {
    redeemed: Mutex<HashMap<String, u64>>,
}

impl RedemptionLedger for InMemoryLedger {
    fn redeem<'a>(&'a self, jti: &'a str, expires_at: u64, now: u64) -> BoxFuture<'a, Result<Redemption, StoreError>> {
        let outcome = match self.redeemed.lock() {
            Ok(mut redeemed) => {
                redeemed.retain(|_, until| *until > now);
                if redeemed.contains_key(jti) {
                    Ok(Redemption::Replay)
                } else {
                    redeemed.insert(jti.to_owned(), expires_at);
                    Ok(Redemption::First)
                }
            }
            Err(_) => Err(StoreError::Unavailable("ledger lock poisoned".into())),
        };
        Box::pin(async move { outcome })
    }
}
