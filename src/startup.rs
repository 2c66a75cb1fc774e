//! Builds the application from configuration, once per cold start, in one way ([`AppBuilder`]):
//! the models (`models.rs`), the thread store (`store.rs`), the server tools (built-in, yours,
//! and remote MCP servers', `tools.rs`), the sub-agents' secrets (`subagents.rs`), then the
//! agent and the app (`app.rs`). Here: start-up's errors, secrets and the authenticator.

use crate::auth::{ApiKeys, AuthConfigError, Authenticator, JwtVerifier};
use crate::config::{AuthConfig, ExposeSecret, JwksSource, SecretString};
use std::time::Duration;

mod app;
mod models;
mod store;
#[path = "startup/subagents.rs"]
mod subagents;
mod tools;

pub use app::AppBuilder;
#[cfg(any(test, feature = "test-utils"))]
pub use models::{Models, model_from_config, models_from_config, with_retry_policy};
pub(crate) use store::check_threads_table;
#[cfg(feature = "aws")]
pub(crate) use store::create_threads_table;
#[cfg(any(test, feature = "test-utils"))]
pub use store::store_from_config;

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("could not build the HTTP client: {0}")]
    HttpClient(String),
    #[error(transparent)]
    Tools(#[from] crate::agent::tools::RegistryError),
    #[error("authentication is misconfigured: {0}")]
    Auth(#[from] AuthConfigError),
    #[error("could not read the JWKS from {source_name}: {reason}")]
    Jwks { source_name: String, reason: String },
    #[error("could not read secret {secret_id} from Secrets Manager: {reason}")]
    Secret { secret_id: String, reason: String },
    #[error("{setting} needs the `aws` cargo feature, which this build leaves out")]
    NotBuilt { setting: &'static str },
    /// A setting that needs AWS, without the AWS settings it needs (named in the message).
    #[error("{0}")]
    Aws(String),
    /// The threads table is missing, unreachable or not the one `template.yaml` declares.
    #[error("THREADS_TABLE: {0}")]
    Table(String),
    /// Two tools would be offered to the model under one name.
    #[error(
        "MCP_SERVERS: server {server} offers the tool {remote} as {name}, a name another tool \
         already has (a built-in tool, one of yours or another server's); give the server \
         another name"
    )]
    ToolNameTaken {
        server: String,
        remote: String,
        name: String,
    },
    /// A `headers_secret_id` secret is not what `MCP_SERVERS` expects.
    #[error("MCP_SERVERS: {0}")]
    Mcp(#[from] crate::mcp::McpConfigError),
    /// A profile names a tool no server tool has, or cannot be set up.
    #[error("AGENT_PROFILES: {0}")]
    Profiles(#[from] crate::agent::ProfileSetupError),
    #[error("ATTACHMENTS_BUCKET: {0}")]
    Attachments(String),
    #[error("detached runs cannot invoke this function: {0}")]
    SelfInvoke(String),
    /// A model a setting names cannot be called.
    #[error("{0}")]
    Model(String),
}

/// Reads a secret's string once, at cold start. The value never reaches a log.
#[cfg(not(feature = "aws"))]
async fn read_secret(_secret_id: &str) -> Result<SecretString, StartupError> {
    Err(StartupError::NotBuilt {
        setting: "a *_SECRET_ID setting (Secrets Manager)",
    })
}

/// Reads a secret's string once, at cold start. The value never reaches a log.
#[cfg(feature = "aws")]
async fn read_secret(secret_id: &str) -> Result<SecretString, StartupError> {
    let aws = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let client = aws_sdk_secretsmanager::Client::new(&aws);
    let failure = |reason: String| StartupError::Secret {
        secret_id: secret_id.to_owned(),
        reason,
    };
    let output = client
        .get_secret_value()
        .secret_id(secret_id)
        .send()
        .await
        .map_err(|err| {
            failure(format!(
                "{}",
                aws_sdk_secretsmanager::error::DisplayErrorContext(err)
            ))
        })?;
    output
        .secret_string()
        .map(SecretString::from)
        .ok_or_else(|| failure("the secret has no string value".to_owned()))
}

/// Builds the authenticator, fetching keys and JWKS once per cold start.
pub async fn authenticator(auth: &AuthConfig) -> Result<Authenticator, StartupError> {
    Ok(match auth {
        AuthConfig::None => Authenticator::None,
        AuthConfig::Iam => Authenticator::Iam,
        AuthConfig::ApiKey { keys, secret_id } => {
            let from_env = keys
                .as_ref()
                .map(|keys| ApiKeys::parse(keys.expose_secret()))
                .transpose()?;
            let from_secret = match secret_id {
                Some(id) => Some(ApiKeys::parse(read_secret(id).await?.expose_secret())?),
                None => None,
            };
            match (from_env, from_secret) {
                (Some(env), Some(secret)) => Authenticator::ApiKeys(env.merge(secret)),
                (Some(keys), None) | (None, Some(keys)) => Authenticator::ApiKeys(keys),
                (None, None) => return Err(AuthConfigError::NoKeys.into()),
            }
        }
        AuthConfig::Jwt {
            issuer,
            audience,
            jwks,
            leeway_secs,
        } => {
            let text = match jwks {
                JwksSource::File(path) => {
                    std::fs::read_to_string(path).map_err(|err| StartupError::Jwks {
                        source_name: path.display().to_string(),
                        reason: err.to_string(),
                    })?
                }
                JwksSource::Url(url) => fetch_jwks(url).await?,
            };
            Authenticator::Jwt(Box::new(JwtVerifier::from_jwks(
                &text,
                issuer,
                audience,
                *leeway_secs,
            )?))
        }
    })
}

async fn fetch_jwks(url: &str) -> Result<String, StartupError> {
    let failure = |reason: String| StartupError::Jwks {
        source_name: url.to_owned(),
        reason,
    };
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .map_err(|err| failure(err.to_string()))?;
    let response = http
        .get(url)
        .send()
        .await
        .map_err(|err| failure(err.to_string()))?;
    if !response.status().is_success() {
        return Err(failure(format!("HTTP {}", response.status())));
    }
    response
        .text()
        .await
        .map_err(|err| failure(err.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::App;
    use crate::config::Config;
    use crate::model::ModelProvider;
    use crate::store::MemoryStore;
    use std::sync::Arc;

    fn config(pairs: &[(&str, &str)]) -> Config {
        Config::from_map(
            &pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
        .unwrap()
    }

    async fn app(config: &Config, models: Models) -> Result<App, StartupError> {
        AppBuilder::new(config)
            .models(models)
            .store(Arc::new(MemoryStore::new()))
            .auth(Authenticator::None)
            .build()
            .await
    }

    #[tokio::test]
    async fn each_profile_model_is_one_provider_of_the_configured_kind() {
        let config = config(&[
            ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
            ("AGENT_MODEL", "base-model"),
            (
                "AGENT_PROFILES",
                r#"{"a": {"model": "m1"}, "b": {"model": "m1"}, "c": {"model": "base-model"},
                    "d": {"systemPrompt": "Be terse."}}"#,
            ),
        ]);
        let models = models_from_config(&config).await.unwrap();
        assert_eq!(models.default.identity().model, "base-model");
        assert_eq!(models.profiles["a"].identity().provider, "openai");
        assert_eq!(models.profiles["a"].identity().model, "m1");
        // One provider per model name: the same model shares it, the default's included.
        assert!(Arc::ptr_eq(&models.profiles["a"], &models.profiles["b"]));
        assert!(Arc::ptr_eq(&models.profiles["c"], &models.default));
        assert!(!models.profiles.contains_key("d"));
        let described = app(&config, models).await.unwrap().describe();
        assert!(
            described.contains("agent profiles: a (m1), b (m1), c (base-model), d (base-model)"),
            "{described}"
        );
    }

    #[tokio::test]
    async fn profiles_and_the_summariser_name_models_of_any_configured_provider() {
        let configured = config(&[
            ("OPENAI_API_KEY", "sk-test"),
            ("AGENT_MODEL", "gpt-5"),
            ("ANTHROPIC_API_KEY", "sk-ant-test"),
            ("GEMINI_API_KEY", "gemini-test"),
            ("CONTEXT_SUMMARY_MODEL", "gemini:gemini-2.5-flash-lite"),
            ("MODEL_FALLBACKS", "anthropic:claude-haiku-4-5"),
            (
                "AGENT_PROFILES",
                r#"{"research": {"model": "anthropic:claude-sonnet-4-5", "reasoningEffort": "high"},
                    "fast": {"reasoningEffort": "minimal"}, "plain": {}}"#,
            ),
        ]);
        let models = models_from_config(&configured).await.unwrap();
        let named = |model: &Arc<dyn ModelProvider>| {
            let identity = model.identity();
            format!("{}:{}", identity.provider, identity.model)
        };
        assert_eq!(named(&models.default), "openai:gpt-5");
        assert_eq!(
            named(&models.profiles["research"]),
            "anthropic:claude-sonnet-4-5"
        );
        // Another effort is another provider of the same model.
        assert_eq!(named(&models.profiles["fast"]), "openai:gpt-5");
        assert!(!Arc::ptr_eq(&models.profiles["fast"], &models.default));
        assert!(!models.profiles.contains_key("plain"));
        assert_eq!(
            named(models.summarizer.as_ref().unwrap()),
            "gemini:gemini-2.5-flash-lite"
        );
        assert!(
            models
                .default
                .describe()
                .ends_with("falling back to anthropic:claude-haiku-4-5"),
            "{}",
            models.default.describe()
        );
        let unconfigured = config(&[
            ("OPENAI_API_KEY", "sk-test"),
            (
                "AGENT_PROFILES",
                r#"{"x": {"model": "gemini:gemini-2.5-flash"}}"#,
            ),
        ]);
        let error = models_from_config(&unconfigured).await.err().unwrap();
        assert!(
            error
                .to_string()
                .starts_with("AGENT_PROFILES: profile x: model names gemini:gemini-2.5-flash, but the gemini provider is not configured"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn a_profile_tool_no_server_tool_has_stops_start_up() {
        let config = config(&[(
            "AGENT_PROFILES",
            r#"{"support": {"tools": ["get_current_time", "refund"]}}"#,
        )]);
        let models = models_from_config(&config).await.unwrap();
        let error = app(&config, models).await.err().unwrap();
        assert_eq!(
            error.to_string(),
            "AGENT_PROFILES: profile support: no server tool is named refund"
        );
    }
}
