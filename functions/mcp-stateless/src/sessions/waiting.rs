//! The calls of one caller that wait for its answers, across instances.
//!
//! A 2025-era call that asks its client something holds an invocation
//! while it waits, so a caller may have at most [`MAX_WAITING_CALLS`] of
//! them at once. Each holds a lease in one item per caller, until the end
//! of its current wait; it renews the lease at each question and gives it
//! back when it ends. What is counted is the calls waiting now, not the
//! calls started in some window, and an instance that dies holding leases
//! frees them when their waits are surely over: never later than one wait
//! (and two seconds) after its last question.

use std::time::Duration;

use serde_json::{Map, Value};

use super::{LegacySessions, SessionError};
use crate::{protocol::context::Principal, storage::IdKind};

/// Calls of one caller that may wait for its answers at once, across
/// instances: each holds an invocation while it waits.
pub const MAX_WAITING_CALLS: usize = 10;

/// The item of a caller's leases: `handle#wai#…`, under the roles'
/// existing `LeadingKeys`.
const WAITING_ITEMS: IdKind = IdKind { prefix: "wai" };

impl LegacySessions {
    /// Holds `call`'s lease for `wait` from now (taking it, or renewing the
    /// one it holds): false when [`MAX_WAITING_CALLS`] other calls of
    /// `principal` hold live ones, and then nothing is written.
    pub async fn keep_waiting(&self, principal: &Principal, call: &str, wait: Duration) -> Result<bool, SessionError> {
        let mut full = false;
        let changed = self
            .compare_and_set(&self.waiting_key(principal), |data, now| {
                let leases = live_leases(data, now);
                if !leases.contains_key(call) && leases.len() >= MAX_WAITING_CALLS {
                    full = true;
                    return Err(SessionError::Refused(String::new()));
                }
                // The lease never ends before the wait does.
                leases.insert(call.to_owned(), Value::from(super::wait_ends(now, wait)));
                Ok(latest(leases, now))
            })
            .await;
        match changed {
            Ok(()) => Ok(true),
            Err(_) if full => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// Gives `call`'s lease back. Best effort: one not given back ends
    /// with its wait.
    pub async fn stop_waiting(&self, principal: &Principal, call: &str) {
        let given_back = self
            .compare_and_set(&self.waiting_key(principal), |data, now| {
                let leases = live_leases(data, now);
                leases.remove(call);
                Ok(latest(leases, now))
            })
            .await;
        if let Err(error) = given_back {
            tracing::warn!(%error, "waiting call's lease not given back; it ends with its wait");
        }
    }

    fn waiting_key(&self, principal: &Principal) -> crate::storage::ItemKey {
        WAITING_ITEMS.key(principal.binding_id(), "calls")
    }
}

/// The item's leases (call → epoch second its wait ends), those that
/// ended dropped.
fn live_leases(data: &mut Map<String, Value>, now: u64) -> &mut Map<String, Value> {
    let leases = data.entry("leases").or_insert_with(|| Value::Object(Map::new()));
    if !leases.is_object() {
        *leases = Value::Object(Map::new());
    }
    let leases = leases.as_object_mut().expect("made an object");
    leases.retain(|_, until| until.as_u64().is_some_and(|until| until > now));
    leases
}

/// When the item may go: with its last lease (at once, when none is left).
fn latest(leases: &Map<String, Value>, now: u64) -> u64 {
    leases.values().filter_map(Value::as_u64).max().unwrap_or(now + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sessions::tests::{alice, sessions};

    const WAIT: Duration = Duration::from_secs(120);

    #[tokio::test]
    async fn a_caller_has_a_bounded_number_of_waiting_calls() {
        let (sessions, _) = sessions();
        for call in 0..MAX_WAITING_CALLS {
            assert!(sessions.keep_waiting(&alice(), &format!("call-{call}"), WAIT).await.unwrap(), "lease {call}");
        }
        assert!(!sessions.keep_waiting(&alice(), "one-more", WAIT).await.unwrap(), "all taken");
        assert!(sessions.keep_waiting(&alice(), "call-3", WAIT).await.unwrap(), "a call holding one renews it");
        assert!(sessions.keep_waiting(&Principal::Anonymous, "call-0", WAIT).await.unwrap(), "another caller's own");
        sessions.stop_waiting(&alice(), "call-3").await;
        assert!(sessions.keep_waiting(&alice(), "one-more", WAIT).await.unwrap(), "one given back");
    }

    #[tokio::test]
    async fn calls_count_while_they_wait_not_per_window_and_a_dead_instances_lapse_with_their_wait() {
        let (sessions, clock) = sessions();
        for call in 0..MAX_WAITING_CALLS {
            assert!(sessions.keep_waiting(&alice(), &format!("call-{call}"), WAIT).await.unwrap());
        }
        // A window boundary counts for nothing: the ten still wait, renewed.
        for _ in 0..20 {
            clock.advance(60);
            for call in 0..MAX_WAITING_CALLS {
                assert!(sessions.keep_waiting(&alice(), &format!("call-{call}"), WAIT).await.unwrap());
            }
            assert!(!sessions.keep_waiting(&alice(), "newcomer", WAIT).await.unwrap(), "still ten waiting");
        }
        // The instance holding them dies: no renewal, no give-back. The
        // caller may ask again once their waits are surely over.
        clock.advance(WAIT.as_secs() + 1);
        assert!(!sessions.keep_waiting(&alice(), "newcomer", WAIT).await.unwrap(), "not before");
        clock.advance(1);
        assert!(sessions.keep_waiting(&alice(), "newcomer", WAIT).await.unwrap(), "one wait (and its grace) later");
    }
}
