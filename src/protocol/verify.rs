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

/// Checks one run's events. Returns the first violation.
pub fn verify_run(events: &[Value]) -> Result<(), String> {
    let kind = |event: &Value| event["type"].as_str().unwrap_or_default().to_owned();
    match events.first().map(kind).as_deref() {
        Some("RUN_STARTED") => {}
        // A run refused before it started (the interrupt rules): one RUN_ERROR, nothing else.
        Some("RUN_ERROR") if events.len() == 1 => return Ok(()),
        other => return Err(format!("first event is {other:?}, not RUN_STARTED")),
    }
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
    let (mut texts, mut calls, mut steps, mut reasoning, mut reasoning_messages) = (
        HashSet::new(),
        HashSet::new(),
        HashSet::new(),
        HashSet::new(),
        HashSet::new(),
    );
    let mut seen_text_ids = HashSet::new();
    for event in events {
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
        match kind(event).as_str() {
            "RUN_STARTED" if event != &events[0] => return Err("a second RUN_STARTED".into()),
            "TEXT_MESSAGE_START" => {
                let id = id(event, "messageId")?;
                if !texts.insert(id.clone()) {
                    return Err(format!("text message {id} started twice"));
                }
                seen_text_ids.insert(id);
            }
            "TEXT_MESSAGE_CONTENT" | "TEXT_MESSAGE_END" => {
                let id = id(event, "messageId")?;
                if !texts.contains(&id) {
                    return Err(format!(
                        "{} for text message {id} that is not open",
                        kind(event)
                    ));
                }
                if kind(event) == "TEXT_MESSAGE_END" {
                    texts.remove(&id);
                } else if event["delta"].as_str().is_none_or(str::is_empty) {
                    return Err("TEXT_MESSAGE_CONTENT with an empty delta".into());
                }
            }
            "TOOL_CALL_START" => {
                let id = id(event, "toolCallId")?;
                if !calls.insert(id.clone()) {
                    return Err(format!("tool call {id} started twice"));
                }
            }
            "TOOL_CALL_ARGS" | "TOOL_CALL_END" => {
                let id = id(event, "toolCallId")?;
                if !calls.contains(&id) {
                    return Err(format!(
                        "{} for tool call {id} that is not open",
                        kind(event)
                    ));
                }
                if kind(event) == "TOOL_CALL_END" {
                    calls.remove(&id);
                }
            }
            "STEP_STARTED" => {
                let name = id(event, "stepName")?;
                if !steps.insert(name) {
                    return Err("step started twice".into());
                }
            }
            "STEP_FINISHED" => {
                let name = id(event, "stepName")?;
                if !steps.remove(&name) {
                    return Err("STEP_FINISHED for a step that is not open".into());
                }
            }
            "REASONING_START" => {
                reasoning.insert(id(event, "messageId")?);
            }
            "REASONING_END" => {
                let id = id(event, "messageId")?;
                if !reasoning.remove(&id) {
                    return Err("REASONING_END without REASONING_START".into());
                }
            }
            "REASONING_MESSAGE_START" => {
                if event["role"] != "reasoning" {
                    return Err("REASONING_MESSAGE_START without role reasoning".into());
                }
                reasoning_messages.insert(id(event, "messageId")?);
            }
            "REASONING_MESSAGE_CONTENT" | "REASONING_MESSAGE_END" => {
                let id = id(event, "messageId")?;
                if !reasoning_messages.contains(&id) {
                    return Err(format!(
                        "{} for a reasoning message that is not open",
                        kind(event)
                    ));
                }
                if kind(event) == "REASONING_MESSAGE_END" {
                    reasoning_messages.remove(&id);
                }
            }
            "RUN_FINISHED" => {
                let all_closed = texts.is_empty()
                    && calls.is_empty()
                    && steps.is_empty()
                    && reasoning.is_empty()
                    && reasoning_messages.is_empty();
                if !all_closed {
                    return Err("something is still open at RUN_FINISHED".into());
                }
            }
            _ => {}
        }
    }
    Ok(())
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
