//! Merging what a client sends with what the store holds, and the model's view of a history.
//! Messages are keyed by id: a known id is never stored twice.

use crate::protocol::{Message, MessageId, ToolCallId};
use std::collections::HashSet;

/// Content of the synthetic result that closes a tool call nobody answered.
pub const NOT_ANSWERED: &str = "The user did not answer this tool call.";

#[derive(Debug, Clone, PartialEq)]
pub struct Merged {
    /// Stored history plus the new messages: what the model sees.
    pub history: Vec<Message>,
    /// Messages to store before the model is called.
    pub new_messages: Vec<Message>,
    /// The store holds messages the client did not send: it needs a `MESSAGES_SNAPSHOT`.
    pub client_is_behind: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    #[error(
        "message {message_id} answers tool call {tool_call_id}, which is not a pending tool call of this thread"
    )]
    UnknownToolCall {
        message_id: MessageId,
        tool_call_id: ToolCallId,
    },
    #[error("message {message_id} reuses tool call id {tool_call_id}")]
    DuplicateToolCall {
        message_id: MessageId,
        tool_call_id: ToolCallId,
    },
}

/// Tool calls of the history still waiting for a result, in the order they were made.
pub fn open_tool_calls(history: &[Message]) -> Vec<ToolCallId> {
    let mut open: Vec<ToolCallId> = Vec::new();
    for message in history {
        match message {
            Message::Assistant { tool_calls, .. } => {
                open.extend(tool_calls.iter().map(|call| call.id.clone()))
            }
            Message::Tool { tool_call_id, .. } => open.retain(|id| id != tool_call_id),
            _ => {}
        }
    }
    open
}

/// A `tool` message that closes `tool_call_id` as unanswered.
pub fn not_answered(tool_call_id: ToolCallId) -> Message {
    Message::Tool {
        id: MessageId::generate(),
        tool_call_id,
        content: NOT_ANSWERED.to_owned(),
        error: Some("not answered".to_owned()),
    }
}

pub fn merge(stored: &[Message], incoming: Vec<Message>) -> Result<Merged, MergeError> {
    let known: HashSet<&MessageId> = stored.iter().map(Message::id).collect();
    let sent: HashSet<&MessageId> = incoming.iter().map(Message::id).collect();
    let client_is_behind = stored.iter().any(|message| !sent.contains(message.id()));
    let mut all_calls: HashSet<ToolCallId> = stored
        .iter()
        .flat_map(|message| message.tool_calls().iter().map(|call| call.id.clone()))
        .collect();
    let mut open = open_tool_calls(stored);
    let mut history = stored.to_vec();
    let mut new_messages = Vec::new();

    for message in incoming {
        if known.contains(message.id()) {
            continue;
        }
        match &message {
            Message::Tool {
                id, tool_call_id, ..
            } => {
                let Some(position) = open.iter().position(|open_id| open_id == tool_call_id) else {
                    return Err(MergeError::UnknownToolCall {
                        message_id: id.clone(),
                        tool_call_id: tool_call_id.clone(),
                    });
                };
                open.remove(position);
            }
            Message::User { .. } => {
                for call in open.drain(..) {
                    let closing = not_answered(call);
                    history.push(closing.clone());
                    new_messages.push(closing);
                }
            }
            Message::Assistant { id, tool_calls, .. } => {
                for call in tool_calls {
                    if !all_calls.insert(call.id.clone()) {
                        return Err(MergeError::DuplicateToolCall {
                            message_id: id.clone(),
                            tool_call_id: call.id.clone(),
                        });
                    }
                    open.push(call.id.clone());
                }
            }
            Message::System { .. } | Message::Developer { .. } => {}
        }
        history.push(message.clone());
        new_messages.push(message);
    }
    // A model API rejects a history with an unanswered call; whatever the client left open
    // (a partial answer to parallel calls, a retried run) is closed now.
    for call in open {
        let closing = not_answered(call);
        history.push(closing.clone());
        new_messages.push(closing);
    }
    Ok(Merged {
        history,
        new_messages,
        client_is_behind,
    })
}

