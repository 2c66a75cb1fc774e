//! The run loop: model turns streamed as AG-UI events, server tools executed and fed back,
//! the frontend-tool boundary, and the driver that guarantees `RUN_STARTED` first and exactly
//! one terminal event last, written only after the thread store accepted the run's output.

use super::PreparedRun;
use super::thread::model_view;
use super::tools::{ToolContext, ToolError};
use crate::model::{FinishReason, ModelDelta, ModelError, ModelRequest, Usage};
use crate::protocol::events::{ReasoningRole, TextRole, TokenUsage, ToolRole};
use crate::protocol::{Event, Message, MessageId, RunErrorCode, ToolCall, ToolCallId};
use crate::store::StoreError;
use futures_util::{Stream, StreamExt};
use std::collections::HashSet;
use tokio::sync::mpsc;
use tokio::time::timeout_at;

/// Why a run ended with `RUN_ERROR`.
#[derive(Debug, thiserror::Error)]
enum RunFailure {
    #[error("{0}")]
    Model(#[from] ModelError),
    #[error("the model's answer was cut off at its token limit in the middle of a tool call")]
    TruncatedToolCall,
    #[error("the model's answer was blocked by its content filter")]
    ContentFilter,
    #[error("the run did not finish before its deadline")]
    Timeout,
    #[error("the model was still calling tools after {0} steps")]
    MaxSteps(u32),
    #[error("tool {name} failed: {message}")]
    ToolFatal { name: String, message: String },
    #[error("the thread could not be saved")]
    Store(StoreError),
}

impl RunFailure {
    fn code(&self) -> RunErrorCode {
        match self {
            RunFailure::Model(_) | RunFailure::TruncatedToolCall | RunFailure::ContentFilter => {
                RunErrorCode::ModelError
            }
            RunFailure::Timeout => RunErrorCode::Timeout,
            RunFailure::MaxSteps(_) => RunErrorCode::MaxStepsExceeded,
            RunFailure::ToolFatal { .. } => RunErrorCode::ToolExecutionError,
            RunFailure::Store(StoreError::LeaseLost) => RunErrorCode::Conflict,
            RunFailure::Store(_) => RunErrorCode::StoreError,
        }
    }
}

/// What the per-run log line reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSummary {
    pub steps: u32,
    pub tool_calls: u32,
    pub usage: Usage,
    pub outcome: String,
}

/// Sends events to the driver. If the client is gone the driver is dropped with the stream, so
/// a failed send can be ignored.
struct Emitter(mpsc::Sender<Event>);

impl Emitter {
    async fn emit(&self, event: Event) {
        let _ = self.0.send(event).await;
    }
}

/// A tool call of the current turn.
struct TurnCall {
    index: usize,
    id: ToolCallId,
    name: String,
    arguments: String,
}

struct ToolResult {
    id: MessageId,
    tool_call_id: ToolCallId,
    content: String,
    error: Option<String>,
}

enum CallKind {
    Server,
    Frontend,
    Unknown,
}

