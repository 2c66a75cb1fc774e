//! Start-up's models: the configured model, the profiles' own and the summariser, each behind
//! its fallbacks and the retry policy, every provider built once per cold start.

use super::{StartupError, read_secret};
use crate::config::OpenAiApi;
use crate::config::{Config, ModelChoice, PromptCache, ReasoningEffort, SecretString};
use crate::model::ModelProvider;
use crate::model::demo::DemoModel;
use crate::model::openai::{OpenAiProvider, OpenAiSettings, ResponsesProvider, ResponsesSettings};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

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

/// Voice input's transcription model (`TRANSCRIPTION_MODEL`), when configured: its key is
/// `TRANSCRIPTION_API_KEY`, else OpenAI's as the model provider reads it.
pub(super) async fn transcriber_from_config(
    config: &Config,
) -> Result<Option<Arc<crate::model::transcription::Transcriber>>, StartupError> {
    let Some(transcription) = &config.copilotkit.transcription else {
        return Ok(None);
    };
    let api_key = match &transcription.api_key {
        Some(key) => Some(key.clone()),
        None => provider_key(config, ModelChoice::OpenAi).await?,
    };
    let http = reqwest::Client::builder()
        .connect_timeout(config.model.connect_timeout)
        .build()
        .map_err(|err| StartupError::HttpClient(err.to_string()))?;
    let transcriber = crate::model::transcription::Transcriber::new(
        http,
        crate::model::transcription::TranscriptionSettings {
            base_url: transcription.base_url.clone(),
            api_key,
            model: transcription.model.clone(),
        },
    );
    tracing::info!(transcription = %transcriber.describe(), "voice input on");
    Ok(Some(Arc::new(transcriber)))
}
