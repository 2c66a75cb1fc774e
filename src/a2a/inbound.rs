//! An A2A message as a run: a new task's message becomes the user message of a run on the
//! task's thread (through the same `RunAgentInput` checks as every dialect), and a message to a
//! task that waits for input becomes the run's `resume`, answering its interrupts. No frontend
//! tools are offered over A2A: the run's `tools` are always empty.

use super::errors::{A2aError, ErrorKind};
use super::types::{Message, Part, Role};
use crate::protocol::ids::MAX_ID_LEN;
use crate::protocol::input::{InputError, from_value};
use crate::protocol::{Limits, MessageId, RunId, RunInput, ThreadId};
use serde_json::{Map, Value, json};

/// What the message does on its thread.
pub(crate) enum Turn<'a> {
    /// A new user message. `stale_interrupts` are interrupts an earlier task left open on the
    /// thread: cancelled, as a new message replaces their answer.
    Message { stale_interrupts: &'a [String] },
    /// Answers to the interrupts the task waits on.
    Resume { open_interrupts: &'a [String] },
}

/// Checks what every message must have: the user's role, an id, at least one part.
pub(crate) fn check_message(message: &Message) -> Result<(), A2aError> {
    if message.role != Role::User {
        return Err(A2aError::invalid_params("message.role must be ROLE_USER"));
    }
    if message.message_id.trim().is_empty() {
        return Err(A2aError::invalid_params("message.messageId is required"));
    }
    if message.parts.is_empty() {
        return Err(A2aError::invalid_params(
            "message.parts must hold at least one part",
        ));
    }
    Ok(())
}

/// The run the message starts on `thread`.
pub(crate) fn run_input(
    message: &Message,
    thread: &ThreadId,
    run_id: &RunId,
    turn: Turn<'_>,
    limits: &Limits,
) -> Result<RunInput, A2aError> {
    let (messages, resume) = match turn {
        Turn::Message { stale_interrupts } => (
            vec![user_message(message)?],
            stale_interrupts
                .iter()
                .map(|id| json!({"interruptId": id, "status": "cancelled"}))
                .collect(),
        ),
        Turn::Resume { open_interrupts } => (Vec::new(), answers(message, open_interrupts)),
    };
    let input = json!({
        "threadId": thread,
        "runId": run_id,
        "messages": messages,
        "tools": [],
        "context": [],
        // A task never stops another task's run on its context: it waits its turn.
        "forwardedProps": {"busy_thread_policy": "reject"},
        // Interrupts reach A2A as input-required; 0.0.x's confirm-tool fallback never applies.
        "protocolVersion": crate::protocol::events::PROTOCOL_VERSION,
        "resume": resume,
    });
    from_value(input, limits).map_err(|error| match error {
        InputError::Invalid { field, message } if field.contains("content") => A2aError::new(
            ErrorKind::ContentTypeNotSupported,
            format!("{field}: {message}"),
        ),
        other => A2aError::invalid_params(other.to_string()),
    })
}

/// The AG-UI user message of an A2A message: text and data parts as text (data as its JSON),
/// files by bytes or URL as the AG-UI part their media type names.
fn user_message(message: &Message) -> Result<Value, A2aError> {
    let parts = message
        .parts
        .iter()
        .enumerate()
        .map(|(index, part)| content_part(part, index))
        .collect::<Result<Vec<Value>, A2aError>>()?;
    let id = MessageId::parse(message.message_id.clone(), MAX_ID_LEN)
        .unwrap_or_else(|_| MessageId::generate());
    Ok(json!({"id": id, "role": "user", "content": parts}))
}

fn content_part(part: &Part, index: usize) -> Result<Value, A2aError> {
    if let Some(text) = &part.text {
        return Ok(json!({"type": "text", "text": text}));
    }
    if let Some(data) = &part.data {
        return Ok(json!({"type": "text", "text": data.to_string()}));
    }
    let file = |key: &str, value: &str| -> Result<Value, A2aError> {
        if part.media_type.is_empty() {
            return Err(A2aError::new(
                ErrorKind::ContentTypeNotSupported,
                format!("message.parts[{index}]: a file part needs its mediaType"),
            ));
        }
        let mut binary = Map::new();
        binary.insert("type".into(), json!("binary"));
        binary.insert("mimeType".into(), json!(part.media_type));
        binary.insert(key.into(), json!(value));
        if !part.filename.is_empty() {
            binary.insert("filename".into(), json!(part.filename));
        }
        Ok(Value::Object(binary))
    };
    match (&part.raw, &part.url) {
        (Some(raw), _) => file("data", raw),
        (None, Some(url)) => file("url", url),
        (None, None) => Err(A2aError::invalid_params(format!(
            "message.parts[{index}] holds none of text, raw, url or data"
        ))),
    }
}

/// Words that approve, in an answer given as text.
const YES: [&str; 12] = [
    "yes",
    "y",
    "approve",
    "approved",
    "ok",
    "okay",
    "confirm",
    "confirmed",
    "true",
    "allow",
    "allowed",
    "go ahead",
];

/// The `resume` entries a message stands for: a data part `{"resume": [...]}` as AG-UI entries;
/// a data part `{"approved": …}` as the payload of every open interrupt; else its text, a yes
/// (approve) or anything else (deny, the text as the reason).
fn answers(message: &Message, open_interrupts: &[String]) -> Vec<Value> {
    let data = message.parts.iter().find_map(|part| part.data.as_ref());
    if let Some(entries) = data.and_then(|data| data.get("resume")) {
        return entries.as_array().cloned().unwrap_or_default();
    }
    let payload = match data.filter(|data| data.get("approved").is_some()) {
        Some(payload) => payload.clone(),
        None => {
            let text = message.text();
            let said = text.trim().trim_end_matches(['.', '!']).to_lowercase();
            if YES.contains(&said.as_str()) {
                json!({"approved": true})
            } else if said.is_empty() {
                json!({"approved": false})
            } else {
                json!({"approved": false, "reason": text.chars().take(500).collect::<String>()})
            }
        }
    };
    open_interrupts
        .iter()
        .map(|id| json!({"interruptId": id, "status": "resolved", "payload": payload}))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(parts: Vec<Part>) -> Message {
        Message {
            message_id: "m-1".into(),
            role: Role::User,
            parts,
            ..Message::default()
        }
    }

    #[test]
    fn a_new_message_is_a_user_message_with_no_frontend_tools() {
        let thread = ThreadId::parse("ctx-1", 128).unwrap();
        let run = RunId::generate();
        let input = run_input(
            &message(vec![Part::text("hi"), Part::data(json!({"k": 1}))]),
            &thread,
            &run,
            Turn::Message {
                stale_interrupts: &["int-old".to_owned()],
            },
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(input.thread_id.as_ref(), Some(&thread));
        assert!(input.tools.is_empty());
        assert_eq!(input.messages.len(), 1);
        assert_eq!(input.resume.len(), 1);
        assert!(input.speaks_v1());
    }

    #[test]
    fn an_answer_in_words_or_data_resolves_every_open_interrupt() {
        let open = ["a".to_owned(), "b".to_owned()];
        let yes = answers(&message(vec![Part::text("Yes.")]), &open);
        assert_eq!(yes.len(), 2);
        assert_eq!(yes[1]["payload"], json!({"approved": true}));
        let no = answers(&message(vec![Part::text("not today")]), &open[..1]);
        assert_eq!(
            no[0]["payload"],
            json!({"approved": false, "reason": "not today"})
        );
        let data = answers(
            &message(vec![Part::data(
                json!({"approved": true, "editedArgs": {"x": 1}}),
            )]),
            &open[..1],
        );
        assert_eq!(data[0]["payload"]["editedArgs"]["x"], 1);
    }

    #[test]
    fn a_message_missing_what_it_needs_is_refused() {
        let mut agent = message(vec![Part::text("x")]);
        agent.role = Role::Agent;
        assert_eq!(
            check_message(&agent).unwrap_err().kind,
            ErrorKind::InvalidParams
        );
        assert!(check_message(&message(vec![])).is_err());
        let file = Part {
            raw: Some("aGk=".into()),
            ..Part::default()
        };
        let error = content_part(&file, 0).unwrap_err();
        assert_eq!(error.kind, ErrorKind::ContentTypeNotSupported);
    }
}
