//! A delegation that waits: what the parent's thread keeps of a suspended child (in its
//! interrupt record), how the next input's answers reach that child in its own ids, and the
//! child's messages a client sends back, which never become the parent's.

use crate::protocol::interrupt::{Interrupt, ResumeEntry};
use crate::protocol::{Message, MessageId, ThreadId, ToolCallId};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

/// Whether `id` was made by namespacing a child's id: `sa-` and twelve hex digits, then `:`.
pub(crate) fn is_child_id(id: &str) -> bool {
    let bytes = id.as_bytes();
    bytes.len() > 16
        && id.starts_with("sa-")
        && bytes.get(15) == Some(&b':')
        && bytes
            .get(3..15)
            .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit))
}

/// A child that stopped to ask, and the parent's call it will answer once it is done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SuspendedChild {
    /// The parent's call of the sub-agent, left open until the child answers.
    pub(crate) tool_call_id: ToolCallId,
    /// The parent's message that made the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) parent_message_id: Option<MessageId>,
    /// The sub-agent's name.
    pub(crate) subagent: String,
    /// Kept when the child continues, as AG-UI lets a suspended invocation do.
    pub(crate) subagent_run_id: String,
    /// The child's thread.
    pub(crate) thread_id: ThreadId,
    /// Its interrupts, as the client got them, each with the child's own id.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) interrupts: Vec<RelayedInterrupt>,
    /// Its calls of the client's confirm tool (0.0.x clients), likewise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) confirms: Vec<Relayed>,
    /// The remote task it waits on (an A2A agent's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) remote: Option<RemoteTask>,
}

/// A task of a remote A2A agent behind a child: what answers it, follows it, cancels it, and
/// continues its context in the parent thread's next delegation to the same agent.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RemoteTask {
    pub(crate) task_id: String,
    pub(crate) context_id: String,
    /// What it waits for while the child is suspended: [`INPUT_REQUIRED`] or [`AUTH_REQUIRED`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) waiting: Option<String>,
    /// The text the client was shown of it so far, in bytes per artifact id: a task the agent
    /// sends whole again is not shown twice.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) shown: BTreeMap<String, usize>,
}

/// `Interrupt.reason` of an A2A task in `TASK_STATE_INPUT_REQUIRED`.
pub(crate) const INPUT_REQUIRED: &str = "input_required";
/// `Interrupt.reason` of an A2A task in `TASK_STATE_AUTH_REQUIRED`.
pub(crate) const AUTH_REQUIRED: &str = "auth_required";

/// The A2A context each sub-agent last used in a thread, by sub-agent name: from the links of
/// the delegations' `tool` messages in `history`, the latest winning.
pub(crate) fn remote_contexts(history: &[Message]) -> HashMap<String, String> {
    history
        .iter()
        .filter_map(|message| match message {
            Message::Tool {
                metadata: Some(metadata),
                ..
            } => {
                let link = metadata.get(super::VENDOR_KEY)?.get("subagent")?;
                let name = link.get("name")?.as_str()?;
                let context = link.get("contextId")?.as_str()?;
                Some((name.to_owned(), context.to_owned()))
            }
            _ => None,
        })
        .collect()
}

/// One id of a child's, as the client got it and as the child made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Relayed {
    pub(crate) shown: String,
    pub(crate) own: String,
}

/// One of a child's interrupts as the client got it, and the child's own id of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RelayedInterrupt {
    pub(crate) interrupt: Interrupt,
    pub(crate) own: String,
}

/// A suspended child with the answers the next input brought for it, in its own ids.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ResumedChild {
    pub(crate) child: SuspendedChild,
    pub(crate) resume: Vec<ResumeEntry>,
    pub(crate) answers: Vec<Message>,
}

impl SuspendedChild {
    /// Whether `interrupt_id` is one of this child's, as the client got it.
    pub(crate) fn asked(&self, interrupt_id: &str) -> bool {
        self.interrupts
            .iter()
            .any(|relayed| relayed.interrupt.id == interrupt_id)
    }

