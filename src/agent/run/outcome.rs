//! How a run ends: the failures that end it with `RUN_ERROR`, the terminal event a client gets,
//! the usage it reports, and the per-run log line, metrics record and trace outcome.

use super::PreparedRun;
use crate::agent::approval::PendingApproval;
use crate::agent::spans;
use crate::agent::turn::TurnFault;
use crate::model::{FailureKind, ModelError, ModelIdentity, Usage};
use crate::protocol::events::{RunOutcome, RunUsage, TokenUsage};
use crate::protocol::{Event, RunErrorCode, ToolCallId};
use crate::store::StoreError;
use crate::store::meter::MeteredUsage;
use crate::telemetry::emf::{RunMetrics, StoreFigures};
use std::time::Duration;

/// Why a run ended with `RUN_ERROR`, or early.
#[derive(Debug, thiserror::Error)]
pub(super) enum RunFailure {
    #[error("{0}")]
    Model(#[from] ModelError),
    #[error("the model's answer was cut off at its token limit in the middle of a tool call")]
    TruncatedToolCall,
    #[error("the model's answer was blocked by its content filter")]
    ContentFilter,
    #[error("the run did not finish before its deadline")]
    Timeout,
    /// This runner's part of the run is over (its invocation's deadline): the run goes on in
    /// the next invocation. Never a run's end.
    #[error("the run goes on in its next invocation")]
    SegmentOver,
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
    /// The model refused the request as longer than its window, before any output: the run
    /// compacts harder and tries once more.
    #[error("{0}")]
    Overflow(crate::model::Refusal),
    /// Even compacted, the request does not fit: the new message is too large.
    #[error(
        "the message is too large for the model's context window (about {tokens} tokens of \
         input where {window} fit): shorten it or split it into smaller messages, then send it \
         again"
    )]
    ContextTooLong { tokens: u64, window: u64 },
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
    pub(super) fn error_type(&self) -> &'static str {
        match self {
            RunFailure::Model(_) => "model_error",
            RunFailure::TruncatedToolCall => "truncated_tool_call",
            RunFailure::ContentFilter => "content_filter",
            RunFailure::Timeout => "timeout",
            RunFailure::SegmentOver => "handed_off",
            RunFailure::MaxSteps(_) => "max_steps",
            RunFailure::ToolFatal { .. } => "tool_fatal",
            RunFailure::Store(_) => "store_error",
            RunFailure::Cancelled => "cancelled",
            RunFailure::Attachment => "attachment",
            RunFailure::Overflow(_) => "context_overflow",
            RunFailure::ContextTooLong { .. } => "context_too_long",
        }
    }

    fn code(&self) -> RunErrorCode {
        match self {
            RunFailure::Model(error) => match error.kind() {
                FailureKind::RateLimited | FailureKind::QuotaExhausted => {
                    RunErrorCode::ModelRateLimited
                }
                FailureKind::Unavailable => RunErrorCode::ModelUnavailable,
                FailureKind::TimedOut => RunErrorCode::ModelTimeout,
                FailureKind::Refused => RunErrorCode::ModelRefused,
                FailureKind::Overflow | FailureKind::Broken => RunErrorCode::ModelError,
            },
            RunFailure::TruncatedToolCall | RunFailure::ContentFilter | RunFailure::Overflow(_) => {
                RunErrorCode::ModelError
            }
            RunFailure::ContextTooLong { .. } => RunErrorCode::ContextTooLong,
            RunFailure::Timeout | RunFailure::SegmentOver => RunErrorCode::Timeout,
            RunFailure::MaxSteps(_) => RunErrorCode::MaxStepsExceeded,
            RunFailure::ToolFatal { .. } => RunErrorCode::ToolExecutionError,
            RunFailure::Store(StoreError::LeaseLost) => RunErrorCode::Conflict,
            RunFailure::Store(_) | RunFailure::Attachment => RunErrorCode::StoreError,
            RunFailure::Cancelled => RunErrorCode::Cancelled,
        }
    }
}

/// Adds `more` to `entry`, its optional parts where either has them.
fn add_usage(entry: &mut TokenUsage, more: &TokenUsage) {
    let sum = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
    };
    entry.input_tokens = entry.input_tokens.saturating_add(more.input_tokens);
    entry.output_tokens = entry.output_tokens.saturating_add(more.output_tokens);
    entry.total_tokens = entry.total_tokens.saturating_add(more.total_tokens);
    entry.reasoning_tokens = sum(entry.reasoning_tokens, more.reasoning_tokens);
    entry.cached_input_tokens = sum(entry.cached_input_tokens, more.cached_input_tokens);
    entry.cache_write_input_tokens = sum(
        entry.cache_write_input_tokens,
        more.cache_write_input_tokens,
    );
}

