//! The model section: which provider answers (`MODEL_PROVIDER`, or the provider whose key or
//! base URL is given), which model, each provider's endpoint and credentials, and how model calls
//! are retried, bounded and fallen back from (`MODEL_FALLBACKS`).

use super::vars::Vars;
use super::{ConfigError, Section};
use secrecy::SecretString;
use std::time::Duration;

/// A model provider this build can speak to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ModelChoice {
    /// OpenAI's API (Responses on api.openai.com, Chat Completions elsewhere; `OPENAI_API`), or
    /// any OpenAI-compatible server at `OPENAI_BASE_URL`.
    OpenAi,
    /// Anthropic's Messages API (`ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`).
    Anthropic,
    /// Gemini through its OpenAI-compatible endpoint (`GEMINI_API_KEY`, `GEMINI_BASE_URL`).
    Gemini,
    /// Amazon Bedrock ConverseStream (builds with the `bedrock` feature).
    Bedrock,
    /// The offline scripted demo model.
    Demo,
}

impl ModelChoice {
    /// The name in `MODEL_PROVIDER` and in `provider:model`.
    pub fn name(self) -> &'static str {
        match self {
            ModelChoice::OpenAi => "openai",
            ModelChoice::Anthropic => "anthropic",
            ModelChoice::Gemini => "gemini",
            ModelChoice::Bedrock => "bedrock",
            ModelChoice::Demo => "demo",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "openai" => ModelChoice::OpenAi,
            "anthropic" => ModelChoice::Anthropic,
            "gemini" => ModelChoice::Gemini,
            "bedrock" => ModelChoice::Bedrock,
            "demo" | "scripted" => ModelChoice::Demo,
            _ => return None,
        })
    }

    /// The settings that configure the provider, by name, for an error to say what to set;
    /// `None` for the providers that need none of their own.
    fn key_settings(self) -> Option<&'static str> {
        match self {
            ModelChoice::OpenAi => Some(
                "OPENAI_API_KEY (or OPENAI_API_KEY_SECRET_ID, a Secrets Manager secret; or \
                 OPENAI_BASE_URL for a server that needs no key)",
            ),
            ModelChoice::Anthropic => Some(
                "ANTHROPIC_API_KEY (or ANTHROPIC_API_KEY_SECRET_ID, a Secrets Manager secret; or \
                 ANTHROPIC_BASE_URL for a gateway that holds the key)",
            ),
            ModelChoice::Gemini => Some(
                "GEMINI_API_KEY (or GEMINI_API_KEY_SECRET_ID, a Secrets Manager secret; or \
                 GEMINI_BASE_URL for a gateway that holds the key)",
            ),
            ModelChoice::Bedrock | ModelChoice::Demo => None,
        }
    }

    /// The model a provider runs when `AGENT_MODEL` is unset.
    fn default_model(self) -> &'static str {
        match self {
            ModelChoice::OpenAi | ModelChoice::Demo => "gpt-4o-mini",
            ModelChoice::Anthropic => "claude-sonnet-4-5",
            ModelChoice::Gemini => "gemini-2.5-flash",
            ModelChoice::Bedrock => "",
        }
    }
}

/// A model as profiles, the summariser and fallbacks name it: `provider:model`, or a bare model
/// of the default provider. Only a known provider name before the first `:` is a provider
/// (Bedrock's ids hold colons: `us.anthropic.claude-sonnet-4-20250514-v1:0`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModelRef {
    pub provider: ModelChoice,
    pub model: String,
}

impl ModelRef {
    /// `text` read with `default` as the provider of a bare model name.
    pub(crate) fn parse(text: &str, default: ModelChoice) -> Self {
        match text.split_once(':') {
            Some((provider, model)) if !model.is_empty() => {
                match ModelChoice::from_name(provider) {
                    Some(provider) => Self {
                        provider,
                        model: model.to_owned(),
                    },
                    None => Self {
                        provider: default,
                        model: text.to_owned(),
                    },
                }
            }
            _ => Self {
                provider: default,
                model: text.to_owned(),
            },
        }
    }
}

impl std::fmt::Display for ModelRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.provider.name(), self.model)
    }
}

