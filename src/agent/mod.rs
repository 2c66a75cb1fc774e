//! The agent run: [`Agent::start`] checks a request against its thread and takes the thread's
//! lease before anything streams; [`PreparedRun::spawn`] then runs the model/tool loop on its
//! own task, recording AG-UI events that any number of followers stream. Depends on
//! `protocol`, `model` and `store`; knows nothing of HTTP.
//!
//! Read one way, in three layers (the layering test checks it): the parts the loop is built
//! from (thread, turn, tools, context, memory, approvals, live, profiles, and `subagents/`:
//! delegation is a step of the loop); the run loop (`run.rs`, `run/`); and the loop's clients
//! (`start`, `continuation`, `profile_child`), which see the loop only through what `run.rs`
//! offers. A file may name its own layer and those below, never one above; any may name this
//! root's own items (the `Agent`, its settings).

mod a2a_tasks;
pub(crate) mod approval;
mod background;
pub(crate) mod context;
pub(crate) mod continuation;
pub(crate) mod detached;
pub(crate) mod history_day;
pub(crate) mod live;
pub(crate) mod memory;
mod profile_child;
mod profiles;
mod run;
mod spans;
mod start;
pub(crate) mod subagents;
mod suggest;
pub(crate) mod thread;
mod threads;
pub mod tools;
mod turn;

use crate::auth::Principal;
use crate::model::{ModelProvider, ToolSpec};
use crate::protocol::input::BusyThreadPolicy;
use crate::protocol::{ClientTool, RunId, ThreadId};
use crate::store::{CancelState, StoreError, ThreadActivity, ThreadStore};
use live::{LiveRun, LiveRuns};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

pub(crate) use crate::model::transcription::{Audio, Transcriber, TranscriptionError};
pub(crate) use crate::store::QuotaLimits;
pub(crate) use approval::InterruptError;
pub use context::{ContextSettings, ContextStrategy};
pub(crate) use profiles::{AgentProfile, INTERNAL_AGENT_TYPE, ProfileSetupError};
pub(crate) use run::PreparedRun;
pub(crate) use suggest::Suggestion;
pub(crate) use thread::MergeError;
pub use threads::Quotas;
pub(crate) use threads::{ForkError, QuotaOverride};
pub(crate) use tools::ToolRegistry;

#[derive(Debug, Clone)]
pub struct AgentSettings {
    pub system_prompt: Option<String>,
    /// Model turns per run; a run that needs more ends with `MAX_STEPS_EXCEEDED`.
    pub max_steps: u32,
    /// Wrap each model turn in `STEP_STARTED`/`STEP_FINISHED`.
    pub emit_steps: bool,
    /// The run's lease, renewed by its heartbeat: a crashed run frees its thread after this.
    pub lease: Duration,
    /// How often a run asks the store whether it was cancelled from elsewhere.
    pub cancel_poll: Duration,
    /// Record each run's events in the store, so a client can resume from another process.
    pub record_events: bool,
    /// At most one event-log write per this much streaming.
    pub record_interval: Duration,
    /// What a run posted to a busy thread does, unless the request says otherwise.
    pub busy_thread_policy: BusyThreadPolicy,
    /// How long an interrupting run waits for the active run to release the thread.
    pub interrupt_wait: Duration,
    /// Server tools whose calls wait for a person's approval, besides those that ask for it
    /// themselves (`APPROVAL_REQUIRED_TOOLS`).
    pub approval_required_tools: Vec<String>,
    /// How long an approval interrupt can be answered.
    pub interrupt_ttl: Duration,
    /// The frontend tool a 0.0.x client declares for confirmations; approvals reach such
    /// clients as a call of it.
    pub confirm_tool: String,
    /// The most output tokens a model turn may ask for (`MAX_OUTPUT_TOKENS`).
    pub max_output_tokens: Option<u32>,
    /// Token and run quotas per principal.
    pub quotas: Quotas,
    /// How a thread that grows toward the model's window is compacted.
    pub context: ContextSettings,
    /// Long-term memory per principal (`MEMORY`).
    pub memory: memory::MemorySettings,
    /// What a step is expected to take when nothing better is known (a tool without a timeout
    /// of its own, the first model turn): a runner with an invocation deadline starts a step
    /// only when that much of its invocation is left, and hands the run off otherwise.
    pub step_estimate: Duration,
    /// How delegations are shown and bounded (`SUBAGENT_*`).
    pub subagents: subagents::SubagentSettings,
    /// When the A2UI render tool is offered (`A2UI`) and its attempts.
    pub a2ui: crate::genui::a2ui::A2uiSettings,
}

