//! Builds the application from configuration: the model provider, the thread store, the server
//! tools (built-in, yours, and remote MCP servers') and the agent. Called once per cold start.

use crate::agent::{Agent, AgentProfile, AgentSettings, ToolRegistry};
use crate::api::{ApiSettings, App};
use crate::auth::{ApiKeys, AuthConfigError, Authenticator, JwtVerifier};
use crate::config::OpenAiApi;
use crate::config::{
    AuthConfig, Config, ExposeSecret, JwksSource, ModelChoice, PromptCache, ReasoningEffort,
    SecretString,
};
use crate::model::ModelProvider;
use crate::model::demo::DemoModel;
use crate::model::openai::{OpenAiProvider, OpenAiSettings, ResponsesProvider, ResponsesSettings};
#[cfg(feature = "aws")]
use crate::store::DynamoStore;
use crate::store::{MemoryStore, ThreadStore};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

#[path = "startup/subagents.rs"]
mod subagents;

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

#[cfg(any(test, feature = "test-utils"))]
/// The configured model (`MODEL_PROVIDER`, `AGENT_MODEL`), with its fallbacks.
pub async fn model_from_config(config: &Config) -> Result<Arc<dyn ModelProvider>, StartupError> {
    let mut registry = ModelRegistry::from_config(config).await?;
    registry.resilient(&config.model.primary(), config.model.reasoning_effort)
}

#[cfg(any(test, feature = "test-utils"))]
/// `model` under the configured retry policy, as every configured model is (for tests that
/// build a provider themselves).
pub fn with_retry_policy(config: &Config, model: Arc<dyn ModelProvider>) -> Arc<dyn ModelProvider> {
    Arc::new(crate::model::resilient::Resilient::new(
        model,
        Vec::new(),
        retry_policy(config),
        Arc::default(),
    ))
}

fn retry_policy(config: &Config) -> crate::model::resilient::RetryPolicy {
    let settings = &config.model;
    crate::model::resilient::RetryPolicy {
        max_retries: settings.max_retries,
        max_wait: settings.retry_max_wait,
        idle_timeout: settings.idle_timeout,
        cooldown: settings.cooldown,
    }
}

/// The default model and one per `AGENT_PROFILES` profile that names a model of its own.
pub struct Models {
    pub default: Arc<dyn ModelProvider>,
    /// By profile name; a profile missing here uses `default`.
    pub profiles: HashMap<String, Arc<dyn ModelProvider>>,
    /// `CONTEXT_SUMMARY_MODEL`'s; `None`: each run's model summarises its thread.
    pub summarizer: Option<Arc<dyn ModelProvider>>,
}

impl From<Arc<dyn ModelProvider>> for Models {
    /// One model for the default agent and every profile (a test's scripted model).
    fn from(model: Arc<dyn ModelProvider>) -> Self {
        Self {
            default: model,
            profiles: HashMap::new(),
            summarizer: None,
        }
    }
}

/// The configured model, the profiles' models and the summariser, each `provider:model` of a
/// configured provider, each with `MODEL_FALLBACKS` behind it. Models share one HTTP client
/// (one connection pool) or one Bedrock client, each provider's key read once; profiles that
/// name the same model and effort share its provider.
pub async fn models_from_config(config: &Config) -> Result<Models, StartupError> {
    let mut registry = ModelRegistry::from_config(config).await?;
    let effort = config.model.reasoning_effort;
    let default = registry.resilient(&config.model.primary(), effort)?;
    let mut profiles = HashMap::new();
    for (name, profile) in &config.profiles {
        let profile_effort = profile.reasoning_effort.or(effort);
        if profile.model.is_none() && profile_effort == effort {
            continue;
        }
        let model = match &profile.model {
            Some(text) => model_ref(
                config,
                &format!("AGENT_PROFILES: profile {name}: model"),
                text,
            )?,
            None => config.model.primary(),
        };
        profiles.insert(name.clone(), registry.resilient(&model, profile_effort)?);
    }
    let summarizer = match &config.context.summary_model {
        Some(text) => {
            let model = model_ref(config, "CONTEXT_SUMMARY_MODEL", text)?;
            Some(registry.resilient(&model, effort)?)
        }
        None => None,
    };
    Ok(Models {
        default,
        profiles,
        summarizer,
    })
}

fn model_ref(
    config: &Config,
    setting: &str,
    text: &str,
) -> Result<crate::config::ModelRef, StartupError> {
    config
        .model
        .model_ref(setting, text)
        .map_err(StartupError::Model)
}

