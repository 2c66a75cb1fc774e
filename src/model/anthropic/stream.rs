//! Messages API stream events as [`ModelDelta`]s. Content blocks are keyed by `index`: text,
//! thinking (its text, then the signature that closes it), redacted thinking (its data whole on
//! the block's start) and tool uses (id and name on the start, the input as JSON fragments).
//! `message_start` carries the id and the prompt's usage, `message_delta` the stop reason and
//! the cumulative output usage, `message_stop` ends the answer; `ping` is ignored and an
//! `error` event is the call's failure, with the status its type stands for.

use crate::model::failure::status_of_error_type;
use crate::model::{FinishReason, ModelDelta, ModelError, Refusal, RetryHint, Usage};
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;

/// One event's data. Flat, so that serde reads it in one pass without buffering; fields that
/// an event does not have stay `None`.
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    content_block: Option<BlockStart>,
    #[serde(default)]
    message: Option<MessageStart>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<WireError>,
}

/// A `content_block_delta`'s or a `message_delta`'s `delta`.
#[derive(Deserialize, Default)]
struct Delta {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    signature: Option<String>,
    #[serde(default)]
    partial_json: Option<String>,
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct BlockStart {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    signature: Option<String>,
    #[serde(default)]
    data: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    input: Option<Value>,
}

#[derive(Deserialize)]
struct MessageStart {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct OutputDetails {
    #[serde(default)]
    thinking_tokens: Option<u64>,
}

#[derive(Deserialize, Default)]
struct WireError {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// A tool-use block being streamed.
struct ToolBlock {
    index: usize,
    /// Whether any input fragment came.
    streamed: bool,
    /// The input the block's start carried, when it was not `{}` (some gateways send the
    /// whole input there).
    start_input: Option<String>,
}

/// Turns one answer's events into deltas.
#[derive(Default)]
pub(crate) struct EventParser {
    tools: Vec<ToolBlock>,
    usage: WireUsage,
    stop_reason: Option<String>,
    identified: bool,
    ended: bool,
}

impl EventParser {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Whether the answer has ended (`message_stop`): nothing after it matters.
    pub(crate) fn is_done(&self) -> bool {
        self.ended
    }

    /// Parses one SSE event (`name` is its `event:` line, used when the data has no `type`),
    /// appending the deltas it carries to `out`.
    pub(crate) fn push(
        &mut self,
        name: &str,
        data: &str,
        out: &mut Vec<ModelDelta>,
    ) -> Result<(), ModelError> {
        let data = data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let event: Event<'_> = serde_json::from_str(data).map_err(|_| ModelError::Malformed)?;
        let kind = event.kind.as_deref().unwrap_or(name);
        match kind {
            "message_start" => self.message_start(event.message, out),
            "content_block_start" => {
                let index = event.index.ok_or(ModelError::Malformed)?;
                let block = event.content_block.ok_or(ModelError::Malformed)?;
                self.block_start(index, block, out);
            }
            "content_block_delta" => {
                let index = event.index.ok_or(ModelError::Malformed)?;
                if let Some(delta) = event.delta {
                    self.block_delta(index, delta, out);
                }
            }
            "content_block_stop" => {
                let index = event.index.ok_or(ModelError::Malformed)?;
                self.block_stop(index, out);
            }
            "message_delta" => {
                if let Some(reason) = event.delta.and_then(|delta| delta.stop_reason) {
                    self.stop_reason = Some(reason);
                }
                if let Some(usage) = event.usage {
                    self.add_usage(usage);
                }
            }
            "message_stop" => self.end(out),
            "error" => return Err(failure(event.error.unwrap_or_default())),
            // `ping`, and events this server does not know.
            _ => {}
        }
        Ok(())
    }

    /// Called when the byte stream ends: without `message_stop` the answer was cut off and
    /// must not be acted on.
    pub(crate) fn finish(&self) -> Result<(), ModelError> {
        if self.ended {
            Ok(())
        } else {
            Err(ModelError::Incomplete)
        }
    }

    fn message_start(&mut self, message: Option<MessageStart>, out: &mut Vec<ModelDelta>) {
        let Some(message) = message else {
            return;
        };
        if !self.identified
            && let Some(id) = message.id.filter(|id| !id.is_empty())
        {
            self.identified = true;
            out.push(ModelDelta::ResponseId(id));
        }
        if let Some(usage) = message.usage {
            self.add_usage(usage);
        }
    }

    fn block_start(&mut self, index: usize, block: BlockStart, out: &mut Vec<ModelDelta>) {
        match block.kind.as_str() {
            "text" => push_text(block.text, out),
            "thinking" => {
                if let Some(thinking) = block.thinking.filter(|text| !text.is_empty()) {
                    out.push(ModelDelta::Reasoning(thinking));
                }
                if let Some(signature) = block.signature.filter(|text| !text.is_empty()) {
                    out.push(ModelDelta::ReasoningSignature(signature));
                }
            }
            // The encrypted reasoning comes whole on the start; it goes back as these bytes.
            "redacted_thinking" => {
                if let Some(data) = block.data.filter(|data| !data.is_empty()) {
                    out.push(ModelDelta::RedactedReasoning(data.into_bytes()));
                }
            }
            "tool_use" => {
                let start_input = block
                    .input
                    .filter(|input| input.as_object().is_some_and(|map| !map.is_empty()))
                    .map(|input| input.to_string());
                self.tools.push(ToolBlock {
                    index,
                    streamed: false,
                    start_input,
                });
                out.push(ModelDelta::ToolCallStart {
                    index,
                    id: block.id.filter(|id| !id.is_empty()),
                    name: block.name.unwrap_or_default(),
                });
            }
            // Server tools' blocks (web search and its results) are the API's business.
            _ => {}
        }
    }

