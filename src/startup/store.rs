//! Start-up's stores: the thread store (DynamoDB when `THREADS_TABLE` is set, else memory), its
//! table checked or created, and the v1 agent API's attachments bucket.

use super::StartupError;
use crate::config::Config;
#[cfg(feature = "aws")]
use crate::store::DynamoStore;
use crate::store::{MemoryStore, ThreadStore};
use std::sync::Arc;
#[cfg(feature = "aws")]
use std::time::Duration;

/// The DynamoDB client of the thread store for `table`: region, credentials and endpoint
/// (`AWS_ENDPOINT_URL_DYNAMODB`) from the standard AWS configuration, local placeholders for
/// DynamoDB Local; `check` names a missing region or credentials before the first call.
#[cfg(feature = "aws")]
pub(crate) async fn dynamo_client(
    table: &str,
    check: bool,
) -> Result<aws_sdk_dynamodb::Client, StartupError> {
    let environment = crate::store::dynamo::AwsEnvironment::from_process();
    crate::store::dynamo::connect(table, &environment, check)
        .await
        .map_err(|error| StartupError::Aws(error.to_string()))
}

/// DynamoDB when `THREADS_TABLE` is set, else memory.
pub async fn store_from_config(config: &Config) -> Result<Arc<dyn ThreadStore>, StartupError> {
    match &config.store.threads_table {
        #[cfg(feature = "aws")]
        Some(table) => Ok(Arc::new(
            DynamoStore::new(
                dynamo_client(table, false).await?,
                table.clone(),
                config.store.thread_ttl_days,
            )
            .with_events_ttl_hours(config.store.run_events_ttl_hours),
        )),
        #[cfg(not(feature = "aws"))]
        Some(_) => Err(StartupError::NotBuilt {
            setting: "THREADS_TABLE (DynamoDB)",
        }),
        None => Ok(Arc::new(
            MemoryStore::new().with_events_ttl_hours(config.store.run_events_ttl_hours),
        )),
    }
}

/// With `THREADS_TABLE` set, checks with one `DescribeTable` call that the table exists with
/// the key schema of `template.yaml`, so a missing table stops the local server at start-up
/// with the command that creates it instead of failing every run with 503. (Under Lambda the
/// template creates the table, and the function's role may not describe it.)
#[cfg(feature = "aws")]
pub(crate) async fn check_threads_table(config: &Config) -> Result<(), StartupError> {
    let Some(table) = &config.store.threads_table else {
        return Ok(());
    };
    DynamoStore::check_table(&dynamo_client(table, true).await?, table)
        .await
        .map_err(|err| explain_table_error(err, table))
}

/// `agui-lambda create-table`: creates `THREADS_TABLE` as `template.yaml` declares it, or
/// accepts the existing table when its key schema is that one.
#[cfg(feature = "aws")]
pub(crate) async fn create_threads_table(
    config: &Config,
) -> Result<crate::store::dynamo::TableSetup, StartupError> {
    let table = config.store.threads_table.as_deref().ok_or_else(|| {
        StartupError::Table("set THREADS_TABLE to the name of the table to create".to_owned())
    })?;
    DynamoStore::create_table(&dynamo_client(table, true).await?, table)
        .await
        .map_err(|err| explain_table_error(err, table))
}

/// The table error, with what to do about it: the command that creates a missing table, the
/// endpoint that did not answer.
#[cfg(feature = "aws")]
fn explain_table_error(err: crate::store::dynamo::TableError, table: &str) -> StartupError {
    use crate::store::dynamo::TableError;
    let endpoint = std::env::var("AWS_ENDPOINT_URL_DYNAMODB")
        .or_else(|_| std::env::var("AWS_ENDPOINT_URL"))
        .ok();
    let at = endpoint
        .as_deref()
        .map(|url| format!(" at {url}"))
        .unwrap_or_default();
    StartupError::Table(match err {
        TableError::Missing { .. } => format!(
            "table {table} does not exist{at}. Create it with: THREADS_TABLE={table}{} cargo run -- create-table \
             (on AWS, template.yaml creates it; unset THREADS_TABLE to keep threads in memory)",
            endpoint
                .as_deref()
                .map(|url| format!(" AWS_ENDPOINT_URL_DYNAMODB={url}"))
                .unwrap_or_default()
        ),
        TableError::Call { .. } if endpoint.is_some() => {
            format!("{err}. Is DynamoDB Local running{at}? (docs/threads-and-quotas.md)")
        }
        other => other.to_string(),
    })
}

/// Without the `aws` feature there is no table: [`store_from_config`] refuses `THREADS_TABLE`.
#[cfg(not(feature = "aws"))]
pub(crate) async fn check_threads_table(_config: &Config) -> Result<(), StartupError> {
    Ok(())
}

/// The v1 agent API's image uploads when `ATTACHMENTS_BUCKET` is set: presigned with the function's own
/// AWS credentials and region (`ATTACHMENTS_S3_ENDPOINT` for an S3-compatible server).
#[cfg(feature = "aws")]
pub(crate) async fn blobs_from_config(
    config: &Config,
) -> Result<Option<Arc<crate::store::Blobs>>, StartupError> {
    let Some(bucket) = &config.store.attachments_bucket else {
        return Ok(None);
    };
    let aws = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let region = aws
        .region()
        .map(ToString::to_string)
        .ok_or_else(|| StartupError::Attachments("no AWS region (set AWS_REGION)".to_owned()))?;
    let credentials = aws
        .credentials_provider()
        .ok_or_else(|| StartupError::Attachments("no AWS credentials provider".to_owned()))?;
    let mut settings = crate::store::blobs::BlobSettings::new(bucket.clone(), region);
    settings.endpoint = config.store.attachments_endpoint.clone();
    settings.max_bytes = config.store.attachment_max_bytes;
    let http = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(2))
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|error| StartupError::HttpClient(error.to_string()))?;
    Ok(Some(Arc::new(crate::store::Blobs::new(
        settings,
        credentials,
        http,
    ))))
}

#[cfg(not(feature = "aws"))]
pub(crate) async fn blobs_from_config(
    config: &Config,
) -> Result<Option<Arc<crate::store::Blobs>>, StartupError> {
    match &config.store.attachments_bucket {
        Some(_) => Err(StartupError::NotBuilt {
            setting: "ATTACHMENTS_BUCKET",
        }),
        None => Ok(None),
    }
}
