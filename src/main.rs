//! Wiring only: telemetry, configuration, the app, then the Lambda runtime or the local server.

use agui_lambda::{api, config::Config, startup, telemetry};
use std::sync::Arc;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    telemetry::init();
    let config = Config::from_env()?;
    if std::env::args().nth(1).as_deref() == Some("create-table") {
        return create_table(&config).await;
    }
    let app = Arc::new(startup::build(&config).await?);
    tracing::info!(setup = %app.describe(), "agui-lambda ready to start");
    if matches!(config.model, agui_lambda::config::ModelChoice::Demo) {
        tracing::warn!(
            "no OPENAI_API_KEY or OPENAI_BASE_URL: answering with the scripted demo model"
        );
    }
    let under_lambda = std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some();
    match app.auth_mode() {
        "none" => tracing::warn!(
            "AUTH_MODE=none: every caller is `anonymous` and can read and continue every thread; \
             use AUTH_MODE=api-key, jwt or iam for anything but local development"
        ),
        "iam" if !under_lambda => tracing::warn!(
            "AUTH_MODE=iam only works behind an AWS_IAM Function URL: every local request gets 401"
        ),
        _ => {}
    }
    if under_lambda {
        return api::lambda::run(app).await;
    }
    let (addr, server) = api::local::bind(app, config.listen).await?;
    tracing::info!("listening on http://{addr} (POST /agent, GET /threads/{{id}})");
    tokio::select! {
        _ = server => {}
        _ = tokio::signal::ctrl_c() => tracing::info!("shutting down"),
    }
    Ok(())
}

/// `agui-lambda create-table`: creates `THREADS_TABLE` as template.yaml declares it, for
/// DynamoDB Local during development (on AWS the template creates it).
async fn create_table(config: &Config) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let table = config
        .threads_table
        .as_deref()
        .ok_or("set THREADS_TABLE to the table to create")?;
    let aws = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    agui_lambda::store::DynamoStore::create_table(&aws_sdk_dynamodb::Client::new(&aws), table)
        .await?;
    tracing::info!(table, "table created");
    Ok(())
}
