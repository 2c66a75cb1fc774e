//! The run's side of tool approvals: carrying out the decisions its input brought, and gating
//! each turn's calls into what runs now, what is asked of a person (an AG-UI 1.0 interrupt, or
//! a 0.0.x client's confirm tool) and how the run ends because of them.

use super::outcome::{RunEnd, RunFailure};
use super::record::ToolPlan;
use super::tool_calls::ToolResult;
use super::{Emitter, PreparedRun};
use crate::agent::approval::{self, Decision, PendingApproval};
use crate::agent::turn::TurnCall;
use crate::protocol::{MessageId, ToolCall, ToolCallId};
use tokio_util::sync::CancellationToken;

/// A turn's tool calls, gated.
pub(super) struct Gated<'a> {
    /// Server tools, and unknown ones (answered with an error), to run now.
    pub(super) run: Vec<&'a TurnCall>,
    /// Calls of sub-agents, to delegate now.
    pub(super) delegate: Vec<&'a TurnCall>,
    /// What is asked about the calls that need a person's approval.
    pub(super) ask: Ask,
    /// How the run ends once the calls are followed; `None`: with a next model turn.
    pub(super) end: Option<RunEnd>,
}

/// How the calls that need approval are asked about, besides an AG-UI 1.0 interrupt (which
/// ends the run, and so is the gate's end).
pub(super) enum Ask {
    /// Nothing to ask here.
    Nothing,
    /// A 0.0.x client is asked through its confirm tool: one call of it per gated call, made
    /// part of the turn's message and streamed after the results.
    Confirm {
        calls: Vec<ToolCall>,
        approvals: Vec<PendingApproval>,
    },
    /// Nobody can approve: each gated call is answered with its refusal, and the model is told.
    Refuse(Vec<ToolResult>),
}

enum CallKind {
    Server,
    /// One of the agent's sub-agents.
    Subagent,
    /// A server tool whose calls wait for a person's approval.
    NeedsApproval,
    Frontend,
    Unknown,
}

impl PreparedRun {
    /// Carries out the approvals and denials this run's input brought: an approved call runs
    /// now, with the arguments as approved (stored as started, then with its result, as a
    /// turn's calls are); a denied one gets a result that tells the model. Both answer the
    /// original tool call with `TOOL_CALL_RESULT`.
    pub(super) async fn carry_out_decisions(
        &mut self,
        out: &Emitter<'_>,
        stop: &CancellationToken,
    ) -> Result<(), RunFailure> {
        let resolved = std::mem::take(&mut self.request.resolved);
        if resolved.is_empty() {
            return Ok(());
        }
        let mut plan = ToolPlan {
            step: 0,
            pending: Vec::new(),
            started: Vec::new(),
            unanswered: Vec::new(),
            held: Vec::new(),
            refusals: Vec::new(),
            confirm: None,
            end: None,
            parent_message_id: None,
        };
        for resolved in resolved {
            match resolved.decision {
                Decision::Approve { arguments } => {
                    plan.unanswered.push(resolved.tool_call_id.clone());
                    plan.pending.push(TurnCall {
                        index: 0,
                        id: resolved.tool_call_id.clone(),
                        name: resolved.tool_name.clone(),
                        arguments,
                        encrypted_value: None,
                    });
                }
                Decision::Deny { reason } => plan.refusals.push(ToolResult {
                    id: MessageId::generate(),
                    tool_call_id: resolved.tool_call_id,
                    content: reason,
                    error: Some("denied".to_owned()),
                    metadata: None,
                }),
            }
        }
        // The plan has no end of its own: the first model turn comes next.
        self.carry_out(out, plan, stop).await.map(|_| ())
    }

