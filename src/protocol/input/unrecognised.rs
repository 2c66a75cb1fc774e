//! The members of a `RunAgentInput` the 1.1 schema does not describe (and that no client this
//! server accepts sends under another spelling): ignored by the parser, as AG-UI's processing
//! model asks of unrecognised material, and named in the log.

use serde_json::Value;

const INPUT: &[&str] = &[
    "threadId",
    "runId",
    "parentRunId",
    "state",
    "messages",
    "tools",
    "context",
    "forwardedProps",
    "protocolVersion",
    "resume",
    // snake_case, as some clients send it
    "thread_id",
    "run_id",
    "parent_run_id",
    "forwarded_props",
    "protocol_version",
];
const MESSAGE: &[&str] = &[
    "id",
    "role",
    "content",
    "name",
    "metadata",
    "encryptedValue",
    "encryptedValueType",
    "subagentRunId",
    "toolCalls",
    "toolCallId",
    "error",
    "activityType",
    "encrypted_value",
    "tool_calls",
    "tool_call_id",
];
const TOOL_CALL: &[&str] = &[
    "id",
    "type",
    "function",
    "metadata",
    "encryptedValue",
    "encryptedValueType",
    "encrypted_value",
];
const TOOL: &[&str] = &["name", "description", "parameters", "metadata"];
const CONTEXT: &[&str] = &["description", "value"];
const RESUME: &[&str] = &["interruptId", "status", "payload", "metadata"];

/// The paths of `input`'s members no schema definition names, e.g. `messages[0].sentiment`.
/// Content parts are judged where they are parsed (an unknown kind is skipped whole).
pub(crate) fn unrecognised(input: &Value) -> Vec<String> {
    let mut found = Vec::new();
    extra(input, INPUT, "", &mut found);
    for (list, known) in [("tools", TOOL), ("context", CONTEXT), ("resume", RESUME)] {
        each(input, list, |item, path| {
            extra(item, known, &path, &mut found)
        });
    }
    each(input, "messages", |message, path| {
        extra(message, MESSAGE, &path, &mut found);
        let calls = message
            .get("toolCalls")
            .or_else(|| message.get("tool_calls"));
        for (index, call) in calls
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            extra(
                call,
                TOOL_CALL,
                &format!("{path}.toolCalls[{index}]"),
                &mut found,
            );
        }
    });
    found
}

fn each(input: &Value, list: &str, mut visit: impl FnMut(&Value, String)) {
    for (index, item) in input
        .get(list)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        visit(item, format!("{list}[{index}]"));
    }
}

fn extra(value: &Value, known: &[&str], path: &str, found: &mut Vec<String>) {
    let Some(fields) = value.as_object() else {
        return;
    };
    for key in fields.keys().filter(|key| !known.contains(&key.as_str())) {
        found.push(if path.is_empty() {
            key.clone()
        } else {
            format!("{path}.{key}")
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_the_members_no_schema_definition_describes() {
        let input = json!({
            "threadId": "t", "runId": "r", "agentMood": "cheerful", "protocolVersion": "1.1",
            "messages": [
                {"id": "m1", "role": "user", "content": "hi", "sentiment": {"score": 1}},
                {"id": "m2", "role": "assistant", "toolCalls": [{"id": "c", "type": "function", "function": {}, "x": 1}]}
            ],
            "tools": [{"name": "f", "parameters": {}, "icon": "x"}],
            "resume": [{"interruptId": "i", "status": "resolved", "metadata": {"signed": true}}]
        });
        assert_eq!(
            unrecognised(&input),
            [
                "agentMood",
                "tools[0].icon",
                "messages[0].sentiment",
                "messages[1].toolCalls[0].x"
            ]
        );
        assert!(unrecognised(&json!({"thread_id": "t", "messages": []})).is_empty());
    }
}
