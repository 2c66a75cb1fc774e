//! Conversation messages as the agent, the store and the model providers see them, serialised in
//! AG-UI 1.0 shape (the form `MESSAGES_SNAPSHOT` and the history endpoint send).

use super::ids::{MessageId, ToolCallId};
use serde::{Deserialize, Serialize};

/// One message of a thread. `activity` messages (UI state, never fed to a model) are dropped at
/// the edge and never reach this type.
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
        /// The provider's opaque artefact for this answer (the Responses API's item id), sent
        /// back to it with the message.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted_value: Option<String>,
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
        /// What the server says about the result besides its content (a delegation's link to
        /// the sub-agent's thread, under this server's key); never sent to a model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<serde_json::Value>,
    },
    /// AG-UI's `ReasoningMessage`: the model's reasoning, stored before the assistant message of
    /// its turn. `encrypted_value` is the provider's opaque artefact (a signature, or redacted
    /// reasoning) that some providers need back on the next turn.
    Reasoning {
        id: MessageId,
        content: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted_value: Option<String>,
    },
}

impl Message {
    pub fn id(&self) -> &MessageId {
        match self {
            Message::User { id, .. }
            | Message::Assistant { id, .. }
            | Message::System { id, .. }
            | Message::Developer { id, .. }
            | Message::Tool { id, .. }
            | Message::Reasoning { id, .. } => id,
        }
    }

    #[cfg(any(test, feature = "test-utils"))]
    pub fn role(&self) -> Role {
        match self {
            Message::User { .. } => Role::User,
            Message::Assistant { .. } => Role::Assistant,
            Message::System { .. } => Role::System,
            Message::Developer { .. } => Role::Developer,
            Message::Tool { .. } => Role::Tool,
            Message::Reasoning { .. } => Role::Reasoning,
        }
    }

    /// The tool calls an assistant message makes; empty for every other role.
    pub(crate) fn tool_calls(&self) -> &[ToolCall] {
        match self {
            Message::Assistant { tool_calls, .. } => tool_calls,
            _ => &[],
        }
    }
}

#[cfg(any(test, feature = "test-utils"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
    System,
    Developer,
    Tool,
    Reasoning,
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
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

/// A content part, in AG-UI 1.0's shape (the legacy `binary` part is converted on input).
/// Attachments come by URL, which the function never fetches (no SSRF), or inline as base64
/// within `MAX_INLINE_ATTACHMENT_BYTES`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum UserPart {
    Text { text: String },
    Image(Attachment),
    Audio(Attachment),
    Video(Attachment),
    Document(Attachment),
}

impl UserPart {
    /// The attachment of a media part; `None` for text.
    pub fn attachment(&self) -> Option<&Attachment> {
        match self {
            UserPart::Text { .. } => None,
            UserPart::Image(attachment)
            | UserPart::Audio(attachment)
            | UserPart::Video(attachment)
            | UserPart::Document(attachment) => Some(attachment),
        }
    }

    /// What the part is, with its article, for notes and refusals ("an image").
    pub(crate) fn noun(&self) -> &'static str {
        match self {
            UserPart::Text { .. } => "a text",
            UserPart::Image(_) => "an image",
            UserPart::Audio(_) => "an audio clip",
            UserPart::Video(_) => "a video",
            UserPart::Document(_) => "a document",
        }
    }

    #[cfg(any(test, feature = "test-utils"))]
    /// The part's `type`, for messages that name it.
    pub fn kind(&self) -> &'static str {
        match self {
            UserPart::Text { .. } => "text",
            UserPart::Image(_) => "image",
            UserPart::Audio(_) => "audio",
            UserPart::Video(_) => "video",
            UserPart::Document(_) => "document",
        }
    }
}

/// Why a model is not given a part whose source is a provider's file handle: a handle is only
/// its issuer's to resolve, and no model here is handed one (the part is skipped instead).
pub(crate) const FILE_HANDLE_UNUSED: &str =
    "a provider file handle, which this server gives no model (send the bytes as data or a url)";

/// Whether `part`'s source is a provider's file handle.
pub(crate) fn is_file_handle(part: &UserPart) -> bool {
    matches!(
        part.attachment().map(|attachment| &attachment.source),
        Some(PartSource::File { .. })
    )
}

/// An image, audio, video or document part's body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attachment {
    pub source: PartSource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<PartMetadata>,
}

