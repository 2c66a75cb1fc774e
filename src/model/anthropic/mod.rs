//! Anthropic's Messages API (`MODEL_PROVIDER=anthropic`), streamed over reqwest. Being written:
//! see issue 35.

use crate::model::{DeltaStream, ModelError, ModelProvider, ModelRequest, ReasoningEffort};
use async_trait::async_trait;
use secrecy::SecretString;

#[derive(Debug, Clone)]
pub(crate) struct AnthropicSettings {
    /// Without `/v1`, e.g. `https://api.anthropic.com`.
    pub base_url: String,
    pub api_key: Option<SecretString>,
    pub model: String,
    /// `max_tokens` when the request sets none (the API requires one).
    pub max_tokens: u32,
    /// Extended thinking with this budget; `None` is off.
    pub thinking_budget_tokens: Option<u32>,
    /// `cache_control` breakpoints where Bedrock's cache points go (`PROMPT_CACHE=auto`).
    pub cache_control: bool,
}

pub(crate) struct AnthropicProvider {
    #[allow(dead_code)]
    http: reqwest::Client,
    settings: AnthropicSettings,
}

impl AnthropicProvider {
    pub(crate) fn new(http: reqwest::Client, settings: AnthropicSettings) -> Self {
        Self { http, settings }
    }
}

/// The thinking budget `REASONING_EFFORT` stands for when no budget is set.
pub(crate) fn thinking_budget(effort: ReasoningEffort) -> Option<u32> {
    match effort {
        ReasoningEffort::None => None,
        ReasoningEffort::Minimal | ReasoningEffort::Low => Some(1_024),
        ReasoningEffort::Medium => Some(4_096),
        ReasoningEffort::High => Some(16_384),
    }
}

#[async_trait]
impl ModelProvider for AnthropicProvider {
    async fn stream(&self, _request: &ModelRequest) -> Result<DeltaStream, ModelError> {
        Err(ModelError::Api(
            "the Anthropic provider is not built yet".to_owned(),
        ))
    }

    fn describe(&self) -> String {
        format!(
            "anthropic model {} at {}",
            self.settings.model, self.settings.base_url
        )
    }

    fn identity(&self) -> crate::model::ModelIdentity {
        crate::model::ModelIdentity {
            provider: "anthropic".to_owned(),
            model: self.settings.model.clone(),
        }
    }
}
