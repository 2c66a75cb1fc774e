//! ConverseStream events to [`ModelDelta`]s. Blocks are keyed by `contentBlockIndex`: a tool-use
//! block opens with `contentBlockStart` and its input arrives as JSON fragments; text blocks
//! have no start event. `messageStop` carries the stop reason and `metadata` (after it) the usage,
//! so the stream is read to its end. An exception inside the stream becomes a [`ModelError`]
//! here too, with whether it may be retried when it comes first.

use crate::model::refusal::Refusal;
use crate::model::{DeltaStream, FinishReason, ModelDelta, ModelError, Usage, truncate};
use aws_sdk_bedrockruntime::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_bedrockruntime::primitives::event_stream::EventReceiver;
use aws_sdk_bedrockruntime::types::error::ConverseStreamOutputError;
use aws_sdk_bedrockruntime::types::{
    ContentBlockDelta, ContentBlockStart, ConverseStreamOutput, ReasoningContentBlockDelta,
    StopReason, TokenUsage,
};

/// Turns one turn's events into deltas.
#[derive(Debug, Default)]
pub(crate) struct EventMapper {
    /// The `contentBlockIndex` of every tool-use block started so far.
    tool_blocks: Vec<usize>,
    stopped: bool,
}

impl EventMapper {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn push(
        &mut self,
        event: ConverseStreamOutput,
        out: &mut Vec<ModelDelta>,
    ) -> Result<(), ModelError> {
        match event {
            ConverseStreamOutput::ContentBlockStart(event) => {
                let index = block_index(event.content_block_index)?;
                if let Some(ContentBlockStart::ToolUse(start)) = event.start {
                    self.tool_blocks.push(index);
                    out.push(ModelDelta::ToolCallStart {
                        index,
                        id: Some(start.tool_use_id).filter(|id| !id.is_empty()),
                        name: start.name,
                    });
                }
            }
            ConverseStreamOutput::ContentBlockDelta(event) => {
                let index = block_index(event.content_block_index)?;
                if let Some(delta) = event.delta {
                    self.push_block_delta(index, delta, out);
                }
            }
            ConverseStreamOutput::MessageStop(event) => {
                self.stopped = true;
                out.push(ModelDelta::Finish(finish_reason(&event.stop_reason)?));
            }
            ConverseStreamOutput::Metadata(event) => {
                out.extend(event.usage.map(usage));
            }
            _ => {}
        }
        Ok(())
    }

    fn push_block_delta(
        &mut self,
        index: usize,
        delta: ContentBlockDelta,
        out: &mut Vec<ModelDelta>,
    ) {
        match delta {
            ContentBlockDelta::Text(text) if !text.is_empty() => {
                out.push(ModelDelta::Text(text));
            }
            ContentBlockDelta::ReasoningContent(ReasoningContentBlockDelta::Text(text))
                if !text.is_empty() =>
            {
                out.push(ModelDelta::Reasoning(text));
            }
            // Claude checks these when they come back with a tool result: they are kept with
            // the reasoning, never shown.
            ContentBlockDelta::ReasoningContent(ReasoningContentBlockDelta::Signature(
                signature,
            )) if !signature.is_empty() => {
                out.push(ModelDelta::ReasoningSignature(signature));
            }
            ContentBlockDelta::ReasoningContent(ReasoningContentBlockDelta::RedactedContent(
                blob,
            )) if !blob.as_ref().is_empty() => {
                out.push(ModelDelta::RedactedReasoning(blob.into_inner()));
            }
            ContentBlockDelta::ToolUse(fragment) => {
                if !self.tool_blocks.contains(&index) {
                    // Input without a start: still reported (unnamed), so the agent answers it
                    // instead of leaving the history inconsistent.
                    self.tool_blocks.push(index);
                    out.push(ModelDelta::ToolCallStart {
                        index,
                        id: None,
                        name: String::new(),
                    });
                }
                if !fragment.input.is_empty() {
                    out.push(ModelDelta::ToolCallArgs {
                        index,
                        delta: fragment.input,
                    });
                }
            }
            // Citations and image deltas are not shown.
            _ => {}
        }
    }

    /// Called when the events end. Without `messageStop` the answer was cut off and must not
    /// be acted on.
    pub(crate) fn end(&self) -> Result<(), ModelError> {
        if self.stopped {
            Ok(())
        } else {
            Err(ModelError::Incomplete)
        }
    }
}

/// Bedrock's inputTokens leave out cache reads and writes; AG-UI's input is every prompt
/// token, the cached ones a part of it.
fn usage(usage: TokenUsage) -> ModelDelta {
    let count = |n: i32| u64::try_from(n).unwrap_or(0);
    let cached = usage.cache_read_input_tokens.map(count);
    let cache_written = usage.cache_write_input_tokens.map(count);
    let input_tokens = count(usage.input_tokens)
        .saturating_add(cached.unwrap_or(0))
        .saturating_add(cache_written.unwrap_or(0));
    ModelDelta::Usage(Usage {
        input_tokens,
        output_tokens: count(usage.output_tokens),
        reasoning_tokens: None,
        cached_input_tokens: cached,
        cache_write_input_tokens: cache_written,
    })
}

