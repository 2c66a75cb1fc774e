//! The record a run keeps of itself at each checkpoint: its request as the start checked it,
//! what it counted so far, and where it is (the next model turn, or what is left of a turn's
//! tool calls), so that another runner (the next invocation, or crash recovery) goes on from
//! there. Stored as JSON beside the thread; the store does not read it.

use super::outcome::RunEnd;
use super::tool_calls::ToolResult;
use super::{PreparedRun, RunSummary};
use crate::agent::approval::PendingApproval;
use crate::agent::turn::TurnCall;
use crate::model::{ModelIdentity, Usage};
use crate::protocol::{ClientTool, MessageId, RunId, ToolCall, ToolCallId};
use crate::store::meter::MeteredUsage;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunRecord {
    pub(super) request: StoredRequest,
    pub(super) progress: StoredProgress,
    pub(super) phase: Phase,
}

impl RunRecord {
    /// The agent profile that runs the run; `None` for the default agent.
    pub(crate) fn profile(&self) -> Option<&str> {
        self.request.profile.as_deref()
    }

    /// The last runner's trace context: the next runner's span is its child.
    pub(crate) fn trace_parent(&self) -> Option<&str> {
        self.progress.trace_parent.as_deref()
    }

    /// The run's events up to this one were sent and recorded at the checkpoint.
    pub(crate) fn events_through(&self) -> u64 {
        self.progress.events_through
    }
}

/// What the run's request asked, fixed for the whole run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct StoredRequest {
    pub(super) parent_run_id: Option<RunId>,
    pub(super) client_tools: Vec<(String, String, Value)>,
    pub(super) system: Option<String>,
    pub(super) device_timezone: Option<String>,
    /// When `RUN_MAX_SECS` ends the run (epoch ms), whichever runner has it then.
    pub(super) ends_at_ms: i64,
    pub(super) speaks_v1: bool,
    /// The client reads AG-UI 1.1's `encryptedValueType`.
    #[serde(default)]
    pub(super) encrypted_value_types: bool,
    pub(super) sampling: StoredSampling,
    /// The agent profile that runs it; `None` for the default agent.
    pub(super) profile: Option<String>,
    /// How deep the run is: a sub-agent's is more than 0.
    #[serde(default)]
    pub(super) depth: u32,
    /// How its client sees sub-agents' work.
    #[serde(default)]
    pub(super) visibility: crate::agent::subagents::Visibility,
    pub(super) dialect: String,
    /// When its request arrived (epoch ms): the run's duration counts from it.
    pub(super) received_at_ms: i64,
    /// What the run took from its caller's quota, settled once, at its end.
    pub(super) reserved_day: String,
    pub(super) reserved_tokens: u64,
    /// The A2UI render tool it offers, and its catalog.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) a2ui: Option<crate::genui::a2ui::Offer>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct StoredSampling {
    temperature: Option<f64>,
    top_p: Option<f64>,
    max_tokens: Option<u32>,
    stop: Vec<String>,
    seed: Option<i64>,
}

/// What the run counted so far, across its runners.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct StoredProgress {
    pub(super) steps: u32,
    pub(super) tool_calls: u32,
    /// Every model's tokens together.
    pub(super) usage: StoredUsage,
    /// Each model's tokens, in the order first used.
    pub(super) by_model: Vec<StoredModelUsage>,
    pub(super) usage_reported: bool,
    /// The model calls that took more than one attempt, as the summary names them.
    pub(super) model_attempts: Vec<String>,
    pub(super) compactions: u32,
    /// The run's events up to this one were sent and recorded.
    pub(super) events_through: u64,
    /// Times the run went on in another invocation.
    pub(super) handoffs: u32,
    /// The longest of the run's model turns so far (ms): what the next is expected to take.
    pub(super) longest_model_ms: u64,
    pub(super) fallback_approvals: Vec<PendingApproval>,
    /// Sub-agents that stopped to ask: the run's end names them.
    #[serde(default)]
    pub(super) delegated: Vec<crate::agent::subagents::SuspendedChild>,
    /// What its sub-agents used, and how many it started.
    #[serde(default)]
    pub(super) child_usage: Vec<crate::protocol::events::TokenUsage>,
    #[serde(default)]
    pub(super) subagent_runs: u32,
    pub(super) memory_block: Option<String>,
    pub(super) time_to_first_byte_ms: f64,
    /// From the request's arrival to the model's first output (ms).
    pub(super) first_output_ms: Option<f64>,
    /// The store calls of the runners before this one, for the run's metrics.
    pub(super) store: StoredStoreFigures,
    /// The trace context (`traceparent`) of the last runner's span: the next one's parent.
    pub(super) trace_parent: Option<String>,
}

/// Where the run is.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "at", rename_all = "camelCase")]
pub(crate) enum Phase {
    /// The next step is model turn `step`.
    Model { step: u32 },
    /// Model turn `step` asked for tool calls; the plan says what is left of them.
    Tools(Box<ToolPlan>),
}

