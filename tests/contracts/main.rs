//! One suite of behaviour per port, run against every adapter of it: the
//! in-memory one (`cargo run`, unit tests) and the AWS one (DynamoDB, SQS)
//! on the emulator, as object_store runs one integration suite against
//! every backend. A behaviour the server relies on is written here once;
//! an adapter that differs fails its half.
//!
//! The ports that expire things take the time as an argument, so no test
//! waits for a clock; only the SQS suite waits, for its own messages.

/// The two tests of a suite over the table: `in_memory` on `$memory`,
/// `dynamodb` on a fresh table of the emulator.
macro_rules! on_memory_and_dynamodb {
    ($suite:ident, $memory:expr) => {
        #[tokio::test]
        async fn in_memory() {
            $suite(&$memory).await;
        }

        #[tokio::test]
        async fn dynamodb() {
            $suite(super::dynamo().await.as_ref()).await;
        }
    };
}

mod feed;
mod grants;
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
