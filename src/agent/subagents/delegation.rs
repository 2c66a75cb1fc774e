//! One delegation from start to end: `SUBAGENT_STARTED`, the child's events re-tagged as they
//! come, then `SUBAGENT_FINISHED` (its answer, or suspended on its interrupts) or
//! `SUBAGENT_ERROR`. A child that outlives its time, or its parent's stop, is told to stop and
//! given a moment to end; whatever it left open is closed either way.

use super::child::{ChildAgent, ChildCall, ChildEnd, ChildEvent};
use super::record::{RelayedInterrupt, RemoteTask, SuspendedChild};
use super::retag::Retagger;
use super::{VENDOR_KEY, Visibility};
use crate::protocol::events::{Event, TokenUsage};
use crate::protocol::{MessageId, ToolCallId};
use futures_util::StreamExt;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::{Instant, timeout_at};

/// How long a child told to stop has to end before it is given up on.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// One call of a sub-agent, ready to run.
pub(crate) struct Delegation {
    pub(crate) name: String,
    pub(crate) description: String,
    /// `profile`, `ag-ui` or `a2a`: what the delegation's link says it was.
    pub(crate) kind: &'static str,
    pub(crate) child: Arc<dyn ChildAgent>,
    pub(crate) call: ChildCall,
    pub(crate) retagger: Retagger,
    /// The parent's call, and the message that made it.
    pub(crate) tool_call_id: ToolCallId,
    pub(crate) parent_message_id: Option<MessageId>,
}

/// How a delegation ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum DelegationEnd {
    /// The child's answer, for the parent's model.
    Answered(String),
    Failed {
        code: String,
        message: String,
    },
    /// Waiting for the client to answer what the child asked.
    Suspended(Box<SuspendedChild>),
}

/// A delegation's end, the tokens its child used, and the link its `tool` message keeps.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Delegated {
    /// The sub-agent's name.
    pub(crate) name: String,
    pub(crate) end: DelegationEnd,
    pub(crate) usage: Vec<TokenUsage>,
    pub(crate) link: Value,
}

/// Runs the delegation, sending the parent's events through `emit` as the child's arrive.
pub(crate) async fn delegate(delegation: Delegation, emit: &(dyn Fn(Event) + Sync)) -> Delegated {
    let Delegation {
        name,
        description,
        kind,
        child,
        call,
        mut retagger,
        tool_call_id,
        parent_message_id,
    } = delegation;
    let thread_id = call.thread_id.clone();
    let stop = call.stop.clone();
    if let Some(event) = retagger.started(
        &name,
        &description,
        tool_call_id.as_str(),
        parent_message_id.as_ref().map(MessageId::as_str),
    ) {
        emit(event);
    }
    let mut remote = None;
    let (ended, timed_out) = follow(child.as_ref(), call, &mut retagger, &mut remote, emit).await;
    let usage = ended
        .as_ref()
        .map(|end| end.usage().to_vec())
        .unwrap_or_default();
    let shown_thread = shown_thread(&thread_id, remote.as_ref());
    let metadata = json!({VENDOR_KEY: {"usage": usage, "threadId": shown_thread, "kind": kind}});
    let waiting = |interrupts, confirms| SuspendedChild {
        tool_call_id: tool_call_id.clone(),
        parent_message_id: parent_message_id.clone(),
        subagent: name.clone(),
        subagent_run_id: retagger.id().to_owned(),
        thread_id: thread_id.clone(),
        interrupts,
        confirms,
        remote: remote.clone(),
    };
    let (end, events) = match ended {
        Some(ChildEnd::Finished { .. }) => {
            let confirms = retagger.unanswered_confirms();
            if confirms.is_empty() {
                let answer = retagger
                    .answer()
                    .unwrap_or("(the agent finished without an answer)")
                    .to_owned();
                let events = retagger.finished(Some(answer.clone()), None, metadata);
                (DelegationEnd::Answered(answer), events)
            } else {
                let suspended = waiting(Vec::new(), confirms);
                let events = retagger.finished(None, Some(Vec::new()), metadata);
                (DelegationEnd::Suspended(Box::new(suspended)), events)
            }
        }
        Some(ChildEnd::Suspended { interrupts, .. }) => {
            let (interrupts, own_ids) = relay(&retagger, interrupts);
            let suspended = waiting(interrupts, Vec::new());
            let events = retagger.finished(None, Some(own_ids), metadata);
            (DelegationEnd::Suspended(Box::new(suspended)), events)
        }
        other => {
            let (code, message) = failure(other, &name, timed_out, stop.is_cancelled());
            let events = retagger.failed(&code, &message);
            (DelegationEnd::Failed { code, message }, events)
        }
    };
    for event in events {
        emit(event);
    }
    let link = link(
        &name,
        kind,
        &shown_thread,
        retagger.id(),
        &end,
        remote.as_ref(),
    );
    Delegated {
        name,
        end,
        usage,
        link,
    }
}

