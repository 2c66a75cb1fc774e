//! The run's side of delegation: a turn's calls of sub-agents run side by side (beside its server
//! tools), each in its `execute_tool` span; their answers become the calls' results, their
//! failures error results, their suspensions the run's end. Sub-agents that stopped to ask in an
//! earlier run are continued here before the first model turn. What a child's events look like
//! is `subagents`' business.

use super::outcome::RunEnd;
use super::tool_calls::ToolResult;
use super::{Emitter, PreparedRun};
use crate::agent::Agent;
use crate::agent::spans::ToolSpan;
use crate::agent::subagents::{
    self, ChildAgent, ChildCall, Delegated, Delegation, DelegationEnd, FoldedStep, ProfileChild,
    ResumedChild, Retagger, Subagent, SubagentTarget, Visibility,
};
use crate::agent::tools::{ToolError, ToolOutput};
use crate::agent::turn::TurnCall;
use crate::auth::Principal;
use crate::protocol::{ClientTool, MessageId, RunId, ThreadId, ToolCallId};
use crate::store::ThreadLink;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// The most of its remaining time a run keeps for itself after its children: its children end
/// this much before it must, so it can still answer.
const PARENT_MARGIN: Duration = Duration::from_secs(10);

/// What a run's delegations need, owned, so they can run beside the run's own tool calls.
pub(super) struct Delegator {
    agent: Agent,
    owner: Principal,
    parent: ThreadLink,
    deadline: Instant,
    speaks_v1: bool,
    visibility: Visibility,
    confirm_tool: Option<ClientTool>,
    depth: u32,
    stop: CancellationToken,
    /// Delegations the run may still start (`SUBAGENT_MAX_PER_RUN`).
    allowed: u32,
    /// The A2A context each sub-agent last had in this thread: a new delegation continues it.
    contexts: std::collections::HashMap<String, String>,
    /// The run's step, stored with the start of the first profile child of the batch.
    step: Option<FoldedStep>,
    /// Opens once the run's step is stored: the batch's other delegations start after it.
    gate: Option<tokio::sync::watch::Receiver<bool>>,
}

/// A delegation's outcome with the parent's call it answers.
pub(super) type Answered = (ToolCallId, Delegated);

impl PreparedRun {
    /// The run's delegator, for calls made while `stop` holds.
    pub(super) fn delegator(&self, stop: &CancellationToken) -> Delegator {
        let settings = &self.agent.settings.subagents;
        let confirm = &self.agent.settings.confirm_tool;
        Delegator {
            agent: self.agent.clone(),
            owner: self.lease.owner.clone(),
            parent: ThreadLink {
                thread_id: self.lease.thread_id.clone(),
                created_at_ms: self.lease.created_at_ms,
                run_id: self.lease.run_id.clone(),
                tool_call_id: ToolCallId::generate(),
                agent: String::new(),
            },
            // Within this runner's time: a delegation is one step, never cut by a hand-off.
            deadline: self.limit(),
            speaks_v1: self.request.speaks_v1,
            visibility: self.request.visibility,
            // A 0.0.x client approves through its confirm tool, which its children need to
            // ask; an AG-UI 1.0 client answers interrupts, and children are offered none of the
            // client's tools.
            confirm_tool: self
                .request
                .client_tools
                .iter()
                .find(|tool| &tool.name == confirm && !self.request.speaks_v1)
                .cloned(),
            depth: self.request.depth,
            stop: stop.clone(),
            allowed: settings
                .max_per_run
                .saturating_sub(self.progress.summary.subagent_runs),
            contexts: subagents::remote_contexts(&self.progress.history),
            step: None,
            gate: None,
        }
    }

    /// Continues the sub-agents that stopped to ask, with the answers this run's input brought;
    /// the run ends here, without a model turn, while any of them still waits.
    pub(super) async fn continue_delegations(
        &mut self,
        out: &Emitter<'_>,
        stop: &CancellationToken,
    ) -> Option<RunEnd> {
        let children = std::mem::take(&mut self.request.delegated);
        if children.is_empty() {
            return None;
        }
        // A step of its own: the first model turn goes to the next runner if it is late.
        self.segment.steps += 1;
        let delegator = self.delegator(stop);
        let outcomes = futures_util::future::join_all(
            children
                .into_iter()
                .map(|child| delegator.resume(child, out)),
        )
        .await;
        for result in self.settle_delegations(outcomes) {
            self.record_result(out, result);
        }
        self.suspended_end(None)
    }

    /// What delegations came to: an answer or an error as the call's result (returned, in
    /// the order of `outcomes`), a suspension kept for the run's end.
    pub(super) fn settle_delegations(&mut self, outcomes: Vec<Answered>) -> Vec<ToolResult> {
        let mut results = Vec::with_capacity(outcomes.len());
        for (tool_call_id, delegated) in outcomes {
            let summary = &mut self.progress.summary;
            summary.child_usage.extend(delegated.usage);
            // Only a delegation that started a child links to one, and counts.
            let link = (!delegated.link.is_null()).then_some(delegated.link);
            summary.subagent_runs += u32::from(link.is_some());
            let (content, error) = match delegated.end {
                DelegationEnd::Answered(answer) => (answer, None),
                DelegationEnd::Failed { code, message } => (
                    subagents::failed_result(&delegated.name, &code, &message),
                    Some(message),
                ),
                DelegationEnd::Suspended(child) => {
                    self.progress.delegated.push(*child);
                    continue;
                }
            };
            results.push(ToolResult {
                id: MessageId::generate(),
                tool_call_id,
                content,
                error,
                metadata: link,
            });
        }
        results
    }

