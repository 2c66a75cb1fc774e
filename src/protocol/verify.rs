//! The ordering rules `@ag-ui/client`'s `verifyEvents` enforces, checked on decoded SSE events,
//! so tests (and captures) fail here before a real client would reject them.

use serde_json::Value;
use std::collections::HashSet;

/// Parses an SSE body into its JSON events; comments (`: ping`) are skipped. Fails on CR, on a
/// frame that is not `[id: <n>\n]data: <json>` and on JSON that is not an object with a `type`.
pub fn parse_sse(body: &str) -> Result<Vec<Value>, String> {
    Ok(parse_sse_with_ids(body)?
        .into_iter()
        .map(|(_, event)| event)
        .collect())
}

/// Like [`parse_sse`], with each event's SSE `id` when it has one.
pub fn parse_sse_with_ids(body: &str) -> Result<Vec<(Option<u64>, Value)>, String> {
    if body.contains('\r') {
        return Err("the stream contains CR characters".into());
    }
    let mut events = Vec::new();
    for frame in body.split("\n\n").filter(|frame| !frame.is_empty()) {
        if frame.starts_with(':') {
            continue;
        }
        let (id, data) = match frame.strip_prefix("id: ") {
            Some(rest) => {
                let (id, data) = rest
                    .split_once('\n')
                    .ok_or_else(|| format!("frame has an id but no data: {frame:?}"))?;
                let id = id
                    .parse::<u64>()
                    .map_err(|_| format!("id is not a sequence number: {frame:?}"))?;
                (Some(id), data)
            }
            None => (None, frame),
        };
        let data = data
            .strip_prefix("data: ")
            .ok_or_else(|| format!("frame is not a data line: {frame:?}"))?;
        let event: Value = serde_json::from_str(data)
            .map_err(|err| format!("bad JSON in frame {data:?}: {err}"))?;
        if event.get("type").and_then(Value::as_str).is_none() {
            return Err(format!("event without a type: {data}"));
        }
        events.push((id, event));
    }
    if !body.is_empty() && !body.ends_with("\n\n") {
        return Err("the stream does not end with a blank line".into());
    }
    Ok(events)
}

fn id(event: &Value, field: &str) -> Result<String, String> {
    event
        .get(field)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| format!("{} lacks {field}", event["type"]))
}

fn kind(event: &Value) -> String {
    event["type"].as_str().unwrap_or_default().to_owned()
}

/// Checks one run's events. Returns the first violation.
pub fn verify_run(events: &[Value]) -> Result<(), String> {
    let Some(first) = events.first() else {
        return Err("first event is None, not RUN_STARTED".into());
    };
    match kind(first).as_str() {
        "RUN_STARTED" => {}
        // A run refused before it started (the interrupt rules): one RUN_ERROR, nothing else.
        "RUN_ERROR" if events.len() == 1 => return Ok(()),
        other => return Err(format!("first event is {:?}, not RUN_STARTED", Some(other))),
    }
    check_one_terminal_event_last(events)?;
    let mut open = Open::default();
    for event in events {
        check_fields(event)?;
        let kind = kind(event);
        if kind == "RUN_STARTED" && event != first {
            return Err("a second RUN_STARTED".into());
        }
        open.apply(&kind, event)?;
    }
    Ok(())
}

fn check_one_terminal_event_last(events: &[Value]) -> Result<(), String> {
    let terminal: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, event)| matches!(kind(event).as_str(), "RUN_FINISHED" | "RUN_ERROR"))
        .map(|(index, _)| index)
        .collect();
    if terminal != [events.len() - 1] {
        return Err(format!(
            "terminal events at {terminal:?}; expected exactly one, last"
        ));
    }
    Ok(())
}

/// Integer timestamps and no `null` fields, as the client's schemas require.
fn check_fields(event: &Value) -> Result<(), String> {
    if let Some(timestamp) = event.get("timestamp")
        && !timestamp.is_i64()
        && !timestamp.is_u64()
    {
        return Err(format!("timestamp is not an integer in {event}"));
    }
    if event
        .as_object()
        .is_some_and(|object| object.values().any(Value::is_null))
    {
        return Err(format!("null field in {event}"));
    }
    Ok(())
}

/// What is open so far in a run: every one must be closed by `RUN_FINISHED`.
#[derive(Default)]
struct Open {
    texts: HashSet<String>,
    calls: HashSet<String>,
    steps: HashSet<String>,
    reasoning: HashSet<String>,
    reasoning_messages: HashSet<String>,
}