    /// This child with the answers among `resume` and `messages`, made its own.
    pub(crate) fn resumed(self, resume: &[ResumeEntry], messages: &[Message]) -> ResumedChild {
        let resume = resume
            .iter()
            .filter_map(|entry| {
                let own = self
                    .interrupts
                    .iter()
                    .find(|relayed| relayed.interrupt.id == entry.interrupt_id)?;
                Some(ResumeEntry {
                    interrupt_id: own.own.clone(),
                    ..entry.clone()
                })
            })
            .collect();
        let answers = messages
            .iter()
            .filter_map(|message| {
                let Message::Tool {
                    tool_call_id,
                    content,
                    error,
                    ..
                } = message
                else {
                    return None;
                };
                let own = self
                    .confirms
                    .iter()
                    .find(|confirm| confirm.shown == tool_call_id.as_str())?;
                Some(Message::Tool {
                    id: MessageId::generate(),
                    tool_call_id: ToolCallId::parse(own.own.as_str(), usize::MAX).ok()?,
                    content: content.clone(),
                    error: error.clone(),
                    metadata: None,
                })
            })
            .collect();
        ResumedChild {
            child: self,
            resume,
            answers,
        }
    }
}

/// The input's messages without those that belong to sub-agents: messages a child made (their
/// ids namespaced by a delegation, whatever tag the client kept) and the client's answers to a
/// child's calls. Borrowed as they are when there are none.
pub(crate) fn child_messages(messages: &[Message]) -> Cow<'_, [Message]> {
    let is_childs = |message: &Message| {
        is_child_id(message.id().as_str())
            || matches!(message, Message::Tool { tool_call_id, .. } if is_child_id(tool_call_id.as_str()))
    };
    if messages.iter().any(is_childs) {
        Cow::Owned(
            messages
                .iter()
                .filter(|message| !is_childs(message))
                .cloned()
                .collect(),
        )
    } else {
        Cow::Borrowed(messages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::UserContent;
    use crate::protocol::interrupt::ResumeStatus;

    fn tool(id: &str, call: &str) -> Message {
        Message::Tool {
            id: MessageId::parse(id, 128).unwrap(),
            tool_call_id: ToolCallId::parse(call, 128).unwrap(),
            content: "confirmed".into(),
            error: None,
            metadata: None,
        }
    }

    #[test]
    fn a_child_s_messages_never_become_the_parent_s() {
        let user = Message::User {
            id: MessageId::parse("m1", 128).unwrap(),
            content: UserContent::Text("hi".into()),
            name: None,
        };
        let own = [user.clone(), tool("t1", "call_1")];
        assert!(matches!(child_messages(&own), Cow::Borrowed(_)));
        let mixed = [
            user.clone(),
            tool("sa-0123456789ab:msg_1", "sa-0123456789ab:call_1"),
            tool("client-made", "sa-0123456789ab:call_2"),
            tool("t1", "call_1"),
        ];
        let kept: Vec<String> = child_messages(&mixed)
            .iter()
            .map(|message| message.id().to_string())
            .collect();
        assert_eq!(kept, ["m1", "t1"]);
    }

    #[test]
    fn answers_reach_the_child_in_its_own_ids() {
        let child = SuspendedChild {
            tool_call_id: ToolCallId::parse("call_p", 128).unwrap(),
            parent_message_id: None,
            subagent: "researcher".into(),
            subagent_run_id: "sa-0123456789ab".into(),
            thread_id: ThreadId::parse("t-child", 128).unwrap(),
            interrupts: vec![RelayedInterrupt {
                interrupt: Interrupt {
                    id: "sa-0123456789ab:int-1".into(),
                    reason: "tool_call".into(),
                    message: None,
                    tool_call_id: None,
                    response_schema: None,
                    expires_at: None,
                    subagent_run_id: Some("sa-0123456789ab".into()),
                    metadata: None,
                },
                own: "int-1".into(),
            }],
            confirms: vec![Relayed {
                shown: "sa-0123456789ab:call_c".into(),
                own: "call_c".into(),
            }],
            remote: None,
        };
        assert!(child.asked("sa-0123456789ab:int-1") && !child.asked("int-1"));
        let entries = [
            ResumeEntry {
                interrupt_id: "sa-0123456789ab:int-1".into(),
                status: ResumeStatus::Resolved,
                payload: Some(serde_json::json!({"approved": true})),
            },
            ResumeEntry {
                interrupt_id: "int-other".into(),
                status: ResumeStatus::Cancelled,
                payload: None,
            },
        ];
        let resumed = child.resumed(
            &entries,
            &[tool("a1", "sa-0123456789ab:call_c"), tool("a2", "x")],
        );
        assert_eq!(resumed.resume.len(), 1);
        assert_eq!(resumed.resume[0].interrupt_id, "int-1");
        assert_eq!(resumed.answers.len(), 1);
        assert!(
            matches!(&resumed.answers[0], Message::Tool { tool_call_id, .. } if tool_call_id.as_str() == "call_c")
        );
    }
}
