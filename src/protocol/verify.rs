//! The ordering rules `@ag-ui/client`'s `verifyEvents` enforces, checked on decoded SSE events,
//! so tests (and captures) fail here before a real client would reject them.

use serde_json::Value;
use std::collections::{HashMap, HashSet};

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
    // One level down too, where the client looks: outcomes and their interrupts.
    if let Some(outcome) = event.get("outcome")
        && has_null(outcome)
    {
        return Err(format!("null inside the outcome of {event}"));
    }
    Ok(())
}

/// Whether `value` holds a `null` anywhere.
fn has_null(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.iter().any(has_null),
        Value::Object(fields) => fields.values().any(has_null),
        _ => false,
    }
}

/// Who produced an entity: the run's own agent (`None`) or the sub-agent of that id.
type Owner = Option<String>;

fn owner_of(event: &Value) -> Owner {
    event
        .get("subagentRunId")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// What is open so far in a run: every one must be closed by `RUN_FINISHED`. Ids belong to
/// whoever opened them (the client's owner rule), and steps are kept per owner.
#[derive(Default)]
struct Open {
    texts: HashSet<String>,
    calls: HashSet<String>,
    steps: HashSet<(Owner, String)>,
    reasoning: HashSet<String>,
    reasoning_messages: HashSet<String>,
    /// Who opened each message, tool call and reasoning id, kept for the whole run.
    owners: HashMap<(&'static str, String), Owner>,
    subagents: HashSet<String>,
    closed_subagents: HashSet<String>,
}

impl Open {
    fn apply(&mut self, kind: &str, event: &Value) -> Result<(), String> {
        match kind {
            "TEXT_MESSAGE_START" => {
                let id = id(event, "messageId")?;
                self.claim("message", &id, event)?;
                if !self.texts.insert(id.clone()) {
                    return Err(format!("text message {id} started twice"));
                }
            }
            "TEXT_MESSAGE_CONTENT" | "TEXT_MESSAGE_END" => self.text(kind, event)?,
            "TOOL_CALL_START" => {
                let id = id(event, "toolCallId")?;
                self.claim("call", &id, event)?;
                if let Some(parent) = event.get("parentMessageId").and_then(Value::as_str) {
                    self.agrees("message", parent, event)?;
                }
                if !self.calls.insert(id.clone()) {
                    return Err(format!("tool call {id} started twice"));
                }
            }
            "TOOL_CALL_ARGS" | "TOOL_CALL_END" => {
                let id = id(event, "toolCallId")?;
                if !self.calls.contains(&id) {
                    return Err(format!("{kind} for tool call {id} that is not open"));
                }
                self.agrees("call", &id, event)?;
                if kind == "TOOL_CALL_END" {
                    self.calls.remove(&id);
                }
            }
            "TOOL_CALL_RESULT" => {
                let id = id(event, "messageId")?;
                self.owners.insert(("message", id), owner_of(event));
            }
            "STEP_STARTED" | "STEP_FINISHED" => self.step(kind, event)?,
            "REASONING_START" | "REASONING_END" => self.reasoning(kind, event)?,
            "REASONING_MESSAGE_START" | "REASONING_MESSAGE_CONTENT" | "REASONING_MESSAGE_END" => {
                self.reasoning_message(kind, event)?;
            }
            "SUBAGENT_STARTED" | "SUBAGENT_FINISHED" | "SUBAGENT_ERROR" => {
                self.subagent(kind, event)?;
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
                if !self.subagents.is_empty() {
                    return Err(format!(
                        "sub-agents {:?} are still open at RUN_FINISHED",
                        self.subagents
                    ));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// An opener: the first one names the owner; a later opener of the same id must agree.
    fn claim(&mut self, bucket: &'static str, id: &str, event: &Value) -> Result<(), String> {
        match self.owners.get(&(bucket, id.to_owned())) {
            Some(_) => self.agrees(bucket, id, event),
            None => {
                self.owners.insert((bucket, id.to_owned()), owner_of(event));
                Ok(())
            }
        }
    }

    /// A tagged event on an entity must name the sub-agent that opened it.
    fn agrees(&self, bucket: &'static str, id: &str, event: &Value) -> Result<(), String> {
        let Some(tag) = owner_of(event) else {
            return Ok(());
        };
        match self.owners.get(&(bucket, id.to_owned())) {
            Some(owner) if owner.as_deref() != Some(tag.as_str()) => Err(format!(
                "{} tagged {tag} continues {bucket} {id}, which {owner:?} opened",
                kind(event)
            )),
            _ => Ok(()),
        }
    }

    fn subagent(&mut self, kind: &str, event: &Value) -> Result<(), String> {
        let subagent = id(event, "subagentRunId")?;
        if kind == "SUBAGENT_STARTED" {
            id(event, "name")?;
            if self.subagents.contains(&subagent) || self.closed_subagents.contains(&subagent) {
                return Err(format!("sub-agent {subagent} started twice in one run"));
            }
            if let Some(parent) = event.get("parentSubagentRunId").and_then(Value::as_str)
                && !self.subagents.contains(parent)
                && !self.closed_subagents.contains(parent)
            {
                return Err(format!(
                    "sub-agent {subagent} names {parent}, never started"
                ));
            }
            self.subagents.insert(subagent);
            return Ok(());
        }
        if kind == "SUBAGENT_ERROR" {
            id(event, "message")?;
        }
        if let Some(outcome) = event.get("outcome") {
            let ok = matches!(outcome["type"].as_str(), Some("success" | "suspended"))
                && outcome.get("interruptIds").is_none_or(|ids| {
                    ids.as_array()
                        .is_some_and(|ids| ids.iter().all(Value::is_string))
                });
            if !ok {
                return Err(format!("{kind} with outcome {outcome}"));
            }
        }
        if !self.subagents.remove(&subagent) {
            return Err(format!("{kind} for sub-agent {subagent} that is not open"));
        }
        self.closed_subagents.insert(subagent);
        Ok(())
    }

    fn text(&mut self, kind: &str, event: &Value) -> Result<(), String> {
        let id = id(event, "messageId")?;
        if !self.texts.contains(&id) {
            return Err(format!("{kind} for text message {id} that is not open"));
        }
        self.agrees("message", &id, event)?;
        if kind == "TEXT_MESSAGE_END" {
            self.texts.remove(&id);
        } else if event["delta"].as_str().is_none_or(str::is_empty) {
            return Err("TEXT_MESSAGE_CONTENT with an empty delta".into());
        }
        Ok(())
    }

    fn step(&mut self, kind: &str, event: &Value) -> Result<(), String> {
        let key = (owner_of(event), id(event, "stepName")?);
        if kind == "STEP_STARTED" && !self.steps.insert(key.clone()) {
            return Err(format!("step {key:?} started twice"));
        }
        if kind == "STEP_FINISHED" && !self.steps.remove(&key) {
            return Err(format!("STEP_FINISHED for step {key:?} that is not open"));
        }
        Ok(())
    }

    fn reasoning(&mut self, kind: &str, event: &Value) -> Result<(), String> {
        let id = id(event, "messageId")?;
        if kind == "REASONING_START" {
            self.claim("reasoning", &id, event)?;
            self.reasoning.insert(id);
        } else {
            self.agrees("reasoning", &id, event)?;
            if !self.reasoning.remove(&id) {
                return Err("REASONING_END without REASONING_START".into());
            }
        }
        Ok(())
    }

    fn reasoning_message(&mut self, kind: &str, event: &Value) -> Result<(), String> {
        if kind == "REASONING_MESSAGE_START" {
            if event["role"] != "reasoning" {
                return Err("REASONING_MESSAGE_START without role reasoning".into());
            }
            let id = id(event, "messageId")?;
            self.claim("reasoning", &id, event)?;
            self.reasoning_messages.insert(id);
            return Ok(());
        }
        let id = id(event, "messageId")?;
        if !self.reasoning_messages.contains(&id) {
            return Err(format!("{kind} for a reasoning message that is not open"));
        }
        self.agrees("reasoning", &id, event)?;
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

    /// The sub-agent rules of both clients' `verifyEvents`.
    #[test]
    fn catches_what_the_client_rejects_of_sub_agents() {
        let start = json!({"type":"RUN_STARTED","threadId":"t","runId":"r"});
        let finish = json!({"type":"RUN_FINISHED","threadId":"t","runId":"r"});
        let started = json!({"type":"SUBAGENT_STARTED","subagentRunId":"s1","name":"researcher"});
        let done = json!({"type":"SUBAGENT_FINISHED","subagentRunId":"s1"});
        let run = |middle: &[Value]| {
            let mut events = vec![start.clone()];
            events.extend_from_slice(middle);
            events.push(finish.clone());
            verify_run(&events)
        };
        let text = |kind: &str, id: &str, tag: Option<&str>| {
            let mut event =
                json!({"type": kind, "messageId": id, "role": "assistant", "delta": "x"});
            if let Some(tag) = tag {
                event["subagentRunId"] = json!(tag);
            }
            event
        };
        let step = |kind: &str, tag: Option<&str>| {
            let mut event = json!({"type": kind, "stepName": "model_turn_1"});
            if let Some(tag) = tag {
                event["subagentRunId"] = json!(tag);
            }
            event
        };
        assert!(run(&[started.clone(), done.clone()]).is_ok());
        assert!(
            run(std::slice::from_ref(&started))
                .unwrap_err()
                .contains("still open")
        );
        assert!(run(&[started.clone(), done.clone(), started.clone(), done.clone()]).is_err());
        assert!(run(std::slice::from_ref(&done)).is_err());
        let nested = json!({"type":"SUBAGENT_STARTED","subagentRunId":"s2","name":"n","parentSubagentRunId":"s9"});
        assert!(
            run(&[
                nested,
                json!({"type":"SUBAGENT_FINISHED","subagentRunId":"s2"})
            ])
            .is_err()
        );
        // A sub-agent continuing the parent's message, and the parent's steps kept apart.
        let continued = [
            started.clone(),
            text("TEXT_MESSAGE_START", "m1", None),
            text("TEXT_MESSAGE_CONTENT", "m1", Some("s1")),
            text("TEXT_MESSAGE_END", "m1", None),
            done.clone(),
        ];
        assert!(run(&continued).unwrap_err().contains("continues"));
        let own = [
            started.clone(),
            step("STEP_STARTED", None),
            step("STEP_STARTED", Some("s1")),
            text("TEXT_MESSAGE_START", "s1:m1", Some("s1")),
            text("TEXT_MESSAGE_CONTENT", "s1:m1", Some("s1")),
            text("TEXT_MESSAGE_END", "s1:m1", Some("s1")),
            step("STEP_FINISHED", Some("s1")),
            step("STEP_FINISHED", None),
            done.clone(),
        ];
        assert!(run(&own).is_ok());
        let wrong_step = [
            started.clone(),
            step("STEP_STARTED", None),
            step("STEP_FINISHED", Some("s1")),
            done.clone(),
        ];
        assert!(run(&wrong_step).is_err());
        let null_outcome = json!({"type":"SUBAGENT_FINISHED","subagentRunId":"s1","outcome":{"type":"suspended","interruptIds":null}});
        assert!(run(&[started, null_outcome]).is_err());
    }
}
