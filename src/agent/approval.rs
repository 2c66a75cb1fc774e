//! Tool approvals. A server tool that needs approval does not run when the model calls it: the
//! run ends asking (an AG-UI 1.0 interrupt, or for 0.0.x clients a call of their confirm tool),
//! and the thread keeps an [`InterruptRecord`] until the next run brings the answer. This module
//! turns that record and the answers into decisions; the run loop carries them out.

use super::subagents::{ResumedChild, SuspendedChild};
use crate::protocol::interrupt::{Interrupt, ResumeEntry, ResumeStatus, TOOL_CALL_REASON};
use crate::protocol::{Message, RunErrorCode, ToolCallId};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashSet;

/// Answered interrupts remembered per thread, so that a repeated resume is recognised.
const ANSWERED_KEPT: usize = 32;

/// The thread's interrupts, stored with the thread (opaque to the store).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InterruptRecord {
    #[serde(default)]
    pub(crate) open: Vec<PendingApproval>,
    #[serde(default)]
    pub(crate) answered: Vec<Answered>,
    /// Sub-agents that stopped to ask, each holding one of the thread's calls open.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) delegated: Vec<SuspendedChild>,
}

/// A server tool call waiting for a person's decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PendingApproval {
    pub(crate) interrupt: Interrupt,
    pub(crate) tool_name: String,
    /// The arguments the model proposed, as JSON text.
    pub(crate) arguments: String,
    pub(crate) expires_at_ms: i64,
    /// For a 0.0.x client: the id of the confirm-tool call that asks, which the client answers
    /// with a `tool` message instead of a `resume` entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) confirm_call_id: Option<ToolCallId>,
}

/// An interrupt already answered, by a digest of the answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Answered {
    pub(crate) interrupt_id: String,
    pub(crate) digest: String,
}

/// What to do with one waiting tool call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Decision {
    /// Run the tool with these arguments (the model's, or the person's edit).
    Approve { arguments: String },
    /// Do not run it; the model is told why.
    Deny { reason: String },
}

/// A decided tool call, for the run to carry out before its first model turn.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Resolved {
    pub(crate) tool_call_id: ToolCallId,
    pub(crate) tool_name: String,
    pub(crate) decision: Decision,
}

/// What one resume entry answers.
enum Answering<'a> {
    Open(&'a PendingApproval),
    /// An interrupt already answered the same way: nothing to do again.
    Repeat,
    /// No interrupt the thread raised (or remembers).
    Unknown,
}

/// How an input answers the thread's interrupts.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Resolution {
    pub(crate) resolved: Vec<Resolved>,
    /// Sub-agents to continue, with the answers meant for them.
    pub(crate) delegated: Vec<ResumedChild>,
    /// The record to store when the run ends (before its own new interrupts are added).
    pub(crate) record: InterruptRecord,
    /// Every resume entry the thread recognises repeats an answer already acted on (entries
    /// naming no interrupt of the thread are ignored).
    pub(crate) only_repeats: bool,
}

/// Why an input cannot continue the thread (AG-UI's interrupt rules); the client gets a stream
/// that opens with `RUN_ERROR`, and nothing is stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InterruptError {
    #[error(
        "the thread has open interrupts that this input does not answer in resume: {0}; answer each one (status resolved or cancelled)"
    )]
    Pending(String),
    #[error("interrupt {id} expired at {expires_at}; it can only be cancelled now")]
    Expired { id: String, expires_at: String },
    #[error("resume[{index}]: {message}")]
    InvalidResume { index: usize, message: String },
}

impl InterruptError {
    /// The `RUN_ERROR` code.
    pub(crate) fn code(&self) -> RunErrorCode {
        match self {
            InterruptError::Pending(_) => RunErrorCode::InterruptPending,
            InterruptError::Expired { .. } => RunErrorCode::InterruptExpired,
            InterruptError::InvalidResume { .. } => RunErrorCode::InvalidResume,
        }
    }
}

