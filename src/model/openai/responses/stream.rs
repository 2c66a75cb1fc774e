//! Responses API stream events as [`ModelDelta`]s. Output items are keyed by `output_index`:
//! text and argument deltas name theirs. A finished reasoning item is held until the next item
//! starts, so that it goes back to the model right before the item it produced; the response's
//! end (`response.completed`, `response.incomplete`) carries usage and the finish reason, and an
//! `error` or `response.failed` event is the call's failure.

use super::ReasoningItem;
use crate::model::artefact::Artefact;
use crate::model::failure::status_of_error_type;
use crate::model::{FinishReason, ModelDelta, ModelError, Refusal, RetryHint, Usage};
use serde_json::Value;

/// An event read only for its type and its text delta.
#[derive(serde::Deserialize)]
struct DeltaEvent {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    delta: Option<String>,
}

/// Turns one response's events into deltas.
pub(crate) struct EventParser {
    /// The model whose reasoning items these are (they go back only to it).
    model: String,
    /// A completed reasoning item waiting for the item it produced.
    held_reasoning: Option<Value>,
    /// The `output_index` of every function call started.
    calls: Vec<u64>,
    /// Calls whose arguments streamed as deltas (the rest get theirs from the finished item).
    streamed_args: Vec<u64>,
    /// The summary part last streamed, to separate parts.
    summary_part: Option<(u64, u64)>,
    message_seen: bool,
    identified: bool,
    ended: bool,
}

impl EventParser {
    pub(crate) fn new(model: &str) -> Self {
        Self {
            model: model.to_owned(),
            held_reasoning: None,
            calls: Vec::new(),
            streamed_args: Vec::new(),
            summary_part: None,
            message_seen: false,
            identified: false,
            ended: false,
        }
    }

    /// Whether the response has ended: nothing after it matters.
    pub(crate) fn is_done(&self) -> bool {
        self.ended
    }

    /// Parses one SSE `data` payload, appending the deltas it carries to `out`.
    pub(crate) fn push(&mut self, data: &str, out: &mut Vec<ModelDelta>) -> Result<(), ModelError> {
        let data = data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        // Text deltas, nearly every event of a stream, parse into this small struct; the rarer
        // events that carry whole items are read as JSON values.
        let head: DeltaEvent = serde_json::from_str(data).map_err(|_| ModelError::Malformed)?;
        match head.kind.as_str() {
            "response.output_text.delta" | "response.refusal.delta" => {
                out.extend(head.delta.filter(|d| !d.is_empty()).map(ModelDelta::Text));
                return Ok(());
            }
            "response.reasoning_text.delta" => {
                out.extend(
                    head.delta
                        .filter(|d| !d.is_empty())
                        .map(ModelDelta::Reasoning),
                );
                return Ok(());
            }
            _ => {}
        }
        let event: Value = serde_json::from_str(data).map_err(|_| ModelError::Malformed)?;
        match head.kind.as_str() {
            "response.created" | "response.in_progress" => self.identify(&event, out),
            "response.output_item.added" => self.item_added(&event, out)?,
            "response.output_item.done" => self.item_done(&event, out)?,
            "response.reasoning_summary_text.delta" => self.summary_delta(&event, out),
            "response.function_call_arguments.delta" => {
                let index = output_index(&event)?;
                if let Some(delta) = text(&event, "delta")
                    && self.calls.contains(&index)
                {
                    if !self.streamed_args.contains(&index) {
                        self.streamed_args.push(index);
                    }
                    out.push(ModelDelta::ToolCallArgs {
                        index: to_usize(index)?,
                        delta,
                    });
                }
            }
            "response.completed" | "response.incomplete" => self.end(&event, out),
            "response.failed" => {
                let error = event
                    .get("response")
                    .and_then(|response| response.get("error"))
                    .cloned()
                    .unwrap_or(Value::Null);
                return Err(failure(&error));
            }
            "error" => return Err(failure(event.get("error").unwrap_or(&event))),
            _ => {}
        }
        Ok(())
    }

    /// Called when the byte stream ends: without the response's end it was cut off.
    pub(crate) fn finish(&self) -> Result<(), ModelError> {
        if self.ended {
            Ok(())
        } else {
            Err(ModelError::Incomplete)
        }
    }

    fn identify(&mut self, event: &Value, out: &mut Vec<ModelDelta>) {
        if self.identified {
            return;
        }
        if let Some(id) = event
            .get("response")
            .and_then(|response| response.get("id"))
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
        {
            self.identified = true;
            out.push(ModelDelta::ResponseId(id.to_owned()));
        }
    }

    fn item_added(&mut self, event: &Value, out: &mut Vec<ModelDelta>) -> Result<(), ModelError> {
        let item = event.get("item").ok_or(ModelError::Malformed)?;
        let id = item.get("id").and_then(Value::as_str);
        match item.get("type").and_then(Value::as_str) {
            Some("function_call") => {
                self.release_reasoning(id, out);
                let index = output_index(event)?;
                self.calls.push(index);
                let name = text(item, "name").unwrap_or_default();
                out.push(ModelDelta::ToolCallStart {
                    index: to_usize(index)?,
                    id: text(item, "call_id"),
                    name,
                });
                if let Some(id) = id.filter(|id| !id.is_empty()) {
                    out.push(ModelDelta::ToolCallArtefact {
                        index: to_usize(index)?,
                        value: Artefact::OpenAiItem(id.to_owned()).encode(),
                    });
                }
            }
            Some("message") => {
                self.release_reasoning(id, out);
                // One assistant message per turn: the first message item names it.
                if !self.message_seen
                    && let Some(id) = id.filter(|id| !id.is_empty())
                {
                    self.message_seen = true;
                    out.push(ModelDelta::MessageArtefact(
                        Artefact::OpenAiItem(id.to_owned()).encode(),
                    ));
                }
            }
            Some("reasoning") => self.release_reasoning(None, out),
            _ => self.release_reasoning(id, out),
        }
        Ok(())
    }

