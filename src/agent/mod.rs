//! The agent run: [`Agent::start`] checks a request against its thread and takes the thread's
//! lease before anything streams; [`PreparedRun::into_events`] then runs the model/tool loop and
//! yields AG-UI events. Depends on `protocol`, `model` and `store`; knows nothing of HTTP.

mod run;
pub mod thread;
pub mod tools;

use crate::model::{ModelProvider, ToolSpec};
use crate::protocol::{ClientTool, ContextEntry, Message, RunId, RunInput, ThreadId};
use crate::store::{Lease, Principal, RunStart, StoreError, ThreadStore};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

pub use run::RunSummary;

/// How long a run's lease outlives its deadline.
pub const LEASE_GRACE: Duration = Duration::from_secs(10);
pub use thread::MergeError;
pub use tools::{ServerTool, ToolContext, ToolError, ToolOutput, ToolRegistry};

#[derive(Debug, Clone)]
pub struct AgentSettings {
    pub system_prompt: Option<String>,
    /// Model turns per run; a run that needs more ends with `MAX_STEPS_EXCEEDED`.
    pub max_steps: u32,
    /// Wrap each model turn in `STEP_STARTED`/`STEP_FINISHED`.
    pub emit_steps: bool,
}

impl Default for AgentSettings {
    fn default() -> Self {
        Self {
            system_prompt: Some("You are a helpful assistant.".to_owned()),
            max_steps: 8,
            emit_steps: true,
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
}

/// Why a run could not start. Nothing was stored.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Merge(#[from] MergeError),
    #[error("frontend tool {0} has the name of a server tool")]
    ToolNameClash(String),
    #[error("the thread has an active run; retry when it has finished")]
    Busy,
    #[error("thread not found")]
    NotFound,
    #[error("{0}")]
    TooLarge(String),
    #[error("the thread store is unavailable")]
    StoreUnavailable,
}

impl From<StoreError> for StartError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Conflict | StoreError::LeaseLost => StartError::Busy,
            StoreError::NotFound => StartError::NotFound,
            StoreError::StateTooLarge(_) | StoreError::MessageTooLarge(_) => {
                StartError::TooLarge(error.to_string())
            }
            StoreError::Unavailable(reason) => {
                tracing::error!(%reason, "thread store unavailable");
                StartError::StoreUnavailable
            }
        }
    }
}

/// A run that holds its thread's lease and has stored its input, ready to stream.
pub struct PreparedRun {
    agent: Agent,
    lease: Lease,
    parent_run_id: Option<RunId>,
    history: Vec<Message>,
    client_is_behind: bool,
    state: Option<Value>,
    client_tools: Vec<ClientTool>,
    system: Option<String>,
    device_timezone: Option<chrono_tz::Tz>,
    deadline: Instant,
    /// State patches made by tools this step, streamed as `STATE_DELTA` after their results.
    pending_deltas: Vec<json_patch::Patch>,
}

impl PreparedRun {
    pub fn thread_id(&self) -> &ThreadId {
        &self.lease.thread_id
    }

    pub fn run_id(&self) -> &RunId {
        &self.lease.run_id
    }
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
        }
    }

    pub fn store(&self) -> &Arc<dyn ThreadStore> {
        &self.store
    }

    pub fn describe(&self) -> String {
        format!("{}; {}", self.model.describe(), self.store.describe())
    }

    /// Loads the thread, merges the client's messages into it, and takes the lease while storing
    /// the input. `deadline` is when the run must have ended.
    pub async fn start(
        &self,
        owner: Principal,
        input: RunInput,
        deadline: Instant,
    ) -> Result<PreparedRun, StartError> {
        if let Some(clash) = input
            .tools
            .iter()
            .find(|tool| self.tools.contains(&tool.name))
        {
            return Err(StartError::ToolNameClash(clash.name.clone()));
        }
        let thread_id = input.thread_id.unwrap_or_else(ThreadId::new_uuid);
        let loaded = self.store.load(&owner, &thread_id).await?;
        let merged = thread::merge(
            loaded.as_ref().map_or(&[], |thread| &thread.messages[..]),
            input.messages,
        )?;
        let state_changed = input.state.is_some();
        let state = input
            .state
            .or_else(|| loaded.as_ref().and_then(|thread| thread.state.clone()));

        let remaining = deadline.saturating_duration_since(Instant::now());
        // The lease outlives the run's deadline by a grace period, so a run still writing its
        // end is never overtaken; a crashed run's lease frees the thread soon after.
        let lease_expires_at_ms = chrono::Utc::now().timestamp_millis()
            + i64::try_from((remaining + LEASE_GRACE).as_millis()).unwrap_or(i64::MAX);
        let lease = self
            .store
            .begin_run(RunStart {
                owner: &owner,
                thread_id: &thread_id,
                run_id: &input.run_id,
                loaded: loaded.as_ref(),
                lease_expires_at_ms,
                new_messages: &merged.new_messages,
                state: if state_changed { state.as_ref() } else { None },
            })
            .await?;

        Ok(PreparedRun {
            agent: self.clone(),
            lease,
            parent_run_id: input.parent_run_id,
            history: merged.history,
            client_is_behind: merged.client_is_behind,
            state,
            client_tools: input.tools,
            system: self.system_prompt(&input.context),
            device_timezone: input.forwarded_props.device_timezone,
            deadline,
            pending_deltas: Vec::new(),
        })
    }

    /// The configured prompt with the client's `context` entries appended.
    fn system_prompt(&self, context: &[ContextEntry]) -> Option<String> {
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

    fn tool_specs(&self, client_tools: &[ClientTool]) -> Vec<ToolSpec> {
        self.tools
            .specs()
            .cloned()
            .chain(client_tools.iter().map(|tool| ToolSpec {
                name: tool.name.clone(),
                description: tool.description.clone(),
                parameters: tool.parameters.clone(),
            }))
            .collect()
    }
}