/// What a tool approval asks, for the interrupt's `message` and the confirm tool's `action`.
pub(crate) fn approval_prompt(tool_name: &str, arguments: &str) -> String {
    let shown: String = arguments.chars().take(500).collect();
    let cut = if shown.len() < arguments.len() {
        "…"
    } else {
        ""
    };
    format!("Allow the agent to call {tool_name} with {shown}{cut}?")
}

impl InterruptRecord {
    pub(crate) fn parse(value: Option<&Value>) -> Result<Self, serde_json::Error> {
        match value {
            None => Ok(Self::default()),
            Some(value) => serde_json::from_value(value.clone()),
        }
    }

    pub(crate) fn to_value(&self) -> Option<Value> {
        if self.open.is_empty() && self.answered.is_empty() && self.delegated.is_empty() {
            return None;
        }
        serde_json::to_value(self).ok()
    }

    /// Tool calls of the history that wait for a decision: the merge leaves them open.
    pub(crate) fn waiting_calls(&self) -> HashSet<ToolCallId> {
        self.open
            .iter()
            .filter_map(|pending| pending.interrupt.tool_call_id.clone())
            .chain(
                self.delegated
                    .iter()
                    .map(|child| child.tool_call_id.clone()),
            )
            .collect()
    }

    fn remember(&mut self, interrupt_id: &str, digest: String) {
        self.answered
            .retain(|answered| answered.interrupt_id != interrupt_id);
        self.answered.push(Answered {
            interrupt_id: interrupt_id.to_owned(),
            digest,
        });
        let excess = self.answered.len().saturating_sub(ANSWERED_KEPT);
        self.answered.drain(..excess);
    }

    /// Matches the input's answers against the open interrupts. `messages` is the input's
    /// messages (a 0.0.x client answers its confirm tool with a `tool` message there);
    /// `strict` is true for clients that speak AG-UI 1.0, which must answer in `resume`.
    pub(crate) fn resolve(
        mut self,
        resume: &[ResumeEntry],
        messages: &[Message],
        strict: bool,
        schema_of: impl Fn(&str) -> Option<Value>,
        now_ms: i64,
    ) -> Result<Resolution, InterruptError> {
        let mut resolved = Vec::new();
        let mut answered_now = HashSet::new();
        let mut repeats = 0;
        // Answers for sub-agents go to them, in their own ids; all of a child's must come.
        let delegated = std::mem::take(&mut self.delegated);
        if strict
            && let Some(unanswered) =
                delegated
                    .iter()
                    .flat_map(|child| &child.interrupts)
                    .find(|relayed| {
                        !resume
                            .iter()
                            .any(|entry| entry.interrupt_id == relayed.interrupt.id)
                    })
        {
            return Err(InterruptError::Pending(unanswered.interrupt.id.clone()));
        }
        for entry in resume {
            if delegated
                .iter()
                .any(|child| child.asked(&entry.interrupt_id))
            {
                self.remember(&entry.interrupt_id, digest(entry));
            }
        }
        let delegated: Vec<ResumedChild> = delegated
            .into_iter()
            .map(|child| child.resumed(resume, messages))
            .collect();
        for (index, entry) in resume.iter().enumerate() {
            if delegated
                .iter()
                .any(|child| child.child.asked(&entry.interrupt_id))
            {
                continue;
            }
            let digest = digest(entry);
            let pending = match self.answered_by(index, entry, &digest)? {
                Answering::Open(pending) => pending,
                Answering::Repeat => {
                    repeats += 1;
                    continue;
                }
                // AG-UI's error handling for an unrecognised entry: proceed without it, warn.
                Answering::Unknown => {
                    tracing::warn!(interrupt_id = %entry.interrupt_id, "resume entry names no open interrupt of the thread: ignored");
                    continue;
                }
            };
            let decision = resume_decision(index, entry, pending, &schema_of, now_ms)?;
            resolved.extend(pending.resolved(decision));
            answered_now.insert(entry.interrupt_id.clone());
            self.remember(&entry.interrupt_id, digest);
        }

        // A 0.0.x client answers the confirm tool instead.
        for pending in &self.open {
            if answered_now.contains(&pending.interrupt.id) {
                continue;
            }
            let Some(decision) = confirm_answer(pending, messages, strict) else {
                continue;
            };
            resolved.extend(pending.resolved(decision));
            answered_now.insert(pending.interrupt.id.clone());
        }

        let unanswered: Vec<String> = self
            .open
            .iter()
            .filter(|pending| !answered_now.contains(&pending.interrupt.id))
            .map(|pending| pending.interrupt.id.clone())
            .collect();
        if !unanswered.is_empty() {
            return Err(InterruptError::Pending(unanswered.join(", ")));
        }
        let only_repeats = repeats > 0 && resolved.is_empty() && delegated.is_empty();
        self.open.clear();
        Ok(Resolution {
            resolved,
            delegated,
            record: self,
            only_repeats,
        })
    }

