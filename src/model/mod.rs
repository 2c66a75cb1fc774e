//! LLM providers behind one trait. Each provider translates its wire format into the shared
//! [`ModelDelta`] enum, so that the agent's `TurnAssembler` assembles a turn's text and tool calls
//! the same way for all of them. Depends only on `protocol` (for messages).

pub(crate) mod anthropic;
pub(crate) mod artefact;
#[cfg(feature = "bedrock")]
pub(crate) mod bedrock;
pub(crate) mod demo;
pub(crate) mod failure;
pub(crate) mod openai;
pub(crate) mod reasoning;
pub(crate) mod refusal;
pub(crate) mod resilient;
#[cfg(any(test, feature = "test-utils"))]
pub(crate) mod scripted;
pub(crate) mod transcription;

use crate::protocol::{Message, UserPart};
use async_trait::async_trait;
use futures_util::Stream;
use serde_json::Value;
use std::pin::Pin;

/// What the agent asks of a model for one turn.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelRequest {
    /// The system prompt with the client's `context` entries folded in.
    pub system: Option<String>,
    /// History in order; every assistant tool call is answered by a tool message.
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    /// The client's sampling options, already checked and capped.
    pub sampling: Sampling,
    /// The running summary of the thread's older messages: sent after the system prompt, so
    /// that tools, system prompt and summary stay one cacheable prefix between compactions.
    pub summary: Option<String>,
    /// What the provider's prompt cache may route this thread's requests by (its thread id).
    pub cache_key: Option<String>,
    /// The tool the model must call this turn (one of `tools`); `None` leaves it to the model.
    /// Claude cannot be forced while it thinks: that call goes without extended thinking.
    pub tool_choice: Option<String>,
}

pub(crate) use crate::protocol::input::sampling::Sampling;
pub(crate) use failure::FailureKind;
pub use failure::RetryHint;
pub(crate) use refusal::Refusal;

/// How hard a reasoning model thinks (`REASONING_EFFORT`, a profile's `reasoningEffort`): the
/// Responses API's `reasoning.effort`, Chat Completions' `reasoning_effort`, a thinking budget
/// for Claude.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    None,
    Minimal,
    Low,
    Medium,
    High,
}

impl ReasoningEffort {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::None => "none",
            ReasoningEffort::Minimal => "minimal",
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        }
    }
}

impl std::str::FromStr for ReasoningEffort {
    type Err = ();

    fn from_str(value: &str) -> Result<Self, ()> {
        Ok(match value {
            "none" => ReasoningEffort::None,
            "minimal" => ReasoningEffort::Minimal,
            "low" => ReasoningEffort::Low,
            "medium" => ReasoningEffort::Medium,
            "high" => ReasoningEffort::High,
            _ => return Err(()),
        })
    }
}

/// Who served a model call, as AG-UI's `TokenUsage` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelIdentity {
    /// Lowercase vendor id: `openai`, `bedrock`, …
    pub provider: String,
    pub model: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// A JSON Schema object.
    pub parameters: Value,
}

impl From<&crate::protocol::ClientTool> for ToolSpec {
    fn from(tool: &crate::protocol::ClientTool) -> Self {
        ToolSpec {
            name: tool.name.clone(),
            description: tool.description.clone(),
            parameters: tool.parameters.clone(),
        }
    }
}

/// One piece of a model's streamed answer, whatever the provider.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelDelta {
    Text(String),
    Reasoning(String),
    /// The signature that closes the reasoning block streamed so far.
    ReasoningSignature(String),
    /// A reasoning block the provider withheld: its encrypted bytes, to be sent back as they are.
    RedactedReasoning(Vec<u8>),
    /// A new tool call; `index` identifies it among this turn's calls.
    ToolCallStart {
        index: usize,
        id: Option<String>,
        name: String,
    },
    ToolCallArgs {
        index: usize,
        delta: String,
    },
    Usage(Usage),
    Finish(FinishReason),
    /// The provider's id of this response (OpenAI's `chatcmpl-…`), once per turn, for traces.
    ResponseId(String),
    /// Closes the open reasoning block with the provider's opaque item (the Responses API's
    /// reasoning item with its encrypted content), to be sent back as it came.
    ReasoningItem(String),
    /// The provider's opaque artefact for tool call `index` (Gemini's thought signature, the
    /// Responses API's item id), kept on the stored call and sent back with it.
    ToolCallArtefact {
        index: usize,
        value: String,
    },
    /// The provider's opaque artefact for the turn's assistant message (the Responses API's
    /// item id), kept on the stored message and sent back with it.
    MessageArtefact(String),
    /// Which model served the turn, and the attempts before it; sent first by the resilience
    /// layer above the providers.
    Served(Served),
}

