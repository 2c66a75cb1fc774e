//! The agent's trace spans, after OpenTelemetry's GenAI semantic conventions: `invoke_agent` per
//! run, `chat {model}` per model turn, `execute_tool {name}` per server tool call. Built on
//! `telemetry::trace_span!`; disabled, and free, when traces are not exported.

use super::tools::{ToolError, ToolOutput};
use super::turn::{TurnAssembler, TurnCall};
use crate::model::{ModelDelta, ModelIdentity, ModelRequest, Usage};
use crate::protocol::{RunErrorCode, RunId, ThreadId};
use crate::telemetry::{attribute_int, otel, record_error, trace_span};
use std::time::{Duration, Instant};

/// The run's `invoke_agent` span; [`end_run`] records its usage and outcome. `agent_name` is the
/// profile the agent is, none for the default agent.
pub(super) fn invoke_agent(
    identity: &ModelIdentity,
    agent_name: Option<&str>,
    thread_id: &ThreadId,
    run_id: &RunId,
) -> tracing::Span {
    let span = trace_span!(
        "invoke_agent",
        "internal",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = tracing::field::Empty,
        gen_ai.conversation.id = %thread_id,
        gen_ai.provider.name = %identity.provider,
        gen_ai.request.model = %identity.model,
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
        agui.run.id = %run_id,
        agui.run.outcome = tracing::field::Empty,
        agui.run.runner = tracing::field::Empty,
    );
    if !span.is_disabled() {
        let name = agent_name.unwrap_or("agui-lambda");
        span.record("otel.name", format!("invoke_agent {name}"));
        span.record("gen_ai.agent.name", name);
    }
    span
}

/// A compaction of the thread before a model call: `agui.context.decision` says which tier
/// (clearing tool results, or summarising the oldest messages with a model call beneath).
pub(super) fn compaction(decision: &super::context::plan::Decision) -> tracing::Span {
    let span = trace_span!(
        "compact_context",
        "internal",
        agui.context.decision = tracing::field::Empty,
    );
    if !span.is_disabled() {
        span.record("otel.name", "compact_context");
        span.record(
            "agui.context.decision",
            match decision {
                super::context::plan::Decision::Keep => "keep",
                super::context::plan::Decision::Clear { .. } => "clear",
                super::context::plan::Decision::Summarize { .. } => "summarize",
            },
        );
    }
    span
}

/// Records how a run ended on its `invoke_agent` span: its usage, its outcome label and, for a
/// failed run, the `RUN_ERROR` code as the error type.
/// Which runner of the run the span is (1 for the one that began it, one more for each
/// invocation that took it over); the runners' spans are each other's parent and child.
pub(super) fn note_runner(span: &tracing::Span, epoch: u64) {
    if !span.is_disabled() {
        span.record("agui.run.runner", attribute_int(epoch));
    }
}

pub(super) fn end_run(
    span: &tracing::Span,
    usage: Usage,
    outcome: &'static str,
    failed: Option<RunErrorCode>,
) {
    if span.is_disabled() {
        return;
    }
    span.record(
        "gen_ai.usage.input_tokens",
        attribute_int(usage.input_tokens),
    );
    span.record(
        "gen_ai.usage.output_tokens",
        attribute_int(usage.output_tokens),
    );
    span.record("agui.run.outcome", outcome);
    if let Some(code) = failed {
        span.record("otel.status_code", "ERROR");
        if let Ok(serde_json::Value::String(code)) = serde_json::to_value(code) {
            span.record("error.type", code.as_str());
        }
    }
}

/// A server tool call's `execute_tool {name}` span.
pub(super) struct ToolSpan(tracing::Span);

impl ToolSpan {
    pub(super) fn new(call: &TurnCall) -> Self {
        let span = trace_span!(
            "execute_tool",
            "internal",
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = %call.name,
            gen_ai.tool.call.id = %call.id,
            gen_ai.tool.type = "function",
            gen_ai.tool.call.arguments = tracing::field::Empty,
            gen_ai.tool.call.result = tracing::field::Empty,
        );
        if !span.is_disabled() {
            span.record("otel.name", format!("execute_tool {}", call.name));
            if otel::capture_content() {
                span.record("gen_ai.tool.call.arguments", call.arguments.as_str());
            }
        }
        Self(span)
    }

    /// The span to run the call in.
    pub(super) fn span(&self) -> &tracing::Span {
        &self.0
    }

    /// Records the call's outcome; `None` is an unknown tool.
    pub(super) fn end(&self, outcome: &Option<Result<ToolOutput, ToolError>>) {
        if self.0.is_disabled() {
            return;
        }
        match outcome {
            Some(Ok(output)) => {
                if otel::capture_content() {
                    self.0
                        .record("gen_ai.tool.call.result", output.content.as_str());
                }
            }
            Some(Err(ToolError::Failed(_))) => record_error(&self.0, "tool_error"),
            Some(Err(ToolError::Fatal(_))) => record_error(&self.0, "tool_fatal"),
            None => record_error(&self.0, "unknown_tool"),
        }
    }
}