pub(crate) use crate::model::ReasoningEffort;

/// Which OpenAI API `MODEL_PROVIDER=openai` speaks (`OPENAI_API`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenAiApi {
    /// `/v1/responses`.
    Responses,
    /// `/v1/chat/completions`.
    Chat,
}

#[derive(Debug, Clone)]
pub struct ModelConfig {
    /// The default agent's provider.
    pub provider: ModelChoice,
    /// `AGENT_MODEL`: the model name, or Bedrock's model id or inference profile id.
    pub name: String,
    /// Retries of one model's call, before any output.
    pub max_retries: u32,
    /// The most a call's retries may wait in all, before the next model is tried.
    pub retry_max_wait: Duration,
    pub connect_timeout: Duration,
    /// A stream silent for this long has failed (`MODEL_IDLE_TIMEOUT_MS`).
    pub idle_timeout: Duration,
    /// How long a model whose call failed is passed over for its fallbacks.
    pub cooldown: Duration,
    /// `MODEL_FALLBACKS`: tried in order when a model fails before any output.
    pub fallbacks: Vec<ModelRef>,
    /// `REASONING_EFFORT`, for reasoning models.
    pub reasoning_effort: Option<ReasoningEffort>,
    pub openai: OpenAiConfig,
    pub anthropic: AnthropicConfig,
    pub gemini: GeminiConfig,
    /// `BEDROCK_MAX_TOKENS`: Bedrock's `inferenceConfig.maxTokens`; unset leaves the model's default.
    pub bedrock_max_tokens: Option<u32>,
    /// `BEDROCK_REASONING_BUDGET_TOKENS`: Claude's extended thinking with this budget; unset is off.
    pub bedrock_reasoning_budget_tokens: Option<u32>,
}

#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    pub base_url: String,
    pub api_key: Option<SecretString>,
    /// `OPENAI_API_KEY_SECRET_ID`: the key from Secrets Manager instead of the environment.
    pub api_key_secret_id: Option<String>,
    /// Responses or Chat Completions.
    pub api: OpenAiApi,
    /// A key, a secret or a base URL was given.
    pub configured: bool,
}

#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    pub base_url: String,
    pub api_key: Option<SecretString>,
    pub api_key_secret_id: Option<String>,
    /// `max_tokens`, which the Messages API requires, when the request sets none.
    pub max_tokens: u32,
    /// Extended thinking with this budget; unset is off (or follows `REASONING_EFFORT`).
    pub thinking_budget_tokens: Option<u32>,
    pub configured: bool,
}

#[derive(Debug, Clone)]
pub struct GeminiConfig {
    /// Gemini's OpenAI-compatible endpoint, up to and including `/openai`.
    pub base_url: String,
    pub api_key: Option<SecretString>,
    pub api_key_secret_id: Option<String>,
    pub configured: bool,
}

impl ModelConfig {
    /// Whether `provider` has what it needs to be called: a key, a secret or a base URL (Bedrock
    /// and the demo need nothing here).
    pub(crate) fn is_configured(&self, provider: ModelChoice) -> bool {
        match provider {
            ModelChoice::OpenAi => self.openai.configured || self.provider == ModelChoice::OpenAi,
            ModelChoice::Anthropic => self.anthropic.configured,
            ModelChoice::Gemini => self.gemini.configured,
            ModelChoice::Bedrock => cfg!(feature = "bedrock"),
            ModelChoice::Demo => true,
        }
    }

    /// `text` (`provider:model` or a bare model) as a model this configuration can call; the
    /// error names `setting`.
    pub(crate) fn model_ref(&self, setting: &str, text: &str) -> Result<ModelRef, String> {
        let model = ModelRef::parse(text, self.provider);
        if !self.is_configured(model.provider) {
            return Err(format!(
                "{setting} names {model}, but the {} provider is not configured: set {}",
                model.provider.name(),
                model.provider.key_settings().unwrap_or("its settings")
            ));
        }
        Ok(model)
    }

    /// The default agent's model.
    pub(crate) fn primary(&self) -> ModelRef {
        ModelRef {
            provider: self.provider,
            model: self.name.clone(),
        }
    }
}