/// The history as a model API accepts it: runs of consecutive assistant messages (clients that
/// omit `parentMessageId` make one per tool call) become one message.
pub fn model_view(history: &[Message]) -> Vec<Message> {
    let mut view: Vec<Message> = Vec::with_capacity(history.len());
    for message in history {
        if let (
            Some(Message::Assistant {
                content: merged_content,
                tool_calls: merged_calls,
                ..
            }),
            Message::Assistant {
                content,
                tool_calls,
                ..
            },
        ) = (view.last_mut(), message)
        {
            if let Some(text) = content {
                match merged_content {
                    Some(existing) => {
                        existing.push('\n');
                        existing.push_str(text);
                    }
                    None => *merged_content = Some(text.clone()),
                }
            }
            merged_calls.extend(tool_calls.iter().cloned());
            continue;
        }
        view.push(message.clone());
    }
    view
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ToolCall, UserContent};

    fn mid(id: &str) -> MessageId {
        MessageId::parse(id, 128).unwrap()
    }
    fn cid(id: &str) -> ToolCallId {
        ToolCallId::parse(id, 128).unwrap()
    }
    fn user(id: &str) -> Message {
        Message::User {
            id: mid(id),
            content: UserContent::Text(id.into()),
            name: None,
        }
    }
    fn asst(id: &str, calls: &[&str]) -> Message {
        Message::Assistant {
            id: mid(id),
            content: None,
            tool_calls: calls
                .iter()
                .map(|c| ToolCall::new(cid(c), "f".into(), "{}".into()))
                .collect(),
            name: None,
        }
    }
    fn tool(id: &str, call: &str) -> Message {
        Message::Tool {
            id: mid(id),
            tool_call_id: cid(call),
            content: "ok".into(),
            error: None,
        }
    }
    fn ids(messages: &[Message]) -> Vec<&str> {
        messages.iter().map(|m| m.id().as_str()).collect()
    }

    #[test]
    fn a_full_history_client_adds_only_its_new_messages_and_is_not_behind() {
        let stored = vec![user("u1"), asst("a1", &["c1"])];
        let merged = merge(
            &stored,
            vec![user("u1"), asst("a1", &["c1"]), tool("t1", "c1")],
        )
        .unwrap();
        assert_eq!(ids(&merged.new_messages), ["t1"]);
        assert_eq!(ids(&merged.history), ["u1", "a1", "t1"]);
        assert!(!merged.client_is_behind);
    }

    #[test]
    fn an_incremental_client_is_behind_and_gets_the_whole_history() {
        let stored = vec![user("u1"), asst("a1", &[])];
        let merged = merge(&stored, vec![user("u2")]).unwrap();
        assert!(merged.client_is_behind);
        assert_eq!(ids(&merged.history), ["u1", "a1", "u2"]);
    }

    #[test]
    fn a_tool_message_must_answer_a_pending_call() {
        let stored = vec![user("u1"), asst("a1", &["c1"]), tool("t1", "c1")];
        assert!(matches!(
            merge(&stored, vec![tool("t2", "c1")]),
            Err(MergeError::UnknownToolCall { .. })
        ));
        assert!(matches!(
            merge(&stored, vec![tool("t2", "zz")]),
            Err(MergeError::UnknownToolCall { .. })
        ));
    }

    #[test]
    fn a_new_user_message_closes_unanswered_calls() {
        let stored = vec![user("u1"), asst("a1", &["c1", "c2"])];
        let merged = merge(&stored, vec![user("u2")]).unwrap();
        assert_eq!(merged.new_messages.len(), 3);
        assert!(
            matches!(&merged.new_messages[0], Message::Tool { tool_call_id, content, .. } if tool_call_id.as_str() == "c1" && content == NOT_ANSWERED)
        );
        assert_eq!(merged.new_messages[2].id().as_str(), "u2");
        assert!(open_tool_calls(&merged.history).is_empty());
    }

    #[test]
    fn calls_left_open_by_a_partial_answer_are_closed_after_it() {
        let stored = vec![user("u1"), asst("a1", &["c1", "c2"])];
        let merged = merge(&stored, vec![tool("t1", "c1")]).unwrap();
        assert_eq!(merged.new_messages.len(), 2);
        assert!(
            matches!(&merged.new_messages[1], Message::Tool { tool_call_id, .. } if tool_call_id.as_str() == "c2")
        );
        assert!(open_tool_calls(&merged.history).is_empty());
    }

    #[test]
    fn reused_tool_call_ids_are_refused() {
        let stored = vec![user("u1"), asst("a1", &["c1"]), tool("t1", "c1")];
        assert!(matches!(
            merge(&stored, vec![asst("a2", &["c1"])]),
            Err(MergeError::DuplicateToolCall { .. })
        ));
    }

    #[test]
    fn consecutive_assistant_messages_merge_for_the_model() {
        let history = vec![
            user("u1"),
            asst("a1", &["c1"]),
            asst("a2", &["c2"]),
            tool("t1", "c1"),
            tool("t2", "c2"),
        ];
        let view = model_view(&history);
        assert_eq!(ids(&view), ["u1", "a1", "t1", "t2"]);
        assert_eq!(view[1].tool_calls().len(), 2);
    }
}
