//! Merging what a client sends with what the store holds, and the model's view of a history.
//! Messages are keyed by id: a known id is never stored twice.

use crate::protocol::{Message, MessageId, ToolCallId};
use std::collections::HashSet;

/// Content of the synthetic result that closes a tool call nobody answered.
pub(crate) const NOT_ANSWERED: &str = "The user did not answer this tool call.";

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Merged {
    /// Stored history plus the new messages: what the model sees.
    pub history: Vec<Message>,
    /// Messages to store before the model is called.
    pub new_messages: Vec<Message>,
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

/// The longest title derived from a message, in characters.
pub(crate) const DERIVED_TITLE_CHARS: usize = 80;

/// A thread's title from its first user message with text: whitespace collapsed, cut at
/// [`DERIVED_TITLE_CHARS`] characters with an ellipsis.
pub(crate) fn derive_title(history: &[Message]) -> Option<String> {
    history.iter().find_map(|message| {
        let Message::User { content, .. } = message else {
            return None;
        };
        let text = content.text();
        let words: Vec<&str> = text.split_whitespace().collect();
        if words.is_empty() {
            return None;
        }
        let collapsed = words.join(" ");
        if collapsed.chars().count() <= DERIVED_TITLE_CHARS {
            return Some(collapsed);
        }
        let cut: String = collapsed.chars().take(DERIVED_TITLE_CHARS - 1).collect();
        Some(format!("{}…", cut.trim_end()))
    })
}

/// Tool calls of the history still waiting for a result, in the order they were made.
pub(crate) fn open_tool_calls(history: &[Message]) -> Vec<ToolCallId> {
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
pub(crate) fn not_answered(tool_call_id: ToolCallId) -> Message {
    Message::Tool {
        id: MessageId::generate(),
        tool_call_id,
        content: NOT_ANSWERED.to_owned(),
        error: Some("not answered".to_owned()),
        metadata: None,
    }
}

#[cfg(test)]
pub(crate) fn merge(stored: &[Message], incoming: Vec<Message>) -> Result<Merged, MergeError> {
    merge_keeping_open(stored, incoming, &HashSet::new())
}

/// [`merge`], leaving the calls in `waiting` open: the server answers them (tool approvals).
pub(crate) fn merge_keeping_open(
    stored: &[Message],
    incoming: Vec<Message>,
    waiting: &HashSet<ToolCallId>,
) -> Result<Merged, MergeError> {
    let known: HashSet<&MessageId> = stored.iter().map(Message::id).collect();
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
                let (kept, unanswered): (Vec<_>, Vec<_>) =
                    open.drain(..).partition(|call| waiting.contains(call));
                open = kept;
                for call in unanswered {
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
            Message::System { .. } | Message::Developer { .. } | Message::Reasoning { .. } => {}
        }
        history.push(message.clone());
        new_messages.push(message);
    }
    // A model API rejects a history with an unanswered call; whatever the client left open
    // (a partial answer to parallel calls, a retried run) is closed now.
    for call in open.into_iter().filter(|call| !waiting.contains(call)) {
        let closing = not_answered(call);
        history.push(closing.clone());
        new_messages.push(closing);
    }
    Ok(Merged {
        history,
        new_messages,
    })
}

/// The history with every tool result moved up to follow the assistant message that made its
/// call: a result the server adds after a later message (an approved call answered by the next
/// run, after that run's new user message) must still sit where model APIs expect it.
pub(crate) fn answers_follow_calls(history: &[Message]) -> Vec<Message> {
    let answered_late: HashSet<&ToolCallId> = {
        let mut seen_calls = HashSet::new();
        let mut late = HashSet::new();
        let mut since_call_other = HashSet::new();
        for message in history {
            match message {
                Message::Assistant { tool_calls, .. } => {
                    for call in tool_calls {
                        seen_calls.insert(&call.id);
                    }
                }
                Message::Tool { tool_call_id, .. } if since_call_other.contains(tool_call_id) => {
                    late.insert(tool_call_id);
                }
                Message::User { .. } => since_call_other.extend(seen_calls.drain()),
                _ => {}
            }
        }
        late
    };
    if answered_late.is_empty() {
        return history.to_vec();
    }
    let mut ordered: Vec<Message> = Vec::with_capacity(history.len());
    for message in history {
        if let Message::Tool { tool_call_id, .. } = message
            && answered_late.contains(tool_call_id)
        {
            continue;
        }
        ordered.push(message.clone());
        for call in message.tool_calls() {
            if answered_late.contains(&call.id) {
                ordered.extend(
                    history
                        .iter()
                        .filter(|late| {
                            matches!(late, Message::Tool { tool_call_id, .. } if *tool_call_id == call.id)
                        })
                        .cloned(),
                );
            }
        }
    }
    ordered
}

/// The history as a model API accepts it: runs of consecutive assistant messages (clients that
/// omit `parentMessageId` make one per tool call) become one message, and reasoning messages
/// stay only right before the assistant message they belong to (providers that need reasoning
/// back attach it to that message; a turn that said nothing after its reasoning leaves none).
pub(crate) fn model_view(history: &[Message]) -> Vec<Message> {
    let mut view: Vec<Message> = Vec::with_capacity(history.len());
    let mut reasoning: Vec<Message> = Vec::new();
    // Where the last assistant message is in `view` while only reasoning has followed it.
    let mut open_assistant: Option<usize> = None;
    for message in history {
        match message {
            Message::Reasoning { .. } => reasoning.push(message.clone()),
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                if let Some(at) = open_assistant
                    && let Some(Message::Assistant {
                        content: merged_content,
                        tool_calls: merged_calls,
                        ..
                    }) = view.get_mut(at)
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
                    // The merged message's reasoning all goes before it.
                    let moved = reasoning.len();
                    view.splice(at..at, reasoning.drain(..));
                    open_assistant = Some(at + moved);
                    continue;
                }
                view.append(&mut reasoning);
                open_assistant = Some(view.len());
                view.push(message.clone());
            }
            _ => {
                reasoning.clear();
                open_assistant = None;
                view.push(message.clone());
            }
        }
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
            encrypted_value: None,
        }
    }
    #[test]
    fn a_title_is_the_first_user_text_collapsed_and_cut() {
        let said = |text: &str| Message::User {
            id: mid("u"),
            content: UserContent::Text(text.into()),
            name: None,
        };
        assert_eq!(derive_title(&[asst("a", &[])]), None);
        assert_eq!(derive_title(&[said("  \n ")]), None);
        assert_eq!(
            derive_title(&[asst("a", &[]), said("  Plan   my\ntrip "), said("later")]).as_deref(),
            Some("Plan my trip")
        );
        let long = derive_title(&[said(&"é".repeat(200))]).unwrap();
        assert_eq!(long.chars().count(), DERIVED_TITLE_CHARS);
        assert!(long.ends_with('…'));
    }

    fn tool(id: &str, call: &str) -> Message {
        Message::Tool {
            id: mid(id),
            tool_call_id: cid(call),
            content: "ok".into(),
            error: None,
            metadata: None,
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
    }

    #[test]
    fn an_incremental_client_s_messages_follow_the_stored_ones() {
        let stored = vec![user("u1"), asst("a1", &[])];
        let merged = merge(&stored, vec![user("u2")]).unwrap();
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

    fn thought(id: &str) -> Message {
        Message::Reasoning {
            id: mid(id),
            content: "hm".into(),
            encrypted_value: Some("signature:s".into()),
        }
    }

    #[test]
    fn reasoning_stays_only_before_its_assistant_message() {
        let history = vec![
            user("u1"),
            thought("r1"),
            asst("a1", &["c1"]),
            tool("t1", "c1"),
            thought("r2"),
            user("u2"),
            thought("r3"),
        ];
        assert_eq!(ids(&model_view(&history)), ["u1", "r1", "a1", "t1", "u2"]);
        let merged = vec![
            user("u1"),
            thought("r1"),
            asst("a1", &["c1"]),
            thought("r2"),
            asst("a2", &["c2"]),
            tool("t1", "c1"),
            tool("t2", "c2"),
        ];
        let view = model_view(&merged);
        assert_eq!(ids(&view), ["u1", "r1", "r2", "a1", "t1", "t2"]);
        assert_eq!(view[3].tool_calls().len(), 2);
    }

    #[test]
    fn calls_waiting_for_approval_stay_open_and_their_late_results_move_up() {
        let stored = vec![user("u1"), asst("a1", &["c1"])];
        let waiting: HashSet<ToolCallId> = [cid("c1")].into_iter().collect();
        let merged = merge_keeping_open(&stored, vec![user("u2")], &waiting).unwrap();
        assert_eq!(
            ids(&merged.new_messages),
            ["u2"],
            "c1 is not closed as unanswered"
        );
        // The approved call's result, added after the new user message, is read in place.
        let mut history = merged.history;
        history.push(tool("t1", "c1"));
        assert_eq!(
            ids(&answers_follow_calls(&history)),
            ["u1", "a1", "t1", "u2"]
        );
        let in_order = vec![
            user("u1"),
            asst("a1", &["c1"]),
            tool("t1", "c1"),
            user("u2"),
        ];
        assert_eq!(answers_follow_calls(&in_order), in_order);
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