/// Every model provider of a cold start, built once each and shared.
struct ModelRegistry<'a> {
    config: &'a Config,
    http: reqwest::Client,
    keys: HashMap<ModelChoice, Option<SecretString>>,
    #[cfg(feature = "bedrock")]
    bedrock: Option<aws_sdk_bedrockruntime::Client>,
    /// Each model's provider, without fallbacks, by model and effort.
    built: HashMap<(crate::config::ModelRef, Option<ReasoningEffort>), Arc<dyn ModelProvider>>,
    /// Each model with its fallbacks: profiles naming the same model share it.
    chains: HashMap<(crate::config::ModelRef, Option<ReasoningEffort>), Arc<dyn ModelProvider>>,
    cooldowns: Arc<crate::model::resilient::Cooldowns>,
}

impl<'a> ModelRegistry<'a> {
    /// The shared clients, and the key of every provider some model of the configuration
    /// names (read from Secrets Manager where a `*_SECRET_ID` says so).
    async fn from_config(config: &'a Config) -> Result<Self, StartupError> {
        let in_use = providers_in_use(config);
        let mut keys = HashMap::new();
        for provider in &in_use {
            keys.insert(*provider, provider_key(config, *provider).await?);
        }
        let http = reqwest::Client::builder()
            .connect_timeout(config.model.connect_timeout)
            .tcp_nodelay(true)
            .pool_idle_timeout(Duration::from_secs(60))
            .build()
            .map_err(|err| StartupError::HttpClient(err.to_string()))?;
        #[cfg(feature = "bedrock")]
        let bedrock = if in_use.contains(&ModelChoice::Bedrock) {
            // Region, credentials and endpoint (`AWS_ENDPOINT_URL_BEDROCK_RUNTIME`) from the
            // standard AWS configuration.
            let aws = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
            Some(crate::model::bedrock::client(
                &aws,
                &crate::model::bedrock::ClientSettings {
                    connect_timeout: config.model.connect_timeout,
                },
            ))
        } else {
            None
        };
        Ok(Self {
            config,
            http,
            keys,
            #[cfg(feature = "bedrock")]
            bedrock,
            built: HashMap::new(),
            chains: HashMap::new(),
            cooldowns: Arc::default(),
        })
    }

    /// `model` with the fallbacks behind it, under the retry policy; the demo model as it is.
    fn resilient(
        &mut self,
        model: &crate::config::ModelRef,
        effort: Option<ReasoningEffort>,
    ) -> Result<Arc<dyn ModelProvider>, StartupError> {
        let cache_key = (model.clone(), effort);
        if let Some(chain) = self.chains.get(&cache_key) {
            return Ok(chain.clone());
        }
        let primary = self.provider(model, effort)?;
        if model.provider == ModelChoice::Demo {
            return Ok(primary);
        }
        let mut fallbacks = Vec::new();
        for fallback in self.config.model.fallbacks.iter().filter(|f| *f != model) {
            fallbacks.push(self.provider(fallback, effort)?);
        }
        let chain: Arc<dyn ModelProvider> = Arc::new(crate::model::resilient::Resilient::new(
            primary,
            fallbacks,
            retry_policy(self.config),
            self.cooldowns.clone(),
        ));
        self.chains.insert(cache_key, chain.clone());
        Ok(chain)
    }

    /// The provider of one model, built once.
    fn provider(
        &mut self,
        model: &crate::config::ModelRef,
        effort: Option<ReasoningEffort>,
    ) -> Result<Arc<dyn ModelProvider>, StartupError> {
        let cache_key = (model.clone(), effort);
        if let Some(provider) = self.built.get(&cache_key) {
            return Ok(provider.clone());
        }
        let provider = self.build(model, effort)?;
        self.built.insert(cache_key, provider.clone());
        Ok(provider)
    }