/// The model that served a turn and what was tried before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    pub identity: ModelIdentity,
    /// Every attempt of the turn, the serving one last.
    pub attempts: Vec<Attempt>,
}

/// One attempt at a model call: which model, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// `provider:model`.
    pub model: String,
    /// `ok`, or the failure's kind and detail (`rate_limited: HTTP 429`).
    pub outcome: String,
}

/// Token counts in AG-UI's accounting: `input_tokens` and `output_tokens` are totals; the
/// optional counts are parts of them, present only where the provider reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// Every prompt token charged, cache reads and writes included.
    pub input_tokens: u64,
    /// Every generated token, reasoning included.
    pub output_tokens: u64,
    pub reasoning_tokens: Option<u64>,
    pub cached_input_tokens: Option<u64>,
    pub cache_write_input_tokens: Option<u64>,
}

impl Usage {
    /// `identity`'s share of a run's usage as AG-UI reports it; cache writes only for a client
    /// that takes them (`cache_writes`).
    pub(crate) fn reported(
        &self,
        identity: &ModelIdentity,
        cache_writes: bool,
    ) -> crate::protocol::events::TokenUsage {
        crate::protocol::events::TokenUsage {
            provider: Some(identity.provider.clone()),
            model: Some(identity.model.clone()),
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            total_tokens: self.input_tokens.saturating_add(self.output_tokens),
            reasoning_tokens: self.reasoning_tokens,
            cached_input_tokens: self.cached_input_tokens,
            cache_write_input_tokens: self.cache_write_input_tokens.filter(|_| cache_writes),
        }
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        fn add(total: &mut Option<u64>, part: Option<u64>) {
            if let Some(part) = part {
                *total = Some(total.unwrap_or(0).saturating_add(part));
            }
        }
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        add(&mut self.reasoning_tokens, other.reasoning_tokens);
        add(&mut self.cached_input_tokens, other.cached_input_tokens);
        add(
            &mut self.cache_write_input_tokens,
            other.cache_write_input_tokens,
        );
    }
}

impl ModelDelta {
    /// Output the user could see: text, reasoning or a tool call (not usage, ids or the end).
    pub(crate) fn is_output(&self) -> bool {
        matches!(
            self,
            ModelDelta::Text(_)
                | ModelDelta::Reasoning(_)
                | ModelDelta::RedactedReasoning(_)
                | ModelDelta::ReasoningItem(_)
                | ModelDelta::ToolCallStart { .. }
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    Stop,
    ToolCalls,
    Length,
    ContentFilter,
    /// A reason this server does not know; tolerated, the accumulated calls decide what follows.
    Other(String),
}

impl FinishReason {
    pub(crate) fn from_openai(reason: &str) -> Self {
        match reason {
            "stop" | "end_turn" => FinishReason::Stop,
            "tool_calls" | "function_call" | "tool_use" => FinishReason::ToolCalls,
            "length" | "max_tokens" => FinishReason::Length,
            "content_filter" => FinishReason::ContentFilter,
            other => FinishReason::Other(other.to_owned()),
        }
    }

    /// The OpenTelemetry GenAI name (`gen_ai.response.finish_reasons`).
    pub(crate) fn as_str(&self) -> &str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::ToolCalls => "tool_call",
            FinishReason::Length => "length",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::Other(reason) => reason,
        }
    }
}

/// A model failure. `Display` is safe to show a client: it never carries a response body.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// An HTTP status, or an error the provider sent inside its stream (given the status its
    /// kind would have: 529 for Anthropic's `overloaded_error`).
    #[error("the model API answered HTTP {status}{}", detail(.refusal.as_ref()))]
    Status {
        status: u16,
        /// What the provider said, when it said anything.
        refusal: Option<refusal::Refusal>,
        /// What the provider said about retrying (`retry-after`, `x-should-retry`).
        retry: RetryHint,
    },
    /// The provider refused the prompt as longer than the model's context window.
    #[error("the conversation is longer than the model's context window ({0})")]
    ContextOverflow(refusal::Refusal),
    /// The request never reached the model API; the cause is the connection's own words
    /// (`Connection refused`, a DNS or TLS failure, a timeout), never a URL or a key.
    #[error("the model API could not be reached: {0}")]
    Unreachable(String),
    #[error("the model stream broke off")]
    Stream,
    #[error("the model stream ended before the model finished")]
    Incomplete,
    #[error("the model API reported an error: {0}")]
    Api(String),
    #[error("the model sent a malformed stream chunk")]
    Malformed,
    /// Nothing arrived from the model for this long (`MODEL_IDLE_TIMEOUT_MS`).
    #[error("the model sent nothing for {} ms", .0.as_millis())]
    IdleTimeout(std::time::Duration),
    /// Every model of the chain failed before any output: the last failure, and every attempt.
    #[error("{last} (after {} attempts: {})", .attempts.len(), attempt_list(.attempts))]
    Exhausted {
        last: Box<ModelError>,
        attempts: Vec<Attempt>,
    },
    #[cfg(any(test, feature = "test-utils"))]
    #[error("the scripted model has no turn left")]
    ScriptExhausted,
}

