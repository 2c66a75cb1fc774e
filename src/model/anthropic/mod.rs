//! Anthropic's Messages API (`MODEL_PROVIDER=anthropic`), streamed over reqwest: [`request`]
//! builds the body (system blocks, alternating messages, thinking blocks sent back as they came,
//! `cache_control` breakpoints), [`stream`] reads the events. One attempt per call, its failure
//! classified for the retry layer above ([`super::resilient`]).

mod media;
mod request;
mod stream;

pub(crate) use stream::EventParser;

use super::openai::{open_stream, stream_request};
use crate::model::{DeltaStream, ModelError, ModelProvider, ModelRequest, ReasoningEffort};
use crate::protocol::UserPart;
use crate::protocol::sse::without_leading_bom;
use async_trait::async_trait;
use bytes::Bytes;
use eventsource_stream::Eventsource;
use futures_util::{Stream, StreamExt};
use secrecy::{ExposeSecret, SecretString};

/// The API version this provider speaks: the Messages API's shapes as of that date.
const API_VERSION: &str = "2023-06-01";

/// Lets Claude think between tool calls (built into the newest models, which ignore it).
const INTERLEAVED_THINKING: &str = "interleaved-thinking-2025-05-14";

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
    http: reqwest::Client,
    settings: AnthropicSettings,
    endpoint: String,
}

impl AnthropicProvider {
    /// One client per cold start: its connection pool is what keeps warm runs fast.
    pub(crate) fn new(http: reqwest::Client, settings: AnthropicSettings) -> Self {
        let endpoint = format!("{}/v1/messages", settings.base_url.trim_end_matches('/'));
        Self {
            http,
            settings,
            endpoint,
        }
    }

    async fn send(&self, body: request::MessagesBody) -> Result<reqwest::Response, ModelError> {
        let mut builder = stream_request(&self.http, &self.endpoint, &body.body)
            .header("anthropic-version", API_VERSION);
        if body.thinking {
            builder = builder.header("anthropic-beta", INTERLEAVED_THINKING);
        }
        if let Some(key) = &self.settings.api_key {
            // Both ways a key is presented: api.anthropic.com and the gateways built for the
            // older SDKs (LiteLLM, Portkey, Cloudflare's) read `x-api-key`; the current
            // official SDKs (Python 2.x) send the key as a bearer token, and gateways written
            // for them read `Authorization`. The same key in both is accepted by each.
            // Marked sensitive, as `bearer_auth` marks its header: never in a Debug print.
            let mut value =
                reqwest::header::HeaderValue::from_str(key.expose_secret()).map_err(|_| {
                    ModelError::Api("the Anthropic API key is not a valid header value".to_owned())
                })?;
            value.set_sensitive(true);
            builder = builder
                .header("x-api-key", value)
                .bearer_auth(key.expose_secret());
        }
        // A refusal, `{"type": "error", "error": {"type", "message"}}`, is read like OpenAI's
        // body, its `type` as the code ("prompt is too long" is the overflow a run compacts on).
        open_stream(builder).await
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
    async fn stream(&self, request: &ModelRequest) -> Result<DeltaStream, ModelError> {
        let body = request::body(request, &self.settings);
        let response = self.send(body).await?;
        Ok(delta_stream(response.bytes_stream()))
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

    fn check_part(&self, part: &UserPart) -> Result<(), String> {
        media::check_part(part)
    }
}

/// The whole receive path from raw bytes to deltas; split points in the bytes never matter.
pub(crate) fn delta_stream<S, E>(bytes: S) -> DeltaStream
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    let mut events = Box::pin(without_leading_bom(bytes).eventsource());
    Box::pin(async_stream::stream! {
        let mut parser = EventParser::new();
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
            let pushed = parser.push(&event.event, &event.data, &mut out);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::failure::FailureKind;
    use crate::model::openai::refused;

    async fn refusal(status: u16, body: &'static str) -> ModelError {
        let response = http::Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(body)
            .unwrap();
        refused(reqwest::Response::from(response)).await
    }

    #[tokio::test]
    async fn the_apis_error_bodies_are_read_prompt_too_long_as_the_overflow() {
        let overflow = refusal(
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210094 tokens > 200000 maximum"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}"#,
        )
        .await;
        let ModelError::ContextOverflow(refusal_said) = &overflow else {
            panic!("{overflow:?}")
        };
        assert_eq!(refusal_said.code.as_deref(), Some("invalid_request_error"));
        assert_eq!(refusal_said.window(), Some(200_000));
        let overloaded = refusal(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )
        .await;
        assert_eq!(overloaded.kind(), FailureKind::Unavailable);
        assert!(overloaded.is_retryable());
        assert_eq!(
            overloaded.to_string(),
            "the model API answered HTTP 529 (overloaded_error: Overloaded)"
        );
        let auth = refusal(
            401,
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
        )
        .await;
        assert_eq!(auth.kind(), FailureKind::Refused);
    }
}