impl Section for ModelConfig {
    const SETTINGS: &'static [&'static str] = &[
        "MODEL_PROVIDER",
        "AGENT_MODEL",
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_API_KEY_SECRET_ID",
        "OPENAI_API",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_API_KEY_SECRET_ID",
        "ANTHROPIC_MAX_TOKENS",
        "ANTHROPIC_THINKING_BUDGET_TOKENS",
        "GEMINI_BASE_URL",
        "GEMINI_API_KEY",
        "GEMINI_API_KEY_SECRET_ID",
        "BEDROCK_MAX_TOKENS",
        "BEDROCK_REASONING_BUDGET_TOKENS",
        "REASONING_EFFORT",
        "MODEL_MAX_RETRIES",
        "MODEL_RETRY_MAX_WAIT_MS",
        "MODEL_CONNECT_TIMEOUT_MS",
        "MODEL_IDLE_TIMEOUT_MS",
        "MODEL_COOLDOWN_SECS",
        "MODEL_FALLBACKS",
    ];

    fn from_vars(vars: &Vars) -> Result<Self, ConfigError> {
        let openai = openai(vars)?;
        let anthropic = anthropic(vars)?;
        let gemini = gemini(vars);
        let provider = provider(vars, &openai, &anthropic, &gemini)?;
        let bedrock_max_tokens =
            Some(vars.bounded::<u32>("BEDROCK_MAX_TOKENS", 0, 0..=1_000_000)?)
                .filter(|max| *max > 0);
        // Claude's extended thinking takes a budget of at least 1,024 tokens.
        let bedrock_reasoning_budget_tokens =
            vars.optional_bounded::<u32>("BEDROCK_REASONING_BUDGET_TOKENS", 1_024..=1_000_000)?;
        let mut config = Self {
            provider,
            name: vars
                .text("AGENT_MODEL")
                .unwrap_or_else(|| provider.default_model().to_owned()),
            max_retries: vars.bounded("MODEL_MAX_RETRIES", 3, 0..=10)?,
            retry_max_wait: Duration::from_millis(vars.bounded(
                "MODEL_RETRY_MAX_WAIT_MS",
                30_000,
                0..=600_000,
            )?),
            connect_timeout: Duration::from_millis(vars.bounded(
                "MODEL_CONNECT_TIMEOUT_MS",
                10_000,
                100..=60_000,
            )?),
            idle_timeout: Duration::from_millis(vars.bounded(
                "MODEL_IDLE_TIMEOUT_MS",
                120_000,
                100..=900_000,
            )?),
            cooldown: Duration::from_secs(vars.bounded("MODEL_COOLDOWN_SECS", 60, 0..=3_600)?),
            fallbacks: Vec::new(),
            reasoning_effort: reasoning_effort(vars)?,
            openai,
            anthropic,
            gemini,
            bedrock_max_tokens,
            bedrock_reasoning_budget_tokens,
        };
        config.fallbacks = fallbacks(vars, &config)?;
        Ok(config)
    }
}

fn openai(vars: &Vars) -> Result<OpenAiConfig, ConfigError> {
    let api_key = vars.text("OPENAI_API_KEY").map(SecretString::from);
    let explicit_url = vars.text("OPENAI_BASE_URL");
    let api_key_secret_id = vars.text("OPENAI_API_KEY_SECRET_ID");
    let configured = api_key.is_some() || explicit_url.is_some() || api_key_secret_id.is_some();
    let base_url = explicit_url.unwrap_or_else(|| "https://api.openai.com/v1".to_owned());
    let api = match vars.text("OPENAI_API").as_deref() {
        None | Some("auto") if crate::model::openai::is_openai_itself(&base_url) => {
            OpenAiApi::Responses
        }
        None | Some("auto") | Some("chat") => OpenAiApi::Chat,
        Some("responses") => OpenAiApi::Responses,
        Some(other) => {
            return Err(ConfigError::Invalid {
                name: "OPENAI_API",
                expected: "responses, chat or auto",
                value: other.to_owned(),
            });
        }
    };
    Ok(OpenAiConfig {
        base_url,
        api_key,
        api_key_secret_id,
        api,
        configured,
    })
}