impl Open {
    fn apply(&mut self, kind: &str, event: &Value) -> Result<(), String> {
        match kind {
            "TEXT_MESSAGE_START" => {
                let id = id(event, "messageId")?;
                if !self.texts.insert(id.clone()) {
                    return Err(format!("text message {id} started twice"));
                }
            }
            "TEXT_MESSAGE_CONTENT" | "TEXT_MESSAGE_END" => self.text(kind, event)?,
            "TOOL_CALL_START" => {
                let id = id(event, "toolCallId")?;
                if !self.calls.insert(id.clone()) {
                    return Err(format!("tool call {id} started twice"));
                }
            }
            "TOOL_CALL_ARGS" | "TOOL_CALL_END" => {
                let id = id(event, "toolCallId")?;
                if !self.calls.contains(&id) {
                    return Err(format!("{kind} for tool call {id} that is not open"));
                }
                if kind == "TOOL_CALL_END" {
                    self.calls.remove(&id);
                }
            }
            "STEP_STARTED" | "STEP_FINISHED" => self.step(kind, event)?,
            "REASONING_START" | "REASONING_END" => self.reasoning(kind, event)?,
            "REASONING_MESSAGE_START" | "REASONING_MESSAGE_CONTENT" | "REASONING_MESSAGE_END" => {
                self.reasoning_message(kind, event)?;
            }
            "RUN_FINISHED" => {
                let all_closed = self.texts.is_empty()
                    && self.calls.is_empty()
                    && self.steps.is_empty()
                    && self.reasoning.is_empty()
                    && self.reasoning_messages.is_empty();
                if !all_closed {
                    return Err("something is still open at RUN_FINISHED".into());
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn text(&mut self, kind: &str, event: &Value) -> Result<(), String> {
        let id = id(event, "messageId")?;
        if !self.texts.contains(&id) {
            return Err(format!("{kind} for text message {id} that is not open"));
        }
        if kind == "TEXT_MESSAGE_END" {
            self.texts.remove(&id);
        } else if event["delta"].as_str().is_none_or(str::is_empty) {
            return Err("TEXT_MESSAGE_CONTENT with an empty delta".into());
        }
        Ok(())
    }

    fn step(&mut self, kind: &str, event: &Value) -> Result<(), String> {
        let name = id(event, "stepName")?;
        if kind == "STEP_STARTED" && !self.steps.insert(name.clone()) {
            return Err("step started twice".into());
        }
        if kind == "STEP_FINISHED" && !self.steps.remove(&name) {
            return Err("STEP_FINISHED for a step that is not open".into());
        }
        Ok(())
    }

    fn reasoning(&mut self, kind: &str, event: &Value) -> Result<(), String> {
        let id = id(event, "messageId")?;
        if kind == "REASONING_START" {
            self.reasoning.insert(id);
        } else if !self.reasoning.remove(&id) {
            return Err("REASONING_END without REASONING_START".into());
        }
        Ok(())
    }

    fn reasoning_message(&mut self, kind: &str, event: &Value) -> Result<(), String> {
        if kind == "REASONING_MESSAGE_START" {
            if event["role"] != "reasoning" {
                return Err("REASONING_MESSAGE_START without role reasoning".into());
            }
            self.reasoning_messages.insert(id(event, "messageId")?);
            return Ok(());
        }
        let id = id(event, "messageId")?;
        if !self.reasoning_messages.contains(&id) {
            return Err(format!("{kind} for a reasoning message that is not open"));
        }
        if kind == "REASONING_MESSAGE_END" {
            self.reasoning_messages.remove(&id);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn catches_what_the_client_rejects() {
        let ok = vec![
            json!({"type":"RUN_STARTED","threadId":"t","runId":"r"}),
            json!({"type":"RUN_FINISHED","threadId":"t","runId":"r"}),
        ];
        assert!(verify_run(&ok).is_ok());
        let mut after = ok.clone();
        after.push(json!({"type":"STEP_STARTED","stepName":"x"}));
        assert!(verify_run(&after).is_err());
        let open = vec![
            ok[0].clone(),
            json!({"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}),
            ok[1].clone(),
        ];
        assert!(verify_run(&open).is_err());
        let float = vec![
            ok[0].clone(),
            json!({"type":"RUN_FINISHED","threadId":"t","runId":"r","timestamp":1.5}),
        ];
        assert!(verify_run(&float).is_err());
        assert!(parse_sse("data: {\"type\":\"X\"}\r\n\r\n").is_err());
    }
}