impl Attachment {
    /// The media type without parameters, lowercased (`image/png`), where one is known.
    pub(crate) fn media_type(&self) -> Option<String> {
        let mime = match &self.source {
            PartSource::Data { mime_type, .. } => Some(mime_type.as_str()),
            PartSource::Url { mime_type, .. } | PartSource::File { mime_type, .. } => {
                mime_type.as_deref()
            }
        }?;
        let essence = mime.split(';').next().unwrap_or(mime).trim();
        (!essence.is_empty()).then(|| essence.to_ascii_lowercase())
    }

    /// The file name the client gave, if any.
    pub(crate) fn filename(&self) -> Option<&str> {
        self.metadata.as_ref()?.filename.as_deref()
    }

    /// The bytes of an inline attachment (checked as base64 when it was accepted); `None` for
    /// a URL.
    pub(crate) fn bytes(&self) -> Option<Vec<u8>> {
        use base64::Engine;
        match &self.source {
            PartSource::Data { value, .. } => {
                base64::engine::general_purpose::STANDARD.decode(value).ok()
            }
            PartSource::Url { .. } | PartSource::File { .. } => None,
        }
    }
}

/// The part metadata the server keeps: the file name (a legacy `binary` part's `filename`),
/// which Bedrock's document blocks need.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartMetadata {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
}

/// Where an attachment's bytes are: inline (`value` is standard base64, already checked), at
/// an http(s) URL, or at a model provider under a handle it issued (AG-UI's `file` source:
/// opaque, never fetched or parsed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
pub enum PartSource {
    Data {
        value: String,
        mime_type: String,
    },
    Url {
        value: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
    File {
        value: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Who issued the handle (`openai`, `anthropic`, `google`), when the client says.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider: Option<String>,
    },
}

/// A tool call as AG-UI carries it on assistant messages (OpenAI's shape).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: ToolCallId,
    #[serde(rename = "type")]
    pub kind: FunctionKind,
    pub function: FunctionCall,
    /// The provider's opaque artefact for this call (Gemini's thought signature, the
    /// Responses API's item id), sent back to it with the call.
    #[serde(
        default,
        rename = "encryptedValue",
        skip_serializing_if = "Option::is_none"
    )]
    pub encrypted_value: Option<String>,
}

impl ToolCall {
    pub fn new(id: ToolCallId, name: String, arguments: String) -> Self {
        Self {
            id,
            kind: FunctionKind::Function,
            function: FunctionCall { name, arguments },
            encrypted_value: None,
        }
    }

    /// The call with the provider's artefact.
    pub(crate) fn with_encrypted_value(mut self, value: Option<String>) -> Self {
        self.encrypted_value = value;
        self
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
            encrypted_value: None,
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
                metadata: None,
            },
            Message::User {
                id: id("u1"),
                content: UserContent::Parts(vec![
                    UserPart::Text {
                        text: "look".into(),
                    },
                    UserPart::Image(Attachment {
                        source: PartSource::Url {
                            value: "https://example.com/a.png".into(),
                            mime_type: Some("image/png".into()),
                        },
                        metadata: None,
                    }),
                    UserPart::Document(Attachment {
                        source: PartSource::Data {
                            value: "aGk=".into(),
                            mime_type: "application/pdf".into(),
                        },
                        metadata: Some(PartMetadata {
                            filename: Some("a.pdf".into()),
                        }),
                    }),
                ]),
                name: None,
            },
        ];
        let text = serde_json::to_string(&messages).unwrap();
        assert!(text.contains(r#""toolCallId":"c1""#));
        assert!(text.contains(
            r#"{"type":"image","source":{"type":"url","value":"https://example.com/a.png","mimeType":"image/png"}}"#
        ));
        assert!(text.contains(
            r#"{"type":"document","source":{"type":"data","value":"aGk=","mimeType":"application/pdf"},"metadata":{"filename":"a.pdf"}}"#
        ));
        let back: Vec<Message> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, messages);
    }

    #[test]
    fn a_reasoning_message_is_agui_s_reasoning_message() {
        let message = Message::Reasoning {
            id: id("r1"),
            content: "First, the time.".into(),
            encrypted_value: Some("signature:abc".into()),
        };
        let value = serde_json::to_value(&message).unwrap();
        assert_eq!(
            value,
            json!({"id":"r1","role":"reasoning","content":"First, the time.","encryptedValue":"signature:abc"})
        );
        assert_eq!(serde_json::from_value::<Message>(value).unwrap(), message);
        assert_eq!(message.role(), Role::Reasoning);
    }

    #[test]
    fn media_types_lose_parameters_and_case() {
        let attachment = Attachment {
            source: PartSource::Data {
                value: String::new(),
                mime_type: "Text/Plain; charset=utf-8".into(),
            },
            metadata: None,
        };
        assert_eq!(attachment.media_type().as_deref(), Some("text/plain"));
    }
}
