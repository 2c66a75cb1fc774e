//! Sub-agents: the agents a profile may delegate to (other profiles of ours, remote AG-UI
//! agents, A2A agents), each offered to the model as a tool; a child run behind each call; and the one place
//! that turns a child's events into its parent's (`subagentRunId`, namespaced ids, visibility).
//! Knows nothing of HTTP routes; beneath the run loop, which calls in through `run/delegate.rs`,
//! and never names it: a profile of ours runs as a child through `agent/profile_child.rs`.

mod a2a;
mod child;
mod delegation;
mod record;
mod remote;
mod retag;
mod step;

pub(crate) use a2a::{A2aAgent, A2aAgentSettings, shared_client};
pub(crate) use child::{ChildAgent, ChildCall, ChildError, ChildStream, ProfileChild, child_event};
pub(crate) use delegation::{
    Delegated, Delegation, DelegationEnd, FOR_A_PARENT, delegate, failed_result,
};
#[cfg(test)]
use record::is_child_id;
pub(crate) use record::{ResumedChild, SuspendedChild, child_messages, remote_contexts};
pub(crate) use remote::{RemoteAgent, RemoteAgentSettings};
pub(crate) use retag::Retagger;
pub(crate) use step::{FoldedStep, StepData, StepOutcome};

use crate::model::ToolSpec;
use std::sync::Arc;
use std::time::Duration;

/// The vendor key this server's metadata goes under (`SUBAGENT_FINISHED.metadata`, a
/// delegation's `tool` message).
pub(crate) const VENDOR_KEY: &str = "agui-lambda";

/// How a run's client sees its sub-agents' work (`SUBAGENT_VISIBILITY`, per profile too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Visibility {
    /// `attributed` for clients that name AG-UI 1.x in `protocolVersion`, `inline` otherwise.
    #[default]
    Auto,
    /// `SUBAGENT_*` events, and every child event tagged with its `subagentRunId`.
    Attributed,
    /// The child's events as plain events (namespaced ids, no tags, no `SUBAGENT_*`): what a
    /// client that predates sub-agents accepts.
    Inline,
    /// Only the delegating tool call and its result.
    Hidden,
}

impl std::str::FromStr for Visibility {
    type Err = ();

    fn from_str(value: &str) -> Result<Self, ()> {
        match value.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "attributed" => Ok(Self::Attributed),
            "inline" => Ok(Self::Inline),
            "hidden" => Ok(Self::Hidden),
            _ => Err(()),
        }
    }
}

impl Visibility {
    /// What a run shows, `auto` decided by whether its client speaks AG-UI 1.x.
    pub(crate) fn for_client(self, speaks_v1: bool) -> Self {
        match self {
            Self::Auto if speaks_v1 => Self::Attributed,
            Self::Auto => Self::Inline,
            other => other,
        }
    }
}

/// The limits every delegation keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubagentSettings {
    /// `SUBAGENT_VISIBILITY`, unless a profile says otherwise.
    pub visibility: Visibility,
    /// How deep delegations nest: a run at this depth is offered no sub-agents (the client's
    /// run is depth 0, its children 1).
    pub max_depth: u32,
    /// Sub-agent calls one run may make; past it a call is answered with an error.
    pub max_per_run: u32,
}

impl Default for SubagentSettings {
    fn default() -> Self {
        Self {
            visibility: Visibility::Auto,
            max_depth: 2,
            max_per_run: 8,
        }
    }
}

/// One agent a profile may delegate to, as its model is offered it: a tool whose input is the
/// task in words.
#[derive(Clone)]
pub(crate) struct Subagent {
    /// The tool name the model calls, and `SUBAGENT_STARTED.name`.
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) target: SubagentTarget,
    /// The longest a delegation may take; the run's deadline bounds it in any case.
    pub(crate) timeout: Option<Duration>,
}

/// What runs behind a sub-agent.
#[derive(Clone)]
pub(crate) enum SubagentTarget {
    /// Another profile of this deployment: a real run on a thread of its own.
    Profile(String),
    /// A remote AG-UI agent.
    Remote(Arc<RemoteAgent>),
    /// An A2A 1.0 agent.
    A2a(Arc<A2aAgent>),
}

impl SubagentTarget {
    /// The kind, as a delegation's link names it.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Profile(_) => "profile",
            Self::Remote(_) => "ag-ui",
            Self::A2a(_) => "a2a",
        }
    }
}

impl Subagent {
    /// The tool the model sees.
    pub(crate) fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.clone(),
            description: self.description.clone(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "task": {
                        "type": "string",
                        "description": "What the agent is to do, in words: everything it needs to know, since it sees nothing of this conversation."
                    }
                },
                "required": ["task"],
            }),
        }
    }
}

/// The task a call gives its sub-agent: `{"task": "…"}`, or a bare string.
pub(crate) fn task_of(arguments: &str) -> Result<String, String> {
    let value: serde_json::Value = serde_json::from_str(if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    })
    .map_err(|err| format!("arguments are not valid JSON: {err}"))?;
    let task = match &value {
        serde_json::Value::String(task) => Some(task.as_str()),
        other => other.get("task").and_then(serde_json::Value::as_str),
    };
    match task.map(str::trim) {
        Some(task) if !task.is_empty() => Ok(task.to_owned()),
        _ => Err("the call needs a task: {\"task\": \"what to do\"}".to_owned()),
    }
}

/// A fresh `subagentRunId`: short (ids nest in ids) and unique enough within a thread.
pub(crate) fn new_subagent_run_id() -> String {
    let uuid = uuid::Uuid::new_v4().simple().to_string();
    format!("sa-{}", uuid.get(..12).unwrap_or(&uuid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_comes_from_the_call_s_arguments() {
        assert_eq!(task_of(r#"{"task": " find it "}"#).unwrap(), "find it");
        assert_eq!(task_of(r#""find it""#).unwrap(), "find it");
        assert!(task_of("{}").is_err());
        assert!(task_of(r#"{"task": ""}"#).is_err());
        assert!(task_of("{").unwrap_err().contains("not valid JSON"));
    }

    #[test]
    fn auto_visibility_follows_the_client() {
        assert_eq!(Visibility::Auto.for_client(true), Visibility::Attributed);
        assert_eq!(Visibility::Auto.for_client(false), Visibility::Inline);
        assert_eq!(Visibility::Hidden.for_client(true), Visibility::Hidden);
        assert_eq!("Inline".parse(), Ok(Visibility::Inline));
        assert!("loud".parse::<Visibility>().is_err());
        let id = new_subagent_run_id();
        assert_eq!(id.len(), 15);
        assert!(is_child_id(&format!("{id}:msg_1")));
    }
}