fn anthropic(vars: &Vars) -> Result<AnthropicConfig, ConfigError> {
    let api_key = vars.text("ANTHROPIC_API_KEY").map(SecretString::from);
    let explicit_url = vars.text("ANTHROPIC_BASE_URL");
    let api_key_secret_id = vars.text("ANTHROPIC_API_KEY_SECRET_ID");
    Ok(AnthropicConfig {
        configured: api_key.is_some() || explicit_url.is_some() || api_key_secret_id.is_some(),
        base_url: explicit_url.unwrap_or_else(|| "https://api.anthropic.com".to_owned()),
        api_key,
        api_key_secret_id,
        max_tokens: vars.bounded("ANTHROPIC_MAX_TOKENS", 8_192, 1..=1_000_000)?,
        thinking_budget_tokens: vars
            .optional_bounded::<u32>("ANTHROPIC_THINKING_BUDGET_TOKENS", 1_024..=1_000_000)?,
    })
}

fn gemini(vars: &Vars) -> GeminiConfig {
    let api_key = vars.text("GEMINI_API_KEY").map(SecretString::from);
    let explicit_url = vars.text("GEMINI_BASE_URL");
    let api_key_secret_id = vars.text("GEMINI_API_KEY_SECRET_ID");
    GeminiConfig {
        configured: api_key.is_some() || explicit_url.is_some() || api_key_secret_id.is_some(),
        base_url: explicit_url.unwrap_or_else(|| {
            "https://generativelanguage.googleapis.com/v1beta/openai".to_owned()
        }),
        api_key,
        api_key_secret_id,
    }
}

fn reasoning_effort(vars: &Vars) -> Result<Option<ReasoningEffort>, ConfigError> {
    vars.text("REASONING_EFFORT")
        .map(|value| {
            value.parse().map_err(|()| ConfigError::Invalid {
                name: "REASONING_EFFORT",
                expected: "none, minimal, low, medium or high",
                value,
            })
        })
        .transpose()
}

/// `MODEL_PROVIDER`; unset, the first provider given a key or base URL (OpenAI, Anthropic,
/// Gemini), else the demo model.
fn provider(
    vars: &Vars,
    openai: &OpenAiConfig,
    anthropic: &AnthropicConfig,
    gemini: &GeminiConfig,
) -> Result<ModelChoice, ConfigError> {
    let named = vars.text("MODEL_PROVIDER");
    let choice = match named.as_deref() {
        None if openai.configured => ModelChoice::OpenAi,
        None if anthropic.configured => ModelChoice::Anthropic,
        None if gemini.configured => ModelChoice::Gemini,
        None => ModelChoice::Demo,
        // `openai` without a key or base URL has always meant the demo model locally.
        Some("openai") if !openai.configured => ModelChoice::Demo,
        Some(name) => match ModelChoice::from_name(name) {
            Some(ModelChoice::Bedrock) if !cfg!(feature = "bedrock") => {
                return Err(unknown_provider(name));
            }
            Some(choice) => choice,
            None => return Err(unknown_provider(name)),
        },
    };
    if choice == ModelChoice::Bedrock && vars.text("AGENT_MODEL").is_none() {
        return Err(ConfigError::Invalid {
            name: "AGENT_MODEL",
            expected: "a Bedrock model id or inference profile id with MODEL_PROVIDER=bedrock",
            value: String::new(),
        });
    }
    let unconfigured = match choice {
        ModelChoice::Anthropic => !anthropic.configured,
        ModelChoice::Gemini => !gemini.configured,
        _ => false,
    };
    if let (true, Some(needs)) = (unconfigured, choice.key_settings()) {
        return Err(ConfigError::NeedsKey {
            provider: choice.name(),
            needs,
        });
    }
    Ok(choice)
}

fn unknown_provider(name: &str) -> ConfigError {
    ConfigError::Invalid {
        name: "MODEL_PROVIDER",
        expected: if cfg!(feature = "bedrock") {
            "openai, anthropic, gemini, bedrock or demo"
        } else {
            "openai, anthropic, gemini or demo (this build has no `bedrock` feature)"
        },
        value: name.to_owned(),
    }
}

