//! Parsing of OpenAI-style `chat.completion.chunk` payloads into [`ModelDelta`]s, tolerant of
//! what compatible servers really send (see the module tests for each quirk).

use crate::model::{FinishReason, ModelDelta, ModelError, Usage};
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallFragment>>,
}

#[derive(Deserialize)]
struct ToolCallFragment {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionFragment>,
    /// Gemini's OpenAI-compatible endpoint: `{"google": {"thought_signature": "…"}}`.
    #[serde(default)]
    extra_content: Option<ExtraContent>,
}

#[derive(Deserialize)]
struct ExtraContent {
    #[serde(default)]
    google: Option<GoogleExtra>,
}

#[derive(Deserialize)]
struct GoogleExtra {
    #[serde(default)]
    thought_signature: Option<String>,
}

#[derive(Deserialize)]
struct FunctionFragment {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    /// Some compatible servers send `null` for the details objects.
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

/// A tool call being received. `started` is false while the name has not arrived yet; argument
/// pieces received before then wait in `pending_args`.
struct Slot {
    provider_index: Option<u64>,
    id: Option<String>,
    started: bool,
    pending_args: String,
    /// A thought signature that came before the call's name.
    pending_signature: Option<String>,
}

/// Turns the `data:` payloads of one streamed completion into deltas.
#[derive(Default)]
pub struct ChunkParser {
    slots: Vec<Slot>,
    finished: bool,
    done: bool,
    /// The response's id was passed on.
    identified: bool,
}

impl ChunkParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `[DONE]` was seen: nothing after it matters.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Parses one SSE `data` payload, appending the deltas it carries to `out`.
    pub fn push(&mut self, data: &str, out: &mut Vec<ModelDelta>) -> Result<(), ModelError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|_| ModelError::Malformed)?;
        if let Some(error) = chunk.error.filter(|error| !error.is_null()) {
            return Err(in_stream_error(&error));
        }
        if !self.identified
            && let Some(id) = chunk.id.filter(|id| !id.is_empty())
        {
            self.identified = true;
            out.push(ModelDelta::ResponseId(id));
        }
        // n = 1: only the first choice is ours.
        let choice = chunk
            .choices
            .into_iter()
            .flatten()
            .find(|choice| choice.index.unwrap_or(0) == 0);
        if let Some(choice) = choice {
            if let Some(delta) = choice.delta {
                if let Some(text) = delta
                    .reasoning_content
                    .or(delta.reasoning)
                    .filter(|t| !t.is_empty())
                {
                    out.push(ModelDelta::Reasoning(text));
                }
                if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                    out.push(ModelDelta::Text(text));
                }
                for fragment in delta.tool_calls.into_iter().flatten() {
                    self.push_tool_fragment(fragment, out);
                }
            }
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty())
                && !self.finished
            {
                self.finished = true;
                self.start_unnamed_slots(out);
                out.push(ModelDelta::Finish(FinishReason::from_openai(&reason)));
            }
        }
        if let Some(usage) = chunk.usage {
            // OpenAI's totals already include the cached and reasoning tokens they detail.
            out.push(ModelDelta::Usage(Usage {
                input_tokens: usage.prompt_tokens.unwrap_or(0),
                output_tokens: usage.completion_tokens.unwrap_or(0),
                reasoning_tokens: usage
                    .completion_tokens_details
                    .and_then(|details| details.reasoning_tokens),
                cached_input_tokens: usage
                    .prompt_tokens_details
                    .and_then(|details| details.cached_tokens),
                cache_write_input_tokens: None,
            }));
        }
        Ok(())
    }

    /// Called when the byte stream ends. A stream with neither `[DONE]` nor a finish reason was
    /// cut off, and whatever it held must not be acted on.
    pub fn end(&mut self, out: &mut Vec<ModelDelta>) -> Result<(), ModelError> {
        if !self.finished && !self.done {
            return Err(ModelError::Incomplete);
        }
        if !self.finished {
            self.finished = true;
            self.start_unnamed_slots(out);
            let reason = if self.slots.is_empty() {
                FinishReason::Stop
            } else {
                FinishReason::ToolCalls
            };
            out.push(ModelDelta::Finish(reason));
        }
        Ok(())
    }

    /// Picks the slot a fragment belongs to. Servers differ: some repeat the id on every fragment
    /// (or send `""`), Ollama reuses `index: 0` for parallel calls or omits it, most send the id
    /// only on the first fragment.
    fn slot_for(&mut self, index: Option<u64>, id: Option<&str>) -> usize {
        if let Some(id) = id {
            if let Some(slot) = self
                .slots
                .iter()
                .position(|slot| slot.id.as_deref() == Some(id))
            {
                return slot;
            }
            return self.new_slot(index, Some(id.to_owned()));
        }
        if let Some(index) = index {
            if let Some(slot) = self
                .slots
                .iter()
                .rposition(|slot| slot.provider_index == Some(index))
            {
                return slot;
            }
            return self.new_slot(Some(index), None);
        }
        match self.slots.len() {
            0 => self.new_slot(None, None),
            len => len - 1,
        }
    }

    fn new_slot(&mut self, provider_index: Option<u64>, id: Option<String>) -> usize {
        self.slots.push(Slot {
            provider_index,
            id,
            started: false,
            pending_args: String::new(),
            pending_signature: None,
        });
        self.slots.len() - 1
    }

    fn push_tool_fragment(&mut self, fragment: ToolCallFragment, out: &mut Vec<ModelDelta>) {
        let id = fragment.id.as_deref().filter(|id| !id.is_empty());
        let index = self.slot_for(fragment.index, id);
        let (name, arguments) = match fragment.function {
            Some(function) => (function.name.filter(|n| !n.is_empty()), function.arguments),
            None => (None, None),
        };
        let signature = fragment
            .extra_content
            .and_then(|extra| extra.google)
            .and_then(|google| google.thought_signature)
            .filter(|signature| !signature.is_empty());
        let Some(slot) = self.slots.get_mut(index) else {
            return;
        };
        if signature.is_some() {
            slot.pending_signature = signature;
        }
        if !slot.started
            && let Some(name) = name
        {
            slot.started = true;
            out.push(ModelDelta::ToolCallStart {
                index,
                id: slot.id.clone(),
                name,
            });
            if !slot.pending_args.is_empty() {
                out.push(ModelDelta::ToolCallArgs {
                    index,
                    delta: std::mem::take(&mut slot.pending_args),
                });
            }
        }
        if slot.started
            && let Some(signature) = slot.pending_signature.take()
        {
            out.push(gemini_signature(index, signature));
        }
        if let Some(arguments) = arguments.filter(|a| !a.is_empty()) {
            if slot.started {
                out.push(ModelDelta::ToolCallArgs {
                    index,
                    delta: arguments,
                });
            } else {
                slot.pending_args.push_str(&arguments);
            }
        }
    }

    /// A call whose name never arrived still gets reported (with an empty name) so the agent can
    /// answer it as an unknown tool instead of leaving the model's history inconsistent.
    fn start_unnamed_slots(&mut self, out: &mut Vec<ModelDelta>) {
        for (index, slot) in self.slots.iter_mut().enumerate() {
            if !slot.started {
                slot.started = true;
                out.push(ModelDelta::ToolCallStart {
                    index,
                    id: slot.id.clone(),
                    name: String::new(),
                });
                if !slot.pending_args.is_empty() {
                    out.push(ModelDelta::ToolCallArgs {
                        index,
                        delta: std::mem::take(&mut slot.pending_args),
                    });
                }
                if let Some(signature) = slot.pending_signature.take() {
                    out.push(gemini_signature(index, signature));
                }
            }
        }
    }
}

/// Gemini's thought signature for call `index`, kept on the call to be sent back with it.
fn gemini_signature(index: usize, signature: String) -> ModelDelta {
    ModelDelta::ToolCallArtefact {
        index,
        value: crate::model::artefact::Artefact::GeminiSignature(signature).encode(),
    }
}

/// Provider error messages name the problem (rate limit, context length) and are safe to show;
/// they are cut short so a verbose provider cannot flood the client.
/// An error the server sent inside the stream (`{"error": {"message", "type", "code"}}`), with
/// the status its type would have had, so that an overload before any output is retried.
pub(crate) fn in_stream_error(error: &Value) -> ModelError {
    let refusal =
        crate::model::Refusal::from_body(&serde_json::json!({ "error": error }).to_string());
    let kind = ["type", "code"]
        .iter()
        .filter_map(|field| error.get(field).and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    match refusal {
        Some(refusal) if refusal.is_context_overflow() => ModelError::ContextOverflow(refusal),
        refusal => ModelError::Status {
            status: crate::model::failure::status_of_error_type(&kind),
            refusal,
            retry: crate::model::RetryHint::default(),
        },
    }
}

#[cfg(test)]
#[path = "chunk_tests.rs"]
mod tests;