/// Why a request never reached its server, in the words of the innermost cause (a `reqwest`
/// error's own text names the URL, which stays in the log).
pub(crate) fn unreachable_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut innermost = error;
    while let Some(source) = innermost.source() {
        innermost = source;
    }
    let cause = innermost.to_string();
    let timed_out = cause.to_ascii_lowercase().contains("timed out");
    if std::ptr::addr_eq(innermost, error) && !timed_out {
        // No source to go by: the error's kind, not its text.
        return "the connection failed".to_owned();
    }
    cause
}

/// `openai:gpt-5 ×2, anthropic:claude-haiku-4-5`: the models tried, in order, with their counts.
fn attempt_list(attempts: &[Attempt]) -> String {
    let mut runs: Vec<(&str, usize)> = Vec::new();
    for attempt in attempts {
        match runs.last_mut() {
            Some((model, count)) if *model == attempt.model => *count += 1,
            _ => runs.push((&attempt.model, 1)),
        }
    }
    runs.iter()
        .map(|(model, count)| match count {
            1 => (*model).to_owned(),
            count => format!("{model} ×{count}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A refusal's words after its HTTP status: ` (code: message)`, or nothing.
fn detail(refusal: Option<&refusal::Refusal>) -> String {
    refusal
        .map(|refusal| format!(" ({refusal})"))
        .unwrap_or_default()
}

pub type DeltaStream = Pin<Box<dyn Stream<Item = Result<ModelDelta, ModelError>> + Send>>;

#[async_trait]
pub trait ModelProvider: Send + Sync {
    /// Starts one streamed turn. Retries of failures before the first token happen inside.
    async fn stream(&self, request: &ModelRequest) -> Result<DeltaStream, ModelError>;

    /// Names the provider in logs.
    fn describe(&self) -> String;

    /// Names the provider and model in the run's token usage.
    fn identity(&self) -> ModelIdentity;

    /// Whether this provider can take a user's content part; `Err` says why not, for a 422
    /// before anything is stored. Providers that read only text (the demo) take everything.
    fn check_part(&self, _part: &UserPart) -> Result<(), String> {
        Ok(())
    }

    /// Whether the provider reads `s3://` attachments itself (Bedrock); others are given
    /// presigned URLs.
    fn reads_s3(&self) -> bool {
        false
    }
}

/// At most `max` characters of a provider's text, for logs.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

/// A tool call assembled from deltas.
#[cfg(any(test, feature = "test-utils"))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssembledCall {
    pub index: usize,
    pub id: Option<String>,
    pub name: String,
    pub arguments: String,
}

/// Assembles tool calls from a turn's deltas, for the providers' tests and the fuzz target: a
/// check that deltas assemble to the calls a provider sent. Runs use the agent's `TurnAssembler`.
/// Providers guarantee a start precedes the arguments of its index.
#[cfg(any(test, feature = "test-utils"))]
#[derive(Debug, Default)]
pub struct ToolCallAccumulator {
    calls: Vec<AssembledCall>,
}

#[cfg(any(test, feature = "test-utils"))]
impl ToolCallAccumulator {
    pub fn apply(&mut self, delta: &ModelDelta) {
        match delta {
            ModelDelta::ToolCallStart { index, id, name } => self.calls.push(AssembledCall {
                index: *index,
                id: id.clone(),
                name: name.clone(),
                arguments: String::new(),
            }),
            ModelDelta::ToolCallArgs { index, delta } => {
                if let Some(call) = self
                    .calls
                    .iter_mut()
                    .rev()
                    .find(|call| call.index == *index)
                {
                    call.arguments.push_str(delta);
                }
            }
            _ => {}
        }
    }

    pub fn into_calls(self) -> Vec<AssembledCall> {
        self.calls
    }
}