impl Default for AgentSettings {
    fn default() -> Self {
        Self {
            system_prompt: Some("You are a helpful assistant.".to_owned()),
            max_steps: 8,
            emit_steps: true,
            lease: Duration::from_secs(30),
            cancel_poll: Duration::from_millis(500),
            record_events: true,
            record_interval: Duration::from_millis(250),
            busy_thread_policy: BusyThreadPolicy::Interrupt,
            interrupt_wait: Duration::from_secs(10),
            approval_required_tools: Vec::new(),
            interrupt_ttl: Duration::from_secs(3_600),
            confirm_tool: "confirmAction".to_owned(),
            max_output_tokens: None,
            quotas: Quotas::default(),
            context: ContextSettings::default(),
            memory: memory::MemorySettings::default(),
            step_estimate: Duration::from_secs(60),
            subagents: subagents::SubagentSettings::default(),
            a2ui: crate::genui::a2ui::A2uiSettings::default(),
        }
    }
}

/// Shared by all runs of one process; cheap to clone.
#[derive(Clone)]
pub struct Agent {
    model: Arc<dyn ModelProvider>,
    tools: Arc<ToolRegistry>,
    store: Arc<dyn ThreadStore>,
    settings: Arc<AgentSettings>,
    live: Arc<LiveRuns>,
    /// Named profiles chosen by `agent_type` ([`Agent::profile`]); empty: this agent serves all.
    profiles: Arc<profiles::Profiles>,
    /// Uploaded images (the v1 agent API): signed for models that cannot read S3 themselves.
    blobs: Option<Arc<crate::store::Blobs>>,
    /// One EMF metrics record per run, when on.
    metrics: Option<Arc<crate::telemetry::emf::Emf>>,
    /// The profile this agent is (`gen_ai.agent.name`); none for the default agent.
    name: Option<Arc<str>>,
    /// The model that summarises long threads (`CONTEXT_SUMMARY_MODEL`); `None`: the run's own.
    summarizer: Option<Arc<dyn ModelProvider>>,
    /// Where a run goes on when its invocation ends (under Lambda: the next invocation);
    /// `None`: runs go on in this process to their end.
    continuations: Option<Arc<dyn continuation::Continuations>>,
    /// The agents this one may delegate to, each a tool its model sees.
    subagents: Arc<Vec<subagents::Subagent>>,
    /// Voice input's transcription model (`TRANSCRIPTION_MODEL`), when one is configured.
    transcriber: Option<Arc<Transcriber>>,
    /// The models' windows as their refusals showed them, for every run of the process.
    windows: Arc<context::LearnedWindows>,
}

/// Why a run could not start. Nothing was stored.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StartError {
    /// A message the thread does not hold yet breaks the input limits (the AG-UI routes check
    /// them once the thread is loaded).
    #[error(transparent)]
    Input(crate::protocol::InputError),
    #[error(transparent)]
    Merge(#[from] MergeError),
    #[error("frontend tool {0} has the name of a server tool or a sub-agent")]
    ToolNameClash(String),
    #[error("the thread has an active run; retry when it has finished")]
    Busy,
    #[error("thread not found")]
    NotFound,
    #[error("{0}")]
    TooLarge(String),
    #[error("the thread store is unavailable")]
    StoreUnavailable,
    #[error("the thread's stored data could not be read")]
    StoreCorrupt,
    /// A content part the model cannot take: `message` indexes the input's messages (as parsed:
    /// `activity` messages are not counted), `part` that message's content.
    #[error("messages[{message}].content[{part}]: {reason}")]
    UnsupportedPart {
        message: usize,
        part: usize,
        reason: String,
    },
    /// The input breaks AG-UI's interrupt rules; answered with a stream that opens with
    /// `RUN_ERROR`, as the spec names.
    #[error(transparent)]
    Interrupt(#[from] InterruptError),
    #[error("{0}")]
    QuotaExceeded(crate::store::QuotaExceeded),
    /// `parentRunId` on a new thread names no finished run of the caller's.
    #[error("parentRunId names no finished run of yours to fork from")]
    UnknownParentRun,
    /// A detached run's id was used before by the same caller.
    #[error("runId is already used by another run of yours")]
    RunIdTaken,
    /// A detached run could not be handed to where it runs.
    #[error("the run could not be dispatched: {0}")]
    Dispatch(String),
}

impl From<StoreError> for StartError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Conflict | StoreError::LeaseLost => StartError::Busy,
            StoreError::QuotaExceeded(exceeded) => StartError::QuotaExceeded(exceeded),
            StoreError::NotFound | StoreError::BadCursor => StartError::NotFound,
            StoreError::StateTooLarge(_)
            | StoreError::MessageTooLarge(_)
            | StoreError::TooManyMemories(_) => StartError::TooLarge(error.to_string()),
            StoreError::Unavailable(cause) => {
                tracing::error!(error = %cause, "thread store unavailable");
                StartError::StoreUnavailable
            }
            StoreError::Corrupt(what) => {
                tracing::error!(%what, "thread store holds a corrupt item");
                StartError::StoreCorrupt
            }
        }
    }
}