/// The link a delegation's `tool` message keeps to its child (and an A2A agent's task).
fn link(
    name: &str,
    kind: &str,
    thread: &str,
    subagent_run_id: &str,
    end: &DelegationEnd,
    remote: Option<&RemoteTask>,
) -> Value {
    let outcome = match end {
        DelegationEnd::Answered(_) => "finished",
        DelegationEnd::Failed { .. } => "failed",
        DelegationEnd::Suspended(_) => "suspended",
    };
    let mut link = json!({VENDOR_KEY: {"subagent": {
        "name": name,
        "kind": kind,
        "threadId": thread,
        "subagentRunId": subagent_run_id,
        "outcome": outcome,
    }}});
    if let Some(task) = remote {
        link[VENDOR_KEY]["subagent"]["taskId"] = json!(task.task_id);
        link[VENDOR_KEY]["subagent"]["contextId"] = json!(task.context_id);
    }
    link
}

/// Runs the child and forwards its events until its end; `None` when it never said how it
/// ended. `true` with it when the child ran out of time (and was told to stop).
async fn follow(
    child: &dyn ChildAgent,
    call: ChildCall,
    retagger: &mut Retagger,
    remote: &mut Option<RemoteTask>,
    emit: &(dyn Fn(Event) + Sync),
) -> (Option<ChildEnd>, bool) {
    let stop = call.stop.clone();
    // The child's own deadline comes first: its own timeout error, rather than ours, says why.
    let mut until = call.deadline + STOP_GRACE;
    // Not raced with a stop: a start dropped halfway would leave the child's thread leased. A
    // child started after its stop is told to stop at once.
    let started = timeout_at(until, child.run(call)).await;
    let mut events = match started {
        Err(_) => return (None, true),
        Ok(Err(error)) => {
            let failed = ChildEnd::Failed {
                code: error.code.to_owned(),
                message: error.message,
                usage: Vec::new(),
            };
            return (Some(failed), false);
        }
        Ok(Ok(events)) => events,
    };
    let (mut stopping, mut timed_out) = (false, false);
    loop {
        let next = tokio::select! {
            biased;
            () = stop.cancelled(), if !stopping => {
                stopping = true;
                until = until.min(Instant::now() + STOP_GRACE);
                continue;
            }
            next = timeout_at(until, events.next()) => next,
        };
        match next {
            Err(_) if !stopping => {
                (timed_out, stopping) = (true, true);
                stop.cancel();
                until = Instant::now() + STOP_GRACE;
            }
            Err(_) | Ok(None) => return (None, timed_out),
            Ok(Some(ChildEvent::Content(event))) => {
                for event in retagger.forward(event) {
                    emit(event);
                }
            }
            Ok(Some(ChildEvent::Remote(task))) => *remote = Some(task),
            Ok(Some(ChildEvent::End(end))) => return (Some(end), timed_out),
        }
    }
}

/// Whether an interrupt tagged `tag` is the child's own (in `attributed`, it carries the
/// child's id; otherwise it carries none and is taken for the child's).
/// A suspended child's interrupts as the parent relays them, and the ids of those that are the
/// child's own (its sub-agents' are theirs to name).
fn relay(
    retagger: &Retagger,
    interrupts: Vec<crate::protocol::interrupt::Interrupt>,
) -> (Vec<RelayedInterrupt>, Vec<String>) {
    let relayed = retagger.interrupts(interrupts);
    let own_ids = relayed
        .iter()
        .filter(|(interrupt, _)| retagger_owns(retagger, interrupt.subagent_run_id.as_deref()))
        .map(|(interrupt, _)| interrupt.id.clone())
        .collect();
    let interrupts = relayed
        .into_iter()
        .map(|(interrupt, own)| RelayedInterrupt { interrupt, own })
        .collect();
    (interrupts, own_ids)
}

/// The thread a delegation's end names: the child's, or a remote A2A agent's context (its
/// conversation).
fn shown_thread(thread_id: &crate::protocol::ThreadId, remote: Option<&RemoteTask>) -> String {
    remote.map_or_else(|| thread_id.to_string(), |task| task.context_id.clone())
}

fn retagger_owns(retagger: &Retagger, tag: Option<&str>) -> bool {
    tag.is_none_or(|tag| tag == retagger.id())
}

/// Why a child that did not finish failed: a code and a message for `SUBAGENT_ERROR` and the
/// parent's model.
fn failure(
    ended: Option<ChildEnd>,
    name: &str,
    timed_out: bool,
    stopped: bool,
) -> (String, String) {
    match ended {
        _ if timed_out => (
            "TIMEOUT".to_owned(),
            format!("the {name} agent did not finish in the time it had"),
        ),
        Some(ChildEnd::Failed { code, message, .. }) => (code, message),
        Some(ChildEnd::Cancelled { .. }) | None if stopped => (
            "CANCELLED".to_owned(),
            format!("the {name} agent was stopped with its parent"),
        ),
        Some(ChildEnd::Cancelled { .. }) => (
            "CANCELLED".to_owned(),
            format!("the {name} agent was stopped"),
        ),
        _ => (
            "AGENT_ERROR".to_owned(),
            format!("the {name} agent ended without saying how"),
        ),
    }
}

/// What the parent's `tool` message says of a delegation that failed.
pub(crate) fn failed_result(name: &str, code: &str, message: &str) -> String {
    format!("Error: the {name} agent failed ({code}): {message}")
}

/// The visibility a shown delegation uses when the parent is a child itself: its own parent
/// decides what the client sees.
pub(crate) const FOR_A_PARENT: Visibility = Visibility::Attributed;
