//! A child agent as its delegator sees it: started with a task, or continued with answers to
//! what it asked, it streams AG-UI content events in its own ids and then says, once, how it
//! ended. A profile of ours ([`super::ProfileChild`]), a remote AG-UI agent
//! ([`super::RemoteAgent`]) and an A2A agent ([`super::A2aAgent`]) are the kinds; any other
//! only has to produce the same stream.

use super::record::RemoteTask;
use crate::auth::Principal;
use crate::protocol::events::TokenUsage;
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
