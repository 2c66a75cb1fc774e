//! A child agent as its delegator sees it: started with a task, or continued with answers to
//! what it asked, it streams AG-UI content events in its own ids and then says, once, how it
//! ended. A profile of ours ([`super::ProfileChild`]), a remote AG-UI agent
//! ([`super::RemoteAgent`]) and an A2A agent ([`super::A2aAgent`]) are the kinds; any other
//! only has to produce the same stream.

use super::record::RemoteTask;
use crate::auth::Principal;
use crate::protocol::events::{METADATA_KEY, TokenUsage};
use crate::protocol::interrupt::{Interrupt, ResumeEntry};
use crate::protocol::{ClientTool, Message, RunId, ThreadId};
use crate::store::ThreadLink;
use futures_util::stream::BoxStream;
use serde_json::{Map, Value};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// What a child is asked to do.
pub(crate) struct ChildCall {
    pub(crate) owner: Principal,
    /// The child's thread: one of ours for a profile, the id the remote agent keeps.
    pub(crate) thread_id: ThreadId,
    pub(crate) run_id: RunId,
    /// The task, on the first call; `None` when the child continues.
    pub(crate) task: Option<String>,
    /// Answers to the child's interrupts, in its own ids.
    pub(crate) resume: Vec<ResumeEntry>,
    /// `tool` messages answering the child's confirm-tool calls (0.0.x clients), in its ids.
    pub(crate) answers: Vec<Message>,
    /// The delegating thread, run and call (a profile's new thread is linked to it).
    pub(crate) parent: ThreadLink,
    /// When the child must have ended.
    pub(crate) deadline: Instant,
    /// The client speaks AG-UI 1.0: the child asks through interrupts.
    pub(crate) speaks_v1: bool,
    /// The client's confirm tool, for a child that must ask a 0.0.x client for approval.
    pub(crate) confirm_tool: Option<ClientTool>,
    /// How deep the child runs (the client's run is 0).
    pub(crate) depth: u32,
    /// Cancelled when the child must stop: it ends its stream soon after, with
    /// [`ChildEnd::Cancelled`].
    pub(crate) stop: CancellationToken,
    /// A remote agent's conversation an earlier delegation of the same parent thread had with
    /// this sub-agent (an A2A `contextId`), continued by a new task.
    pub(crate) context_id: Option<String>,
    /// The remote task a suspended child waits on, when the child continues.
    pub(crate) remote: Option<RemoteTask>,
    /// The delegating run's step, for a child whose start can store it (a profile's new
    /// thread); any other child drops it, and the run then stores its step itself.
    pub(crate) step: Option<super::FoldedStep>,
}

/// One thing a child says.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ChildEvent {
    /// A content event as AG-UI JSON (`type` first, no timestamp), in the child's own ids:
    /// text, reasoning, tool calls and results, steps, activity, custom events, and its own
    /// sub-agents' events. Never a run-level one (`RUN_*`, `MESSAGES_SNAPSHOT`, `STATE_*`).
    Content(Map<String, Value>),
    /// The remote task behind the child (an A2A agent's), as it stands when the child ends: said
    /// just before [`ChildEvent::End`], kept with a suspended child and in the delegation's link.
    Remote(RemoteTask),
    /// How it ended; the last event.
    End(ChildEnd),
}

/// How a child ended, with the tokens it used.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ChildEnd {
    Finished {
        usage: Vec<TokenUsage>,
    },
    /// Waiting for these interrupts (its ids) to be answered.
    Suspended {
        interrupts: Vec<Interrupt>,
        usage: Vec<TokenUsage>,
    },
    Failed {
        code: String,
        message: String,
        usage: Vec<TokenUsage>,
    },
    Cancelled {
        usage: Vec<TokenUsage>,
    },
}

impl ChildEnd {
    pub(crate) fn usage(&self) -> &[TokenUsage] {
        match self {
            Self::Finished { usage }
            | Self::Suspended { usage, .. }
            | Self::Failed { usage, .. }
            | Self::Cancelled { usage } => usage,
        }
    }
}

/// A child's events, ending with exactly one [`ChildEvent::End`] (a stream that stops without
/// one is taken for a failure).
pub(crate) type ChildStream = BoxStream<'static, ChildEvent>;

/// Why a child could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct ChildError {
    /// `SUBAGENT_ERROR.code`.
    pub(crate) code: &'static str,
    pub(crate) message: String,
}

/// A kind of child agent.
#[async_trait::async_trait]
pub(crate) trait ChildAgent: Send + Sync {
    /// Starts the call (or continues the child), returning its events.
    async fn run(&self, call: ChildCall) -> Result<ChildStream, ChildError>;
}

