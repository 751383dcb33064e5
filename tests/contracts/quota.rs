//! `CreationQuota` (`mcp_stateless::contracts::creation_quota`), and what
//! the DynamoDB adapter keeps of a window.

use mcp_stateless::{contracts, quota::InMemoryQuota};

on_memory_and_dynamodb!(contracts::creation_quota, InMemoryQuota::default());

/// A give-back leaves the counter's window end as its take set it: a
/// task's place is given back by its partition key alone (`expires_at`
/// 0), and that TTL in the past would have DynamoDB delete the count.
#[tokio::test]
async fn a_give_back_keeps_the_counters_window_end() {
    use mcp_aws::dynamo::{PARTITION_KEY, TTL_ATTRIBUTE};
    use mcp_stateless::quota::{CreationQuota, QuotaKey};
    let sdk = e2e::emulator::sdk().await;
    let table = e2e::emulator::fresh_table(&sdk).await;
    let client = aws_sdk_dynamodb::Client::new(&sdk);
    let store = mcp_aws::DynamoStore::new(client.clone(), table.clone());
    let now = jsonwebtoken::get_current_timestamp();
    let key = QuotaKey::new("jwt:alice", "tsk", std::time::Duration::from_secs(3_600), now);
    assert!(store.take(&key, 3).await.unwrap() && store.take(&key, 3).await.unwrap());
    let mut by_name_alone = key.clone();
    by_name_alone.expires_at = 0;
    store.give_back(&by_name_alone).await.unwrap();
    let item = client
        .get_item()
        .table_name(&table)
        .key(PARTITION_KEY, aws_sdk_dynamodb::types::AttributeValue::S(key.partition_key.clone()))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
        .unwrap();
    assert_eq!(item["count"].as_n().map(String::as_str), Ok("1"), "given back once");
    assert_eq!(item[TTL_ATTRIBUTE].as_n(), Ok(&key.expires_at.to_string()), "the window's end, as the take set it");
}