/// How a model turn ended, as its `chat` span records it.
pub(super) enum ChatEnd<'a> {
    /// The model's whole answer.
    Answered(&'a TurnAssembler),
    /// Stopped by a cancel.
    Stopped,
    /// Failed; the run failure's error type.
    Failed(&'static str),
}

/// A model turn's `chat {model}` client span.
pub(super) struct ChatSpan {
    span: tracing::Span,
    began: Instant,
    first_chunk: Option<Duration>,
    finish_reasons: Vec<String>,
    usage: Usage,
}

impl ChatSpan {
    pub(super) fn new(identity: &ModelIdentity, request: &ModelRequest) -> Self {
        let span = trace_span!(
            "chat",
            "client",
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = %identity.provider,
            gen_ai.request.model = %identity.model,
            gen_ai.request.max_tokens = tracing::field::Empty,
            gen_ai.request.temperature = tracing::field::Empty,
            gen_ai.response.id = tracing::field::Empty,
            gen_ai.response.model = tracing::field::Empty,
            agui.model.attempts = tracing::field::Empty,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            gen_ai.response.time_to_first_chunk = tracing::field::Empty,
            gen_ai.system_instructions = tracing::field::Empty,
            gen_ai.input.messages = tracing::field::Empty,
            gen_ai.output.messages = tracing::field::Empty,
        );
        if !span.is_disabled() {
            span.record("otel.name", format!("chat {}", identity.model));
            record_request(&span, request);
        }
        Self {
            span,
            began: Instant::now(),
            first_chunk: None,
            finish_reasons: Vec::new(),
            usage: Usage::default(),
        }
    }

    pub(super) fn first_chunk(&mut self) {
        if self.first_chunk.is_none() {
            self.first_chunk = Some(self.began.elapsed());
        }
    }

    pub(super) fn observe(&mut self, delta: &ModelDelta) {
        if self.span.is_disabled() {
            return;
        }
        match delta {
            ModelDelta::ResponseId(id) => {
                self.span.record("gen_ai.response.id", id.as_str());
            }
            ModelDelta::Finish(reason) => {
                self.finish_reasons.push(reason.as_str().to_owned());
            }
            ModelDelta::Usage(usage) => {
                self.usage += *usage;
            }
            ModelDelta::Served(served) => {
                self.span
                    .record("gen_ai.response.model", served.identity.model.as_str());
                self.attempts(&served.attempts);
            }
            _ => {}
        }
    }

    /// Every attempt of the call (the model and how it ended), when there was more than one.
    pub(super) fn attempts(&self, attempts: &[crate::model::Attempt]) {
        if self.span.is_disabled() || attempts.len() < 2 {
            return;
        }
        otel::set_strings(
            &self.span,
            "agui.model.attempts",
            attempts
                .iter()
                .map(|attempt| format!("{} {}", attempt.model, attempt.outcome))
                .collect(),
        );
    }

    pub(super) fn end(mut self, end: ChatEnd<'_>) {
        if self.span.is_disabled() {
            return;
        }
        let usage = self.usage;
        self.span.record(
            "gen_ai.usage.input_tokens",
            attribute_int(usage.input_tokens),
        );
        self.span.record(
            "gen_ai.usage.output_tokens",
            attribute_int(usage.output_tokens),
        );
        if let Some(first) = self.first_chunk {
            self.span
                .record("gen_ai.response.time_to_first_chunk", first.as_secs_f64());
        }
        otel::set_strings(
            &self.span,
            "gen_ai.response.finish_reasons",
            std::mem::take(&mut self.finish_reasons),
        );
        match end {
            ChatEnd::Answered(turn) => {
                if otel::capture_content()
                    && let Ok(answer) = serde_json::to_string(&turn.preview())
                {
                    self.span.record("gen_ai.output.messages", answer);
                }
            }
            ChatEnd::Stopped => {
                self.span.record("error.type", "cancelled");
            }
            ChatEnd::Failed(error_type) => record_error(&self.span, error_type),
        }
    }
}

/// What the model was asked: its sampling limits and, with content capture on, the prompt.
fn record_request(span: &tracing::Span, request: &ModelRequest) {
    if let Some(max) = request.sampling.max_tokens {
        span.record("gen_ai.request.max_tokens", i64::from(max));
    }
    if let Some(temperature) = request.sampling.temperature {
        span.record("gen_ai.request.temperature", temperature);
    }
    if otel::capture_content() {
        if let Some(system) = &request.system {
            span.record("gen_ai.system_instructions", system.as_str());
        }
        if let Ok(messages) = serde_json::to_string(&request.messages) {
            span.record("gen_ai.input.messages", messages);
        }
    }
}
