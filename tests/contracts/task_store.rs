//! `TaskStore` (`mcp_stateless::contracts::task_store`).

use mcp_stateless::{contracts, tasks::store::memory::InMemoryTaskStore};

on_memory_and_dynamodb!(contracts::task_store, InMemoryTaskStore::default());
