//! The model's view of a thread under a checkpoint: the summary in place of the messages it
//! covers, old tool results as placeholders, and any single part too large for the window cut
//! down, each with a note that says so. A pure function of the stored thread and its checkpoint,
//! so the prompt's prefix is byte-identical from run to run between compactions.

use super::estimate::text_tokens;
use crate::protocol::{Message, UserContent, UserPart};

/// A thread as a run holds it: the messages from the checkpoint on and what the checkpoint says
/// about the earlier ones.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ThreadView<'a> {
    /// The sequence number of `messages[0]` in the thread.
    pub(crate) first_seq: u64,
    pub(crate) messages: &'a [Message],
    /// The running summary of the messages before `first_seq`, if they were summarised.
    pub(crate) summary: Option<&'a str>,
    /// Tool results stored before this sequence number are shown as placeholders.
    pub(crate) cleared_before: u64,
}

/// How the view treats any single part: larger than `max_part_tokens`, it is cut.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PartLimit {
    pub(crate) max_part_tokens: u64,
}

/// Characters kept per token of a cut part: the estimate's densest rate, so a cut part never
/// costs more than its limit.
const CHARS_PER_TOKEN_KEPT: u64 = 2;

impl ThreadView<'_> {
    /// The messages the model is sent (before the provider's own view: reasoning kept or not is
    /// the provider's business).
    pub(crate) fn messages(&self, limit: PartLimit) -> Vec<Message> {
        self.messages_from(0, limit)
    }

    /// [`Self::messages`] from index `start` on: what was added since a count covered the rest.
    pub(crate) fn messages_from(&self, start: usize, limit: PartLimit) -> Vec<Message> {
        self.messages
            .iter()
            .enumerate()
            .skip(start)
            .map(|(index, message)| {
                let seq = self.first_seq + index as u64;
                let message = if seq < self.cleared_before {
                    cleared(message, self.messages)
                } else {
                    message.clone()
                };
                clamped(message, limit)
            })
            .collect()
    }
}

/// A tool result shown as a placeholder that names its tool and says how much was cleared.
fn cleared(message: &Message, messages: &[Message]) -> Message {
    let Message::Tool {
        id,
        tool_call_id,
        content,
        error,
        metadata,
    } = message
    else {
        return message.clone();
    };
    let tool = messages
        .iter()
        .flat_map(Message::tool_calls)
        .find(|call| &call.id == tool_call_id)
        .map_or("a tool", |call| call.function.name.as_str());
    Message::Tool {
        id: id.clone(),
        tool_call_id: tool_call_id.clone(),
        content: format!(
            "[The result of {tool} ({} characters) was cleared from this conversation to keep it \
             within the model's context window. Call the tool again if it is needed.]",
            content.chars().count()
        ),
        error: error.clone(),
        metadata: metadata.clone(),
    }
}

/// `message` with any text part over the limit cut, and a note where it was cut.
fn clamped(message: Message, limit: PartLimit) -> Message {
    match message {
        Message::Tool {
            id,
            tool_call_id,
            content,
            error,
            metadata,
        } => Message::Tool {
            id,
            tool_call_id,
            content: clamp_text(content, limit),
            error,
            metadata,
        },
        Message::User {
            id,
            content: UserContent::Text(text),
            name,
        } => Message::User {
            id,
            content: UserContent::Text(clamp_text(text, limit)),
            name,
        },
        Message::User {
            id,
            content: UserContent::Parts(parts),
            name,
        } => Message::User {
            id,
            content: UserContent::Parts(
                parts
                    .into_iter()
                    .map(|part| match part {
                        UserPart::Text { text } => UserPart::Text {
                            text: clamp_text(text, limit),
                        },
                        other => other,
                    })
                    .collect(),
            ),
            name,
        },
        other => other,
    }
}

fn clamp_text(text: String, limit: PartLimit) -> String {
    // Half the bytes bounds the estimate: most parts need no count at all.
    let bound = u64::try_from(text.len().div_ceil(2)).unwrap_or(u64::MAX);
    if bound <= limit.max_part_tokens || text_tokens(&text) <= limit.max_part_tokens {
        return text;
    }
    let keep = usize::try_from(limit.max_part_tokens * CHARS_PER_TOKEN_KEPT).unwrap_or(usize::MAX);
    let total = text.chars().count();
    let kept: String = text.chars().take(keep).collect();
    format!(
        "{kept}\n[… {} of {total} characters cut here: this part alone is too large for the \
         model's context window.]",
        total - keep.min(total)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn message(value: serde_json::Value) -> Message {
        serde_json::from_value(value).unwrap()
    }

    fn thread() -> Vec<Message> {
        vec![
            message(json!({"id": "u1", "role": "user", "content": "what time is it"})),
            message(json!({"id": "a1", "role": "assistant", "toolCalls": [
                {"id": "c1", "type": "function", "function": {"name": "get_current_time", "arguments": "{}"}}
            ]})),
            message(
                json!({"id": "t1", "role": "tool", "toolCallId": "c1", "content": "12:00 UTC"}),
            ),
            message(json!({"id": "a2", "role": "assistant", "content": "It is noon."})),
        ]
    }

    #[test]
    fn old_tool_results_become_placeholders_that_name_their_tool() {
        let messages = thread();
        let view = ThreadView {
            first_seq: 10,
            messages: &messages,
            summary: None,
            cleared_before: 13,
        };
        let shown = view.messages(PartLimit {
            max_part_tokens: 1_000,
        });
        let Message::Tool { content, .. } = &shown[2] else {
            panic!("{shown:?}")
        };
        assert!(
            content.contains("get_current_time") && content.contains("9 characters"),
            "{content}"
        );
        assert_eq!(shown[3], messages[3]);
        assert_eq!(shown.len(), messages.len());
    }

    #[test]
    fn a_part_too_large_for_the_window_is_cut_with_a_note_and_the_view_is_stable() {
        let mut messages = thread();
        messages[2] = message(
            json!({"id": "t1", "role": "tool", "toolCallId": "c1", "content": "x ".repeat(5_000)}),
        );
        let view = ThreadView {
            first_seq: 0,
            messages: &messages,
            summary: None,
            cleared_before: 0,
        };
        let limit = PartLimit {
            max_part_tokens: 100,
        };
        let shown = view.messages(limit);
        let Message::Tool { content, .. } = &shown[2] else {
            panic!()
        };
        assert!(content.starts_with("x x") && content.contains("characters cut here"));
        assert!(content.chars().count() < 400);
        assert_eq!(
            shown,
            view.messages(limit),
            "the same thread gives the same view"
        );
    }
}