fn block_index(index: i32) -> Result<usize, ModelError> {
    usize::try_from(index).map_err(|_| ModelError::Malformed)
}

/// Stop reasons that mean "no usable answer" are errors with a clear message; the run ends
/// with `RUN_ERROR` `MODEL_ERROR` and nothing of the turn is stored.
fn finish_reason(reason: &StopReason) -> Result<FinishReason, ModelError> {
    Ok(match reason {
        StopReason::EndTurn | StopReason::StopSequence => FinishReason::Stop,
        StopReason::ToolUse => FinishReason::ToolCalls,
        StopReason::MaxTokens => FinishReason::Length,
        StopReason::ContentFiltered => FinishReason::ContentFilter,
        StopReason::GuardrailIntervened => {
            return Err(ModelError::Api(
                "a Bedrock guardrail blocked the answer (guardrail_intervened)".to_owned(),
            ));
        }
        StopReason::ModelContextWindowExceeded => {
            return Err(ModelError::Api(
                "the conversation no longer fits the model's context window".to_owned(),
            ));
        }
        StopReason::MalformedModelOutput | StopReason::MalformedToolUse => {
            return Err(ModelError::Api(format!(
                "the model produced malformed output ({})",
                reason.as_str()
            )));
        }
        other => FinishReason::Other(other.as_str().to_owned()),
    })
}

/// The deltas of one turn, starting with the already received first event.
pub(super) fn delta_stream(
    first: Result<Option<ConverseStreamOutput>, StreamSdkError>,
    mut events: EventReceiver<ConverseStreamOutput, ConverseStreamOutputError>,
) -> DeltaStream {
    Box::pin(async_stream::stream! {
        let mut mapper = EventMapper::new();
        let mut out = Vec::new();
        let mut next = first;
        loop {
            match next {
                Ok(Some(event)) => {
                    let pushed = mapper.push(event, &mut out);
                    for delta in out.drain(..) {
                        yield Ok(delta);
                    }
                    if let Err(err) = pushed {
                        yield Err(err);
                        return;
                    }
                }
                Ok(None) => break,
                Err(err) => {
                    tracing::warn!(error = %aws_sdk_bedrockruntime::error::DisplayErrorContext(&err), "Bedrock stream failed");
                    yield Err(stream_error(&err));
                    return;
                }
            }
            next = events.recv().await;
        }
        if let Err(err) = mapper.end() {
            yield Err(err);
        }
    })
}

pub(super) type StreamSdkError =
    SdkError<ConverseStreamOutputError, aws_smithy_types::event_stream::RawMessage>;

/// A failure inside the event stream.
pub(super) fn stream_error(error: &StreamSdkError) -> ModelError {
    match error {
        SdkError::ServiceError(context) => {
            let err = context.err();
            let name = match err {
                ConverseStreamOutputError::InternalServerException(_) => "InternalServerException",
                ConverseStreamOutputError::ModelStreamErrorException(_) => {
                    "ModelStreamErrorException"
                }
                ConverseStreamOutputError::ServiceUnavailableException(_) => {
                    "ServiceUnavailableException"
                }
                ConverseStreamOutputError::ThrottlingException(_) => "ThrottlingException",
                ConverseStreamOutputError::ValidationException(_) => "ValidationException",
                _ => err.code().unwrap_or("UnknownException"),
            };
            let refusal = Refusal::new(Some(name.to_owned()), err.message().unwrap_or_default());
            if refusal.is_context_overflow() {
                return ModelError::ContextOverflow(refusal);
            }
            // The status each exception has when Bedrock answers it over HTTP, so the retry
            // layer treats both the same.
            let status = match err {
                ConverseStreamOutputError::ThrottlingException(_) => 429,
                ConverseStreamOutputError::ServiceUnavailableException(_) => 503,
                ConverseStreamOutputError::InternalServerException(_)
                | ConverseStreamOutputError::ModelStreamErrorException(_) => 500,
                _ => 400,
            };
            tracing::warn!(status, exception = name, message = %truncate(err.message().unwrap_or_default(), 300), "Bedrock stream exception");
            ModelError::Status {
                status,
                refusal: Some(refusal),
                retry: crate::model::RetryHint::default(),
            }
        }
        SdkError::ResponseError(context) => match context.raw() {
            // The bytes ended inside a frame: the connection was cut.
            aws_smithy_types::event_stream::RawMessage::Invalid(_) => ModelError::Stream,
            _ => ModelError::Malformed,
        },
        _ => ModelError::Stream,
    }
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
