//! Sealed state for multi-round tool calls: what a tool hands the client as
//! `requestState` comes back attacker-controlled, so it is sealed (AEAD
//! under a KMS data key in Lambda) and bound to the caller, the request and
//! an expiry. The sharp parts are [`request_state`]; tools use [`mrtr`].

pub mod mrtr;
pub mod redemption;
pub mod request_state;
