//! The run loop: model turns streamed as AG-UI events, server tools executed and fed back,
//! the frontend-tool boundary, and the driver that guarantees `RUN_STARTED` first and exactly
//! one terminal event last, written only after the thread store accepted the run's output. The
//! run lives on its own task: a client that goes away stops nothing.

use super::PreparedRun;
use super::approval::{self, Decision, PendingApproval};
use super::background;
use super::live::{LiveRun, StopReason};
use super::spans::{self, ChatEnd, ChatSpan, ToolSpan};
use super::thread::{answers_follow_calls, model_view};
use super::tools::{ToolContext, ToolError, ToolOutput};
use super::turn::{TurnAssembler, TurnCall, TurnFault};
use crate::model::{ModelError, ModelRequest, Usage};
use crate::protocol::events::{
    PROTOCOL_VERSION, RecordedEvent, RunOutcome, RunUsage, TokenUsage, ToolRole,
};
use crate::protocol::{Event, Message, MessageId, RunErrorCode, ToolCall, ToolCallId};
use crate::store::StoreError;
use crate::telemetry::emf::{RunMetrics, StoreFigures};
use futures_util::{FutureExt, Stream, StreamExt};
use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;
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
    /// An uploaded image could not be signed for the model to read.
    #[error("an attachment could not be signed for the model")]
    Attachment,
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
    /// The trace's `error.type`.
    fn error_type(&self) -> &'static str {
        match self {
            RunFailure::Model(_) => "model_error",
            RunFailure::TruncatedToolCall => "truncated_tool_call",
            RunFailure::ContentFilter => "content_filter",
            RunFailure::Timeout => "timeout",
            RunFailure::MaxSteps(_) => "max_steps",
            RunFailure::ToolFatal { .. } => "tool_fatal",
            RunFailure::Store(_) => "store_error",
            RunFailure::Cancelled => "cancelled",
            RunFailure::Attachment => "attachment",
        }
    }

    fn code(&self) -> RunErrorCode {
        match self {
            RunFailure::Model(_) | RunFailure::TruncatedToolCall | RunFailure::ContentFilter => {
                RunErrorCode::ModelError
            }
            RunFailure::Timeout => RunErrorCode::Timeout,
            RunFailure::MaxSteps(_) => RunErrorCode::MaxStepsExceeded,
            RunFailure::ToolFatal { .. } => RunErrorCode::ToolExecutionError,
            RunFailure::Store(StoreError::LeaseLost) => RunErrorCode::Conflict,
            RunFailure::Store(_) | RunFailure::Attachment => RunErrorCode::StoreError,
            RunFailure::Cancelled => RunErrorCode::Cancelled,
        }
    }
}

/// How a run ended, for the per-run log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RunOutcomeKind {
    #[default]
    Finished,
    /// Ended to wait for tool approvals.
    Interrupted,
    Cancelled,
    Failed(RunErrorCode),
}

impl RunOutcomeKind {
    /// The metrics' `outcome` dimension.
    pub fn label(self) -> &'static str {
        match self {
            RunOutcomeKind::Finished => "finished",
            RunOutcomeKind::Interrupted => "interrupted",
            RunOutcomeKind::Cancelled => "cancelled",
            RunOutcomeKind::Failed(_) => "error",
        }
    }
}

/// What the per-run log line reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSummary {
    pub steps: u32,
    pub tool_calls: u32,
    pub usage: Usage,
    /// The model reported usage at least once.
    pub usage_reported: bool,
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
    /// A server tool whose calls wait for a person's approval.
    NeedsApproval,
    Frontend,
    Unknown,
}

