//! One suite of behaviour per port (`mcp_stateless::contracts`, and the
//! authorization server's `authorization::contracts`), run against every
//! adapter of it: the in-memory one (`cargo run`, unit tests) and the AWS
//! one (DynamoDB, SQS) on the emulator, as object_store runs one
//! integration suite against every backend. A fork's own adapter runs the
//! same suites from its own tests.

/// The two tests of a suite over the table: `in_memory` on `$memory`,
/// `dynamodb` on a fresh table of the emulator.
macro_rules! on_memory_and_dynamodb {
    ($suite:path, $memory:expr) => {
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
