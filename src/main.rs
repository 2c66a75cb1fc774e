//! Wiring only: telemetry, configuration, the app, then the Lambda runtime or the local server.

use agui_lambda::{api, config::Config, startup, telemetry};
use std::sync::Arc;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    telemetry::init();
    let config = Config::from_env()?;
    let app = Arc::new(startup::build(&config).await?);
    tracing::info!(setup = %app.describe(), "agui-lambda ready to start");
    if matches!(config.model, agui_lambda::config::ModelChoice::Demo) {
        tracing::warn!(
            "no OPENAI_API_KEY or OPENAI_BASE_URL: answering with the scripted demo model"
        );
    }
    if std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some() {
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
