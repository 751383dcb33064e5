//! One suite of behaviour per port, for every adapter of it: the in-memory
//! ones here and the AWS ones in `mcp-aws` run them (the test crate's
//! `tests/contracts/`), and so can a fork's own adapter, as object_store
//! runs one integration suite against every backend. A behaviour the
//! server relies on is written here once; an adapter that differs fails.
//!
//! Behind the `contracts` feature: a fork writing, say, a handle store of
//! its own adds `mcp-stateless = { ..., features = ["contracts"] }` to its
//! dev-dependencies and runs the suite on its store in a test, as here on
//! the in-memory one:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use mcp_stateless::{contracts, handles::memory::InMemoryHandleStore};
//!
//! contracts::handle_store(&InMemoryHandleStore::default()).await;
//! # }
//! ```
//!
//! The ports that expire things take the time as an argument, so no suite
//! waits for a clock; only the queue's waits, for its own messages. Each
//! panics, as a test does, on the first behaviour that differs.

mod feed;
mod handles;
mod quota;
mod redemption;
mod task_queue;
mod task_store;

pub use feed::change_feed;
pub use handles::handle_store;
pub use quota::creation_quota;
pub use redemption::redemption_ledger;
pub use task_queue::task_queue;
pub use task_store::task_store;

/// Seconds since the epoch: the adapters compare it with what they store.
fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970").as_secs()
}