/// `MODEL_FALLBACKS`: comma-separated `provider:model`, each of a configured provider.
fn fallbacks(vars: &Vars, config: &ModelConfig) -> Result<Vec<ModelRef>, ConfigError> {
    let mut fallbacks: Vec<ModelRef> = Vec::new();
    for text in vars.list("MODEL_FALLBACKS") {
        let model = config
            .model_ref("MODEL_FALLBACKS", &text)
            .map_err(|reason| ConfigError::Invalid {
                name: "MODEL_FALLBACKS",
                expected: "comma-separated provider:model of configured providers",
                value: reason,
            })?;
        if model != config.primary() && !fallbacks.contains(&model) {
            fallbacks.push(model);
        }
    }
    Ok(fallbacks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::config;

    #[test]
    fn a_configured_key_or_base_url_selects_the_real_model() {
        assert_eq!(
            config(&[("OPENAI_API_KEY", "sk-x")])
                .unwrap()
                .model
                .provider,
            ModelChoice::OpenAi
        );
        assert_eq!(
            config(&[("OPENAI_BASE_URL", "http://127.0.0.1:4010/v1")])
                .unwrap()
                .model
                .provider,
            ModelChoice::OpenAi
        );
        assert_eq!(
            config(&[("OPENAI_API_KEY", "sk-x"), ("MODEL_PROVIDER", "demo")])
                .unwrap()
                .model
                .provider,
            ModelChoice::Demo
        );
        let anthropic = config(&[("ANTHROPIC_API_KEY", "sk-ant")]).unwrap().model;
        assert_eq!(anthropic.provider, ModelChoice::Anthropic);
        assert_eq!(anthropic.name, "claude-sonnet-4-5");
        assert_eq!(
            config(&[("GEMINI_API_KEY", "g")]).unwrap().model.provider,
            ModelChoice::Gemini
        );
        assert_eq!(config(&[]).unwrap().model.provider, ModelChoice::Demo);
    }

    #[test]
    fn openai_itself_speaks_responses_and_other_servers_chat_unless_told() {
        let own = config(&[("OPENAI_API_KEY", "sk-x")]).unwrap().model.openai;
        assert_eq!(own.api, OpenAiApi::Responses);
        let local = config(&[("OPENAI_BASE_URL", "http://127.0.0.1:4010/v1")])
            .unwrap()
            .model
            .openai;
        assert_eq!(local.api, OpenAiApi::Chat);
        let azure = config(&[
            ("OPENAI_BASE_URL", "https://x.openai.azure.com/openai/v1"),
            ("OPENAI_API", "responses"),
        ])
        .unwrap()
        .model
        .openai;
        assert_eq!(azure.api, OpenAiApi::Responses);
        let forced = config(&[("OPENAI_API_KEY", "sk-x"), ("OPENAI_API", "chat")])
            .unwrap()
            .model
            .openai;
        assert_eq!(forced.api, OpenAiApi::Chat);
        assert!(config(&[("OPENAI_API", "completions")]).is_err());
    }

    #[test]
    fn a_model_reference_names_its_provider_or_takes_the_default() {
        let bedrock_id = "us.anthropic.claude-sonnet-4-20250514-v1:0";
        assert_eq!(
            ModelRef::parse(bedrock_id, ModelChoice::Bedrock),
            ModelRef {
                provider: ModelChoice::Bedrock,
                model: bedrock_id.to_owned()
            }
        );
        assert_eq!(
            ModelRef::parse(&format!("bedrock:{bedrock_id}"), ModelChoice::OpenAi).model,
            bedrock_id
        );
        let claude = ModelRef::parse("anthropic:claude-haiku-4-5", ModelChoice::OpenAi);
        assert_eq!(claude.provider, ModelChoice::Anthropic);
        assert_eq!(claude.to_string(), "anthropic:claude-haiku-4-5");
        assert_eq!(
            ModelRef::parse("gpt-5", ModelChoice::OpenAi).provider,
            ModelChoice::OpenAi
        );
    }

    #[test]
    fn fallbacks_must_name_configured_providers() {
        let set = config(&[
            ("OPENAI_API_KEY", "sk-x"),
            ("AGENT_MODEL", "gpt-5"),
            ("ANTHROPIC_API_KEY", "sk-ant"),
            (
                "MODEL_FALLBACKS",
                "anthropic:claude-haiku-4-5, openai:gpt-5, gpt-4.1-mini",
            ),
        ])
        .unwrap()
        .model;
        let names: Vec<String> = set.fallbacks.iter().map(ToString::to_string).collect();
        // The primary itself is never its own fallback.
        assert_eq!(names, ["anthropic:claude-haiku-4-5", "openai:gpt-4.1-mini"]);
        let err = config(&[
            ("OPENAI_API_KEY", "sk-x"),
            ("MODEL_FALLBACKS", "gemini:gemini-2.5-flash"),
        ])
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("gemini provider is not configured"),
            "{err}"
        );
    }

    #[test]
    fn reasoning_effort_and_timeouts_are_checked() {
        let set = config(&[
            ("REASONING_EFFORT", "low"),
            ("MODEL_IDLE_TIMEOUT_MS", "500"),
        ])
        .unwrap()
        .model;
        assert_eq!(set.reasoning_effort, Some(ReasoningEffort::Low));
        assert_eq!(set.idle_timeout, Duration::from_millis(500));
        assert!(config(&[("REASONING_EFFORT", "extreme")]).is_err());
        assert!(config(&[("MODEL_IDLE_TIMEOUT_MS", "0")]).is_err());
        assert!(config(&[("MODEL_PROVIDER", "anthropic")]).is_err());
    }

    #[test]
    fn a_provider_chosen_without_its_key_names_the_key_to_set() {
        let err = config(&[("MODEL_PROVIDER", "anthropic")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "MODEL_PROVIDER=anthropic needs ANTHROPIC_API_KEY (or ANTHROPIC_API_KEY_SECRET_ID, a \
             Secrets Manager secret; or ANTHROPIC_BASE_URL for a gateway that holds the key)"
        );
        let err = config(&[("MODEL_PROVIDER", "gemini")]).unwrap_err();
        assert!(err.to_string().contains("needs GEMINI_API_KEY"), "{err}");
        let err = config(&[
            ("OPENAI_API_KEY", "sk"),
            ("MODEL_FALLBACKS", "anthropic:claude-haiku-4-5"),
        ])
        .unwrap_err();
        assert!(err.to_string().contains("set ANTHROPIC_API_KEY"), "{err}");
    }

    #[test]
    fn bedrock_needs_a_model_id() {
        let bedrock = config(&[
            ("MODEL_PROVIDER", "bedrock"),
            ("AGENT_MODEL", "us.anthropic.claude-sonnet-4-20250514-v1:0"),
            ("BEDROCK_MAX_TOKENS", "2048"),
        ]);
        if cfg!(feature = "bedrock") {
            let bedrock = bedrock.unwrap();
            assert_eq!(bedrock.model.provider, ModelChoice::Bedrock);
            assert_eq!(
                bedrock.model.name,
                "us.anthropic.claude-sonnet-4-20250514-v1:0"
            );
            assert_eq!(bedrock.model.bedrock_max_tokens, Some(2048));
            let err = config(&[("MODEL_PROVIDER", "bedrock")]).unwrap_err();
            assert!(err.to_string().starts_with("AGENT_MODEL must be"));
            // An OpenAI key in the environment does not override the explicit choice.
            assert_eq!(
                config(&[
                    ("MODEL_PROVIDER", "bedrock"),
                    ("AGENT_MODEL", "amazon.nova-lite-v1:0"),
                    ("OPENAI_API_KEY", "sk-x")
                ])
                .unwrap()
                .model
                .provider,
                ModelChoice::Bedrock
            );
            assert!(config(&[("BEDROCK_MAX_TOKENS", "many")]).is_err());
        } else {
            assert!(bedrock.unwrap_err().to_string().contains("bedrock"));
        }
    }
}