    fn build(
        &self,
        model: &crate::config::ModelRef,
        effort: Option<ReasoningEffort>,
    ) -> Result<Arc<dyn ModelProvider>, StartupError> {
        let config = self.config;
        let key = self.keys.get(&model.provider).cloned().flatten();
        let cache = config.context.prompt_cache == PromptCache::Auto;
        Ok(match model.provider {
            ModelChoice::OpenAi => {
                let openai = &config.model.openai;
                let prompt_cache_key =
                    cache && crate::model::openai::is_openai_itself(&openai.base_url);
                match openai.api {
                    OpenAiApi::Responses => Arc::new(ResponsesProvider::new(
                        self.http.clone(),
                        ResponsesSettings {
                            base_url: openai.base_url.clone(),
                            api_key: key,
                            model: model.model.clone(),
                            prompt_cache_key,
                            reasoning_effort: effort,
                        },
                    )),
                    OpenAiApi::Chat => Arc::new(OpenAiProvider::new(
                        self.http.clone(),
                        OpenAiSettings {
                            base_url: openai.base_url.clone(),
                            api_key: key,
                            model: model.model.clone(),
                            prompt_cache_key,
                            reasoning_effort: effort,
                            provider_name: "openai",
                        },
                    )),
                }
            }
            // Gemini through its OpenAI-compatible endpoint, thought signatures carried on
            // the calls.
            ModelChoice::Gemini => Arc::new(OpenAiProvider::new(
                self.http.clone(),
                OpenAiSettings {
                    base_url: config.model.gemini.base_url.clone(),
                    api_key: key,
                    model: model.model.clone(),
                    prompt_cache_key: false,
                    reasoning_effort: effort,
                    provider_name: "gemini",
                },
            )),
            ModelChoice::Anthropic => Arc::new(crate::model::anthropic::AnthropicProvider::new(
                self.http.clone(),
                crate::model::anthropic::AnthropicSettings {
                    base_url: config.model.anthropic.base_url.clone(),
                    api_key: key,
                    model: model.model.clone(),
                    max_tokens: config.model.anthropic.max_tokens,
                    thinking_budget_tokens: config
                        .model
                        .anthropic
                        .thinking_budget_tokens
                        .or_else(|| effort.and_then(crate::model::anthropic::thinking_budget)),
                    cache_control: cache,
                },
            )),
            #[cfg(feature = "bedrock")]
            ModelChoice::Bedrock => {
                let client = self
                    .bedrock
                    .clone()
                    .ok_or_else(|| StartupError::Model("no Bedrock client was built".to_owned()))?;
                Arc::new(crate::model::bedrock::BedrockProvider::new(
                    client,
                    crate::model::bedrock::BedrockSettings {
                        model_id: model.model.clone(),
                        max_tokens: config.model.bedrock_max_tokens,
                        reasoning_budget_tokens: config.model.bedrock_reasoning_budget_tokens,
                        cache_points: if cache {
                            crate::model::bedrock::CachePoints::for_model(&model.model)
                        } else {
                            crate::model::bedrock::CachePoints::Off
                        },
                    },
                ))
            }
            // Config refuses bedrock in builds without the feature.
            #[cfg(not(feature = "bedrock"))]
            ModelChoice::Bedrock => {
                return Err(StartupError::NotBuilt {
                    setting: "MODEL_PROVIDER=bedrock",
                });
            }
            ModelChoice::Demo => Arc::new(DemoModel {
                word_delay: Duration::from_millis(30),
            }),
        })
    }
}

/// The providers some model of the configuration names: the default's, the profiles', the
/// summariser's and the fallbacks'.
fn providers_in_use(config: &Config) -> std::collections::BTreeSet<ModelChoice> {
    let default = config.model.provider;
    let named = config
        .profiles
        .values()
        .filter_map(|profile| profile.model.as_deref())
        .chain(config.context.summary_model.as_deref())
        .map(|text| crate::config::ModelRef::parse(text, default).provider);
    std::iter::once(default)
        .chain(named)
        .chain(config.model.fallbacks.iter().map(|model| model.provider))
        .collect()
}

/// A provider's API key: from Secrets Manager when its `*_SECRET_ID` is set, else the
/// environment's.
async fn provider_key(
    config: &Config,
    provider: ModelChoice,
) -> Result<Option<SecretString>, StartupError> {
    let model = &config.model;
    let (secret_id, key) = match provider {
        ModelChoice::OpenAi => (&model.openai.api_key_secret_id, &model.openai.api_key),
        ModelChoice::Anthropic => (&model.anthropic.api_key_secret_id, &model.anthropic.api_key),
        ModelChoice::Gemini => (&model.gemini.api_key_secret_id, &model.gemini.api_key),
        ModelChoice::Bedrock | ModelChoice::Demo => return Ok(None),
    };
    match secret_id {
        Some(secret_id) => Ok(Some(read_secret(secret_id).await?)),
        None => Ok(key.clone()),
    }
}

