//! What a thread keeps of its surfaces. Clients never send activity messages back, so each
//! answer to a render call carries a record in its metadata (never shown to a model): the
//! attempt, and for a painted surface the surface itself. From those records come the attempt a
//! new call continues and the surface an update builds on. (What a reloaded thread shows is the
//! activity kept beside the record, `protocol::activity`.)

use super::emit::{self, ACTIVITY_TYPE, Attempt, Renderer};
use super::surface::Surface;
use super::validate::ValidationError;
use crate::protocol::Message;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The metadata key this server keeps its own facts under (as delegations do).
pub(crate) const METADATA_KEY: &str = "agui-lambda";

/// How an attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Status {
    /// Painted.
    Rendered,
    /// Refused, with attempts left.
    Invalid,
    /// Refused, the last attempt: the surface shows `failed`.
    Failed,
}

/// The record an answer to a render call carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Record {
    /// The `a2ui-surface` activity the attempts of one surface share.
    pub(crate) activity_id: String,
    pub(crate) attempt: u32,
    pub(crate) max_attempts: u32,
    pub(crate) status: Status,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) errors: Vec<ValidationError>,
    /// The surface as painted (`Rendered` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) surface: Option<Surface>,
    #[serde(flatten)]
    pub(crate) renderer: Renderer,
}

/// Where in this server's metadata an activity kept for a reload lives, and its shape
/// (`{messageId, activityType, content}`): every `MESSAGES_SNAPSHOT` shows it again as an AG-UI
/// `activity` message right after its tool message.
const KEPT_ACTIVITY_KEY: &str = "activity";

impl Record {
    /// The tool message metadata holding this record, and for a surface painted or failed the
    /// activity a reload shows (`content`).
    pub(crate) fn metadata(&self, content: &Value) -> Value {
        let mut ours = json!({"a2ui": self});
        if self.status != Status::Invalid {
            ours[KEPT_ACTIVITY_KEY] = json!({
                "messageId": self.activity_id,
                "activityType": ACTIVITY_TYPE,
                "content": content,
            });
        }
        json!({METADATA_KEY: ours})
    }

    /// The record a tool message carries, if it answers a render call.
    pub(crate) fn of(message: &Message) -> Option<Record> {
        let Message::Tool {
            metadata: Some(metadata),
            ..
        } = message
        else {
            return None;
        };
        serde_json::from_value(metadata.get(METADATA_KEY)?.get("a2ui")?.clone()).ok()
    }

    fn attempt_report(&self) -> Attempt {
        Attempt {
            attempt: self.attempt,
            ok: self.status == Status::Rendered,
            errors: self.errors.clone(),
        }
    }
}

/// What a tool message's answer shows live, just before its result: the surface painted or
/// failed (the activity kept for a reload), or `retrying` after an invalid attempt. `None` for
/// an answer that is not a render call's.
pub(crate) fn shown_with(message: &Message) -> Option<(String, Value)> {
    let record = Record::of(message)?;
    if record.status == Status::Invalid {
        let content = emit::retrying(record.attempt + 1, record.max_attempts, &record.errors);
        return Some((record.activity_id, content));
    }
    let Message::Tool {
        metadata: Some(metadata),
        ..
    } = message
    else {
        return None;
    };
    let kept = metadata.get(METADATA_KEY)?.get(KEPT_ACTIVITY_KEY)?;
    Some((record.activity_id, kept.get("content")?.clone()))
}

/// Attempts at one surface still going: the last one was refused with attempts left.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OpenChain {
    pub(crate) activity_id: String,
    /// The attempts so far, oldest first.
    pub(crate) attempts: Vec<Attempt>,
}

impl OpenChain {
    /// The number the next attempt has.
    pub(crate) fn next_attempt(&self) -> u32 {
        self.attempts.last().map_or(1, |last| last.attempt + 1)
    }
}

/// The attempts a new render call continues: the latest surface of the current turn (the
/// messages since the last user message) whose last attempt was refused with attempts left.
pub(crate) fn open_chain(messages: &[Message]) -> Option<OpenChain> {
    let turn_start = messages
        .iter()
        .rposition(|message| matches!(message, Message::User { .. }))
        .map_or(0, |position| position + 1);
    let mut open: Option<OpenChain> = None;
    for record in messages[turn_start..].iter().filter_map(Record::of) {
        match record.status {
            Status::Invalid => {
                let attempt = record.attempt_report();
                match open.as_mut() {
                    Some(chain) if chain.activity_id == record.activity_id => {
                        chain.attempts.push(attempt);
                    }
                    _ => {
                        open = Some(OpenChain {
                            activity_id: record.activity_id,
                            attempts: vec![attempt],
                        });
                    }
                }
            }
            Status::Rendered | Status::Failed => {
                if open
                    .as_ref()
                    .is_some_and(|chain| chain.activity_id == record.activity_id)
                {
                    open = None;
                }
            }
        }
    }
    open
}

/// The surface `surface_id` as last painted in `messages`, which an update builds on.
pub(crate) fn latest_surface(messages: &[Message], surface_id: &str) -> Option<Surface> {
    messages
        .iter()
        .rev()
        .filter_map(Record::of)
        .find_map(|record| {
            record
                .surface
                .filter(|surface| surface.surface_id == surface_id)
        })
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
