//! `ChangeFeed` (`mcp_stateless::contracts::change_feed`).

use mcp_stateless::{contracts, subscriptions::InMemoryFeed};

on_memory_and_dynamodb!(contracts::change_feed, InMemoryFeed::default());