/// How a run that did not fail ended.
enum RunEnd {
    /// Done; the frontend tool calls it left for the client, if it stopped at some.
    Finished { pending: Vec<ToolCallId> },
    /// Paused: tool calls wait for approval through AG-UI 1.0 interrupts.
    Interrupted(Vec<PendingApproval>),
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
            protocol_version: self.speaks_v1.then_some(PROTOCOL_VERSION),
        });
        let mut this = self;
        this.time_to_first_byte = this.observed.received.elapsed();
        this.agent.live.insert(live.clone());
        let agent = this.agent.clone();
        let driven = live.clone();
        let span = this.span.clone();
        let trace = this.trace.clone();
        let meter = this.meter.clone();
        tokio::spawn(
            async move {
                // A bug must not leave followers waiting and the thread's lease held by a run that
                // no longer exists: the log still ends with one terminal event.
                let drive = AssertUnwindSafe(this.drive(driven.clone())).catch_unwind();
                // The trace span ends with this await, before the run counts as done: Lambda
                // flushes spans once its runs are done, and this one must be among them.
                let ran = crate::store::meter::metered(meter, drive)
                    .instrument(trace)
                    .await;
                if ran.is_err() {
                    tracing::error!(run_id = %driven.run_id, "the run panicked");
                    if !driven.has_ended() {
                        driven.push(Event::RunError {
                            message: "the run failed unexpectedly".to_owned(),
                            code: RunErrorCode::InvalidRequest,
                            usage: RunUsage::default(),
                        });
                    }
                }
                agent.live.remove(&driven);
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
        let meter = &self.meter;
        let recorder = settings.record_events.then(|| {
            tokio::spawn(
                crate::store::meter::metered(
                    meter.clone(),
                    background::record(
                        store.clone(),
                        self.lease.clone(),
                        live.clone(),
                        settings.record_interval,
                    ),
                )
                .in_current_span(),
            )
        });
        let heartbeat = tokio::spawn(
            crate::store::meter::metered(
                meter.clone(),
                background::heartbeat(
                    store.clone(),
                    self.lease.clone(),
                    live.clone(),
                    settings.lease,
                    settings.cancel_poll,
                ),
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
        let reported_usage = summary.usage_reported;
        heartbeat.abort();
        // Gone (with its hold on the run's spans) before the run counts as done.
        let _ = heartbeat.await;
        if live.stop_reason() == Some(StopReason::LeaseLost) {
            result = Err(RunFailure::Store(StoreError::LeaseLost));
        }

        let state_changed = self.state != initial_state;
        let mut interrupts = std::mem::take(&mut self.interrupts);
        if let Ok(RunEnd::Interrupted(pending)) = &result {
            interrupts.open.extend(pending.iter().cloned());
        }
        interrupts
            .open
            .extend(std::mem::take(&mut self.fallback_approvals));
        let saved = store
            .finish_run(
                &self.lease,
                &produced,
                if state_changed {
                    self.state.as_ref()
                } else {
                    None
                },
                interrupts.to_value().as_ref(),
                chrono::Utc::now().timestamp_millis(),
            )
            .await;
        if let Err(error) = saved {
            tracing::error!(%error, thread_id = %self.lease.thread_id, "storing the run failed");
            if matches!(result, Ok(_) | Err(RunFailure::Cancelled)) {
                result = Err(RunFailure::Store(error));
            }
        }

        let usage = self.run_usage(&summary, reported_usage);
        let finished = |outcome| Event::RunFinished {
            thread_id: self.lease.thread_id.clone(),
            run_id: self.lease.run_id.clone(),
            outcome,
            usage: usage.clone(),
        };
        // 0.0.x clients reject every outcome but an absent one.
        let terminal = match &result {
            Ok(RunEnd::Finished { pending }) if self.speaks_v1 && !pending.is_empty() => {
                finished(Some(RunOutcome::Success {
                    pending_tool_call_ids: pending.clone(),
                }))
            }
            Ok(RunEnd::Interrupted(pending)) => finished(Some(RunOutcome::Interrupt {
                interrupts: pending
                    .iter()
                    .map(|pending| pending.interrupt.clone())
                    .collect(),
            })),
            Ok(RunEnd::Finished { .. }) => finished(None),
            // AG-UI 1.0's cancelled outcome; 0.0.x clients reject it, so they get RUN_ERROR.
            Err(RunFailure::Cancelled) if self.speaks_v1 => finished(Some(RunOutcome::Cancelled)),
            Err(failure) => Event::RunError {
                message: failure.to_string(),
                code: failure.code(),
                usage: usage.clone(),
            },
        };
        summary.outcome = match &result {
            Ok(RunEnd::Finished { .. }) => RunOutcomeKind::Finished,
            Ok(RunEnd::Interrupted(_)) => RunOutcomeKind::Interrupted,
            Err(RunFailure::Cancelled) => RunOutcomeKind::Cancelled,
            Err(failure) => RunOutcomeKind::Failed(failure.code()),
        };
        live.push(terminal);
        // Usage is recorded after the terminal event, off the streaming path; the run is still
        // in flight (so a Lambda invocation does not end) until it is.
        let identity = self.agent.model.identity();
        let used = summary.usage;
        self.agent
            .settle(
                &self.reservation,
                Some(crate::store::RunTokens {
                    provider: &identity.provider,
                    model: &identity.model,
                    input: used.input_tokens,
                    output: used.output_tokens,
                    reasoning: used.reasoning_tokens.unwrap_or(0),
                    cached_input: used.cached_input_tokens.unwrap_or(0),
                }),
            )
            .await;
        // The run counts as in flight until its log is written: under Lambda the invocation
        // ends (and the environment may freeze) only after that.
        if let Some(recorder) = recorder {
            let _ = recorder.await;
        }
        // Last, so that the store's usage counts every write of the run.
        self.report(&summary, began.elapsed(), live.rejoins());
    }

    /// The per-run log line, the run's EMF metrics record, and its trace span's outcome.
    fn report(&self, summary: &RunSummary, duration: Duration, resumes: u32) {
        let store = self.meter.usage();
        let millis = |duration: Duration| duration.as_secs_f64() * 1000.0;
        let outcome = summary.outcome.label();
        tracing::info!(
            thread_id = %self.lease.thread_id,
            run_id = %self.lease.run_id,
            steps = summary.steps,
            tool_calls = summary.tool_calls,
            input_tokens = summary.usage.input_tokens,
            output_tokens = summary.usage.output_tokens,
            duration_ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
            outcome = ?summary.outcome,
            store_read_calls = store.read_calls,
            store_write_calls = store.write_calls,
            store_read_ms = millis(store.read_time),
            store_write_ms = millis(store.write_time),
            store_read_capacity = store.read_capacity_units,
            store_write_capacity = store.write_capacity_units,
            "run ended"
        );
        let failed = match summary.outcome {
            RunOutcomeKind::Failed(code) => Some(code),
            _ => None,
        };
        spans::end_run(&self.trace, summary.usage, outcome, failed);
        if let Some(metrics) = &self.agent.metrics {
            metrics.emit(&RunMetrics {
                outcome,
                model: self.agent.model.identity().model,
                dialect: self.observed.dialect,
                duration_ms: millis(self.observed.received.elapsed()),
                time_to_first_byte_ms: millis(self.time_to_first_byte),
                time_to_first_token_ms: self
                    .first_output
                    .map(|at| millis(at.saturating_duration_since(self.observed.received))),
                input_tokens: summary.usage.input_tokens,
                output_tokens: summary.usage.output_tokens,
                tool_calls: summary.tool_calls,
                steps: summary.steps,
                store: StoreFigures {
                    read_calls: store.read_calls,
                    write_calls: store.write_calls,
                    read_ms: millis(store.read_time),
                    write_ms: millis(store.write_time),
                    read_capacity_units: store.read_capacity_units,
                    write_capacity_units: store.write_capacity_units,
                },
                cancelled: summary.outcome == RunOutcomeKind::Cancelled,
                resumes,
                thread_id: self.lease.thread_id.to_string(),
                run_id: self.lease.run_id.to_string(),
                trace_id: crate::telemetry::otel::trace_id(&self.trace, None),
            });
        }
    }

    async fn execute(
        &mut self,
        out: &Emitter<'_>,
        produced: &mut Vec<Message>,
        summary: &mut RunSummary,
        stop: &CancellationToken,
    ) -> Result<RunEnd, RunFailure> {
        if let Some(state) = &self.state {
            out.emit(Event::StateSnapshot {
                snapshot: state.clone(),
            });
        }
        // A run that answers approved or denied calls sends their results against calls made
        // in an earlier run: the snapshot first names those calls within this stream.
        if self.client_is_behind || !self.resolved.is_empty() {
            out.emit(Event::MessagesSnapshot {
                messages: self.history.clone(),
            });
        }
        if self.repeat_only {
            // A repeated resume: its answers were acted on by an earlier run.
            return Ok(RunEnd::Finished {
                pending: Vec::new(),
            });
        }
        self.carry_out_decisions(out, produced, stop).await?;
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
            summary.usage_reported |= turn.usage() != Usage::default();
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
            let reasoning = turn.take_reasoning();
            if stopped {
                for message in reasoning.into_iter().chain(turn.partial()) {
                    self.history.push(message.clone());
                    produced.push(message);
                }
                return Err(RunFailure::Cancelled);
            }
            let (message, calls) = turn.finish()?;
            // Before the turn's assistant message: providers send reasoning back at its head.
            for message in reasoning {
                self.history.push(message.clone());
                produced.push(message);
            }
            if calls.is_empty() {
                if let Some(message) = message {
                    self.history.push(message.clone());
                    produced.push(message);
                }
                return Ok(RunEnd::Finished {
                    pending: Vec::new(),
                });
            }
            summary.tool_calls += u32::try_from(calls.len()).unwrap_or(u32::MAX);
            let mut frontend_calls = Vec::new();
            let mut gated_calls = Vec::new();
            let mut server_calls = Vec::new();
            for call in &calls {
                match self.classify(&call.name) {
                    CallKind::Frontend => frontend_calls.push(call.id.clone()),
                    CallKind::NeedsApproval => gated_calls.push(call),
                    CallKind::Server | CallKind::Unknown => server_calls.push(call),
                }
            }
            // A 0.0.x client is asked through its confirm tool: one call of it per gated call,
            // made part of this turn's message so that its answer is a known tool result.
            let mut message = message;
            let mut approvals = Vec::new();
            let mut confirm_calls = Vec::new();
            if !gated_calls.is_empty() {
                let expires_at_ms = chrono::Utc::now().timestamp_millis()
                    + i64::try_from(settings.interrupt_ttl.as_millis()).unwrap_or(i64::MAX);
                for call in &gated_calls {
                    let schema = self
                        .agent
                        .tools
                        .parameters_of(&call.name)
                        .cloned()
                        .unwrap_or_default();
                    let mut pending = PendingApproval {
                        interrupt: approval::tool_interrupt(
                            &call.id,
                            &call.name,
                            &call.arguments,
                            &schema,
                            expires_at_ms,
                        ),
                        tool_name: call.name.clone(),
                        arguments: call.arguments.clone(),
                        expires_at_ms,
                        confirm_call_id: None,
                    };
                    if !self.speaks_v1 && self.has_confirm_tool() {
                        let confirm = ToolCall::new(
                            ToolCallId::generate(),
                            settings.confirm_tool.clone(),
                            serde_json::json!({
                                "action": approval::approval_prompt(&call.name, &call.arguments)
                            })
                            .to_string(),
                        );
                        pending.confirm_call_id = Some(confirm.id.clone());
                        confirm_calls.push(confirm);
                    }
                    approvals.push(pending);
                }
                if let Some(Message::Assistant { tool_calls, .. }) = &mut message {
                    tool_calls.extend(confirm_calls.iter().cloned());
                }
            }
            let parent_message_id = message.as_ref().map(|message| message.id().clone());
            if let Some(message) = message {
                self.history.push(message.clone());
                produced.push(message);
            }
            let results = tokio::select! {
                biased;
                () = stop.cancelled() => return Err(RunFailure::Cancelled),
                results = self.run_tools(&server_calls, stop) => results?,
            };
            for result in results {
                self.record_result(out, produced, result);
            }
            if !approvals.is_empty() && !self.speaks_v1 && confirm_calls.is_empty() {
                // Nobody can approve: the calls are refused, and the model is told.
                for pending in approvals.drain(..) {
                    if let Some(tool_call_id) = pending.interrupt.tool_call_id {
                        let content = format!(
                            "Error: {} needs a person's approval, and this client cannot ask for it (it speaks neither AG-UI 1.0 interrupts nor declares the {} tool).",
                            pending.tool_name, settings.confirm_tool
                        );
                        self.record_result(
                            out,
                            produced,
                            ToolResult {
                                id: MessageId::generate(),
                                tool_call_id,
                                content,
                                error: Some("approval unavailable".to_owned()),
                            },
                        );
                    }
                }
            }
            self.emit_state_changes(out);
            if !approvals.is_empty() && self.speaks_v1 {
                return Ok(RunEnd::Interrupted(approvals));
            }
            if !confirm_calls.is_empty() {
                for confirm in &confirm_calls {
                    out.emit(Event::ToolCallStart {
                        tool_call_id: confirm.id.clone(),
                        tool_call_name: confirm.function.name.clone(),
                        parent_message_id: parent_message_id.clone(),
                    });
                    out.emit(Event::ToolCallArgs {
                        tool_call_id: confirm.id.clone(),
                        delta: confirm.function.arguments.clone(),
                    });
                    out.emit(Event::ToolCallEnd {
                        tool_call_id: confirm.id.clone(),
                    });
                }
                self.fallback_approvals.extend(approvals);
                frontend_calls.extend(confirm_calls.into_iter().map(|call| call.id));
            }
            if !frontend_calls.is_empty() {
                return Ok(RunEnd::Finished {
                    pending: frontend_calls,
                });
            }
        }
        Err(RunFailure::MaxSteps(settings.max_steps))
    }

    /// Streams a tool result and adds it to the history.
    fn record_result(
        &mut self,
        out: &Emitter<'_>,
        produced: &mut Vec<Message>,
        result: ToolResult,
    ) {
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

    /// Carries out the approvals and denials this run's input brought: an approved call runs
    /// now, with the arguments as approved; a denied one gets a result that tells the model.
    /// Both answer the original tool call with `TOOL_CALL_RESULT`.
    async fn carry_out_decisions(
        &mut self,
        out: &Emitter<'_>,
        produced: &mut Vec<Message>,
        stop: &CancellationToken,
    ) -> Result<(), RunFailure> {
        for resolved in std::mem::take(&mut self.resolved) {
            let result = match resolved.decision {
                Decision::Approve { arguments } => {
                    let call = TurnCall {
                        index: 0,
                        id: resolved.tool_call_id.clone(),
                        name: resolved.tool_name.clone(),
                        arguments,
                    };
                    let mut results = self.run_tools(&[&call], stop).await?;
                    match results.pop() {
                        Some(result) => result,
                        None => continue,
                    }
                }
                Decision::Deny { reason } => ToolResult {
                    id: MessageId::generate(),
                    tool_call_id: resolved.tool_call_id,
                    content: reason,
                    error: Some("denied".to_owned()),
                },
            };
            self.record_result(out, produced, result);
        }
        self.emit_state_changes(out);
        Ok(())
    }

    fn has_confirm_tool(&self) -> bool {
        let name = &self.agent.settings.confirm_tool;
        self.client_tools.iter().any(|tool| &tool.name == name)
    }

    fn classify(&self, name: &str) -> CallKind {
        if self.agent.tools.needs_approval(name) {
            CallKind::NeedsApproval
        } else if self.agent.tools.contains(name) {
            CallKind::Server
        } else if self.client_tools.iter().any(|tool| tool.name == name) {
            CallKind::Frontend
        } else {
            CallKind::Unknown
        }
    }

    /// The run's usage in AG-UI's shape, one entry for its model; empty when the model
    /// reported none.
    fn run_usage(&self, summary: &RunSummary, reported: bool) -> RunUsage {
        if !reported {
            return RunUsage::default();
        }
        let identity = self.agent.model.identity();
        let usage = summary.usage;
        RunUsage(vec![TokenUsage {
            provider: Some(identity.provider),
            model: Some(identity.model),
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            total_tokens: usage.input_tokens.saturating_add(usage.output_tokens),
            reasoning_tokens: usage.reasoning_tokens,
            cached_input_tokens: usage.cached_input_tokens,
            cache_write_input_tokens: usage.cache_write_input_tokens.filter(|_| self.speaks_v1),
        }])
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
        let mut messages = model_view(&answers_follow_calls(&self.history));
        // Stored uploads are `s3://` paths: Bedrock reads them itself, other models get a
        // presigned GET, fresh for each turn.
        if let Some(blobs) = &self.agent.blobs
            && !self.agent.model.reads_s3()
        {
            blobs
                .presign_for_model(&mut messages)
                .await
                .map_err(|error| {
                    tracing::error!(%error, "presigning an attachment for the model failed");
                    RunFailure::Attachment
                })?;
        }
        let request = ModelRequest {
            system: self.system.clone(),
            messages,
            tools: self.agent.tool_specs(&self.client_tools),
            sampling: self.sampling.clone(),
        };
        let mut chat = ChatSpan::new(&self.agent.model.identity(), &request);
        let streamed = self
            .stream_turn(out, &request, used_call_ids, stop, &mut chat)
            .await;
        chat.end(chat_end(&streamed));
        streamed
    }

    /// The model's answer to `request`, streamed as events.
    async fn stream_turn(
        &mut self,
        out: &Emitter<'_>,
        request: &ModelRequest,
        used_call_ids: &mut HashSet<ToolCallId>,
        stop: &CancellationToken,
        chat: &mut ChatSpan,
    ) -> Result<TurnEnd, RunFailure> {
        let deadline = self.deadline;
        let mut turn = TurnAssembler::new(MessageId::generate());
        let mut stream = tokio::select! {
            biased;
            () = stop.cancelled() => return Ok(TurnEnd::Stopped(turn)),
            stream = timeout_at(deadline, self.agent.model.stream(request)) => {
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
            let delta = delta?;
            if delta.is_output() {
                chat.first_chunk();
                self.first_output
                    .get_or_insert_with(std::time::Instant::now);
            }
            chat.observe(&delta);
            turn.push(delta, used_call_ids, &mut events);
            out.emit_all(&mut events);
        }
        Ok(TurnEnd::Done(turn))
    }

    /// Runs server tools (and answers unknown ones): those that may run in parallel together,
    /// then the others one at a time, in call order; each sees the state as the turn left it.
    /// Results come back in call order as `tool` messages.
    async fn run_tools(
        &mut self,
        calls: &[&TurnCall],
        stop: &CancellationToken,
    ) -> Result<Vec<ToolResult>, RunFailure> {
        // A child: a tool can see the run stop, but cannot stop it.
        let context = ToolContext::new(
            self.lease.thread_id.clone(),
            self.lease.run_id.clone(),
            self.lease.owner.clone(),
        )
        .with_device_timezone(self.device_timezone)
        .with_state(self.state.clone().unwrap_or(serde_json::Value::Null))
        .with_cancellation(stop.child_token());
        let registry = self.agent.tools.clone();
        let mut outcomes: Vec<Option<Option<Result<ToolOutput, ToolError>>>> =
            calls.iter().map(|_| None).collect();
        let executions = async {
            let parallel = calls
                .iter()
                .zip(outcomes.iter_mut())
                .filter(|(call, _)| registry.may_run_in_parallel(&call.name))
                .map(|(call, slot)| {
                    let (registry, context) = (&registry, &context);
                    async move { *slot = Some(traced_call(registry, call, context).await) }
                });
            futures_util::future::join_all(parallel).await;
            let one_at_a_time = calls
                .iter()
                .zip(outcomes.iter_mut())
                .filter(|(call, _)| !registry.may_run_in_parallel(&call.name));
            for (call, slot) in one_at_a_time {
                *slot = Some(traced_call(&registry, call, &context).await);
            }
        };
        tokio::select! {
            biased;
            () = stop.cancelled() => return Err(RunFailure::Cancelled),
            ran = timeout_at(self.deadline, executions) => ran.map_err(|_| RunFailure::Timeout)?,
        }
        // Every slot is filled once `executions` completed.
        let outcomes = outcomes.into_iter().map(Option::flatten);

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

/// A server tool's call inside its `execute_tool {name}` span; `None` for an unknown tool.
async fn traced_call(
    registry: &super::tools::ToolRegistry,
    call: &TurnCall,
    context: &ToolContext,
) -> Option<Result<ToolOutput, ToolError>> {
    let span = ToolSpan::new(call);
    let outcome = registry
        .call(&call.name, &call.arguments, context)
        .instrument(span.span().clone())
        .await;
    span.end(&outcome);
    outcome
}

/// How a model turn ended, for its `chat` span.
fn chat_end(streamed: &Result<TurnEnd, RunFailure>) -> ChatEnd<'_> {
    match streamed {
        Ok(TurnEnd::Done(turn)) => ChatEnd::Answered(turn),
        Ok(TurnEnd::Stopped(_)) => ChatEnd::Stopped,
        Err(failure) => ChatEnd::Failed(failure.error_type()),
    }
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
