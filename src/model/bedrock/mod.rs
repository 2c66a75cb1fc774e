//! Amazon Bedrock ConverseStream (`MODEL_PROVIDER=bedrock`) through `aws-sdk-bedrockruntime`.
//! Owns the mapping of a [`ModelRequest`] to Converse messages, system blocks and `toolConfig`
//! ([`request`]), of the event stream back to [`super::ModelDelta`]s ([`stream`]), of JSON to and
//! from the SDK's `Document` ([`document`]), and the client's retry policy: the SDK retries
//! throttling and service errors before the stream starts; an exception as the stream's first
//! event is retried here; nothing is retried once output has been streamed.

mod document;
#[cfg(test)]
use document::from_document;
mod media;
mod request;
mod stream;

pub use request::BedrockSettings;
pub use request::CachePoints;
pub(crate) use request::{additional_fields, converse_input, inference_config};
use stream::{retryable_first_event, stream_error};

use super::refusal::Refusal;
use super::{DeltaStream, ModelError, ModelProvider, ModelRequest, backoff_delay, truncate};
use crate::protocol::UserPart;
use async_trait::async_trait;
use aws_sdk_bedrockruntime::config::retry::RetryConfig;
use aws_sdk_bedrockruntime::config::{StalledStreamProtectionConfig, timeout::TimeoutConfig};
use aws_sdk_bedrockruntime::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_bedrockruntime::operation::converse_stream::ConverseStreamError;
use aws_smithy_runtime_api::client::interceptors::context::InterceptorContext;
use aws_smithy_runtime_api::client::retries::classifiers::{ClassifyRetry, RetryAction};
use std::time::Duration;

/// How the SDK client behaves; applied on top of the standard AWS configuration (region,
/// credentials, `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`).
#[derive(Debug, Clone)]
pub struct ClientSettings {
    pub max_retries: u32,
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
        .retry_config(
            RetryConfig::standard()
                .with_max_attempts(settings.max_retries.saturating_add(1))
                .with_initial_backoff(Duration::from_millis(250))
                .with_max_backoff(Duration::from_secs(20)),
        )
        // No operation timeout: a turn streams for as long as the model talks; the run's
        // deadline bounds it.
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(settings.connect_timeout)
                .build(),
        )
        // A reasoning model may stay silent longer than the SDK's default 5 s grace period.
        .stalled_stream_protection(
            StalledStreamProtectionConfig::enabled()
                .upload_enabled(false)
                .grace_period(Duration::from_secs(60))
                .build(),
        )
        .retry_classifier(ThrottledStatus)
}

/// Classifies any HTTP 429 as throttling, also when the body does not name a modeled error
/// (gateways and proxies in front of Bedrock answer 429 without `x-amzn-ErrorType`).
#[derive(Debug)]
struct ThrottledStatus;

impl ClassifyRetry for ThrottledStatus {
    fn classify_retry(&self, ctx: &InterceptorContext) -> RetryAction {
        match ctx.response() {
            Some(response) if response.status().as_u16() == 429 => RetryAction::throttling_error(),
            _ => RetryAction::NoActionIndicated,
        }
    }

    fn name(&self) -> &'static str {
        "any HTTP 429 is throttling"
    }
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
        let input = converse_input(
            request,
            self.settings.reasoning_budget_tokens.is_some(),
            self.settings.cache_points,
        )?;
        let inference_config = inference_config(&self.settings, &request.sampling);
        let additional_fields = additional_fields(&self.settings);
        let mut attempt = 0;
        loop {
            let output = self
                .client
                .converse_stream()
                .model_id(&self.settings.model_id)
                .set_messages(Some(input.messages.clone()))
                .set_system((!input.system.is_empty()).then(|| input.system.clone()))
                .set_tool_config(input.tool_config.clone())
                .set_inference_config(inference_config.clone())
                .set_additional_model_request_fields(additional_fields.clone())
                .send()
                .await
                .map_err(send_error)?;
            let mut events = output.stream;
            let first = events.recv().await;
            if let Err(error) = &first
                && attempt < self.settings.max_retries
                && retryable_first_event(error)
            {
                tracing::warn!(attempt, error = %stream_error(error), "model stream failed before any output; retrying");
                tokio::time::sleep(backoff_delay(attempt)).await;
                attempt += 1;
                continue;
            }
            return Ok(stream::delta_stream(first, events));
        }
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
            }
        }
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) => {
            tracing::warn!(error = %aws_sdk_bedrockruntime::error::DisplayErrorContext(&error), "Bedrock unreachable");
            ModelError::Unreachable
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
                }
            }
        }
        _ => {
            tracing::error!(error = %aws_sdk_bedrockruntime::error::DisplayErrorContext(&error), "Bedrock request not sent");
            ModelError::Api("the Bedrock request could not be built".to_owned())
        }
    }
}
