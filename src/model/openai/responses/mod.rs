//! The OpenAI Responses API (`/v1/responses`), streamed and stateless: `store: false`, with
//! reasoning models' encrypted reasoning included in each answer and sent back in every later
//! request exactly as received ([`request`] builds the input items, [`stream`] reads the
//! events). One attempt per call, classified for the retry layer above.

mod request;
mod stream;

pub(crate) use stream::EventParser;

use super::{open_stream, stream_request};
use crate::model::{DeltaStream, ModelError, ModelProvider, ModelRequest, ReasoningEffort};
use crate::protocol::UserPart;
use crate::protocol::sse::without_leading_bom;
use async_trait::async_trait;
use bytes::Bytes;
use eventsource_stream::Eventsource;
use futures_util::{Stream, StreamExt};
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};

#[derive(Debug, Clone)]
pub(crate) struct ResponsesSettings {
    /// Up to and including `/v1`, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    pub api_key: Option<SecretString>,
    pub model: String,
    /// Send `prompt_cache_key` (OpenAI's own API).
    pub prompt_cache_key: bool,
    /// `reasoning.effort`; set, the model is treated as a reasoning model whatever its name.
    pub reasoning_effort: Option<ReasoningEffort>,
}

pub(crate) struct ResponsesProvider {
    http: reqwest::Client,
    settings: ResponsesSettings,
    endpoint: String,
    reasoning: bool,
}

impl ResponsesProvider {
    pub(crate) fn new(http: reqwest::Client, settings: ResponsesSettings) -> Self {
        let endpoint = format!("{}/responses", settings.base_url.trim_end_matches('/'));
        let reasoning = settings.reasoning_effort.is_some() || is_reasoning_model(&settings.model);
        Self {
            http,
            settings,
            endpoint,
            reasoning,
        }
    }

    fn body(&self, request: &ModelRequest) -> Value {
        let mut body = json!({
            "model": self.settings.model,
            "input": request::input_items(request, &self.settings.model),
            "stream": true,
            // Stateless: every request carries the whole conversation, nothing is kept at
            // OpenAI between calls (zero data retention works).
            "store": false,
        });
        if let Some(instructions) = super::system_text(request) {
            body["instructions"] = json!(instructions);
        }
        if !request.tools.is_empty() {
            body["tools"] = json!(request::tools(request));
        }
        if let Some(name) = &request.tool_choice {
            body["tool_choice"] = json!({"type": "function", "name": name});
        }
        let sampling = &request.sampling;
        if let Some(max_tokens) = sampling.max_tokens {
            body["max_output_tokens"] = json!(max_tokens);
        }
        if self.reasoning {
            body["include"] = json!(["reasoning.encrypted_content"]);
            let mut reasoning = json!({"summary": "auto"});
            if let Some(effort) = self.settings.reasoning_effort {
                reasoning["effort"] = json!(effort.as_str());
            }
            body["reasoning"] = reasoning;
        } else {
            // Reasoning models refuse sampling parameters; the others take them.
            if let Some(temperature) = sampling.temperature {
                body["temperature"] = json!(temperature);
            }
            if let Some(top_p) = sampling.top_p {
                body["top_p"] = json!(top_p);
            }
        }
        if self.settings.prompt_cache_key
            && let Some(key) = &request.cache_key
        {
            body["prompt_cache_key"] = json!(key);
        }
        body
    }

    async fn send(&self, body: &Value) -> Result<reqwest::Response, ModelError> {
        let mut builder = stream_request(&self.http, &self.endpoint, body);
        if let Some(key) = &self.settings.api_key {
            builder = builder.bearer_auth(key.expose_secret());
        }
        open_stream(builder).await
    }
}

#[async_trait]
impl ModelProvider for ResponsesProvider {
    async fn stream(&self, request: &ModelRequest) -> Result<DeltaStream, ModelError> {
        let response = self.send(&self.body(request)).await?;
        Ok(delta_stream(response.bytes_stream(), &self.settings.model))
    }

    fn describe(&self) -> String {
        format!(
            "openai model {} at {} (responses)",
            self.settings.model, self.settings.base_url
        )
    }

    fn identity(&self) -> crate::model::ModelIdentity {
        crate::model::ModelIdentity {
            provider: "openai".to_owned(),
            model: self.settings.model.clone(),
        }
    }

