//! The bounds a request's input must keep, whatever its dialect: sizes and counts, and the
//! shape of a tool name.

/// Input limits; the defaults are the v1 agent API's contract.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    pub max_payload_bytes: usize,
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

/// Tool names as OpenAI-style APIs accept them; refusing others here beats a model error later.
pub(crate) fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}
