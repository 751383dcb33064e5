//! For the examples' tests: the starter on an ephemeral loopback port with
//! in-memory dependencies, called over HTTP with the end-to-end helpers.
// A fork that deleted the examples may not use every helper yet.
#![allow(dead_code)]

use std::{net::SocketAddr, sync::Arc};

use futures::future::BoxFuture;
use mcp_stateless::{
    Dependencies, EdgePolicy, Handles, McpEndpoint, Mode,
    clock::SystemClock,
    handles::{Change, HandleRecord, HandleStore, ItemKey, Lookup},
    storage::StoreError,
};
use serde_json::Value;

pub(crate) async fn serve() -> SocketAddr {
    serve_with(Dependencies::in_process()).await
}

pub(crate) async fn serve_with(deps: Dependencies) -> SocketAddr {
    e2e::spawn(McpEndpoint::new(crate::Server::new(deps.clone()), EdgePolicy::new(Mode::Local)).with_dependencies(&deps)).await
}

/// The starter with a handle store that is down (every call fails, as
/// DynamoDB does when unreachable).
pub(crate) async fn serve_with_handle_store_down() -> SocketAddr {
    let mut deps = Dependencies::in_process();
    deps.handles = Handles::new(Arc::new(DownStore), Arc::new(SystemClock));
    serve_with(deps).await
}

struct DownStore;

fn down<'a, T: Send + 'a>() -> BoxFuture<'a, Result<T, StoreError>> {
    Box::pin(async { Err(StoreError::Unavailable("injected: store down".into())) })
}

impl HandleStore for DownStore {
    fn create<'a>(&'a self, _: &'a ItemKey, _: &'a HandleRecord) -> BoxFuture<'a, Result<(), StoreError>> {
        down()
    }
    fn get<'a>(&'a self, _: &'a ItemKey, _: u64) -> BoxFuture<'a, Result<Lookup, StoreError>> {
        down()
    }
    fn replace<'a>(&'a self, _: &'a ItemKey, _: u64, _: &'a Value, _: u64, _: u64) -> BoxFuture<'a, Result<Lookup, StoreError>> {
        down()
    }
    fn apply<'a>(&'a self, _: &'a ItemKey, _: &'a Change, _: u64, _: u64) -> BoxFuture<'a, Result<Lookup, StoreError>> {
        down()
    }
    fn delete<'a>(&'a self, _: &'a ItemKey, _: Option<u64>, _: u64) -> BoxFuture<'a, Result<Lookup, StoreError>> {
        down()
    }
}
