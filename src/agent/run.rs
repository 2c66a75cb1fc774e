//! A prepared run and the task it runs on: what its request asked, the state its loop changes
//! and how it is observed, each a struct of its own; `RUN_STARTED` first and exactly one terminal
//! event last. The run lives on its own task: a client that goes away stops nothing.
//! This file is the loop's face: its clients (start, continuation, a profile run as a child)
//! name what it defines or re-exports, never a file under `run/`.

mod delegate;
mod drive;
mod fit;
mod fold;
mod gate;
mod handoff;
mod outcome;
mod record;
mod resume;
mod steps;
mod surfaces;
mod tool_calls;

pub(crate) use fit::ContextState;
pub(crate) use handoff::{Continuation, Continuations, Segment};
pub(crate) use outcome::RunSummary;
pub(crate) use record::RunRecord;
#[cfg(test)]
pub(crate) use resume::CUT_OFF;
pub(crate) use resume::TakeOver;

use super::approval::{InterruptRecord, PendingApproval, Resolved};
use super::live::LiveRun;
use super::{Agent, Observed};
use crate::protocol::events::{METADATA_KEY, RecordedEvent, RunUsage};
use crate::protocol::version;
use crate::protocol::{ClientTool, Event, Message, RunErrorCode, RunId, ThreadId, ToolCallId};
use crate::store::Lease;
use crate::store::meter::StoreMeter;
use futures_util::{FutureExt, Stream, StreamExt};
use serde_json::Value;
use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tracing::Instrument;

/// A run that holds its thread's lease and has stored its input, ready to stream.
pub struct PreparedRun {
    pub(super) agent: Agent,
    pub(super) lease: Lease,
    /// What the run took from its caller's quota; settled with its real usage at its end.
    pub(super) reservation: crate::store::Reservation,
    pub(super) request: RunRequest,
    pub(super) progress: RunProgress,
    pub(super) telemetry: RunTelemetry,
    /// The part of the run this process runs: until when, and how many steps it took.
    pub(super) segment: handoff::Segment,
    /// How a run taken over from another runner goes on; `None` for a run that begins here.
    pub(super) resume: Option<resume::Resume>,
    /// What the run's starter does once it has ended ([`PreparedRun::on_end`]).
    pub(super) end_hook: Option<EndHook>,
}

/// Work a run's starter wants done once the run has ended, with its whole log in hand, before
/// the run counts as done: a Lambda invocation and a stopping server wait for it as for the run.
pub(crate) type EndHook =
    Box<dyn FnOnce(Arc<LiveRun>) -> futures_util::future::BoxFuture<'static, ()> + Send + Sync>;

/// What the run's request asked, as the start checked and merged it; fixed for the whole run.
pub(super) struct RunRequest {
    pub(super) parent_run_id: Option<RunId>,
    pub(super) client_tools: Vec<ClientTool>,
    pub(super) system: Option<String>,
    pub(super) device_timezone: Option<chrono_tz::Tz>,
    /// When `RUN_MAX_SECS` ends the run, whichever runner has it then.
    pub(super) deadline: Instant,
    /// The same, in epoch milliseconds, for the run's record.
    pub(super) ends_at_ms: i64,
    /// When the request arrived (epoch ms), once a runner before this one recorded it.
    pub(super) received_at_ms: Option<i64>,
    /// The client parses AG-UI 1.0 fields (`RUN_FINISHED.outcome`).
    pub(super) speaks_v1: bool,
    /// The client reads AG-UI 1.1's `encryptedValueType`.
    pub(super) encrypted_value_types: bool,
    /// The content parts of the new messages the run does without, told on `RUN_STARTED`.
    pub(super) skipped_parts: Vec<crate::protocol::SkippedPart>,

