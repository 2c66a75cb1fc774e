//! AG-UI 1.0 interrupts: what a run that stops to ask sends in `RUN_FINISHED.outcome`, and the
//! `RunAgentInput.resume` entries that answer it, parsed into typed decisions.

use super::ids::ToolCallId;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `Interrupt.reason` for a server tool call waiting for approval (the spec's core value).
pub(crate) const TOOL_CALL_REASON: &str = "tool_call";

/// One thing a run is waiting for, in `@ag-ui/core` 1.0's `Interrupt` shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Interrupt {
    pub id: String,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<ToolCallId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_schema: Option<Value>,
    /// ISO 8601, UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// The sub-agent that asks, when one of a run's sub-agents does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent_run_id: Option<String>,
    /// What else the asker says (an A2A agent's data parts and task).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Map<String, Value>>,
}

/// The answer schema of a tool approval: approve, deny, or approve with a full replacement of
/// the arguments (`editedArgs`, checked against the tool's own schema).
pub(crate) fn approval_schema(tool_parameters: &Value) -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "approved": {"type": "boolean"},
            "editedArgs": tool_parameters,
            "reason": {"type": "string", "description": "Why the call was denied; told to the model."}
        },
        "required": ["approved"]
    })
}

/// `ResumeEntry.status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResumeStatus {
    Resolved,
    Cancelled,
}

/// One `RunAgentInput.resume` entry as the client sent it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeEntry {
    pub interrupt_id: String,
    pub status: ResumeStatus,
    #[serde(default)]
    pub payload: Option<Value>,
}
