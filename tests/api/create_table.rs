//! `agui-lambda create-table` and the start-up table check, as a developer meets them: the real
//! binary against DynamoDB Local, with the environment the README's local DynamoDB recipe sets.

use crate::dynamo_local;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
};
use std::process::Output;
use std::time::Duration;

/// Runs the binary with `args` against DynamoDB Local and `table`; gives up after 60 s.
async fn agui_lambda(args: &[&str], table: &str) -> Output {
    agui_lambda_with(
        args,
        table,
        &[
            ("AWS_REGION", "us-east-1"),
            ("AWS_ACCESS_KEY_ID", "local"),
            ("AWS_SECRET_ACCESS_KEY", "local"),
            ("AWS_EC2_METADATA_DISABLED", "true"),
        ],
    )
    .await
}

/// The same with `aws` as the only AWS settings besides the table and its endpoint.
async fn agui_lambda_with(args: &[&str], table: &str, aws: &[(&str, &str)]) -> Output {
    let endpoint = dynamo_local::endpoint().await;
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_agui-lambda"));
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("PORT", "0")
        .env("THREADS_TABLE", table)
        .env("AWS_ENDPOINT_URL_DYNAMODB", endpoint)
        .env("RUST_LOG", "info")
        .kill_on_drop(true);
    for (name, value) in aws {
        command.env(name, value);
    }
    let command = command.output();
    tokio::time::timeout(Duration::from_secs(60), command)
        .await
        .expect("agui-lambda exits within 60 s")
        .unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn fresh_name() -> String {
    format!("threads-{}", uuid::Uuid::new_v4().simple())
}

#[tokio::test]
async fn create_table_twice_creates_then_accepts_the_existing_table() {
    let table = fresh_name();

    let first = agui_lambda(&["create-table"], &table).await;
    assert!(
        first.status.success(),
        "first run failed:\n{}",
        text(&first)
    );
    assert!(text(&first).contains("table created"), "{}", text(&first));

    let second = agui_lambda(&["create-table"], &table).await;
    assert!(
        second.status.success(),
        "second run failed:\n{}",
        text(&second)
    );
    let said = text(&second);
    assert!(said.contains("table exists"), "{said}");
    assert!(!said.contains("ResourceInUse"), "{said}");

    let client = dynamo_local::client(dynamo_local::endpoint().await);
    let ttl = client
        .describe_time_to_live()
        .table_name(&table)
        .send()
        .await
        .unwrap();
    assert_eq!(
        ttl.time_to_live_description().unwrap().attribute_name(),
        Some("expiresAt")
    );
}

/// As docs/threads-and-quotas.md gives it: the table and a loopback endpoint, no AWS settings.
#[tokio::test]
async fn dynamodb_local_needs_nothing_but_the_table_and_its_endpoint() {
    let table = fresh_name();
    let created = agui_lambda_with(&["create-table"], &table, &[]).await;
    assert!(created.status.success(), "{}", text(&created));
    assert!(
        text(&created).contains("table created"),
        "{}",
        text(&created)
    );
    assert!(
        !text(&created).contains("IMDS"),
        "no instance metadata asked: {}",
        text(&created)
    );
}

#[tokio::test]
async fn create_table_refuses_a_table_with_another_key_schema() {
    let table = fresh_name();
    let client = dynamo_local::client(dynamo_local::endpoint().await);
    client
        .create_table()
        .table_name(&table)
        .billing_mode(BillingMode::PayPerRequest)
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("id")
                .key_type(KeyType::Hash)
                .build()
                .unwrap(),
        )
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("id")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();

    let output = agui_lambda(&["create-table"], &table).await;
    assert!(!output.status.success(), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "table {table} exists but does not match template.yaml: its key schema is (id HASH S), not (pk HASH S, sk RANGE S)"
        )),
        "{stderr}"
    );

    // The server refuses to start on it too.
    let server = agui_lambda(&[], &table).await;
    assert!(!server.status.success(), "{}", text(&server));
    assert!(
        String::from_utf8_lossy(&server.stderr).contains("does not match template.yaml"),
        "{}",
        text(&server)
    );
}

#[tokio::test]
async fn the_server_stops_at_start_up_when_the_table_is_missing_and_says_how_to_create_it() {
    let table = fresh_name();
    let output = agui_lambda(&[], &table).await;
    assert!(!output.status.success(), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let endpoint = dynamo_local::endpoint().await;
    assert!(
        stderr.contains(&format!("table {table} does not exist at {endpoint}")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "THREADS_TABLE={table} AWS_ENDPOINT_URL_DYNAMODB={endpoint} cargo run -- create-table"
        )),
        "{stderr}"
    );

    // Once created, the same command starts the server (it is stopped by the timeout's drop).
    let created = agui_lambda(&["create-table"], &table).await;
    assert!(created.status.success(), "{}", text(&created));
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_agui-lambda"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("PORT", "0")
        .env("THREADS_TABLE", &table)
        .env("AWS_ENDPOINT_URL_DYNAMODB", endpoint)
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "local")
        .env("AWS_SECRET_ACCESS_KEY", "local")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = server.stdout.take().unwrap();
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
    let listening = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("listening on http://") {
                return true;
            }
        }
        false
    })
    .await
    .unwrap_or(false);
    assert!(listening, "the server did not start once the table existed");
}
