//! The bounds a request's input must keep, whatever its dialect: sizes and counts, and the
//! shape of a tool name.

/// Input limits; the defaults are the v1 agent API's contract, but for
/// `agui_max_payload_bytes`.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    pub max_payload_bytes: usize,
    /// A body on the AG-UI routes, where full-history clients resend the whole thread.
    pub agui_max_payload_bytes: usize,
    pub max_run_id_chars: usize,
    pub max_messages: usize,
    pub max_user_text_chars: usize,
    pub max_attachments_per_message: usize,
    /// Decoded bytes of one inline (`data`) attachment; 0 refuses inline data.
    pub max_inline_attachment_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_payload_bytes: 256 * 1024,
            agui_max_payload_bytes: AGUI_MAX_PAYLOAD_BYTES,
            max_run_id_chars: 128,
            max_messages: 200,
            max_user_text_chars: 10_000,
            max_attachments_per_message: 3,
            // 256 KiB is 342 KiB as base64: a message holding one still fits a DynamoDB item
            // (400 KB); the default payload limit binds first anyway.
            max_inline_attachment_bytes: 256 * 1024,
        }
    }
}

impl Limits {
    /// These limits without the bounds on messages' number and content: what the AG-UI routes
    /// parse with, before the start knows which messages the thread already holds.
    pub(crate) fn lenient(&self) -> Self {
        Self {
            max_messages: usize::MAX,
            max_user_text_chars: usize::MAX,
            max_attachments_per_message: usize::MAX,
            max_inline_attachment_bytes: usize::MAX,
            ..self.clone()
        }
    }
}

/// A Lambda Function URL takes an event of at most 6 MiB; 64 KiB of it is left for the
/// event's headers and request context, so a body just under the limit reaches the function
/// and gets our 413, which says what to do, rather than the platform's.
const AGUI_MAX_PAYLOAD_BYTES: usize = 6 * 1024 * 1024 - 64 * 1024;

/// Tool names as OpenAI-style APIs accept them; refusing others here beats a model error later.
pub(crate) fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}
