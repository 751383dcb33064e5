//! `RedemptionLedger`: a state id is redeemed once, however many try.

use crate::sealed::redemption::{Redemption, RedemptionLedger};

/// A `RedemptionLedger`: a state id is redeemed once, however many try.
pub async fn redemption_ledger(ledger: &dyn RedemptionLedger) {
    let now = super::now();
    let jti = format!("st-{}", crate::storage::hex(&crate::random::bytes::<8>()));
    assert_eq!(ledger.redeem(&jti, now + 300, now).await.unwrap(), Redemption::First);
    // Within the state's lifetime every later attempt is a replay. (Past
    // it the state no longer opens, so the ledger need not remember.)
    assert_eq!(ledger.redeem(&jti, now + 300, now).await.unwrap(), Redemption::Replay);
    assert_eq!(ledger.redeem(&jti, now + 300, now + 299).await.unwrap(), Redemption::Replay);
    assert_eq!(ledger.redeem(&format!("{jti}-other"), now + 300, now).await.unwrap(), Redemption::First);

    // Of concurrent redemptions, exactly one wins.
    let raced = format!("{jti}-raced");
    let attempts = futures::future::join_all((0..8).map(|_| ledger.redeem(&raced, now + 300, now))).await;
    let firsts = attempts.into_iter().map(Result::unwrap).filter(|r| *r == Redemption::First).count();
    assert_eq!(firsts, 1);
}
