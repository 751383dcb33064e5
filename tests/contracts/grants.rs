//! `GrantStore` (`authorization::contracts::grant_store`).

use authorization::{contracts::grant_store as suite, grants::InMemoryGrants};

#[tokio::test]
async fn in_memory() {
    suite(&InMemoryGrants::default()).await;
}

#[tokio::test]
async fn dynamodb() {
    let sdk = e2e::emulator::sdk().await;
    let table = e2e::emulator::fresh_table(&sdk).await;
    suite(&authorization::aws::DynamoGrants::new(aws_sdk_dynamodb::Client::new(&sdk), &table)).await;
}