    fn item_done(&mut self, event: &Value, out: &mut Vec<ModelDelta>) -> Result<(), ModelError> {
        let item = event.get("item").ok_or(ModelError::Malformed)?;
        match item.get("type").and_then(Value::as_str) {
            // Complete only now: its encrypted content is final in the finished item.
            Some("reasoning") => {
                self.release_reasoning(None, out);
                self.held_reasoning = Some(item.clone());
            }
            Some("function_call") => {
                let index = output_index(event)?;
                if self.calls.contains(&index)
                    && !self.streamed_args.contains(&index)
                    && let Some(arguments) = text(item, "arguments")
                {
                    self.streamed_args.push(index);
                    out.push(ModelDelta::ToolCallArgs {
                        index: to_usize(index)?,
                        delta: arguments,
                    });
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Summary parts are paragraphs: a new part starts on a new one.
    fn summary_delta(&mut self, event: &Value, out: &mut Vec<ModelDelta>) {
        let Some(delta) = text(event, "delta") else {
            return;
        };
        let part = (
            event
                .get("output_index")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            event
                .get("summary_index")
                .and_then(Value::as_u64)
                .unwrap_or(0),
        );
        if self.summary_part.is_some_and(|last| last != part) {
            out.push(ModelDelta::Reasoning("\n\n".to_owned()));
        }
        self.summary_part = Some(part);
        out.push(ModelDelta::Reasoning(delta));
    }

    /// The held reasoning item, now that the item it produced (`next`) is known.
    fn release_reasoning(&mut self, next: Option<&str>, out: &mut Vec<ModelDelta>) {
        if let Some(item) = self.held_reasoning.take() {
            let held = ReasoningItem {
                model: self.model.clone(),
                next: next.map(str::to_owned),
                item,
            };
            out.push(ModelDelta::ReasoningItem(held.to_text()));
        }
    }

    fn end(&mut self, event: &Value, out: &mut Vec<ModelDelta>) {
        self.release_reasoning(None, out);
        self.ended = true;
        let response = event.get("response").unwrap_or(&Value::Null);
        if let Some(usage) = response.get("usage").filter(|usage| !usage.is_null()) {
            out.push(ModelDelta::Usage(parse_usage(usage)));
        }
        let reason = response
            .get("incomplete_details")
            .and_then(|details| details.get("reason"))
            .and_then(Value::as_str);
        out.push(ModelDelta::Finish(match reason {
            Some("max_output_tokens") => FinishReason::Length,
            Some("content_filter") => FinishReason::ContentFilter,
            Some(other) => FinishReason::Other(other.to_owned()),
            None if !self.calls.is_empty() => FinishReason::ToolCalls,
            None => FinishReason::Stop,
        }));
    }
}

/// `input_tokens` counts every prompt token, the cached ones and the cache writes a part of
/// it; `output_tokens` counts the reasoning tokens it details: AG-UI's accounting already.
fn parse_usage(usage: &Value) -> Usage {
    let count = |value: Option<&Value>| value.and_then(Value::as_u64);
    let input_details = usage.get("input_tokens_details");
    Usage {
        input_tokens: count(usage.get("input_tokens")).unwrap_or(0),
        output_tokens: count(usage.get("output_tokens")).unwrap_or(0),
        reasoning_tokens: count(
            usage
                .get("output_tokens_details")
                .and_then(|details| details.get("reasoning_tokens")),
        ),
        cached_input_tokens: count(input_details.and_then(|details| details.get("cached_tokens"))),
        cache_write_input_tokens: count(
            input_details.and_then(|details| details.get("cache_write_tokens")),
        )
        .filter(|tokens| *tokens > 0),
    }
}

/// An error the response ended with (`{code, message}`), with the status its code would have
/// had: `server_error` is retried like a 500 when nothing was streamed yet.
fn failure(error: &Value) -> ModelError {
    let code = text(error, "code").or_else(|| text(error, "type"));
    let message = text(error, "message").unwrap_or_default();
    let refusal = Refusal::new(code.clone(), &message);
    if refusal.is_context_overflow() {
        return ModelError::ContextOverflow(refusal);
    }
    ModelError::Status {
        status: status_of_error_type(code.as_deref().unwrap_or_default()),
        refusal: Some(refusal),
        retry: RetryHint::default(),
    }
}

fn text(value: &Value, field: &str) -> Option<String> {
    value
        .get(field)
        .and_then(Value::as_str)
        .filter(|text| !text.is_empty())
        .map(str::to_owned)
}

fn output_index(event: &Value) -> Result<u64, ModelError> {
    event
        .get("output_index")
        .and_then(Value::as_u64)
        .ok_or(ModelError::Malformed)
}

fn to_usize(index: u64) -> Result<usize, ModelError> {
    usize::try_from(index).map_err(|_| ModelError::Malformed)
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