/// What is left of a turn's tool calls, as the gate sorted them.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolPlan {
    pub(super) step: u32,
    /// Server calls (and unknown ones) not answered yet, in call order.
    pub(super) pending: Vec<TurnCall>,
    /// Of `pending`, the calls that were started: a runner that stopped may have cut them off.
    pub(super) started: Vec<ToolCallId>,
    /// The server calls whose results are not streamed yet, in call order: results stream in
    /// the model's order, whichever batch ran them.
    pub(super) unanswered: Vec<ToolCallId>,
    /// Results that came before an earlier call's: held (and stored here) until it has one.
    pub(super) held: Vec<ToolResult>,
    /// Results refusing calls nobody can approve, streamed after the server calls' results.
    pub(super) refusals: Vec<ToolResult>,
    /// The confirm-tool calls that ask a 0.0.x client for approvals, and those approvals.
    pub(super) confirm: Option<(Vec<ToolCall>, Vec<PendingApproval>)>,
    /// How the run ends once the calls are followed; `None`: with the next model turn.
    pub(super) end: Option<StoredEnd>,
    pub(super) parent_message_id: Option<MessageId>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub(crate) enum StoredEnd {
    Finished { pending: Vec<ToolCallId> },
    Interrupted { approvals: Vec<PendingApproval> },
}

impl From<&RunEnd> for StoredEnd {
    fn from(end: &RunEnd) -> Self {
        match end {
            RunEnd::Interrupted(approvals) => StoredEnd::Interrupted {
                approvals: approvals.clone(),
            },
            RunEnd::Finished { pending } => StoredEnd::Finished {
                pending: pending.clone(),
            },
            // Never planned: a hand-off is not how a turn's calls end.
            RunEnd::HandedOff => StoredEnd::Finished {
                pending: Vec::new(),
            },
        }
    }
}

impl From<StoredEnd> for RunEnd {
    fn from(end: StoredEnd) -> Self {
        match end {
            StoredEnd::Finished { pending } => RunEnd::Finished { pending },
            StoredEnd::Interrupted { approvals } => RunEnd::Interrupted(approvals),
        }
    }
}

impl From<&crate::model::Sampling> for StoredSampling {
    fn from(sampling: &crate::model::Sampling) -> Self {
        Self {
            temperature: sampling.temperature,
            top_p: sampling.top_p,
            max_tokens: sampling.max_tokens,
            stop: sampling.stop.clone(),
            seed: sampling.seed,
        }
    }
}

impl From<StoredSampling> for crate::model::Sampling {
    fn from(stored: StoredSampling) -> Self {
        Self {
            temperature: stored.temperature,
            top_p: stored.top_p,
            max_tokens: stored.max_tokens,
            stop: stored.stop,
            seed: stored.seed,
        }
    }
}

pub(super) fn stored_tools(tools: &[ClientTool]) -> Vec<(String, String, Value)> {
    tools
        .iter()
        .map(|tool| {
            (
                tool.name.clone(),
                tool.description.clone(),
                tool.parameters.clone(),
            )
        })
        .collect()
}

pub(super) fn client_tools(stored: Vec<(String, String, Value)>) -> Vec<ClientTool> {
    stored
        .into_iter()
        .map(|(name, description, parameters)| ClientTool {
            name,
            description,
            parameters,
        })
        .collect()
}

/// Token counts as the record keeps them ([`Usage`] mirrored).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct StoredUsage {
    input: u64,
    output: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reasoning: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cached_input: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cache_write_input: Option<u64>,
}

impl From<Usage> for StoredUsage {
    fn from(usage: Usage) -> Self {
        Self {
            input: usage.input_tokens,
            output: usage.output_tokens,
            reasoning: usage.reasoning_tokens,
            cached_input: usage.cached_input_tokens,
            cache_write_input: usage.cache_write_input_tokens,
        }
    }
}

impl From<StoredUsage> for Usage {
    fn from(stored: StoredUsage) -> Self {
        Self {
            input_tokens: stored.input,
            output_tokens: stored.output,
            reasoning_tokens: stored.reasoning,
            cached_input_tokens: stored.cached_input,
            cache_write_input_tokens: stored.cache_write_input,
        }
    }
}

/// One model's tokens so far.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct StoredModelUsage {
    provider: String,
    model: String,
    usage: StoredUsage,
}

/// A summary's tokens per model, as the record keeps them.
pub(super) fn store_by_model(summary: &RunSummary) -> Vec<StoredModelUsage> {
    summary
        .by_model
        .iter()
        .map(|(identity, usage)| StoredModelUsage {
            provider: identity.provider.clone(),
            model: identity.model.clone(),
            usage: (*usage).into(),
        })
        .collect()
}

/// The tokens per model that `store_by_model` kept.
pub(super) fn by_model(stored: Vec<StoredModelUsage>) -> Vec<(ModelIdentity, Usage)> {
    stored
        .into_iter()
        .map(|part| {
            (
                ModelIdentity {
                    provider: part.provider,
                    model: part.model,
                },
                part.usage.into(),
            )
        })
        .collect()
}

