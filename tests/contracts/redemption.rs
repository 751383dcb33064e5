//! `RedemptionLedger` (`mcp_stateless::contracts::redemption_ledger`).

use mcp_stateless::{contracts, sealed::redemption::InMemoryLedger};

on_memory_and_dynamodb!(contracts::redemption_ledger, InMemoryLedger::default());