    /// What resume entry `index` answers: an open interrupt, one already answered the same way
    /// (a repeat), or nothing the thread raised; an error when it answers one differently.
    fn answered_by(
        &self,
        index: usize,
        entry: &ResumeEntry,
        digest: &str,
    ) -> Result<Answering<'_>, InterruptError> {
        if let Some(pending) = self
            .open
            .iter()
            .find(|pending| pending.interrupt.id == entry.interrupt_id)
        {
            return Ok(Answering::Open(pending));
        }
        match self
            .answered
            .iter()
            .find(|answered| answered.interrupt_id == entry.interrupt_id)
        {
            Some(answered) if answered.digest == digest => Ok(Answering::Repeat),
            Some(_) => Err(InterruptError::InvalidResume {
                index,
                message: format!(
                    "interrupt {} was already answered differently",
                    entry.interrupt_id
                ),
            }),
            None => Ok(Answering::Unknown),
        }
    }
}

impl PendingApproval {
    /// The decided call, for the run to carry out; none for an interrupt of no tool call.
    fn resolved(&self, decision: Decision) -> Option<Resolved> {
        let tool_call_id = self.interrupt.tool_call_id.clone()?;
        Some(Resolved {
            tool_call_id,
            tool_name: self.tool_name.clone(),
            decision,
        })
    }
}

/// What resume entry `index` decides about `pending`: a cancel denies; a resolution is read from
/// its payload, unless the interrupt has expired.
fn resume_decision(
    index: usize,
    entry: &ResumeEntry,
    pending: &PendingApproval,
    schema_of: impl Fn(&str) -> Option<Value>,
    now_ms: i64,
) -> Result<Decision, InterruptError> {
    match entry.status {
        ResumeStatus::Cancelled => Ok(Decision::Deny {
            reason: "The user dismissed the approval request.".to_owned(),
        }),
        ResumeStatus::Resolved => {
            if pending.expires_at_ms <= now_ms {
                return Err(InterruptError::Expired {
                    id: pending.interrupt.id.clone(),
                    expires_at: pending.interrupt.expires_at.clone().unwrap_or_default(),
                });
            }
            approval_decision(
                entry.payload.as_ref(),
                &pending.arguments,
                schema_of(&pending.tool_name),
            )
            .map_err(|message| InterruptError::InvalidResume { index, message })
        }
    }
}

/// A 0.0.x client's answer to the confirm-tool call that asked about `pending`, found among
/// `messages`. Unanswered, it is a denial, unless the client must answer in `resume` (`strict`):
/// then `None`.
fn confirm_answer(
    pending: &PendingApproval,
    messages: &[Message],
    strict: bool,
) -> Option<Decision> {
    let answer = pending.confirm_call_id.as_ref().and_then(|confirm| {
        messages.iter().find_map(|message| match message {
            Message::Tool {
                tool_call_id,
                content,
                ..
            } if tool_call_id == confirm => Some(content.as_str()),
            _ => None,
        })
    });
    match answer {
        Some(content) => Some(confirm_decision(content, &pending.arguments)),
        None if strict => None,
        // Not answered: a new message moved on without a decision.
        None => Some(Decision::Deny {
            reason: "The user did not answer the approval request.".to_owned(),
        }),
    }
}

