//! Conversation messages as the agent, the store and the model providers see them, serialised in
//! AG-UI 1.0 shape (the form `MESSAGES_SNAPSHOT` and the history endpoint send).

use super::ids::{MessageId, ToolCallId};
use serde::{Deserialize, Serialize};

/// One message of a thread. Roles the agent does not feed to a model (`reasoning`, `activity`)
/// are dropped at the edge and never reach this type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "role",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
pub enum Message {
    User {
        id: MessageId,
        content: UserContent,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    Assistant {
        id: MessageId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    System {
        id: MessageId,
        content: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    Developer {
        id: MessageId,
        content: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    Tool {
        id: MessageId,
        tool_call_id: ToolCallId,
        content: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}

impl Message {
    pub fn id(&self) -> &MessageId {
        match self {
            Message::User { id, .. }
            | Message::Assistant { id, .. }
            | Message::System { id, .. }
            | Message::Developer { id, .. }
            | Message::Tool { id, .. } => id,
        }
    }

    pub fn role(&self) -> Role {
        match self {
            Message::User { .. } => Role::User,
            Message::Assistant { .. } => Role::Assistant,
            Message::System { .. } => Role::System,
            Message::Developer { .. } => Role::Developer,
            Message::Tool { .. } => Role::Tool,
        }
    }

    /// The tool calls an assistant message makes; empty for every other role.
    pub fn tool_calls(&self) -> &[ToolCall] {
        match self {
            Message::Assistant { tool_calls, .. } => tool_calls,
            _ => &[],
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
    System,
    Developer,
    Tool,
}

/// A user message's content: plain text, or text and attachment parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum UserContent {
    Text(String),
    Parts(Vec<UserPart>),
}

impl UserContent {
    /// The text of the message with attachments left out, for limits, logs and demo replies.
    pub fn text(&self) -> String {
        match self {
            UserContent::Text(text) => text.clone(),
            UserContent::Parts(parts) => parts
                .iter()
                .filter_map(|part| match part {
                    UserPart::Text { text } => Some(text.as_str()),
                    UserPart::Image { .. } => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

/// A content part. Attachments are kept as URLs only: the function never fetches them (no SSRF)
/// and never stores their bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum UserPart {
    Text { text: String },
    Image { source: ImageSource },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
pub enum ImageSource {
    Url {
        value: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
}

/// A tool call as AG-UI carries it on assistant messages (OpenAI's shape).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: ToolCallId,
    #[serde(rename = "type")]
    pub kind: FunctionKind,
    pub function: FunctionCall,
}

impl ToolCall {
    pub fn new(id: ToolCallId, name: String, arguments: String) -> Self {
        Self {
            id,
            kind: FunctionKind::Function,
            function: FunctionCall { name, arguments },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FunctionKind {
    Function,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    /// JSON text, exactly as the model produced it.
    pub arguments: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn id(s: &str) -> MessageId {
        MessageId::parse(s, 128).unwrap()
    }

    #[test]
    fn assistant_with_tool_calls_serialises_in_agui_shape_without_nulls() {
        let message = Message::Assistant {
            id: id("m1"),
            content: None,
            tool_calls: vec![ToolCall::new(
                ToolCallId::parse("c1", 128).unwrap(),
                "search".into(),
                "{}".into(),
            )],
            name: None,
        };
        assert_eq!(
            serde_json::to_value(&message).unwrap(),
            json!({"id":"m1","role":"assistant","toolCalls":[{"id":"c1","type":"function","function":{"name":"search","arguments":"{}"}}]})
        );
    }

    #[test]
    fn tool_and_user_messages_round_trip() {
        let messages = vec![
            Message::Tool {
                id: id("t1"),
                tool_call_id: ToolCallId::parse("c1", 128).unwrap(),
                content: "ok".into(),
                error: None,
            },
            Message::User {
                id: id("u1"),
                content: UserContent::Parts(vec![
                    UserPart::Text {
                        text: "look".into(),
                    },
                    UserPart::Image {
                        source: ImageSource::Url {
                            value: "https://example.com/a.png".into(),
                            mime_type: Some("image/png".into()),
                        },
                    },
                ]),
                name: None,
            },
        ];
        let text = serde_json::to_string(&messages).unwrap();
        assert!(text.contains(r#""toolCallId":"c1""#));
        assert!(text.contains(
            r#""source":{"type":"url","value":"https://example.com/a.png","mimeType":"image/png"}"#
        ));
        let back: Vec<Message> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, messages);
    }
}
