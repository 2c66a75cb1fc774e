//! The limits section: how large a request, and the messages and attachments in it, may be.

use super::vars::Vars;
use super::{ConfigError, Section};
use crate::protocol::Limits;

impl Section for Limits {
    const SETTINGS: &'static [&'static str] = &[
        "MAX_PAYLOAD_BYTES",
        "AGUI_MAX_PAYLOAD_BYTES",
        "MAX_RUN_ID_CHARS",
        "MAX_MESSAGES",
        "MAX_USER_TEXT_CHARS",
        "MAX_ATTACHMENTS",
        "MAX_INLINE_ATTACHMENT_BYTES",
    ];

    fn from_vars(vars: &Vars) -> Result<Self, ConfigError> {
        let defaults = Limits::default();
        Ok(Limits {
            // Lambda takes request payloads of up to 6 MB.
            max_payload_bytes: vars.bounded(
                "MAX_PAYLOAD_BYTES",
                defaults.max_payload_bytes,
                1_024..=6_291_456,
            )?,
            // The local server and containers have no 6 MB front: up to 64 MiB there.
            agui_max_payload_bytes: vars.bounded(
                "AGUI_MAX_PAYLOAD_BYTES",
                defaults.agui_max_payload_bytes,
                1_024..=67_108_864,
            )?,
            max_run_id_chars: vars.bounded(
                "MAX_RUN_ID_CHARS",
                defaults.max_run_id_chars,
                1..=1_024,
            )?,
            max_messages: vars.bounded("MAX_MESSAGES", defaults.max_messages, 1..=100_000)?,
            max_user_text_chars: vars.bounded(
                "MAX_USER_TEXT_CHARS",
                defaults.max_user_text_chars,
                1..=6_291_456,
            )?,
            max_attachments_per_message: vars.bounded(
                "MAX_ATTACHMENTS",
                defaults.max_attachments_per_message,
                0..=1_000,
            )?,
            max_inline_attachment_bytes: vars.bounded(
                "MAX_INLINE_ATTACHMENT_BYTES",
                defaults.max_inline_attachment_bytes,
                0..=6_291_456,
            )?,
        })
    }
}