    /// Sorts a turn's calls: server tools run, frontend ones are left for the client, and those
    /// that need approval are asked about the way this client can be asked.
    pub(super) fn gate<'a>(&self, calls: &'a [TurnCall]) -> Gated<'a> {
        let mut frontend = Vec::new();
        let mut gated = Vec::new();
        let mut run = Vec::new();
        let mut delegate = Vec::new();
        for call in calls {
            match self.classify(&call.name) {
                CallKind::Frontend => frontend.push(call.id.clone()),
                CallKind::NeedsApproval => gated.push(call),
                CallKind::Subagent => delegate.push(call),
                CallKind::Server | CallKind::Unknown => run.push(call),
            }
        }
        let mut approvals = self.pending_approvals(&gated);
        if !approvals.is_empty() && self.request.speaks_v1 {
            return Gated {
                run,
                delegate,
                ask: Ask::Nothing,
                end: Some(RunEnd::Interrupted(approvals)),
            };
        }
        let ask = if approvals.is_empty() {
            Ask::Nothing
        } else if self.has_confirm_tool() {
            let calls = self.confirm_calls(&mut approvals);
            frontend.extend(calls.iter().map(|call| call.id.clone()));
            Ask::Confirm { calls, approvals }
        } else {
            Ask::Refuse(
                approvals
                    .iter()
                    .filter_map(|pending| self.refusal(pending))
                    .collect(),
            )
        };
        let end = (!frontend.is_empty()).then_some(RunEnd::Finished { pending: frontend });
        Gated {
            run,
            delegate,
            ask,
            end,
        }
    }

    /// An approval waiting for each gated call, expiring after the configured time.
    fn pending_approvals(&self, gated: &[&TurnCall]) -> Vec<PendingApproval> {
        if gated.is_empty() {
            return Vec::new();
        }
        let ttl = self.agent.settings.interrupt_ttl;
        let expires_at_ms = chrono::Utc::now().timestamp_millis()
            + i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        gated
            .iter()
            .map(|call| {
                let schema = self
                    .agent
                    .tools
                    .parameters_of(&call.name)
                    .cloned()
                    .unwrap_or_default();
                PendingApproval {
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
                }
            })
            .collect()
    }

    /// One call of the client's confirm tool per approval, each approval told its call.
    fn confirm_calls(&self, approvals: &mut [PendingApproval]) -> Vec<ToolCall> {
        let confirm_tool = &self.agent.settings.confirm_tool;
        approvals
            .iter_mut()
            .map(|pending| {
                let confirm = ToolCall::new(
                    ToolCallId::generate(),
                    confirm_tool.clone(),
                    serde_json::json!({
                        "action": approval::approval_prompt(&pending.tool_name, &pending.arguments)
                    })
                    .to_string(),
                );
                pending.confirm_call_id = Some(confirm.id.clone());
                confirm
            })
            .collect()
    }

    /// The result that refuses a gated call when the client can be asked in no way.
    fn refusal(&self, pending: &PendingApproval) -> Option<ToolResult> {
        let tool_call_id = pending.interrupt.tool_call_id.clone()?;
        let content = format!(
            "Error: {} needs a person's approval, and this client cannot ask for it (it speaks neither AG-UI 1.0 interrupts nor declares the {} tool).",
            pending.tool_name, self.agent.settings.confirm_tool
        );
        Some(ToolResult {
            id: MessageId::generate(),
            tool_call_id,
            content,
            error: Some("approval unavailable".to_owned()),
            metadata: None,
        })
    }

    fn has_confirm_tool(&self) -> bool {
        let name = &self.agent.settings.confirm_tool;
        self.request
            .client_tools
            .iter()
            .any(|tool| &tool.name == name)
    }

    fn classify(&self, name: &str) -> CallKind {
        if self.agent.subagent(name).is_some() {
            CallKind::Subagent
        } else if !self.agent.offers(name) && self.agent.tools.contains(name) {
            CallKind::Unknown
        } else if self.agent.tools.needs_approval(name) {
            CallKind::NeedsApproval
        } else if self.agent.tools.contains(name) {
            CallKind::Server
        } else if self
            .request
            .client_tools
            .iter()
            .any(|tool| tool.name == name)
        {
            CallKind::Frontend
        } else {
            CallKind::Unknown
        }
    }
}
