//! A new table on the DynamoDB Local that `scripts/bench.sh` starts, for the benches that
//! measure the store (`AGUI_BENCH_DYNAMODB_ENDPOINT`).
#![allow(clippy::unwrap_used)]

use agui_lambda::testing::store::DynamoStore;
use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use std::time::Duration;

/// A client of the DynamoDB at `endpoint`, once it answers, and the name of a table made for
/// this bench on it.
pub(crate) async fn fresh_table(endpoint: &str) -> (aws_sdk_dynamodb::Client, String) {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("bench", "bench", None, None, "bench"))
        .endpoint_url(endpoint)
        .build();
    let client = aws_sdk_dynamodb::Client::from_conf(config);
    // DynamoDB Local takes a few seconds to start.
    for _ in 0..150 {
        if client.list_tables().send().await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let table = format!("bench-{}", uuid::Uuid::new_v4().simple());
    DynamoStore::create_table(&client, &table).await.unwrap();
    (client, table)
}