    fn check_part(&self, part: &UserPart) -> Result<(), String> {
        request::check_part(part)
    }
}

/// Whether `model` reasons (OpenAI's o-series, GPT-5 and later, Codex): only these take
/// `reasoning` and `include`, and refuse `temperature`.
fn is_reasoning_model(model: &str) -> bool {
    let model = model.to_ascii_lowercase();
    let model = model.rsplit('/').next().unwrap_or(&model);
    let o_series = model.starts_with('o') && model[1..].starts_with(|c: char| c.is_ascii_digit());
    let gpt_major = model
        .strip_prefix("gpt-")
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|major| major.parse::<u32>().ok());
    o_series || gpt_major.is_some_and(|major| major >= 5) || model.contains("codex")
}

/// The whole receive path from raw bytes to deltas; split points in the bytes never matter.
pub(crate) fn delta_stream<S, E>(bytes: S, model: &str) -> DeltaStream
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    let mut events = Box::pin(without_leading_bom(bytes).eventsource());
    let mut parser = EventParser::new(model);
    Box::pin(async_stream::stream! {
        let mut out = Vec::new();
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(event) => event,
                Err(err) => {
                    tracing::warn!(error = %err, "model stream broke off");
                    yield Err(ModelError::Stream);
                    return;
                }
            };
            let pushed = parser.push(&event.data, &mut out);
            for delta in out.drain(..) {
                yield Ok(delta);
            }
            if let Err(err) = pushed {
                yield Err(err);
                return;
            }
            if parser.is_done() {
                return;
            }
        }
        if let Err(err) = parser.finish() {
            yield Err(err);
        }
    })
}

/// A reasoning item as this server keeps it: the item exactly as the model sent it, the model
/// that made it (it goes back only to that model), and the id of the item it produced (it goes
/// back right before that item).
#[derive(Debug, Clone, PartialEq)]
struct ReasoningItem {
    model: String,
    next: Option<String>,
    item: Value,
}

impl ReasoningItem {
    fn to_text(&self) -> String {
        json!({"model": self.model, "next": self.next, "item": self.item}).to_string()
    }

    fn parse(text: &str) -> Option<Self> {
        let value: Value = serde_json::from_str(text).ok()?;
        Some(Self {
            model: value.get("model")?.as_str()?.to_owned(),
            next: value.get("next").and_then(Value::as_str).map(str::to_owned),
            item: value.get("item").filter(|item| item.is_object())?.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasoning_models_are_told_apart_by_name() {
        for model in [
            "gpt-5",
            "gpt-5.4-mini",
            "o3",
            "o4-mini",
            "gpt-5-codex",
            "azure/gpt-5",
        ] {
            assert!(is_reasoning_model(model), "{model}");
        }
        for model in ["gpt-4.1", "gpt-4o-mini", "omni-moderation", "test-model"] {
            assert!(!is_reasoning_model(model), "{model}");
        }
    }

    #[test]
    fn a_forced_tool_is_named_in_tool_choice() {
        let provider = ResponsesProvider::new(
            reqwest::Client::new(),
            ResponsesSettings {
                base_url: "http://127.0.0.1:9/v1".into(),
                api_key: None,
                model: "gpt-5-mini".into(),
                prompt_cache_key: false,
                reasoning_effort: None,
            },
        );
        let request = ModelRequest {
            tools: vec![crate::model::ToolSpec {
                name: "copilotkitSuggest".into(),
                description: "Suggest what the user could say next".into(),
                parameters: json!({"type": "object", "properties": {}}),
            }],
            tool_choice: Some("copilotkitSuggest".into()),
            ..ModelRequest::default()
        };
        assert_eq!(
            provider.body(&request)["tool_choice"],
            json!({"type": "function", "name": "copilotkitSuggest"})
        );
        assert!(
            provider
                .body(&ModelRequest::default())
                .get("tool_choice")
                .is_none()
        );
    }

    #[test]
    fn a_reasoning_item_round_trips_exactly() {
        let item = ReasoningItem {
            model: "gpt-5".into(),
            next: Some("fc_1".into()),
            item: json!({"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAA=="}),
        };
        assert_eq!(ReasoningItem::parse(&item.to_text()), Some(item));
        assert_eq!(ReasoningItem::parse("{}"), None);
    }
}