    /// How the run ends when sub-agents wait: their interrupts for an AG-UI 1.0 client (with
    /// the run's own), the calls that ask a 0.0.x client otherwise (with the ones left for it
    /// already). `None` when no sub-agent waits.
    pub(super) fn suspended_end(&self, end: Option<RunEnd>) -> Option<RunEnd> {
        let waiting = &self.progress.delegated;
        if waiting.is_empty() {
            return end;
        }
        if let Some(RunEnd::Interrupted(own)) = end {
            return Some(RunEnd::Interrupted(own));
        }
        // An interrupt outcome needs an interrupt: children that only wait on the confirm tool
        // leave their calls pending instead. The run's own frontend calls wait either way.
        if self.request.speaks_v1 && waiting.iter().any(|child| !child.interrupts.is_empty()) {
            return Some(RunEnd::Interrupted(Vec::new()));
        }
        let mut pending = match end {
            Some(RunEnd::Finished { pending }) => pending,
            _ => Vec::new(),
        };
        pending.extend(
            waiting
                .iter()
                .flat_map(|child| &child.confirms)
                .filter_map(|confirm| ToolCallId::parse(confirm.shown.as_str(), usize::MAX).ok()),
        );
        Some(RunEnd::Finished { pending })
    }
}

impl Delegator {
    /// The first profile child of the next batch stores `step` with its start; the batch's
    /// other delegations wait for `gate`.
    pub(super) fn carry(&mut self, step: FoldedStep, gate: tokio::sync::watch::Receiver<bool>) {
        self.step = Some(step);
        self.gate = Some(gate);
    }

    /// Runs the calls side by side; each outcome with its call, in call order.
    pub(super) async fn run(
        &mut self,
        calls: &[&TurnCall],
        parent_message_id: Option<&MessageId>,
        out: &Emitter<'_>,
    ) -> Vec<Answered> {
        let allowed = usize::try_from(self.allowed).unwrap_or(usize::MAX);
        self.allowed = self
            .allowed
            .saturating_sub(u32::try_from(calls.len()).unwrap_or(u32::MAX));
        let carrier = calls
            .iter()
            .take(allowed)
            .position(|call| self.starts_a_profile(call));
        // Without a profile child to carry it, the step goes back to the run at once.
        let mut step = self.step.take().filter(|_| carrier.is_some());
        let gate = self.gate.take();
        let this = &*self;
        let mut started = Vec::with_capacity(calls.len());
        for (index, call) in calls.iter().enumerate() {
            let carried = if Some(index) == carrier {
                step.take()
            } else {
                None
            };
            let mut gate = gate.clone().filter(|_| Some(index) != carrier);
            started.push(async move {
                if let Some(gate) = gate.as_mut() {
                    let _ = gate.wait_for(|open| *open).await;
                }
                let delegated = if index < allowed {
                    this.start(call, parent_message_id, out, carried).await
                } else {
                    refused(
                        &call.name,
                        "LIMIT",
                        "this run has made as many sub-agent calls as it may (SUBAGENT_MAX_PER_RUN)",
                    )
                };
                (call.id.clone(), delegated)
            });
        }
        futures_util::future::join_all(started).await
    }

    /// Whether `call` starts a profile of ours as a child (a new thread).
    fn starts_a_profile(&self, call: &TurnCall) -> bool {
        self.agent
            .subagent(&call.name)
            .is_some_and(|subagent| matches!(subagent.target, SubagentTarget::Profile(_)))
    }

    /// One call of a sub-agent, traced as a tool call; `step`, the run's, stored with its
    /// child's start.
    async fn start(
        &self,
        call: &TurnCall,
        parent_message_id: Option<&MessageId>,
        out: &Emitter<'_>,
        step: Option<FoldedStep>,
    ) -> Delegated {
        let Some(subagent) = self.agent.subagent(&call.name) else {
            return refused(&call.name, "UNKNOWN_AGENT", "no such sub-agent");
        };
        let task = match subagents::task_of(&call.arguments) {
            Ok(task) => task,
            Err(message) => return refused(&call.name, "INVALID_TASK", &message),
        };
        let delegation = match self.delegation(
            subagent,
            ThreadId::new_uuid(),
            subagents::new_subagent_run_id(),
            (call.id.clone(), parent_message_id.cloned()),
        ) {
            Ok(delegation) => delegation,
            Err(delegated) => return *delegated,
        };
        let mut delegation = delegation;
        delegation.call.task = Some(task);
        delegation.call.step = step;
        traced_delegation(call, delegation, out).await
    }