    /// The client's sampling options, capped.
    pub(super) sampling: crate::model::Sampling,
    /// The store holds messages the client did not send: the run opens with a snapshot.
    pub(super) client_is_behind: bool,
    /// The whole thread, when the start read it (else the run reads it to open).
    pub(super) snapshot: Option<Vec<Message>>,
    /// Approval decisions this run carries out before its first model turn.
    pub(super) resolved: Vec<Resolved>,
    /// Sub-agents that stopped to ask, continued before the first model turn.
    pub(super) delegated: Vec<crate::agent::subagents::ResumedChild>,
    /// How deep the run is: the client's run is 0, a sub-agent's one more than its parent's.
    pub(super) depth: u32,
    /// How the client sees sub-agents' work (`auto` decided).
    pub(super) visibility: crate::agent::subagents::Visibility,
    /// The input only repeats answers already acted on and adds nothing: the run streams what
    /// the client lacks and ends, calling neither model nor tools.
    pub(super) repeat_only: bool,
    /// The A2UI render tool and the catalog it offers, when the client can paint surfaces.
    pub(super) a2ui: Option<crate::genui::a2ui::Offer>,
    /// A message the server added to the input (a click on a surface), shown to the client as
    /// the run opens.
    pub(super) said: Option<Message>,
}

/// What the run's loop changes as it goes.
pub(super) struct RunProgress {
    /// What the model sees: the thread's history and everything the run added.
    pub(super) history: Vec<Message>,
    /// The thread's AG-UI state, as tools leave it.
    pub(super) state: Option<Value>,
    /// State patches made by tools this step, streamed as `STATE_DELTA` after their results.
    pub(super) pending_deltas: Vec<json_patch::Patch>,
    /// The messages the run added, stored when it ends.
    pub(super) produced: Vec<Message>,
    /// Steps, tool calls, usage and outcome, for the per-run log line and metrics.
    pub(super) summary: RunSummary,
    /// The thread's interrupt record as this run leaves it, before its own interrupts.
    pub(super) interrupts: InterruptRecord,
    /// Approvals this run asked of a 0.0.x client through its confirm tool.
    pub(super) fallback_approvals: Vec<PendingApproval>,
    /// Where `history` starts in the thread, its checkpoint and the provider's last count.
    pub(super) context: ContextState,
    /// The caller's memories for this run, read once at its start (`MEMORY`); given to the
    /// model with the newest user message, never stored.
    pub(super) memory_block: Option<String>,
    /// How many of `produced` are stored already (by checkpoints).
    pub(super) stored: usize,
    /// The state as last stored: a checkpoint or the end stores it only when it changed.
    pub(super) saved_state: Option<Value>,
    /// Where the run is, for its record.
    pub(super) phase: record::Phase,
    /// The longest model turn so far: what the next one is expected to take.
    pub(super) longest_model_turn: Duration,
    /// What the runners before this one counted.
    pub(super) carried: handoff::Carried,
    /// Sub-agents that stopped to ask in this run: kept in the thread's interrupt record.
    pub(super) delegated: Vec<crate::agent::subagents::SuspendedChild>,
}

impl RunProgress {
    pub(super) fn new(
        history: Vec<Message>,
        state: Option<Value>,
        interrupts: InterruptRecord,
        context: ContextState,
    ) -> Self {
        Self {
            history,
            saved_state: state.clone(),
            state,
            pending_deltas: Vec::new(),
            produced: Vec::new(),
            summary: RunSummary::default(),
            interrupts,
            fallback_approvals: Vec::new(),
            context,
            memory_block: None,
            stored: 0,
            phase: record::Phase::Model { step: 1 },
            longest_model_turn: Duration::ZERO,
            carried: handoff::Carried::default(),
            delegated: Vec::new(),
        }
    }

    /// The messages the run made that are not stored yet.
    fn unstored(&self) -> &[Message] {
        self.produced.get(self.stored..).unwrap_or_default()
    }

    /// A message the run made: the model sees it from now on, and the thread stores it.
    fn keep(&mut self, message: Message) {
        self.history.push(message.clone());
        self.produced.push(message);
    }

    /// The ids of every tool call in the history: a turn's new calls must not reuse one.
    fn call_ids(&self) -> HashSet<ToolCallId> {
        self.history
            .iter()
            .flat_map(|message| message.tool_calls().iter().map(|call| call.id.clone()))
            .collect()
    }
}

/// How the run is observed: its spans, its store meter and the times its metrics report.
pub(crate) struct RunTelemetry {
    /// The run's span: its task and companions log inside it.
    pub(super) span: tracing::Span,
    /// The run's `invoke_agent` trace span (disabled when traces are not exported).
    pub(super) trace: tracing::Span,
    /// The run's store calls, time and capacity.
    pub(super) meter: Arc<StoreMeter>,
    /// When its request arrived, and in which wire format.
    pub(super) observed: Observed,
    /// When the model's first output arrived.
    pub(super) first_output: Option<std::time::Instant>,
    /// From the request's arrival to `RUN_STARTED`.
    pub(super) time_to_first_byte: Duration,
}