/// The DynamoDB client of the thread store: region, credentials and endpoint
/// (`AWS_ENDPOINT_URL_DYNAMODB`) from the standard AWS configuration.
#[cfg(feature = "aws")]
pub(crate) async fn dynamo_client() -> aws_sdk_dynamodb::Client {
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
    aws_sdk_dynamodb::Client::new(&aws)
}

/// DynamoDB when `THREADS_TABLE` is set, else memory.
pub async fn store_from_config(config: &Config) -> Result<Arc<dyn ThreadStore>, StartupError> {
    match &config.store.threads_table {
        #[cfg(feature = "aws")]
        Some(table) => Ok(Arc::new(
            DynamoStore::new(
                dynamo_client().await,
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
    DynamoStore::check_table(&dynamo_client().await, table)
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
    DynamoStore::create_table(&dynamo_client().await, table)
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

/// Adds the tools of the MCP servers of `MCP_SERVERS` to `tools`: every server is listed at
/// once, each within `MCP_CONNECT_TIMEOUT_MS`. A server that cannot be reached or listed is
/// logged and skipped; a tool name already taken stops start-up.
pub async fn add_mcp_tools(config: &Config, tools: &mut ToolRegistry) -> Result<(), StartupError> {
    let settings = &config.tools.mcp;
    if settings.servers.is_empty() {
        return Ok(());
    }
    #[cfg(not(feature = "mcp"))]
    {
        let _ = tools;
        Err(StartupError::NotBuilt {
            setting: "MCP_SERVERS",
        })
    }
    #[cfg(feature = "mcp")]
    {
        let began = std::time::Instant::now();
        let listings = settings.servers.iter().map(|server| async move {
            let secret = match &server.headers_secret_id {
                Some(secret_id) => Some(read_secret(secret_id).await?),
                None => None,
            };
            Ok::<_, StartupError>(
                crate::mcp::list_tools(server, secret.as_ref(), settings.list_timeout).await,
            )
        });
        let listings = futures_util::future::join_all(listings).await;
        for (server, listing) in settings.servers.iter().zip(listings) {
            let listed = match listing? {
                Ok(listed) => listed,
                Err(error) => {
                    tracing::warn!(
                        server = %server.name,
                        host = %server.host(),
                        %error,
                        "MCP server skipped: its tools are not offered until the next cold start"
                    );
                    continue;
                }
            };
            let mut offered = 0_usize;
            for tool in listed {
                use crate::agent::tools::ServerTool;
                let (name, remote) = (tool.name().to_owned(), tool.remote_name().to_owned());
                match tools.add(tool) {
                    Ok(()) => offered += 1,
                    Err(crate::agent::tools::RegistryError::Duplicate(_)) => {
                        return Err(StartupError::ToolNameTaken {
                            server: server.name.clone(),
                            remote,
                            name,
                        });
                    }
                    // A schema that does not compile: the server's other tools are still good.
                    Err(error) => {
                        tracing::warn!(server = %server.name, %error, "MCP tool left out")
                    }
                }
            }
            tracing::info!(server = %server.name, tools = offered, "MCP server's tools offered");
        }
        tracing::info!(
            servers = settings.servers.len(),
            elapsed_ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX),
            "MCP servers listed"
        );
        Ok(())
    }
}

/// Whether `name` is `{server}__…` for a configured MCP server none of whose tools is offered.
fn mcp_server_offers_nothing(config: &Config, tools: &ToolRegistry, name: &str) -> bool {
    config.tools.mcp.servers.iter().any(|server| {
        let prefix = server.namespaced("");
        name.starts_with(&prefix) && !tools.specs().any(|spec| spec.name.starts_with(&prefix))
    })
}

#[cfg(any(test, feature = "test-utils"))]
/// The app from its parts, with the built-in tools; tests pass a scripted model or their own
/// store.
pub fn build_app(
    config: &Config,
    model: Arc<dyn ModelProvider>,
    store: Arc<dyn ThreadStore>,
    auth: Authenticator,
) -> Result<App, StartupError> {
    build_app_with_tools(config, model, store, auth, ToolRegistry::with_builtins()?)
}

#[cfg(any(test, feature = "test-utils"))]
/// The app from its parts and its server tools (MCP servers' already added, see
/// [`add_mcp_tools`]); applies `APPROVAL_REQUIRED_TOOLS` and `TOOL_RESULT_MAX_BYTES` to them.
/// `model` serves every `AGENT_PROFILES` profile too (their `model` is read by
/// [`models_from_config`]; pass its result to [`build_app_with_models`] for that).
pub fn build_app_with_tools(
    config: &Config,
    model: Arc<dyn ModelProvider>,
    store: Arc<dyn ThreadStore>,
    auth: Authenticator,
    tools: ToolRegistry,
) -> Result<App, StartupError> {
    build_app_with_models(config, model.into(), store, auth, tools)
}

/// [`build_app_with_tools`] with the profiles' own models (see [`models_from_config`]).
pub fn build_app_with_models(
    config: &Config,
    models: Models,
    store: Arc<dyn ThreadStore>,
    auth: Authenticator,
    mut tools: ToolRegistry,
) -> Result<App, StartupError> {
    for name in &config.agent.approval_required_tools {
        match tools.require_approval(name) {
            // A tool of an MCP server that was skipped at this cold start: not offered, so
            // nothing to gate, and a server down must not stop start-up.
            Err(crate::agent::tools::RegistryError::Unknown(_))
                if mcp_server_offers_nothing(config, &tools, name) =>
            {
                tracing::warn!(
                    tool = %name,
                    "APPROVAL_REQUIRED_TOOLS names a tool of an MCP server that offers no tools at this cold start"
                );
            }
            other => other?,
        }
    }
    // Registered once for every profile; an agent whose memory is off does not offer them.
    if config.memory.enabled || config.profiles.values().any(|p| p.memory == Some(true)) {
        let memories: Arc<dyn crate::store::Memories> = store.clone();
        for tool in crate::agent::memory::tools(memories, config.memory) {
            tools.add(tool)?;
        }
    }
    tools.set_max_result_bytes(config.tools.max_result_bytes);
    let profiles = agent_profiles(config, &models, &tools)?;
    let agent = Agent::new(
        models.default,
        Arc::new(tools),
        store,
        AgentSettings {
            context: config.context.settings(),
            memory: config.memory,
            subagents: config.subagents.settings,
            ..config.agent.clone()
        },
    )
    .with_summarizer(models.summarizer)
    .with_profiles(profiles)?
    .serving(config.subagents.default_profile.as_deref())?;
    if !config.profiles.is_empty() {
        tracing::info!(
            profiles = ?agent.profile_names(),
            "AGENT_PROFILES: forwardedProps.agent_type must name one of these"
        );
    }
    Ok(App::new(
        agent,
        auth,
        ApiSettings {
            limits: config.limits.clone(),
            ping_interval: config.http.ping_interval,
            run_max: config.http.run_max,
            stream_max: config.http.stream_max,
            deadline_margin: config.http.deadline_margin,
            cors_allowed_origins: config.http.cors_allowed_origins.clone(),
            dev_ui: config.http.dev_ui,
            agentcore: config.hosting.mode == crate::config::Hosting::AgentCore,
            a2a_public_url: config.http.a2a_public_url.clone(),
        },
    ))
}

/// `AGENT_PROFILES` as the agent takes them. A tool of an MCP server that offers nothing at
/// this cold start is left out of the profile with a warning (a server down must not stop
/// start-up, as for `APPROVAL_REQUIRED_TOOLS`); any other unknown name stops it.
fn agent_profiles(
    config: &Config,
    models: &Models,
    tools: &ToolRegistry,
) -> Result<Vec<(String, AgentProfile)>, StartupError> {
    let http = subagents::remote_client(config)?;
    let a2a = crate::agent::subagents::shared_client(http.clone());
    config
        .profiles
        .iter()
        .map(|(name, profile)| {
            let offered = profile.tools.as_ref().map(|names| {
                names
                    .iter()
                    .filter(|tool| {
                        let skipped =
                            !tools.contains(tool) && mcp_server_offers_nothing(config, tools, tool);
                        if skipped {
                            tracing::warn!(
                                profile = %name,
                                %tool,
                                "AGENT_PROFILES names a tool of an MCP server that offers no tools at this cold start; the profile goes without it"
                            );
                        }
                        !skipped
                    })
                    .cloned()
                    .collect()
            });
            let agent_profile = AgentProfile {
                system_prompt: profile.system_prompt.clone(),
                model: models.profiles.get(name).cloned(),
                tools: offered,
                context_tokens: profile.context_tokens,
                memory: profile.memory,
                subagents: subagents::subagents_of(config, profile, (&http, &a2a))?,
                subagent_visibility: profile.subagent_visibility,
            };
            Ok((name.clone(), agent_profile))
        })
        .collect()
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

/// Where detached runs go: under the Lambda runtime, an asynchronous invocation of this very
/// function (`SELF_INVOKE_ENDPOINT` for an emulator's Invoke API); elsewhere a local task.
pub(crate) async fn dispatcher_from_config(
    config: &Config,
) -> Result<crate::api::dispatch::Dispatcher, StartupError> {
    let under_lambda = std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some();
    let function_name = std::env::var("AWS_LAMBDA_FUNCTION_NAME").ok();
    match function_name {
        #[cfg(feature = "aws")]
        Some(function_name) if under_lambda => {
            let aws = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
            let region = aws
                .region()
                .map(ToString::to_string)
                .unwrap_or_else(|| "us-east-1".to_owned());
            let credentials = aws.credentials_provider().ok_or_else(|| {
                StartupError::SelfInvoke("no AWS credentials to invoke this function".to_owned())
            })?;
            let emulated = config.store.self_invoke_endpoint.is_some();
            // The standard AWS setting for the Lambda API's endpoint (an emulator that queues
            // asynchronous invocations as Lambda does); `SELF_INVOKE_ENDPOINT` is for one that
            // does not (`cargo lambda watch`).
            let lambda_endpoint = std::env::var("AWS_ENDPOINT_URL_LAMBDA")
                .ok()
                .filter(|url| !url.trim().is_empty());
            let endpoint = config
                .store
                .self_invoke_endpoint
                .clone()
                .or(lambda_endpoint)
                .unwrap_or_else(|| format!("https://lambda.{region}.amazonaws.com"));
            let qualifier = std::env::var("AWS_LAMBDA_FUNCTION_VERSION")
                .ok()
                .filter(|version| version != "$LATEST" && !emulated);
            let http = reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(2))
                .build()
                .map_err(|error| StartupError::HttpClient(error.to_string()))?;
            Ok(crate::api::dispatch::Dispatcher::Lambda(Arc::new(
                crate::api::dispatch::LambdaInvoker {
                    http,
                    endpoint,
                    function_name,
                    qualifier,
                    region,
                    credentials,
                    emulated,
                },
            )))
        }
        _ => {
            let _ = (config, under_lambda);
            Ok(crate::api::dispatch::Dispatcher::Local)
        }
    }
}

#[cfg(any(test, feature = "test-utils"))]
/// The app as configured, with the built-in tools and the MCP servers' tools.
pub async fn build(config: &Config) -> Result<App, StartupError> {
    build_with_tools(config, ToolRegistry::with_builtins()?).await
}

/// The app as configured, with `tools` (usually the built-ins plus yours) and the MCP servers'
/// tools. The MCP servers are listed while the model, store and authenticator are set up.
pub(crate) async fn build_with_tools(
    config: &Config,
    mut tools: ToolRegistry,
) -> Result<App, StartupError> {
    let (models, store, auth, (), blobs, dispatcher, secrets) = tokio::try_join!(
        models_from_config(config),
        store_from_config(config),
        authenticator(&config.auth),
        add_mcp_tools(config, &mut tools),
        blobs_from_config(config),
        dispatcher_from_config(config),
        subagents::subagent_secrets(config),
    )?;
    let mut config = config.clone();
    config.subagents.secret_headers = secrets.headers;
    config.subagents.a2a_secrets = secrets.a2a;
    let config = &config;
    Ok(build_app_with_models(config, models, store, auth, tools)?
        .with_blobs(blobs)
        .with_dispatcher(dispatcher)
        .with_metrics(metrics_from_config(config)))
}

/// The EMF metrics writer, when `EMF_METRICS` is on.
pub(crate) fn metrics_from_config(config: &Config) -> Option<crate::telemetry::emf::Emf> {
    let telemetry = &config.telemetry;
    telemetry.emf.then(|| {
        crate::telemetry::emf::Emf::stdout(&telemetry.metrics_namespace, &telemetry.service_name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Config {
        Config::from_map(
            &pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
        .unwrap()
    }

    fn app(config: &Config, models: Models) -> Result<App, StartupError> {
        build_app_with_models(
            config,
            models,
            Arc::new(MemoryStore::new()),
            Authenticator::None,
            ToolRegistry::with_builtins().unwrap(),
        )
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
        let described = app(&config, models).unwrap().describe();
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
        let error = app(&config, models).err().unwrap();
        assert_eq!(
            error.to_string(),
            "AGENT_PROFILES: profile support: no server tool is named refund"
        );
    }
}