/// How a run that did not fail ended.
pub(super) enum RunEnd {
    /// Done; the frontend tool calls it left for the client, if it stopped at some.
    Finished { pending: Vec<ToolCallId> },
    /// Paused: tool calls wait for approval through AG-UI 1.0 interrupts.
    Interrupted(Vec<PendingApproval>),
    /// Not over: it goes on in the next invocation.
    HandedOff,
}

impl RunEnd {
    /// Done, with nothing left for the client.
    pub(super) fn finished() -> Self {
        RunEnd::Finished {
            pending: Vec::new(),
        }
    }
}

/// How a run ended, for the per-run log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum RunOutcomeKind {
    #[default]
    Finished,
    /// Ended to wait for tool approvals.
    Interrupted,
    Cancelled,
    Failed(RunErrorCode),
}

impl RunOutcomeKind {
    /// The metrics' `outcome` dimension.
    pub(crate) fn label(self) -> &'static str {
        match self {
            RunOutcomeKind::Finished => "finished",
            RunOutcomeKind::Interrupted => "interrupted",
            RunOutcomeKind::Cancelled => "cancelled",
            RunOutcomeKind::Failed(_) => "error",
        }
    }

    pub(super) fn of(result: &Result<RunEnd, RunFailure>) -> Self {
        match result {
            Ok(RunEnd::Finished { .. } | RunEnd::HandedOff) => RunOutcomeKind::Finished,
            Ok(RunEnd::Interrupted(_)) => RunOutcomeKind::Interrupted,
            Err(RunFailure::Cancelled) => RunOutcomeKind::Cancelled,
            Err(failure) => RunOutcomeKind::Failed(failure.code()),
        }
    }
}

/// What the per-run log line reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RunSummary {
    pub steps: u32,
    pub tool_calls: u32,
    /// Every model's tokens together.
    pub usage: Usage,
    /// Each model's tokens, in the order first used (a fallback serves some turns).
    pub by_model: Vec<(ModelIdentity, Usage)>,
    /// What the run's sub-agents used, as they reported it.
    pub child_usage: Vec<TokenUsage>,
    /// Sub-agent runs this run started (or continued).
    pub subagent_runs: u32,
    /// The model reported usage at least once.
    pub usage_reported: bool,
    /// Every model call that took more than one attempt: `provider:model outcome`, in order.
    pub model_attempts: Vec<String>,
    pub outcome: RunOutcomeKind,
}

impl RunSummary {
    /// Adds one model call's tokens, to the model that served it.
    pub(super) fn add_usage(&mut self, model: &ModelIdentity, usage: Usage) {
        self.usage += usage;
        self.usage_reported |= usage != Usage::default();
        match self.by_model.iter_mut().find(|(served, _)| served == model) {
            Some((_, total)) => *total += usage,
            None => self.by_model.push((model.clone(), usage)),
        }
    }

    /// A call's attempts, when it took more than one.
    pub(super) fn add_attempts(&mut self, attempts: &[crate::model::Attempt]) {
        if attempts.len() > 1 {
            self.model_attempts.extend(
                attempts
                    .iter()
                    .map(|attempt| format!("{} {}", attempt.model, attempt.outcome)),
            );
        }
    }
}

impl PreparedRun {
    /// The event that ends the run's log: `RUN_FINISHED`, with an AG-UI 1.0 outcome for
    /// clients that read one, or `RUN_ERROR`.
    pub(super) fn terminal_event(&self, result: &Result<RunEnd, RunFailure>) -> Event {
        let usage = self.run_usage();
        let speaks_v1 = self.request.speaks_v1;
        let finished = |outcome| Event::RunFinished {
            thread_id: self.lease.thread_id.clone(),
            run_id: self.lease.run_id.clone(),
            outcome,
            usage: usage.clone(),
            result: None,
        };
        // 0.0.x clients reject every outcome but an absent one.
        match result {
            Ok(RunEnd::Finished { pending }) if speaks_v1 && !pending.is_empty() => {
                finished(Some(RunOutcome::Success {
                    pending_tool_call_ids: pending.clone(),
                }))
            }
            Ok(RunEnd::Interrupted(pending)) => finished(Some(RunOutcome::Interrupt {
                interrupts: pending
                    .iter()
                    .map(|pending| pending.interrupt.clone())
                    .chain(
                        self.progress
                            .delegated
                            .iter()
                            .flat_map(|child| &child.interrupts)
                            .map(|relayed| relayed.interrupt.clone()),
                    )
                    .collect(),
            })),
            Ok(RunEnd::Finished { .. } | RunEnd::HandedOff) => finished(None),
            // A stop is no failure: AG-UI's cancelled outcome. 0.0.x clients refuse it (and
            // CopilotKit shows a RUN_ERROR as a failed run), so they get the metadata's instead.
            Err(RunFailure::Cancelled) if speaks_v1 => finished(Some(RunOutcome::Cancelled)),
            Err(RunFailure::Cancelled) => finished(Some(RunOutcome::CancelledInMetadata)),
            Err(failure) => Event::RunError {
                message: failure.to_string(),
                code: failure.code(),
                usage: usage.clone(),
            },
        }
    }

