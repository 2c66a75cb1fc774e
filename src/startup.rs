//! Builds the application from configuration: the model provider, the thread store and the
//! agent. Called once per cold start.

use crate::agent::{Agent, ToolRegistry};
use crate::api::{ApiSettings, App};
use crate::config::{Config, ModelChoice};
use crate::model::ModelProvider;
use crate::model::openai::{OpenAiProvider, OpenAiSettings};
use crate::model::scripted::DemoModel;
use crate::store::{DynamoStore, MemoryStore, ThreadStore};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("could not build the HTTP client: {0}")]
    HttpClient(String),
    #[error(transparent)]
    Tools(#[from] crate::agent::tools::RegistryError),
}

pub fn model_from_config(config: &Config) -> Result<Arc<dyn ModelProvider>, StartupError> {
    Ok(match config.model {
        ModelChoice::OpenAi => {
            let http = reqwest::Client::builder()
                .connect_timeout(config.model_connect_timeout)
                .tcp_nodelay(true)
                .pool_idle_timeout(Duration::from_secs(60))
                .build()
                .map_err(|err| StartupError::HttpClient(err.to_string()))?;
            Arc::new(OpenAiProvider::new(
                http,
                OpenAiSettings {
                    base_url: config.openai_base_url.clone(),
                    api_key: config.openai_api_key.clone(),
                    model: config.agent_model.clone(),
                    max_retries: config.model_max_retries,
                    max_backoff: Duration::from_secs(20),
                },
            ))
        }
        ModelChoice::Demo => Arc::new(DemoModel {
            word_delay: Duration::from_millis(30),
        }),
    })
}

/// DynamoDB when `THREADS_TABLE` is set (region, credentials and endpoint from the standard
/// AWS configuration), else memory.
pub async fn store_from_config(config: &Config) -> Arc<dyn ThreadStore> {
    match &config.threads_table {
        Some(table) => {
            // Bounded, so a store that is down answers 503 in seconds instead of hanging a run.
            let timeouts = aws_config::timeout::TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(2))
                .operation_attempt_timeout(Duration::from_secs(5))
                .operation_timeout(Duration::from_secs(12))
                .build();
            let aws = aws_config::defaults(aws_config::BehaviorVersion::latest())
                .timeout_config(timeouts)
                .load()
                .await;
            Arc::new(DynamoStore::new(
                aws_sdk_dynamodb::Client::new(&aws),
                table.clone(),
                config.thread_ttl_days,
            ))
        }
        None => Arc::new(MemoryStore::new()),
    }
}

/// The app from its parts; tests pass a scripted model or their own store.
pub fn build_app(
    config: &Config,
    model: Arc<dyn ModelProvider>,
    store: Arc<dyn ThreadStore>,
) -> Result<App, StartupError> {
    let tools = Arc::new(ToolRegistry::with_builtins()?);
    let agent = Agent::new(model, tools, store, config.agent.clone());
    Ok(App::new(
        agent,
        ApiSettings {
            limits: config.limits.clone(),
            ping_interval: config.ping_interval,
            run_timeout: config.run_timeout,
            deadline_margin: config.deadline_margin,
        },
    ))
}

pub async fn build(config: &Config) -> Result<App, StartupError> {
    build_app(
        config,
        model_from_config(config)?,
        store_from_config(config).await,
    )
}