impl RunTelemetry {
    /// A run's telemetry from when it began to start, its request taken for AG-UI until
    /// [`PreparedRun::observe`] says otherwise.
    pub(super) fn new(
        span: tracing::Span,
        trace: tracing::Span,
        meter: Arc<StoreMeter>,
        began: std::time::Instant,
    ) -> Self {
        Self {
            span,
            trace,
            meter,
            observed: Observed {
                received: began,
                dialect: "ag-ui",
            },
            first_output: None,
            time_to_first_byte: Duration::ZERO,
        }
    }
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

impl PreparedRun {
    pub(crate) fn thread_id(&self) -> &ThreadId {
        &self.lease.thread_id
    }

    pub(crate) fn run_id(&self) -> &RunId {
        &self.lease.run_id
    }

    /// Tells the run when its request arrived and in which wire format (otherwise: when it
    /// began to start, AG-UI).
    pub(crate) fn observe(&mut self, observed: Observed) {
        self.telemetry.observed = observed;
    }

    /// Has `hook` run once the run has ended (its terminal event in the log), before the run
    /// counts as done.
    pub(crate) fn on_end(&mut self, hook: EndHook) {
        self.end_hook = Some(hook);
    }

    /// Starts the run on its own task and returns its live handle; `RUN_STARTED` is already in
    /// its log. The run goes on to its end whoever follows it.
    pub(crate) fn spawn(self) -> Arc<LiveRun> {
        let live = LiveRun::new(self.lease.thread_id.clone(), self.lease.run_id.clone());
        live.push(Event::RunStarted {
            thread_id: self.lease.thread_id.clone(),
            run_id: self.lease.run_id.clone(),
            parent_run_id: self.request.parent_run_id.clone(),
            protocol_version: Some(version::declaration(
                self.request.speaks_v1,
                self.request.encrypted_value_types,
            )),
            metadata: skipped_parts(&self.request.skipped_parts),
        });
        let mut this = self;
        this.telemetry.time_to_first_byte = this.telemetry.observed.received.elapsed();
        this.drive_on_task(live)
    }

    /// Starts a run taken over on its own task, its events numbered after `base` (the last
    /// its previous runners sent), and returns its live handle.
    pub(crate) fn spawn_after(self, base: u64) -> Arc<LiveRun> {
        let live = LiveRun::after(
            self.lease.thread_id.clone(),
            self.lease.run_id.clone(),
            base,
        );
        self.drive_on_task(live)
    }

    /// Drives the run on its own task, its events into `live`, which it returns.
    fn drive_on_task(self, live: Arc<LiveRun>) -> Arc<LiveRun> {
        let mut this = self;
        live.hold_lease_until(
            Instant::now() + super::background::safe_share(this.agent.settings.lease),
        );
        this.agent.live.insert(live.clone());
        let agent = this.agent.clone();
        let end_hook = this.end_hook.take();
        let driven = live.clone();
        let span = this.telemetry.span.clone();
        let trace = this.telemetry.trace.clone();
        let meter = this.telemetry.meter.clone();
        tokio::spawn(async move {
            async {
                // A bug must not leave followers waiting and the thread's lease held by a run that
                // no longer exists: the log still ends with one terminal event.
                let drive = AssertUnwindSafe(this.drive(driven.clone())).catch_unwind();
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
            }
            .instrument(span)
            .await;
            if let Some(hook) = end_hook {
                // A bug in the hook must not keep the run from counting as done.
                if AssertUnwindSafe(hook(driven.clone()))
                    .catch_unwind()
                    .await
                    .is_err()
                {
                    tracing::error!(run_id = %driven.run_id, "a run's end hook panicked");
                }
            }
            // Every span of the run has ended (the request's too, which the run's span kept
            // open) before the run counts as done: Lambda and a stopping server flush spans
            // once their runs are done, and these must be among them.
            agent.live.remove(&driven);
        });
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
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;

/// `RUN_STARTED`'s own metadata: the content parts the run skipped, under our key.
fn skipped_parts(skipped: &[crate::protocol::SkippedPart]) -> Option<Value> {
    (!skipped.is_empty()).then(|| serde_json::json!({METADATA_KEY: {"skippedParts": skipped}}))
}
