//! `CreationQuota` (`mcp_stateless::contracts::creation_quota`).

use mcp_stateless::{contracts, quota::InMemoryQuota};

on_memory_and_dynamodb!(contracts::creation_quota, InMemoryQuota::default());
