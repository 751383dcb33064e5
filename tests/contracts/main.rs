//! One suite of behaviour per port, run against every adapter of it: the
//! in-memory one (`cargo run`, unit tests) and the AWS one (DynamoDB, SQS)
//! on the emulator, as object_store runs one integration suite against
//! every backend. A behaviour the server relies on is written here once;
//! an adapter that differs fails its half.
//!
//! Every port takes the time as an argument, so nothing here waits.

mod feed;
mod handles;
mod quota;
mod redemption;
mod task_queue;
mod task_store;

use std::sync::Arc;

use e2e::emulator;
use mcp_aws::DynamoStore;

/// A fresh table on the emulator, with the definition `template.yaml` gives.
async fn dynamo() -> Arc<DynamoStore> {
    let sdk = emulator::sdk().await;
    let table = emulator::fresh_table(&sdk).await;
    Arc::new(DynamoStore::new(aws_sdk_dynamodb::Client::new(&sdk), table))
}

/// Seconds since the epoch: the adapters compare it with what they store.
fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970").as_secs()
}
