//! The model section: which provider answers (`MODEL_PROVIDER`, or an OpenAI key or base URL
//! given), which model, and how its calls are retried and bounded.

use super::vars::Vars;
use super::{ConfigError, Section};
use secrecy::SecretString;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelChoice {
    /// An OpenAI-compatible Chat Completions API.
    OpenAi,
    /// The offline scripted demo model.
    Demo,
    /// Amazon Bedrock ConverseStream (`MODEL_PROVIDER=bedrock`, builds with the `bedrock`
    /// feature); `AGENT_MODEL` is the model id or inference profile id.
    Bedrock,
}

#[derive(Debug, Clone)]
pub struct ModelConfig {
    pub provider: ModelChoice,
    /// `AGENT_MODEL`: the model name, or Bedrock's model id or inference profile id.
    pub name: String,
    pub max_retries: u32,
    pub connect_timeout: Duration,
    pub openai: OpenAiConfig,
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
}

impl Section for ModelConfig {
    const SETTINGS: &'static [&'static str] = &[
        "MODEL_PROVIDER",
        "AGENT_MODEL",
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_API_KEY_SECRET_ID",
        "BEDROCK_MAX_TOKENS",
        "BEDROCK_REASONING_BUDGET_TOKENS",
        "MODEL_MAX_RETRIES",
        "MODEL_CONNECT_TIMEOUT_MS",
    ];

    fn from_vars(vars: &Vars) -> Result<Self, ConfigError> {
        let api_key = vars.text("OPENAI_API_KEY").map(SecretString::from);
        let base_url = vars.text("OPENAI_BASE_URL");
        let provider = provider(vars, api_key.is_some() || base_url.is_some())?;
        let bedrock_max_tokens =
            Some(vars.bounded::<u32>("BEDROCK_MAX_TOKENS", 0, 0..=1_000_000)?)
                .filter(|max| *max > 0);
        // Claude's extended thinking takes a budget of at least 1,024 tokens.
        let bedrock_reasoning_budget_tokens =
            vars.optional_bounded::<u32>("BEDROCK_REASONING_BUDGET_TOKENS", 1_024..=1_000_000)?;
        Ok(Self {
            provider,
            name: vars
                .text("AGENT_MODEL")
                .unwrap_or_else(|| "gpt-4o-mini".to_owned()),
            max_retries: vars.bounded("MODEL_MAX_RETRIES", 3, 0..=10)?,
            connect_timeout: Duration::from_millis(vars.bounded(
                "MODEL_CONNECT_TIMEOUT_MS",
                10_000,
                100..=60_000,
            )?),
            openai: OpenAiConfig {
                base_url: base_url.unwrap_or_else(|| "https://api.openai.com/v1".to_owned()),
                api_key,
                api_key_secret_id: vars.text("OPENAI_API_KEY_SECRET_ID"),
            },
            bedrock_max_tokens,
            bedrock_reasoning_budget_tokens,
        })
    }
}

/// `MODEL_PROVIDER`; unset or `openai`, the demo model answers unless an OpenAI key or base URL
/// is configured.
fn provider(vars: &Vars, openai_configured: bool) -> Result<ModelChoice, ConfigError> {
    match vars.text("MODEL_PROVIDER").as_deref() {
        None | Some("openai") if openai_configured => Ok(ModelChoice::OpenAi),
        None | Some("openai") | Some("demo") | Some("scripted") => Ok(ModelChoice::Demo),
        Some("bedrock") if cfg!(feature = "bedrock") => {
            if vars.text("AGENT_MODEL").is_none() {
                return Err(ConfigError::Invalid {
                    name: "AGENT_MODEL",
                    expected: "a Bedrock model id or inference profile id with MODEL_PROVIDER=bedrock",
                    value: String::new(),
                });
            }
            Ok(ModelChoice::Bedrock)
        }
        Some(other) => Err(ConfigError::Invalid {
            name: "MODEL_PROVIDER",
            expected: if cfg!(feature = "bedrock") {
                "openai, bedrock or demo"
            } else {
                "openai or demo (this build has no `bedrock` feature)"
            },
            value: other.to_owned(),
        }),
    }
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