    fn block_delta(&mut self, index: usize, delta: Delta, out: &mut Vec<ModelDelta>) {
        match delta.kind.as_deref() {
            Some("text_delta") => push_text(delta.text, out),
            Some("thinking_delta") => {
                if let Some(thinking) = delta.thinking.filter(|text| !text.is_empty()) {
                    out.push(ModelDelta::Reasoning(thinking));
                }
            }
            // Claude checks it when the block comes back: kept with the reasoning, never shown.
            Some("signature_delta") => {
                if let Some(signature) = delta.signature.filter(|text| !text.is_empty()) {
                    out.push(ModelDelta::ReasoningSignature(signature));
                }
            }
            Some("input_json_delta") => {
                // Fragments of a server tool's input (no start of ours) are not a call.
                let Some(tool) = self.tools.iter_mut().find(|tool| tool.index == index) else {
                    return;
                };
                if let Some(fragment) = delta.partial_json.filter(|text| !text.is_empty()) {
                    tool.streamed = true;
                    out.push(ModelDelta::ToolCallArgs {
                        index,
                        delta: fragment,
                    });
                }
            }
            // Citations are not shown.
            _ => {}
        }
    }

    /// A tool use whose input came only on its start gets it now.
    fn block_stop(&mut self, index: usize, out: &mut Vec<ModelDelta>) {
        if let Some(tool) = self
            .tools
            .iter_mut()
            .find(|tool| tool.index == index && !tool.streamed)
            && let Some(input) = tool.start_input.take()
        {
            tool.streamed = true;
            out.push(ModelDelta::ToolCallArgs {
                index,
                delta: input,
            });
        }
    }

    /// `message_delta`'s counts are cumulative: each one present replaces the earlier.
    fn add_usage(&mut self, usage: WireUsage) {
        let merged = &mut self.usage;
        let take = |slot: &mut Option<u64>, value: Option<u64>| {
            if value.is_some() {
                *slot = value;
            }
        };
        take(&mut merged.input_tokens, usage.input_tokens);
        take(&mut merged.output_tokens, usage.output_tokens);
        take(
            &mut merged.cache_creation_input_tokens,
            usage.cache_creation_input_tokens,
        );
        take(
            &mut merged.cache_read_input_tokens,
            usage.cache_read_input_tokens,
        );
        if let Some(details) = usage.output_tokens_details {
            merged.output_tokens_details = Some(details);
        }
    }

    fn end(&mut self, out: &mut Vec<ModelDelta>) {
        if self.ended {
            return;
        }
        self.ended = true;
        out.push(ModelDelta::Usage(usage(self.usage)));
        out.push(ModelDelta::Finish(match self.stop_reason.as_deref() {
            Some("end_turn" | "stop_sequence") => FinishReason::Stop,
            Some("tool_use") => FinishReason::ToolCalls,
            // The answer was cut off, by its cap or by the context window.
            Some("max_tokens" | "model_context_window_exceeded") => FinishReason::Length,
            // The streaming classifiers stopped the answer.
            Some("refusal") => FinishReason::ContentFilter,
            Some(other) => FinishReason::Other(other.to_owned()),
            None if !self.tools.is_empty() => FinishReason::ToolCalls,
            None => FinishReason::Stop,
        }));
    }
}

fn push_text(text: Option<String>, out: &mut Vec<ModelDelta>) {
    if let Some(text) = text.filter(|text| !text.is_empty()) {
        out.push(ModelDelta::Text(text));
    }
}

/// Anthropic's `input_tokens` leaves out cache reads and writes; AG-UI's input is every prompt
/// token, the cached ones and the cache writes parts of it. `output_tokens` includes thinking.
fn usage(usage: WireUsage) -> Usage {
    let cached = usage.cache_read_input_tokens;
    let written = usage.cache_creation_input_tokens;
    Usage {
        input_tokens: usage
            .input_tokens
            .unwrap_or(0)
            .saturating_add(cached.unwrap_or(0))
            .saturating_add(written.unwrap_or(0)),
        output_tokens: usage.output_tokens.unwrap_or(0),
        reasoning_tokens: usage
            .output_tokens_details
            .and_then(|details| details.thinking_tokens),
        cached_input_tokens: cached,
        cache_write_input_tokens: written,
    }
}

/// An `error` event (`{"type": "overloaded_error", "message": "Overloaded"}`), with the status
/// its type stands for: an overload is a 529, retried when nothing was streamed yet.
fn failure(error: WireError) -> ModelError {
    let kind = error.kind.unwrap_or_else(|| "api_error".to_owned());
    let refusal = Refusal::new(Some(kind.clone()), error.message.as_deref().unwrap_or(""));
    tracing::warn!(error = %refusal, "the Anthropic stream reported an error");
    if refusal.is_context_overflow() {
        return ModelError::ContextOverflow(refusal);
    }
    ModelError::Status {
        status: status_of_error_type(&kind),
        refusal: Some(refusal),
        retry: RetryHint::default(),
    }
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