/// A profile of this deployment, run as a child: its run is started through the run loop's face
/// (`agent/profile_child.rs`), which the loop reaches only as a [`ChildAgent`].
pub(crate) struct ProfileChild {
    /// The profile's agent.
    pub(crate) agent: crate::agent::Agent,
}

/// An AG-UI event of a child's: its end when it is the run's terminal event, content otherwise
/// (the re-tagger drops the run-level rest).
pub(crate) fn child_event(event: Map<String, Value>) -> ChildEvent {
    match event.get("type").and_then(Value::as_str) {
        Some("RUN_FINISHED") => ChildEvent::End(finished(&event)),
        Some("RUN_ERROR") => {
            let text = |field: &str| event.get(field).and_then(Value::as_str).unwrap_or("");
            let usage = usage_of(&event);
            ChildEvent::End(if text("code") == "CANCELLED" {
                ChildEnd::Cancelled { usage }
            } else {
                ChildEnd::Failed {
                    code: Some(text("code"))
                        .filter(|code| !code.is_empty())
                        .unwrap_or("AGENT_ERROR")
                        .to_owned(),
                    message: text("message").to_owned(),
                    usage,
                }
            })
        }
        _ => ChildEvent::Content(event),
    }
}

/// How a `RUN_FINISHED` ended its run: AG-UI 1.0's outcome, success without one.
fn finished(event: &Map<String, Value>) -> ChildEnd {
    let usage = usage_of(event);
    let outcome = event.get("outcome");
    match outcome
        .and_then(|outcome| outcome.get("type"))
        .and_then(Value::as_str)
    {
        Some("interrupt") => {
            let interrupts: Vec<Interrupt> = outcome
                .and_then(|outcome| outcome.get("interrupts"))
                .and_then(|interrupts| serde_json::from_value(interrupts.clone()).ok())
                .unwrap_or_default();
            if interrupts.is_empty() {
                return ChildEnd::Failed {
                    code: "AGENT_ERROR".to_owned(),
                    message: "the agent paused on interrupts it did not name".to_owned(),
                    usage,
                };
            }
            ChildEnd::Suspended { interrupts, usage }
        }
        Some("cancelled") => ChildEnd::Cancelled { usage },
        // A child that was not told a version says a stop in our metadata.
        _ if event
            .get("metadata")
            .and_then(|metadata| metadata.get(METADATA_KEY))
            .and_then(|ours| ours.get("outcome"))
            .and_then(Value::as_str)
            == Some("cancelled") =>
        {
            ChildEnd::Cancelled { usage }
        }
        _ => ChildEnd::Finished { usage },
    }
}

/// A terminal event's `usage`, what of it parses.
fn usage_of(event: &Map<String, Value>) -> Vec<TokenUsage> {
    event
        .get("usage")
        .and_then(Value::as_array)
        .map(|entries| {
            entries
                .iter()
                .filter_map(|entry| serde_json::from_value(entry.clone()).ok())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn end(event: Value) -> ChildEnd {
        match child_event(event.as_object().unwrap().clone()) {
            ChildEvent::End(end) => end,
            ChildEvent::Content(_) | ChildEvent::Remote(_) => panic!("not an end"),
        }
    }

    #[test]
    fn a_child_s_terminal_event_says_how_it_ended() {
        let usage = json!([{"model": "m", "inputTokens": 3, "outputTokens": 4, "totalTokens": 7}]);
        let done =
            end(json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "usage": usage}));
        assert!(matches!(&done, ChildEnd::Finished { usage } if usage[0].input_tokens == 3));
        let asked = end(
            json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
            "outcome": {"type": "interrupt", "interrupts": [{"id": "i1", "reason": "tool_call"}]}}),
        );
        assert!(
            matches!(asked, ChildEnd::Suspended { interrupts, .. } if interrupts[0].id == "i1")
        );
        let stopped = end(json!({"type": "RUN_ERROR", "message": "x", "code": "CANCELLED"}));
        assert!(matches!(stopped, ChildEnd::Cancelled { .. }));
        let stopped = end(
            json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
            "metadata": {"agui-lambda": {"eventId": 9, "outcome": "cancelled"}}}),
        );
        assert!(matches!(stopped, ChildEnd::Cancelled { .. }));
        let failed = end(json!({"type": "RUN_ERROR", "message": "boom"}));
        assert!(
            matches!(failed, ChildEnd::Failed { code, message, .. } if code == "AGENT_ERROR" && message == "boom")
        );
        assert!(matches!(
            child_event(
                json!({"type": "TEXT_MESSAGE_START"})
                    .as_object()
                    .unwrap()
                    .clone()
            ),
            ChildEvent::Content(_)
        ));
    }
}
