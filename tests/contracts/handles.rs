//! `HandleStore` (`mcp_stateless::contracts::handle_store`).

use mcp_stateless::{contracts, handles::memory::InMemoryHandleStore};

on_memory_and_dynamodb!(contracts::handle_store, InMemoryHandleStore::default());
