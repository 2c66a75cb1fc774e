//! Wiring only: telemetry, configuration, the app, then the Lambda runtime or the local server.

use agui_lambda::config::{Config, ModelChoice, RuntimeFlavor};
use agui_lambda::{api, startup, telemetry};
use std::process::ExitCode;
use std::sync::Arc;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn main() -> ExitCode {
    telemetry::init();
    let outcome = Config::from_env()
        .map_err(BoxError::from)
        .and_then(|config| Ok((runtime(config.runtime)?, config)))
        .and_then(|(runtime, config)| runtime.block_on(run(config)));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // Display, not Debug: the message is written for the person who started the binary.
            eprintln!("Error: {err}");
            ExitCode::FAILURE
        }
    }
}

fn runtime(flavor: RuntimeFlavor) -> std::io::Result<tokio::runtime::Runtime> {
    match flavor {
        RuntimeFlavor::CurrentThread => tokio::runtime::Builder::new_current_thread(),
        RuntimeFlavor::MultiThread => tokio::runtime::Builder::new_multi_thread(),
    }
    .enable_all()
    .build()
}

async fn run(config: Config) -> Result<(), BoxError> {
    if std::env::args().nth(1).as_deref() == Some("create-table") {
        return create_table(&config).await;
    }
    let under_lambda = std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some();
    if !under_lambda {
        startup::check_threads_table(&config).await?;
    }
    let app = Arc::new(startup::build(&config).await?);
    tracing::info!(setup = %app.describe(), runtime = ?config.runtime, "agui-lambda ready to start");
    if matches!(config.model.provider, ModelChoice::Demo) {
        tracing::warn!(
            "no OPENAI_API_KEY or OPENAI_BASE_URL: answering with the scripted demo model"
        );
    }
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
    let (addr, server) = api::local::bind(app, config.http.listen).await?;
    tracing::info!("listening on http://{addr} (POST /agent, GET /threads/{{id}})");
    tokio::select! {
        _ = server => {}
        _ = tokio::signal::ctrl_c() => tracing::info!("shutting down"),
    }
    Ok(())
}

/// `agui-lambda create-table`: creates `THREADS_TABLE` as template.yaml declares it, for
/// DynamoDB Local during development (on AWS the template creates it). Safe to run again: an
/// existing table with the same key schema is fine, one with another is an error.
#[cfg(feature = "aws")]
async fn create_table(config: &Config) -> Result<(), BoxError> {
    use agui_lambda::store::dynamo::TableSetup;
    let table = config.store.threads_table.as_deref().unwrap_or_default();
    match startup::create_threads_table(config).await? {
        TableSetup::Created => tracing::info!(table, "table created"),
        TableSetup::Existed => tracing::info!(table, "table exists, with the expected key schema"),
    }
    Ok(())
}

#[cfg(not(feature = "aws"))]
async fn create_table(_config: &Config) -> Result<(), BoxError> {
    Err("create-table needs the `aws` cargo feature, which this build leaves out".into())
}