/// A stable digest of an answer: a repeated resume carries the same one.
fn digest(entry: &ResumeEntry) -> String {
    let status = match entry.status {
        ResumeStatus::Resolved => "resolved",
        ResumeStatus::Cancelled => "cancelled",
    };
    let payload = entry
        .payload
        .as_ref()
        .map(Value::to_string)
        .unwrap_or_default();
    let hash = Sha256::digest(format!("{status}\n{payload}").as_bytes());
    hash.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Reads an approval payload: `{approved, editedArgs?, reason?}`, checked against the schema
/// the interrupt announced (its `editedArgs` is the tool's own argument schema).
fn approval_decision(
    payload: Option<&Value>,
    proposed: &str,
    tool_schema: Option<Value>,
) -> Result<Decision, String> {
    let payload = payload.ok_or("payload is required to resolve an approval")?;
    let schema = crate::protocol::interrupt::approval_schema(
        &tool_schema.unwrap_or_else(|| serde_json::json!({"type": "object"})),
    );
    let validator =
        jsonschema::validator_for(&schema).map_err(|err| format!("approval schema: {err}"))?;
    let problems = super::tools::schema_problems(&validator, payload);
    if !problems.is_empty() {
        return Err(format!(
            "payload does not match the interrupt's responseSchema: {}",
            problems.join("; ")
        ));
    }
    if payload.get("approved").and_then(Value::as_bool) == Some(true) {
        let arguments = match payload.get("editedArgs") {
            Some(edited) => edited.to_string(),
            None => proposed.to_owned(),
        };
        Ok(Decision::Approve { arguments })
    } else {
        let reason = payload
            .get("reason")
            .and_then(Value::as_str)
            .filter(|reason| !reason.trim().is_empty())
            .map_or_else(
                || "The user denied this tool call.".to_owned(),
                |reason| format!("The user denied this tool call: {reason}"),
            );
        Ok(Decision::Deny { reason })
    }
}

/// A confirm tool's answer, as 0.0.x clients give it: a word (`confirmed`, `yes`, `approve`,
/// `true`…) or JSON with `approved`/`confirmed`. Anything else is a denial.
fn confirm_decision(content: &str, proposed: &str) -> Decision {
    let trimmed = content.trim();
    let approved = match serde_json::from_str::<Value>(trimmed) {
        Ok(Value::Bool(flag)) => flag,
        Ok(Value::Object(fields)) => ["approved", "confirmed"]
            .iter()
            .any(|key| fields.get(*key).and_then(Value::as_bool) == Some(true)),
        _ => matches!(
            trimmed.to_ascii_lowercase().as_str(),
            "confirmed" | "confirm" | "yes" | "y" | "ok" | "approve" | "approved" | "true"
        ),
    };
    if approved {
        Decision::Approve {
            arguments: proposed.to_owned(),
        }
    } else {
        Decision::Deny {
            reason: format!("The user did not confirm this tool call (answer: {trimmed:.200})."),
        }
    }
}

/// The `Interrupt` for a tool call waiting for approval.
pub(crate) fn tool_interrupt(
    tool_call_id: &ToolCallId,
    tool_name: &str,
    arguments: &str,
    tool_schema: &Value,
    expires_at_ms: i64,
) -> Interrupt {
    Interrupt {
        id: format!("int-{}", uuid::Uuid::new_v4()),
        reason: TOOL_CALL_REASON.to_owned(),
        message: Some(approval_prompt(tool_name, arguments)),
        tool_call_id: Some(tool_call_id.clone()),
        response_schema: Some(crate::protocol::interrupt::approval_schema(tool_schema)),
        expires_at: chrono::DateTime::from_timestamp_millis(expires_at_ms)
            .map(|at| at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
        subagent_run_id: None,
        metadata: None,
    }
}

#[cfg(test)]
#[path = "approval_tests.rs"]
mod tests;