/// What the API layer tells a run about its request, for the run's metrics.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Observed {
    pub received: std::time::Instant,
    /// `ag-ui`, `ag-kit`, `agentscope` or `v1-agent`.
    pub dialect: &'static str,
}

/// When a lease of `duration` taken now expires, in epoch milliseconds.
fn lease_expiry(duration: Duration) -> i64 {
    chrono::Utc::now().timestamp_millis() + i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// Where a run's events are followed from, as the HTTP API serves them:
/// `/threads/{threadId}/runs/{runId}/events`.
pub(crate) fn events_path(thread_id: &ThreadId, run_id: &RunId) -> String {
    use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
    /// Everything but RFC 3986's unreserved characters.
    const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~');
    format!(
        "/threads/{}/runs/{}/events",
        utf8_percent_encode(thread_id.as_str(), SEGMENT),
        utf8_percent_encode(run_id.as_str(), SEGMENT)
    )
}

/// Where a followed run's events come from.
pub(crate) enum RunSource {
    /// The run is in flight in this process.
    Live(Arc<LiveRun>),
    /// Elsewhere, or over: its log in the store. `active`: the run holds its thread now (so an
    /// empty log only means nothing is recorded yet).
    Stored {
        run: crate::store::RunRef,
        active: bool,
    },
}

impl Agent {
    pub fn new(
        model: Arc<dyn ModelProvider>,
        tools: Arc<ToolRegistry>,
        store: Arc<dyn ThreadStore>,
        settings: AgentSettings,
    ) -> Self {
        Self {
            model,
            tools,
            store,
            settings: Arc::new(settings),
            live: Arc::new(LiveRuns::default()),
            profiles: Arc::default(),
            blobs: None,
            metrics: None,
            name: None,
            summarizer: None,
            continuations: None,
            subagents: Arc::default(),
            transcriber: None,
            windows: Arc::default(),
        }
    }

    /// Voice input through `transcriber`.
    pub(crate) fn with_transcriber(mut self, transcriber: Option<Arc<Transcriber>>) -> Self {
        self.transcriber = transcriber;
        self
    }

    /// The text spoken in `audio`, by the transcription model.
    pub(crate) async fn transcribe(&self, audio: &Audio) -> Result<String, TranscriptionError> {
        match &self.transcriber {
            Some(transcriber) => transcriber.transcribe(audio).await,
            None => Err(TranscriptionError::Unreachable(
                "no transcription model is configured (TRANSCRIPTION_MODEL)".to_owned(),
            )),
        }
    }

    /// The configured prompt with the client's `context` entries appended.
    fn system_prompt(&self, context: &[crate::protocol::ContextEntry]) -> Option<String> {
        let mut prompt = self.settings.system_prompt.clone().unwrap_or_default();
        if !context.is_empty() {
            if !prompt.is_empty() {
                prompt.push_str("\n\n");
            }
            prompt.push_str("Context provided by the application:");
            for entry in context {
                prompt.push_str(&format!("\n- {}: {}", entry.description, entry.value));
            }
        }
        (!prompt.is_empty()).then_some(prompt)
    }

    /// Runs hand off to `continuations` when their invocation ends (under Lambda).
    pub(crate) fn with_continuations(
        mut self,
        continuations: Option<Arc<dyn continuation::Continuations>>,
    ) -> Self {
        self.continuations = continuations;
        self
    }

    /// This agent without sub-agents: a child at the deepest level delegates no further.
    pub(crate) fn without_subagents(&self) -> Self {
        Self {
            subagents: Arc::default(),
            ..self.clone()
        }
    }

    /// The sub-agent the model calls by `name`, if this agent has one.
    pub(crate) fn subagent(&self, name: &str) -> Option<&subagents::Subagent> {
        self.subagents.iter().find(|subagent| subagent.name == name)
    }

    /// Long threads summarised by `summarizer` instead of each run's own model.
    pub fn with_summarizer(mut self, summarizer: Option<Arc<dyn ModelProvider>>) -> Self {
        self.summarizer = summarizer;
        self
    }

    /// Writes one EMF metrics record per run to `metrics`.
    pub fn with_metrics(mut self, metrics: Option<crate::telemetry::emf::Emf>) -> Self {
        self.metrics = metrics.map(Arc::new);
        self
    }

    /// Image uploads in `blobs`' bucket: stored `s3://` paths are signed for the model.
    pub(crate) fn with_blobs(mut self, blobs: Option<Arc<crate::store::Blobs>>) -> Self {
        self.blobs = blobs;
        self
    }

    /// The runs in flight in this process.
    pub fn live_runs(&self) -> &Arc<LiveRuns> {
        &self.live
    }

    /// Asks a run to stop, wherever it runs: directly when it is in this process, and through
    /// the thread's record for the heartbeat of a run elsewhere.
    pub(crate) async fn cancel(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        run_id: &RunId,
    ) -> Result<CancelState, StoreError> {
        let state = self.store.request_cancel(owner, thread_id, run_id).await?;
        if state == CancelState::Requested {
            if let Some(run) = self.live.get(thread_id, run_id) {
                run.cancel();
            } else if matches!(
                self.store.activity(owner, thread_id).await,
                Ok(ThreadActivity::Stalled { run_id: stalled, .. }) if &stalled == run_id
            ) {
                // Its runner stopped: the runner that takes it over ends it as cancelled.
                self.recover(owner, thread_id, run_id).await;
            }
        }
        Ok(state)
    }

    /// Where to follow `run_id` of `owner`'s thread from; `None` when there is no such thread.
    pub(crate) async fn run_source(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        run_id: &RunId,
    ) -> Result<Option<RunSource>, StoreError> {
        let (created_at_ms, active) = match self.store.activity(owner, thread_id).await? {
            ThreadActivity::Missing => return Ok(None),
            ThreadActivity::Idle { created_at_ms } => (created_at_ms, false),
            ThreadActivity::Stalled {
                created_at_ms,
                run_id: holder,
            } => (created_at_ms, &holder == run_id),
            ThreadActivity::Running {
                created_at_ms,
                run_id: holder,
            } => (created_at_ms, &holder == run_id),
        };
        if let Some(run) = self.live.get(thread_id, run_id) {
            return Ok(Some(RunSource::Live(run)));
        }
        Ok(Some(RunSource::Stored {
            run: crate::store::RunRef {
                thread_id: thread_id.clone(),
                created_at_ms,
                run_id: run_id.clone(),
            },
            active,
        }))
    }

    pub(crate) fn describe(&self) -> String {
        format!(
            "{}; {}{}",
            self.model.describe(),
            self.store.describe(),
            self.profiles.describe()
        )
    }

    /// Whether this agent runs the server tool `name`: the memory tools only when its memory is
    /// on (they are registered once for every profile).
    pub(crate) fn offers(&self, name: &str) -> bool {
        self.tools.contains(name)
            && (self.settings.memory.enabled || !memory::TOOL_NAMES.contains(&name))
    }

    /// Frontend tools must not take a server tool's name: the model could not tell them apart.
    pub(crate) fn check_client_tools(&self, client_tools: &[ClientTool]) -> Result<(), StartError> {
        match client_tools
            .iter()
            .find(|tool| self.tools.contains(&tool.name) || self.subagent(&tool.name).is_some())
        {
            Some(clash) => Err(StartError::ToolNameClash(clash.name.clone())),
            None => Ok(()),
        }
    }

    /// AG-UI's `AgentCapabilities` for this deployment (`GET /capabilities`); `run_max`
    /// bounds a run's wall-clock time.
    pub(crate) fn capabilities(&self, run_max: Duration) -> Value {
        let settings = &self.settings;
        let tools: Vec<Value> = self
            .tools
            .specs()
            .map(|spec| {
                serde_json::json!({
                    "name": spec.name,
                    "description": spec.description,
                    "parameters": spec.parameters,
                })
            })
            .collect();
        let approvals = self.tools.any_needs_approval();
        serde_json::json!({
            "identity": {
                "name": "agui-lambda",
                "type": "agui-lambda",
                "description": "An AG-UI agent on AWS Lambda",
                "version": env!("CARGO_PKG_VERSION"),
                "metadata": {"model": self.model.identity().model, "provider": self.model.identity().provider},
            },
            "transport": {
                "streaming": true,
                "websocket": false,
                "httpBinary": false,
                "pushNotifications": false,
                // Recorded event logs: GET /threads/{t}/runs/{r}/events with Last-Event-ID.
                "resumable": settings.record_events,
            },
            "tools": {
                "supported": true,
                "items": tools,
                "parallelCalls": true,
                "clientProvided": true,
            },
            "state": {
                "snapshots": true,
                "deltas": true,
                "memory": false,
                "persistentState": true,
            },
            "reasoning": {
                "supported": true,
                "streaming": true,
                "encrypted": true,
            },
            "multimodal": {
                "input": self.multimodal_input(),
                "output": {"image": false, "audio": false},
            },
            "execution": {
                "codeExecution": false,
                "maxIterations": settings.max_steps,
                "maxExecutionTime": u64::try_from(run_max.as_millis()).unwrap_or(u64::MAX),
            },
            "multiAgent": {
                "supported": !self.subagents.is_empty(),
                "delegation": !self.subagents.is_empty(),
                "handoffs": false,
                "subagents": self.subagents.iter().map(|subagent| serde_json::json!({
                    "name": subagent.name,
                    "description": subagent.description,
                })).collect::<Vec<_>>(),
            },
            "humanInTheLoop": {
                "supported": true,
                "approvals": approvals,
                "interventions": false,
                "feedback": false,
                "interrupts": true,
                "approveWithEdits": true,
            },
            // A2UI surfaces: `auto` paints for a client that declares it can (CopilotKit's
            // catalog entries, `forwardedProps.a2uiCatalogAvailable`), `off` never.
            "custom": {
                "a2ui": {
                    "mode": settings.a2ui.mode.name(),
                    "version": "v0.9",
                    "maxAttempts": settings.a2ui.max_attempts,
                },
            },
        })
    }

    /// The capabilities' `multimodal.input`: what the model provider takes inline, asked of it
    /// the way a request's parts are.
    fn multimodal_input(&self) -> Value {
        use crate::protocol::UserPart;
        use crate::protocol::message::{Attachment, PartSource};
        let takes = |part: fn(Attachment) -> UserPart, mime_type: &str| {
            let attachment = Attachment {
                source: PartSource::Data {
                    value: String::new(),
                    mime_type: mime_type.to_owned(),
                },
                metadata: None,
            };
            self.model.check_part(&part(attachment)).is_ok()
        };
        serde_json::json!({
            "image": takes(UserPart::Image, "image/png"),
            "audio": takes(UserPart::Audio, "audio/wav"),
            "video": takes(UserPart::Video, "video/mp4"),
            "pdf": takes(UserPart::Document, "application/pdf"),
            "file": false,
        })
    }

    /// The tools a run's model is offered: the server tools, the sub-agents, the render tool
    /// when the client can paint A2UI surfaces, and the client's own.
    fn tool_specs(
        &self,
        client_tools: &[ClientTool],
        a2ui: Option<&crate::genui::a2ui::Offer>,
    ) -> Vec<ToolSpec> {
        let render = a2ui.map(|offer| {
            let (name, description, parameters) =
                crate::genui::a2ui::describe::tool(&offer.catalog);
            ToolSpec {
                name: name.to_owned(),
                description,
                parameters,
            }
        });
        self.tools
            .specs()
            .filter(|spec| self.offers(&spec.name))
            .cloned()
            .chain(self.subagents.iter().map(subagents::Subagent::spec))
            .chain(render)
            .chain(client_tools.iter().map(ToolSpec::from))
            .collect()
    }
}
