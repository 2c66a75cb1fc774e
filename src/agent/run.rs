//! The run loop: model turns streamed as AG-UI events, server tools executed and fed back,
//! the frontend-tool boundary, and the driver that guarantees `RUN_STARTED` first and exactly
//! one terminal event last, written only after the thread store accepted the run's output. The
//! run lives on its own task: a client that goes away stops nothing.

use super::PreparedRun;
use super::background;
use super::live::{LiveRun, StopReason};
use super::thread::model_view;
use super::tools::{ToolContext, ToolError};
use super::turn::{TurnAssembler, TurnCall, TurnFault};
use crate::model::{ModelError, ModelRequest, Usage};
use crate::protocol::events::{RecordedEvent, RunOutcome, TokenUsage, ToolRole};
use crate::protocol::{Event, Message, MessageId, RunErrorCode, ToolCallId};
use crate::store::StoreError;
use futures_util::{FutureExt, Stream, StreamExt};
use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use tokio::time::timeout_at;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// Why a run ended with `RUN_ERROR`, or early.
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
    #[error("the run was cancelled")]
    Cancelled,
}

impl From<TurnFault> for RunFailure {
    fn from(fault: TurnFault) -> Self {
        match fault {
            TurnFault::TruncatedToolCall => RunFailure::TruncatedToolCall,
            TurnFault::ContentFilter => RunFailure::ContentFilter,
        }
    }
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
            RunFailure::Cancelled => RunErrorCode::Cancelled,
        }
    }
}

/// How a run ended, for the per-run log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RunOutcomeKind {
    #[default]
    Finished,
    Cancelled,
    Failed(RunErrorCode),
}

/// What the per-run log line reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSummary {
    pub steps: u32,
    pub tool_calls: u32,
    pub usage: Usage,
    pub outcome: RunOutcomeKind,
}

/// Sends the run's events to its live log, where every stream and the recorder read them.
struct Emitter<'a>(&'a LiveRun);

impl Emitter<'_> {
    fn emit(&self, event: Event) {
        self.0.push(event);
    }

    fn emit_all(&self, events: &mut Vec<Event>) {
        for event in events.drain(..) {
            self.0.push(event);
        }
    }
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

/// How a model turn ended.
enum TurnEnd {
    Done(TurnAssembler),
    /// Stopped by a cancel: what was streamed so far.
    Stopped(TurnAssembler),
}

impl PreparedRun {
    /// Starts the run on its own task and returns its live handle; `RUN_STARTED` is already in
    /// its log. The run goes on to its end whoever follows it.
    pub fn spawn(self) -> Arc<LiveRun> {
        let live = LiveRun::new(self.lease.thread_id.clone(), self.lease.run_id.clone());
        live.push(Event::RunStarted {
            thread_id: self.lease.thread_id.clone(),
            run_id: self.lease.run_id.clone(),
            parent_run_id: self.parent_run_id.clone(),
        });
        self.agent.live.insert(live.clone());
        let agent = self.agent.clone();
        let driven = live.clone();
        let span = self.span.clone();
        tokio::spawn(
            async move {
                // A bug must not leave followers waiting and the thread's lease held by a run that
                // no longer exists: the log still ends with one terminal event.
                if AssertUnwindSafe(self.drive(driven.clone()))
                    .catch_unwind()
                    .await
                    .is_err()
                {
                    tracing::error!(run_id = %driven.run_id, "the run panicked");
                    if !driven.has_ended() {
                        driven.push(Event::RunError {
                            message: "the run failed unexpectedly".to_owned(),
                            code: RunErrorCode::InvalidRequest,
                            usage: TokenUsage::default(),
                        });
                    }
                    agent.live.remove(&driven);
                }
            }
            .instrument(span),
        );
        live
    }