/// The store figures of the runners so far ([`MeteredUsage`] mirrored, times in ms).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct StoredStoreFigures {
    read_calls: u64,
    write_calls: u64,
    read_ms: f64,
    write_ms: f64,
    read_capacity: f64,
    write_capacity: f64,
    memory_read_calls: u64,
    memory_write_calls: u64,
    read_bytes: u64,
    read_items: u64,
}

impl StoredStoreFigures {
    /// These figures with this runner's `now` added.
    pub(super) fn plus(self, now: &MeteredUsage) -> MeteredUsage {
        let millis = |ms: f64| std::time::Duration::from_secs_f64(ms.max(0.0) / 1000.0);
        MeteredUsage {
            read_calls: self.read_calls.saturating_add(now.read_calls),
            write_calls: self.write_calls.saturating_add(now.write_calls),
            read_time: millis(self.read_ms) + now.read_time,
            write_time: millis(self.write_ms) + now.write_time,
            read_capacity_units: self.read_capacity + now.read_capacity_units,
            write_capacity_units: self.write_capacity + now.write_capacity_units,
            memory_read_calls: self.memory_read_calls.saturating_add(now.memory_read_calls),
            memory_write_calls: self
                .memory_write_calls
                .saturating_add(now.memory_write_calls),
            read_bytes: self.read_bytes.saturating_add(now.read_bytes),
            read_items: self.read_items.saturating_add(now.read_items),
        }
    }
}

impl From<MeteredUsage> for StoredStoreFigures {
    fn from(usage: MeteredUsage) -> Self {
        Self {
            read_calls: usage.read_calls,
            write_calls: usage.write_calls,
            read_ms: usage.read_time.as_secs_f64() * 1000.0,
            write_ms: usage.write_time.as_secs_f64() * 1000.0,
            read_capacity: usage.read_capacity_units,
            write_capacity: usage.write_capacity_units,
            memory_read_calls: usage.memory_read_calls,
            memory_write_calls: usage.memory_write_calls,
            read_bytes: usage.read_bytes,
            read_items: usage.read_items,
        }
    }
}

/// `dialect`'s label as the metrics name it (the record keeps it as text).
pub(super) fn dialect_label(dialect: &str) -> &'static str {
    ["ag-kit", "agentscope", "v1-agent", "a2a", "subagent"]
        .into_iter()
        .find(|label| *label == dialect)
        .unwrap_or("ag-ui")
}

impl PreparedRun {
    /// The run's record as of now: its phase as set, the events through `events_through`
    /// recorded.
    pub(super) fn record(&self, events_through: u64) -> RunRecord {
        let request = &self.request;
        let progress = &self.progress;
        let telemetry = &self.telemetry;
        let received = telemetry.observed.received;
        let received_at_ms = chrono::Utc::now().timestamp_millis()
            - i64::try_from(received.elapsed().as_millis()).unwrap_or(0);
        RunRecord {
            request: StoredRequest {
                parent_run_id: request.parent_run_id.clone(),
                client_tools: stored_tools(&request.client_tools),
                system: request.system.clone(),
                device_timezone: request.device_timezone.map(|zone| zone.name().to_owned()),
                ends_at_ms: request.ends_at_ms,
                speaks_v1: request.speaks_v1,
                encrypted_value_types: request.encrypted_value_types,
                sampling: StoredSampling::from(&request.sampling),
                profile: self.agent.name.as_deref().map(str::to_owned),
                depth: request.depth,
                visibility: request.visibility,
                dialect: telemetry.observed.dialect.to_owned(),
                received_at_ms: request.received_at_ms.unwrap_or(received_at_ms),
                reserved_day: self.reservation.day.clone(),
                reserved_tokens: self.reservation.reserved_tokens,
                a2ui: request.a2ui.clone(),
            },
            progress: StoredProgress {
                steps: progress.summary.steps,
                tool_calls: progress.summary.tool_calls,
                usage: progress.summary.usage.into(),
                by_model: store_by_model(&progress.summary),
                usage_reported: progress.summary.usage_reported,
                model_attempts: progress.summary.model_attempts.clone(),
                compactions: progress.context.compactions,
                events_through,
                handoffs: progress.carried.handoffs,
                longest_model_ms: u64::try_from(progress.longest_model_turn.as_millis())
                    .unwrap_or(u64::MAX),
                fallback_approvals: progress.fallback_approvals.clone(),
                delegated: progress.delegated.clone(),
                child_usage: progress.summary.child_usage.clone(),
                subagent_runs: progress.summary.subagent_runs,
                memory_block: progress.memory_block.clone(),
                time_to_first_byte_ms: telemetry.time_to_first_byte.as_secs_f64() * 1000.0,
                first_output_ms: telemetry
                    .first_output
                    .map(|at| at.saturating_duration_since(received).as_secs_f64() * 1000.0),
                store: progress.carried.store.plus(&telemetry.meter.usage()).into(),
                trace_parent: crate::telemetry::otel::traceparent(&telemetry.trace),
            },
            phase: progress.phase.clone(),
        }
    }
}