    /// The run's usage in AG-UI's shape, one entry per provider and model: its own models'
    /// (those that reported any) and its sub-agents', summed by model.
    fn run_usage(&self) -> RunUsage {
        let summary = &self.progress.summary;
        let mut entries = self.own_usage();
        for child in &summary.child_usage {
            let same = |entry: &&mut TokenUsage| {
                entry.provider == child.provider && entry.model == child.model
            };
            match entries.iter_mut().find(same) {
                Some(entry) => add_usage(entry, child),
                None => entries.push(TokenUsage {
                    cache_write_input_tokens: child
                        .cache_write_input_tokens
                        .filter(|_| self.request.speaks_v1),
                    ..child.clone()
                }),
            }
        }
        RunUsage(entries)
    }

    /// The run's own models' usage; none when no model reported any.
    fn own_usage(&self) -> Vec<TokenUsage> {
        let summary = &self.progress.summary;
        if !summary.usage_reported {
            return Vec::new();
        }
        summary
            .by_model
            .iter()
            .filter(|(_, usage)| *usage != Usage::default())
            .map(|(identity, usage)| usage.reported(identity, self.request.speaks_v1))
            .collect()
    }

    /// The per-run log line, the run's EMF metrics record, and its trace span's outcome (the
    /// store figures and the hand-offs of every runner of the run).
    pub(super) fn report(&self, duration: Duration, resumes: u32) {
        let summary = &self.progress.summary;
        let store = self
            .progress
            .carried
            .store
            .plus(&self.telemetry.meter.usage());
        let millis = |duration: Duration| duration.as_secs_f64() * 1000.0;
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
            store_read_bytes = store.read_bytes,
            store_read_items = store.read_items,
            store_write_capacity = store.write_capacity_units,
            memory_read_calls = store.memory_read_calls,
            memory_write_calls = store.memory_write_calls,
            handoffs = self.progress.carried.handoffs,
            runner = self.lease.epoch,
            model_attempts = summary.model_attempts.join("; "),
            "run ended"
        );
        let failed = match summary.outcome {
            RunOutcomeKind::Failed(code) => Some(code),
            _ => None,
        };
        spans::end_run(
            &self.telemetry.trace,
            summary.usage,
            summary.outcome.label(),
            failed,
        );
        self.emit_metrics(&store, resumes);
    }

    /// The run's EMF metrics record, when metrics are on.
    fn emit_metrics(&self, store: &MeteredUsage, resumes: u32) {
        let Some(metrics) = &self.agent.metrics else {
            return;
        };
        let summary = &self.progress.summary;
        let telemetry = &self.telemetry;
        let millis = |duration: Duration| duration.as_secs_f64() * 1000.0;
        let received = telemetry.observed.received;
        metrics.emit(&RunMetrics {
            outcome: summary.outcome.label(),
            model: self.agent.model.identity().model,
            dialect: telemetry.observed.dialect,
            duration_ms: millis(received.elapsed()),
            time_to_first_byte_ms: millis(telemetry.time_to_first_byte),
            time_to_first_token_ms: telemetry
                .first_output
                .map(|at| millis(at.saturating_duration_since(received))),
            input_tokens: summary.usage.input_tokens,
            output_tokens: summary.usage.output_tokens,
            tool_calls: summary.tool_calls,
            subagent_runs: summary.subagent_runs,
            steps: summary.steps,
            compactions: self.progress.context.compactions,
            store: StoreFigures {
                read_calls: store.read_calls,
                write_calls: store.write_calls,
                read_ms: millis(store.read_time),
                write_ms: millis(store.write_time),
                read_capacity_units: store.read_capacity_units,
                write_capacity_units: store.write_capacity_units,
                memory_read_calls: store.memory_read_calls,
                memory_write_calls: store.memory_write_calls,
                read_bytes: store.read_bytes,
                read_items: store.read_items,
            },
            cancelled: summary.outcome == RunOutcomeKind::Cancelled,
            resumes,
            handoffs: self.progress.carried.handoffs,
            thread_id: self.lease.thread_id.to_string(),
            run_id: self.lease.run_id.to_string(),
            trace_id: crate::telemetry::otel::trace_id(&telemetry.trace, None),
        });
    }
}