impl PreparedRun {
    /// The run as a stream of events, starting with `RUN_STARTED` and ending with exactly one
    /// of `RUN_FINISHED` / `RUN_ERROR`. The loop runs inside this stream (no spawned task), so
    /// dropping the stream stops it.
    pub fn into_events(self) -> impl Stream<Item = Event> + Send + 'static {
        self.into_batches().flat_map(futures_util::stream::iter)
    }

    /// The same events, grouped: each batch holds every event produced since the previous one
    /// was taken, so a writer can send a burst in one write. No event waits for another.
    pub fn into_batches(self) -> impl Stream<Item = Vec<Event>> + Send + 'static {
        let (sender, mut receiver) = mpsc::channel(64);
        let started = Event::RunStarted {
            thread_id: self.lease.thread_id.clone(),
            run_id: self.lease.run_id.clone(),
            parent_run_id: self.parent_run_id.clone(),
        };
        async_stream::stream! {
            yield vec![started];
            let run = self.drive(Emitter(sender));
            tokio::pin!(run);
            let mut terminal = None;
            loop {
                tokio::select! {
                    biased;
                    Some(event) = receiver.recv() => {
                        let mut batch = vec![event];
                        // Only what is already queued: the run itself is not polled here.
                        while let Ok(event) = receiver.try_recv() {
                            batch.push(event);
                        }
                        yield batch;
                    }
                    event = &mut run, if terminal.is_none() => terminal = Some(event),
                    else => break,
                }
            }
            if let Some(event) = terminal {
                yield vec![event];
            }
        }
    }

    /// Runs the loop, stores what it produced, and returns the terminal event.
    async fn drive(mut self, out: Emitter) -> Event {
        let began = std::time::Instant::now();
        let mut produced = Vec::new();
        let mut summary = RunSummary::default();
        let initial_state = self.state.clone();
        let mut result = self.execute(&out, &mut produced, &mut summary).await;

        let state_changed = self.state != initial_state;
        let store = self.agent.store.clone();
        let saved = store
            .finish_run(
                &self.lease,
                &produced,
                if state_changed {
                    self.state.as_ref()
                } else {
                    None
                },
            )
            .await;
        if let Err(error) = saved {
            tracing::error!(%error, thread_id = %self.lease.thread_id, "storing the run failed");
            if result.is_ok() {
                result = Err(RunFailure::Store(error));
            }
        }

        let usage = TokenUsage {
            input_tokens: summary.usage.input_tokens,
            output_tokens: summary.usage.output_tokens,
        };
        let terminal = match &result {
            Ok(()) => Event::RunFinished {
                thread_id: self.lease.thread_id.clone(),
                run_id: self.lease.run_id.clone(),
                usage,
            },
            Err(failure) => Event::RunError {
                message: failure.to_string(),
                code: failure.code(),
                usage,
            },
        };
        summary.outcome = match &result {
            Ok(()) => "finished".to_owned(),
            Err(failure) => format!("{:?}", failure.code()),
        };
        tracing::info!(
            thread_id = %self.lease.thread_id,
            run_id = %self.lease.run_id,
            steps = summary.steps,
            tool_calls = summary.tool_calls,
            input_tokens = summary.usage.input_tokens,
            output_tokens = summary.usage.output_tokens,
            duration_ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX),
            outcome = %summary.outcome,
            "run ended"
        );
        terminal
    }

    async fn execute(
        &mut self,
        out: &Emitter,
        produced: &mut Vec<Message>,
        summary: &mut RunSummary,
    ) -> Result<(), RunFailure> {
        if let Some(state) = &self.state {
            out.emit(Event::StateSnapshot {
                snapshot: state.clone(),
            })
            .await;
        }
        if self.client_is_behind {
            out.emit(Event::MessagesSnapshot {
                messages: self.history.clone(),
            })
            .await;
        }
        let settings = self.agent.settings.clone();
        let mut used_call_ids: HashSet<ToolCallId> = self
            .history
            .iter()
            .flat_map(|message| message.tool_calls().iter().map(|call| call.id.clone()))
            .collect();

        for step in 1..=settings.max_steps {
            summary.steps = step;
            let step_name = format!("model_turn_{step}");
            if settings.emit_steps {
                out.emit(Event::StepStarted {
                    step_name: step_name.clone(),
                })
                .await;
            }
            let (message, calls) = self.model_turn(out, &mut used_call_ids, summary).await?;
            // The step is the model's turn; it closes before the calls end, so that a frontend
            // call's TOOL_CALL_END is immediately followed by RUN_FINISHED (CopilotKit's rule).
            if settings.emit_steps {
                out.emit(Event::StepFinished { step_name }).await;
            }
            for call in &calls {
                out.emit(Event::ToolCallEnd {
                    tool_call_id: call.id.clone(),
                })
                .await;
            }
            if let Some(message) = message {
                self.history.push(message.clone());
                produced.push(message);
            }
            if calls.is_empty() {
                return Ok(());
            }
            summary.tool_calls += u32::try_from(calls.len()).unwrap_or(u32::MAX);
            let mut stops_for_frontend = false;
            let mut server_calls = Vec::new();
            for call in &calls {
                match self.classify(&call.name) {
                    CallKind::Frontend => stops_for_frontend = true,
                    CallKind::Server | CallKind::Unknown => server_calls.push(call),
                }
            }
            for result in self.run_tools(&server_calls).await? {
                out.emit(Event::ToolCallResult {
                    message_id: result.id.clone(),
                    tool_call_id: result.tool_call_id.clone(),
                    content: result.content.clone(),
                    role: ToolRole::Tool,
                })
                .await;
                let message = Message::Tool {
                    id: result.id,
                    tool_call_id: result.tool_call_id,
                    content: result.content,
                    error: result.error,
                };
                self.history.push(message.clone());
                produced.push(message);
            }
            self.emit_state_changes(out).await;
            if stops_for_frontend {
                return Ok(());
            }
        }
        Err(RunFailure::MaxSteps(settings.max_steps))
    }

    fn classify(&self, name: &str) -> CallKind {
        if self.agent.tools.contains(name) {
            CallKind::Server
        } else if self.client_tools.iter().any(|tool| tool.name == name) {
            CallKind::Frontend
        } else {
            CallKind::Unknown
        }
    }

    /// Streams one model turn. Returns the assistant message to store (if the model said or
    /// called anything) and its tool calls. A turn that fails midway returns the failure and
    /// nothing of it is stored or executed.
    async fn model_turn(
        &mut self,
        out: &Emitter,
        used_call_ids: &mut HashSet<ToolCallId>,
        summary: &mut RunSummary,
    ) -> Result<(Option<Message>, Vec<TurnCall>), RunFailure> {
        let request = ModelRequest {
            system: self.system.clone(),
            messages: model_view(&self.history),
            tools: self.agent.tool_specs(&self.client_tools),
        };
        let deadline = self.deadline;
        let mut stream = timeout_at(deadline, self.agent.model.stream(&request))
            .await
            .map_err(|_| RunFailure::Timeout)??;

        let message_id = MessageId::generate();
        let mut text = String::new();
        let mut text_open = false;
        let mut reasoning: Option<MessageId> = None;
        let mut calls: Vec<TurnCall> = Vec::new();
        let mut finish = None;

        while let Some(delta) = timeout_at(deadline, stream.next())
            .await
            .map_err(|_| RunFailure::Timeout)?
        {
            match delta? {
                ModelDelta::Text(piece) if !piece.is_empty() => {
                    close_reasoning(out, &mut reasoning).await;
                    if !text_open {
                        // A reopened id appends to the same message in the client, matching what
                        // is stored: one assistant message per turn.
                        out.emit(Event::TextMessageStart {
                            message_id: message_id.clone(),
                            role: TextRole::Assistant,
                        })
                        .await;
                        text_open = true;
                    }
                    text.push_str(&piece);
                    out.emit(Event::TextMessageContent {
                        message_id: message_id.clone(),
                        delta: piece,
                    })
                    .await;
                }
                ModelDelta::Reasoning(piece) if !piece.is_empty() => {
                    close_text(out, &message_id, &mut text_open).await;
                    let id = match &reasoning {
                        Some(id) => id.clone(),
                        None => {
                            let id = MessageId::generate();
                            out.emit(Event::ReasoningStart {
                                message_id: id.clone(),
                            })
                            .await;
                            out.emit(Event::ReasoningMessageStart {
                                message_id: id.clone(),
                                role: ReasoningRole::Reasoning,
                            })
                            .await;
                            reasoning = Some(id.clone());
                            id
                        }
                    };
                    out.emit(Event::ReasoningMessageContent {
                        message_id: id,
                        delta: piece,
                    })
                    .await;
                }
                ModelDelta::ToolCallStart { index, id, name } => {
                    close_reasoning(out, &mut reasoning).await;
                    close_text(out, &message_id, &mut text_open).await;
                    // Providers reuse ids across turns ("call_0") or send none: ids must be
                    // unique within the thread, or a tool result would answer the wrong call.
                    let id = id
                        .and_then(|id| ToolCallId::parse(id, crate::protocol::ids::MAX_ID_LEN).ok())
                        .filter(|id| !used_call_ids.contains(id))
                        .unwrap_or_else(ToolCallId::generate);
                    used_call_ids.insert(id.clone());
                    out.emit(Event::ToolCallStart {
                        tool_call_id: id.clone(),
                        tool_call_name: name.clone(),
                        parent_message_id: Some(message_id.clone()),
                    })
                    .await;
                    calls.push(TurnCall {
                        index,
                        id,
                        name,
                        arguments: String::new(),
                    });
                }
                ModelDelta::ToolCallArgs { index, delta } if !delta.is_empty() => {
                    if let Some(call) = calls.iter_mut().rev().find(|call| call.index == index) {
                        call.arguments.push_str(&delta);
                        out.emit(Event::ToolCallArgs {
                            tool_call_id: call.id.clone(),
                            delta,
                        })
                        .await;
                    }
                }
                ModelDelta::Usage(usage) => summary.usage += usage,
                ModelDelta::Finish(reason) => finish = Some(reason),
                ModelDelta::Text(_)
                | ModelDelta::Reasoning(_)
                | ModelDelta::ToolCallArgs { .. } => {}
            }
        }
        close_reasoning(out, &mut reasoning).await;
        close_text(out, &message_id, &mut text_open).await;
        match finish {
            Some(FinishReason::Length) if !calls.is_empty() => {
                return Err(RunFailure::TruncatedToolCall);
            }
            Some(FinishReason::ContentFilter) => return Err(RunFailure::ContentFilter),
            _ => {}
        }
        if text.is_empty() && calls.is_empty() {
            return Ok((None, calls));
        }
        let message = Message::Assistant {
            id: message_id,
            content: (!text.is_empty()).then_some(text),
            tool_calls: calls
                .iter()
                .map(|call| {
                    ToolCall::new(call.id.clone(), call.name.clone(), call.arguments.clone())
                })
                .collect(),
            name: None,
        };
        Ok((Some(message), calls))
    }

    /// Runs server tools (and answers unknown ones) concurrently; results come back in call
    /// order as `tool` messages.
    async fn run_tools(&mut self, calls: &[&TurnCall]) -> Result<Vec<ToolResult>, RunFailure> {
        let context = ToolContext {
            thread_id: self.lease.thread_id.clone(),
            run_id: self.lease.run_id.clone(),
            device_timezone: self.device_timezone,
            state: self.state.clone().unwrap_or(serde_json::Value::Null),
        };
        let registry = self.agent.tools.clone();
        let executions = calls.iter().map(|call| {
            let registry = registry.clone();
            let context = &context;
            async move { registry.call(&call.name, &call.arguments, context).await }
        });
        let outcomes = timeout_at(self.deadline, futures_util::future::join_all(executions))
            .await
            .map_err(|_| RunFailure::Timeout)?;

        let mut results = Vec::with_capacity(calls.len());
        for (call, outcome) in calls.iter().zip(outcomes) {
            let (content, error) = match outcome {
                None => {
                    let message = format!("unknown tool {:?}", call.name);
                    (format!("Error: {message}"), Some(message))
                }
                Some(Ok(output)) => {
                    if let Some(patch) = output.state_patch {
                        let mut state = self.state.clone().unwrap_or_else(|| serde_json::json!({}));
                        json_patch::patch(&mut state, &patch).map_err(|err| {
                            RunFailure::ToolFatal {
                                name: call.name.clone(),
                                message: format!("its state change does not apply: {err}"),
                            }
                        })?;
                        self.state = Some(state);
                        self.pending_deltas.push(patch);
                    }
                    (output.content, None)
                }
                Some(Err(ToolError::Failed(message))) => {
                    (format!("Error: {message}"), Some(message))
                }
                Some(Err(ToolError::Fatal(message))) => {
                    return Err(RunFailure::ToolFatal {
                        name: call.name.clone(),
                        message,
                    });
                }
            };
            results.push(ToolResult {
                id: MessageId::generate(),
                tool_call_id: call.id.clone(),
                content,
                error,
            });
        }
        Ok(results)
    }

    async fn emit_state_changes(&mut self, out: &Emitter) {
        for patch in self.pending_deltas.drain(..) {
            out.emit(Event::StateDelta { delta: patch }).await;
        }
    }
}

async fn close_text(out: &Emitter, message_id: &MessageId, open: &mut bool) {
    if std::mem::take(open) {
        out.emit(Event::TextMessageEnd {
            message_id: message_id.clone(),
        })
        .await;
    }
}

async fn close_reasoning(out: &Emitter, reasoning: &mut Option<MessageId>) {
    if let Some(id) = reasoning.take() {
        out.emit(Event::ReasoningMessageEnd {
            message_id: id.clone(),
        })
        .await;
        out.emit(Event::ReasoningEnd { message_id: id }).await;
    }
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