    /// The run's events from the start, in batches of what arrived together.
    pub fn into_batches(self) -> impl Stream<Item = Vec<Arc<RecordedEvent>>> + Send + 'static {
        self.spawn().follow(0)
    }

    /// The run as a stream of events, starting with `RUN_STARTED` and ending with exactly one
    /// of `RUN_FINISHED` / `RUN_ERROR`.
    pub fn into_events(self) -> impl Stream<Item = Event> + Send + 'static {
        self.into_batches().flat_map(|batch| {
            futures_util::stream::iter(
                batch
                    .into_iter()
                    .filter_map(|recorded| recorded.event.clone())
                    .collect::<Vec<_>>(),
            )
        })
    }

    /// Runs the loop with its recorder and heartbeat, stores what it produced, and ends the
    /// log with the terminal event.
    async fn drive(mut self, live: Arc<LiveRun>) {
        let began = std::time::Instant::now();
        let store = self.agent.store.clone();
        let settings = self.agent.settings.clone();
        let recorder = settings.record_events.then(|| {
            tokio::spawn(
                background::record(
                    store.clone(),
                    self.lease.clone(),
                    live.clone(),
                    settings.record_interval,
                )
                .in_current_span(),
            )
        });
        let heartbeat = tokio::spawn(
            background::heartbeat(
                store.clone(),
                self.lease.clone(),
                live.clone(),
                settings.lease,
                settings.cancel_poll,
            )
            .in_current_span(),
        );
        let mut produced = Vec::new();
        let mut summary = RunSummary::default();
        let initial_state = self.state.clone();
        let stop = live.stop_token().clone();
        let mut result = self
            .execute(&Emitter(&live), &mut produced, &mut summary, &stop)
            .await;
        heartbeat.abort();
        if live.stop_reason() == Some(StopReason::LeaseLost) {
            result = Err(RunFailure::Store(StoreError::LeaseLost));
        }

        let state_changed = self.state != initial_state;
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
            if matches!(result, Ok(()) | Err(RunFailure::Cancelled)) {
                result = Err(RunFailure::Store(error));
            }
        }

        let usage = TokenUsage {
            input_tokens: summary.usage.input_tokens,
            output_tokens: summary.usage.output_tokens,
        };
        let finished = |outcome| Event::RunFinished {
            thread_id: self.lease.thread_id.clone(),
            run_id: self.lease.run_id.clone(),
            outcome,
            usage,
        };
        let terminal = match &result {
            Ok(()) => finished(None),
            // AG-UI 1.0's cancelled outcome; 0.0.x clients reject it, so they get RUN_ERROR.
            Err(RunFailure::Cancelled) if self.speaks_v1 => finished(Some(RunOutcome::Cancelled)),
            Err(failure) => Event::RunError {
                message: failure.to_string(),
                code: failure.code(),
                usage,
            },
        };
        summary.outcome = match &result {
            Ok(()) => RunOutcomeKind::Finished,
            Err(RunFailure::Cancelled) => RunOutcomeKind::Cancelled,
            Err(failure) => RunOutcomeKind::Failed(failure.code()),
        };
        tracing::info!(
            thread_id = %self.lease.thread_id,
            run_id = %self.lease.run_id,
            steps = summary.steps,
            tool_calls = summary.tool_calls,
            input_tokens = summary.usage.input_tokens,
            output_tokens = summary.usage.output_tokens,
            duration_ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX),
            outcome = ?summary.outcome,
            "run ended"
        );
        live.push(terminal);
        // The run counts as in flight until its log is written: under Lambda the invocation
        // ends (and the environment may freeze) only after that.
        if let Some(recorder) = recorder {
            let _ = recorder.await;
        }
        self.agent.live.remove(&live);
    }

    async fn execute(
        &mut self,
        out: &Emitter<'_>,
        produced: &mut Vec<Message>,
        summary: &mut RunSummary,
        stop: &CancellationToken,
    ) -> Result<(), RunFailure> {
        if let Some(state) = &self.state {
            out.emit(Event::StateSnapshot {
                snapshot: state.clone(),
            });
        }
        if self.client_is_behind {
            out.emit(Event::MessagesSnapshot {
                messages: self.history.clone(),
            });
        }
        let settings = self.agent.settings.clone();
        let mut used_call_ids: HashSet<ToolCallId> = self
            .history
            .iter()
            .flat_map(|message| message.tool_calls().iter().map(|call| call.id.clone()))
            .collect();

        for step in 1..=settings.max_steps {
            if stop.is_cancelled() {
                return Err(RunFailure::Cancelled);
            }
            summary.steps = step;
            let step_name = format!("model_turn_{step}");
            if settings.emit_steps {
                out.emit(Event::StepStarted {
                    step_name: step_name.clone(),
                });
            }
            let end = self.model_turn(out, &mut used_call_ids, stop).await?;
            let (mut turn, stopped) = match end {
                TurnEnd::Done(turn) => (turn, false),
                TurnEnd::Stopped(turn) => (turn, true),
            };
            summary.usage += turn.usage();
            let mut events = Vec::new();
            turn.close(&mut events);
            out.emit_all(&mut events);
            // The step is the model's turn; it closes before the calls end, so that a frontend
            // call's TOOL_CALL_END is immediately followed by RUN_FINISHED (CopilotKit's rule).
            if settings.emit_steps {
                out.emit(Event::StepFinished { step_name });
            }
            turn.end_calls(&mut events);
            out.emit_all(&mut events);
            if stopped {
                if let Some(message) = turn.partial() {
                    self.history.push(message.clone());
                    produced.push(message);
                }
                return Err(RunFailure::Cancelled);
            }
            let (message, calls) = turn.finish()?;
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
            let results = tokio::select! {
                biased;
                () = stop.cancelled() => return Err(RunFailure::Cancelled),
                results = self.run_tools(&server_calls) => results?,
            };
            for result in results {
                out.emit(Event::ToolCallResult {
                    message_id: result.id.clone(),
                    tool_call_id: result.tool_call_id.clone(),
                    content: result.content.clone(),
                    role: ToolRole::Tool,
                });
                let message = Message::Tool {
                    id: result.id,
                    tool_call_id: result.tool_call_id,
                    content: result.content,
                    error: result.error,
                };
                self.history.push(message.clone());
                produced.push(message);
            }
            self.emit_state_changes(out);
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

    /// Streams one model turn. A turn that fails midway returns the failure and nothing of it
    /// is stored or executed; a stopped turn returns what was streamed. Dropping the model's
    /// stream closes its connection, so the provider stops generating.
    async fn model_turn(
        &mut self,
        out: &Emitter<'_>,
        used_call_ids: &mut HashSet<ToolCallId>,
        stop: &CancellationToken,
    ) -> Result<TurnEnd, RunFailure> {
        let request = ModelRequest {
            system: self.system.clone(),
            messages: model_view(&self.history),
            tools: self.agent.tool_specs(&self.client_tools),
        };
        let deadline = self.deadline;
        let mut turn = TurnAssembler::new(MessageId::generate());
        let mut stream = tokio::select! {
            biased;
            () = stop.cancelled() => return Ok(TurnEnd::Stopped(turn)),
            stream = timeout_at(deadline, self.agent.model.stream(&request)) => {
                stream.map_err(|_| RunFailure::Timeout)??
            }
        };
        let mut events = Vec::new();
        loop {
            let next = tokio::select! {
                biased;
                () = stop.cancelled() => return Ok(TurnEnd::Stopped(turn)),
                next = timeout_at(deadline, stream.next()) => next.map_err(|_| RunFailure::Timeout)?,
            };
            let Some(delta) = next else { break };
            turn.push(delta?, used_call_ids, &mut events);
            out.emit_all(&mut events);
        }
        Ok(TurnEnd::Done(turn))
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

    fn emit_state_changes(&mut self, out: &Emitter<'_>) {
        for patch in self.pending_deltas.drain(..) {
            out.emit(Event::StateDelta { delta: patch });
        }
    }
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
