//! Amazon Bedrock ConverseStream (`MODEL_PROVIDER=bedrock`) through `aws-sdk-bedrockruntime`.
//! Owns the mapping of a [`ModelRequest`] to Converse messages, system blocks and `toolConfig`
//! ([`request`]), of the event stream back to [`super::ModelDelta`]s ([`stream`]), of JSON to and
//! from the SDK's `Document` ([`document`]). One attempt per call: the SDK does not retry, and
//! its errors (an HTTP status, or an exception as the stream's first event) are classified for
//! the one retry layer above the providers ([`super::resilient`]).

mod document;
#[cfg(test)]
use document::from_document;
mod media;
mod request;
mod stream;

pub use request::BedrockSettings;
pub use request::CachePoints;
pub(crate) use request::{additional_fields, converse_input, inference_config};

use super::refusal::Refusal;
use super::{DeltaStream, ModelError, ModelProvider, ModelRequest, RetryHint, truncate};
use crate::protocol::UserPart;
use async_trait::async_trait;
use aws_sdk_bedrockruntime::config::retry::RetryConfig;
use aws_sdk_bedrockruntime::config::{StalledStreamProtectionConfig, timeout::TimeoutConfig};
use aws_sdk_bedrockruntime::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_bedrockruntime::operation::converse_stream::ConverseStreamError;
use std::time::Duration;

/// How the SDK client behaves; applied on top of the standard AWS configuration (region,
/// credentials, `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`).
#[derive(Debug, Clone)]
pub struct ClientSettings {
    pub connect_timeout: Duration,
}

/// The Bedrock Runtime client, built once per cold start from the standard AWS configuration.
pub(crate) fn client(
    sdk: &aws_config::SdkConfig,
    settings: &ClientSettings,
) -> aws_sdk_bedrockruntime::Client {
    aws_sdk_bedrockruntime::Client::from_conf(client_config(sdk, settings).build())
}

/// The client's configuration builder, so tests can add an endpoint or interceptors to exactly
/// what production uses.
pub fn client_config(
    sdk: &aws_config::SdkConfig,
    settings: &ClientSettings,
) -> aws_sdk_bedrockruntime::config::Builder {
    aws_sdk_bedrockruntime::config::Builder::from(sdk)
        // Retries live in one place, above every provider: two nested loops would multiply
        // the attempts and ignore the fallbacks.
        .retry_config(RetryConfig::disabled())
        // No operation timeout: a turn streams for as long as the model talks; the run's
        // deadline bounds it.
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(settings.connect_timeout)
                .build(),
        )
        // A silent stream is bounded by MODEL_IDLE_TIMEOUT_MS above the providers, the same
        // for every provider.
        .stalled_stream_protection(StalledStreamProtectionConfig::disabled())
}

pub struct BedrockProvider {
    client: aws_sdk_bedrockruntime::Client,
    settings: BedrockSettings,
}

impl BedrockProvider {
    pub fn new(client: aws_sdk_bedrockruntime::Client, settings: BedrockSettings) -> Self {
        Self { client, settings }
    }
}

#[async_trait]
impl ModelProvider for BedrockProvider {
    async fn stream(&self, request: &ModelRequest) -> Result<DeltaStream, ModelError> {
        // Claude refuses a forced tool call while it thinks: that call goes without.
        let thinking =
            self.settings.reasoning_budget_tokens.is_some() && request.tool_choice.is_none();
        let input = converse_input(request, thinking, self.settings.cache_points)?;
        let output = self
            .client
            .converse_stream()
            .model_id(&self.settings.model_id)
            .set_messages(Some(input.messages))
            .set_system((!input.system.is_empty()).then_some(input.system))
            .set_tool_config(input.tool_config)
            .set_inference_config(inference_config(&self.settings, &request.sampling))
            .set_additional_model_request_fields(
                additional_fields(&self.settings).filter(|_| thinking),
            )
            .send()
            .await
            .map_err(send_error)?;
        let mut events = output.stream;
        // An exception may come as the first event instead of an HTTP status: it is the
        // call's failure, which the retry layer may retry, before any output.
        let first = events.recv().await;
        if let Err(error) = &first {
            return Err(stream::stream_error(error));
        }
        Ok(stream::delta_stream(first, events))
    }

    fn describe(&self) -> String {
        format!("amazon bedrock model {}", self.settings.model_id)
    }

    fn identity(&self) -> crate::model::ModelIdentity {
        crate::model::ModelIdentity {
            provider: "bedrock".to_owned(),
            model: self.settings.model_id.clone(),
        }
    }

    fn check_part(&self, part: &UserPart) -> Result<(), String> {
        media::check_part(part)
    }

    fn reads_s3(&self) -> bool {
        true
    }
}

/// A failure of the request itself (before any event). The SDK has already retried what it
/// classifies as retryable.
fn send_error(
    error: SdkError<ConverseStreamError, aws_smithy_runtime_api::http::Response>,
) -> ModelError {
    match &error {
        SdkError::ServiceError(context) => {
            let status = context.raw().status().as_u16();
            let err = context.err();
            tracing::warn!(
                status,
                code = err.code().unwrap_or("unknown"),
                message = %truncate(err.message().unwrap_or(""), 500),
                "Bedrock refused the request"
            );
            let refusal = Refusal::new(
                err.code().map(str::to_owned),
                err.message().unwrap_or_default(),
            );
            if refusal.is_context_overflow() {
                return ModelError::ContextOverflow(refusal);
            }
            ModelError::Status {
                status,
                refusal: Some(refusal),
                retry: retry_hint(context.raw().headers()),
            }
        }
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) => {
            tracing::warn!(error = %aws_sdk_bedrockruntime::error::DisplayErrorContext(&error), "Bedrock unreachable");
            ModelError::Unreachable(match &error {
                SdkError::TimeoutError(_) => "the call timed out".to_owned(),
                other => crate::model::unreachable_cause(other),
            })
        }
        SdkError::ResponseError(context) => {
            let status = context.raw().status().as_u16();
            tracing::warn!(status, error = %aws_sdk_bedrockruntime::error::DisplayErrorContext(&error), "Bedrock answer unreadable");
            if (200..300).contains(&status) {
                ModelError::Malformed
            } else {
                ModelError::Status {
                    status,
                    refusal: None,
                    retry: retry_hint(context.raw().headers()),
                }
            }
        }
        _ => {
            tracing::error!(error = %aws_sdk_bedrockruntime::error::DisplayErrorContext(&error), "Bedrock request not sent");
            ModelError::Api("the Bedrock request could not be built".to_owned())
        }
    }
}

/// `retry-after` and `x-should-retry`, where Bedrock or a gateway in front of it sends them.
fn retry_hint(headers: &aws_smithy_runtime_api::http::Headers) -> RetryHint {
    let mut map = reqwest::header::HeaderMap::new();
    for name in ["retry-after", "retry-after-ms", "x-should-retry"] {
        if let Some(value) = headers
            .get(name)
            .and_then(|value| reqwest::header::HeaderValue::from_str(value).ok())
        {
            map.insert(name, value);
        }
    }
    RetryHint::from_headers(&map)
}