    /// Continues a child that stopped to ask, under the same `subagentRunId`.
    async fn resume(&self, resumed: ResumedChild, out: &Emitter<'_>) -> Answered {
        let ResumedChild {
            child,
            resume,
            answers,
        } = resumed;
        let tool_call_id = child.tool_call_id.clone();
        let Some(subagent) = self.agent.subagent(&child.subagent) else {
            let refusal = refused(
                &child.subagent,
                "UNKNOWN_AGENT",
                "this sub-agent is no longer declared",
            );
            return (tool_call_id, refusal);
        };
        let remote = child.remote;
        let delegation = self.delegation(
            subagent,
            child.thread_id,
            child.subagent_run_id,
            (tool_call_id.clone(), child.parent_message_id),
        );
        let mut delegation = match delegation {
            Ok(delegation) => delegation,
            Err(delegated) => return (tool_call_id, *delegated),
        };
        delegation.call.resume = resume;
        delegation.call.answers = answers;
        delegation.call.context_id = remote.as_ref().map(|task| task.context_id.clone());
        delegation.call.remote = remote;
        let traced = TurnCall {
            index: 0,
            id: tool_call_id.clone(),
            name: delegation.name.clone(),
            arguments: String::new(),
            encrypted_value: None,
        };
        (
            tool_call_id,
            traced_delegation(&traced, delegation, out).await,
        )
    }

    /// A delegation to `subagent` on the child's thread `thread_id` (a new one, or the one it
    /// waits on), answering the parent's call `caller`; the task is the caller's to set.
    fn delegation(
        &self,
        subagent: &Subagent,
        thread_id: ThreadId,
        subagent_run_id: String,
        caller: (ToolCallId, Option<MessageId>),
    ) -> Result<Delegation, Box<Delegated>> {
        let (tool_call_id, parent_message_id) = caller;
        let child: Arc<dyn ChildAgent> = match &subagent.target {
            SubagentTarget::Profile(profile) => match self.agent.profile(profile) {
                Ok(agent) => Arc::new(ProfileChild { agent }),
                Err(error) => {
                    return Err(Box::new(refused(
                        &subagent.name,
                        "UNKNOWN_AGENT",
                        &error.to_string(),
                    )));
                }
            },
            SubagentTarget::Remote(remote) => Arc::new(remote.clone()),
            SubagentTarget::A2a(agent) => Arc::new(agent.clone()),
        };
        let call = ChildCall {
            owner: self.owner.clone(),
            thread_id,
            run_id: RunId::generate(),
            task: None,
            resume: Vec::new(),
            answers: Vec::new(),
            parent: ThreadLink {
                tool_call_id: tool_call_id.clone(),
                agent: subagent.name.clone(),
                ..self.parent.clone()
            },
            deadline: self.child_deadline(subagent.timeout),
            speaks_v1: self.speaks_v1,
            confirm_tool: self.confirm_tool.clone(),
            depth: self.depth + 1,
            stop: self.stop.child_token(),
            context_id: self.contexts.get(&subagent.name).cloned(),
            remote: None,
            step: None,
        };
        let confirm = self.confirm_tool.as_ref().map(|tool| tool.name.clone());
        Ok(Delegation {
            name: subagent.name.clone(),
            description: subagent.description.clone(),
            kind: subagent.target.kind(),
            child,
            call,
            retagger: Retagger::new(subagent_run_id, self.visibility, confirm),
            tool_call_id,
            parent_message_id,
        })
    }

    /// When a child must have ended: within its own timeout, and early enough in its parent's
    /// time for the parent to answer after it.
    fn child_deadline(&self, timeout: Option<Duration>) -> Instant {
        let now = Instant::now();
        let left = self.deadline.saturating_duration_since(now);
        let parents = (self.deadline - (left / 10).min(PARENT_MARGIN)).max(now);
        timeout.map_or(parents, |timeout| parents.min(now + timeout))
    }
}

/// A delegation inside the `execute_tool` span of the call it answers: the child's own
/// `invoke_agent` span nests under it.
async fn traced_delegation(
    call: &TurnCall,
    delegation: Delegation,
    out: &Emitter<'_>,
) -> Delegated {
    let span = ToolSpan::new(call);
    let delegated = subagents::delegate(delegation, &|event| out.emit(event))
        .instrument(span.span().clone())
        .await;
    span.end(&Some(match &delegated.end {
        DelegationEnd::Failed { message, .. } => Err(ToolError::Failed(message.clone())),
        DelegationEnd::Answered(answer) => Ok(ToolOutput::text(answer.clone())),
        DelegationEnd::Suspended(_) => Ok(ToolOutput::text("suspended")),
    }));
    delegated
}

/// A call answered with an error without any child starting.
fn refused(name: &str, code: &str, message: &str) -> Delegated {
    Delegated {
        name: name.to_owned(),
        end: DelegationEnd::Failed {
            code: code.to_owned(),
            message: message.to_owned(),
        },
        usage: Vec::new(),
        link: serde_json::Value::Null,
    }
}
