use super::*;
use crate::agent::subagents::record::is_child_id;
use crate::protocol::events::RecordedEvent;
use crate::protocol::verify::verify_run;

const ID: &str = "sa-0123456789ab";

fn event(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

/// The parent's stream around a child's events: the parent calls the sub-agent, the child's
/// events go through `retagger`, then the parent's result; as its client gets them.
fn parent_stream(retagger: &mut Retagger, child: &[Value], failed: bool) -> Vec<Value> {
    let mut events = vec![
        json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
        json!({"type": "TOOL_CALL_START", "toolCallId": "call_p", "toolCallName": "researcher", "parentMessageId": "m_p"}),
        json!({"type": "TOOL_CALL_END", "toolCallId": "call_p"}),
    ];
    let mut out: Vec<Event> = retagger
        .started("researcher", "Finds facts", "call_p", Some("m_p"))
        .into_iter()
        .collect();
    out.extend(
        child
            .iter()
            .flat_map(|value| retagger.forward(event(value.clone()))),
    );
    if failed {
        out.extend(retagger.failed("MODEL_ERROR", "boom"));
    } else {
        out.extend(retagger.finished(Some("done".into()), None, json!({})));
    }
    events.extend(
        out.into_iter()
            .map(|event| serde_json::from_slice(&RecordedEvent::new(1, event, 1).json).unwrap()),
    );
    events.push(json!({"type": "TOOL_CALL_RESULT", "messageId": "m_r", "toolCallId": "call_p", "content": "done", "role": "tool"}));
    events.push(json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}));
    events
}

/// A child's run as its own log holds it: its own step, text and tool call, a sub-agent of its
/// own (already attributed by the child), and its run-level events.
fn child_run() -> Vec<Value> {
    vec![
        json!({"type": "RUN_STARTED", "threadId": "tc", "runId": "rc", "timestamp": 5}),
        json!({"type": "STATE_SNAPSHOT", "snapshot": {"secret": 1}}),
        json!({"type": "STEP_STARTED", "stepName": "model_turn_1"}),
        json!({"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"}),
        json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Let me check. "}),
        json!({"type": "TEXT_MESSAGE_END", "messageId": "m1"}),
        json!({"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "checker", "parentMessageId": "m1"}),
        json!({"type": "STEP_FINISHED", "stepName": "model_turn_1"}),
        json!({"type": "TOOL_CALL_END", "toolCallId": "c1"}),
        json!({"type": "SUBAGENT_STARTED", "subagentRunId": "sa-999999999999", "name": "checker", "parentToolCallId": "c1", "parentMessageId": "m1"}),
        json!({"type": "STEP_STARTED", "stepName": "model_turn_1", "subagentRunId": "sa-999999999999"}),
        json!({"type": "TEXT_MESSAGE_START", "messageId": "sa-999999999999:m1", "role": "assistant", "subagentRunId": "sa-999999999999"}),
        json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "sa-999999999999:m1", "delta": "ok", "subagentRunId": "sa-999999999999"}),
        json!({"type": "TEXT_MESSAGE_END", "messageId": "sa-999999999999:m1", "subagentRunId": "sa-999999999999"}),
        json!({"type": "STEP_FINISHED", "stepName": "model_turn_1", "subagentRunId": "sa-999999999999"}),
        json!({"type": "SUBAGENT_FINISHED", "subagentRunId": "sa-999999999999", "result": "ok"}),
        json!({"type": "TOOL_CALL_RESULT", "messageId": "m2", "toolCallId": "c1", "content": "ok", "role": "tool"}),
        json!({"type": "STEP_STARTED", "stepName": "model_turn_2"}),
        json!({"type": "TEXT_MESSAGE_START", "messageId": "m3", "role": "assistant"}),
        json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m3", "delta": "The moon is "}),
        json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m3", "delta": "far."}),
        json!({"type": "TEXT_MESSAGE_END", "messageId": "m3"}),
        json!({"type": "STEP_FINISHED", "stepName": "model_turn_2"}),
        json!({"type": "MESSAGES_SNAPSHOT", "messages": []}),
        json!({"type": "RUN_FINISHED", "threadId": "tc", "runId": "rc"}),
    ]
}

#[test]
fn attributed_child_events_are_namespaced_tagged_and_pass_the_client_s_rules() {
    let mut retagger = Retagger::new(ID.into(), Visibility::Attributed, None);
    let events = parent_stream(&mut retagger, &child_run(), false);
    verify_run(&events).unwrap_or_else(|err| panic!("{err}: {events:#?}"));
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert!(!kinds.contains(&"STATE_SNAPSHOT") && !kinds.contains(&"MESSAGES_SNAPSHOT"));
    assert_eq!(kinds.iter().filter(|k| **k == "RUN_STARTED").count(), 1);
    let text = events
        .iter()
        .find(|e| e["type"] == "TEXT_MESSAGE_START")
        .unwrap();
    assert_eq!(text["messageId"], format!("{ID}:m1"));
    assert_eq!(text["subagentRunId"], ID);
    assert!(text.get("timestamp").is_none_or(|t| t == 1));
    let grandchild = events
        .iter()
        .filter(|e| e["type"] == "SUBAGENT_STARTED")
        .nth(1)
        .unwrap();
    assert_eq!(grandchild["subagentRunId"], format!("{ID}:sa-999999999999"));
    assert_eq!(grandchild["parentSubagentRunId"], ID);
    assert_eq!(grandchild["parentToolCallId"], format!("{ID}:c1"));
    let nested = events.iter().find(|e| e["delta"] == "ok").unwrap();
    assert_eq!(nested["subagentRunId"], format!("{ID}:sa-999999999999"));
    assert_eq!(nested["messageId"], format!("{ID}:sa-999999999999:m1"));
    assert_eq!(retagger.answer(), Some("The moon is far."));
}

#[test]
fn inline_child_events_carry_no_sub_agent_events_and_no_tags() {
    let mut retagger = Retagger::new(ID.into(), Visibility::Inline, None);
    let events = parent_stream(&mut retagger, &child_run(), false);
    verify_run(&events).unwrap_or_else(|err| panic!("{err}: {events:#?}"));
    assert!(events.iter().all(|e| {
        !e["type"].as_str().unwrap().starts_with("SUBAGENT_") && e.get("subagentRunId").is_none()
    }));
    // Untagged steps share one scope: the child's and its own sub-agent's are kept apart.
    let steps: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "STEP_STARTED")
        .map(|e| e["stepName"].as_str().unwrap())
        .collect();
    assert_eq!(
        steps,
        [
            format!("{ID}:model_turn_1"),
            format!("{ID}:sa-999999999999:model_turn_1"),
            format!("{ID}:model_turn_2")
        ]
    );
}

#[test]
fn hidden_children_show_only_the_calls_that_ask_the_client() {
    let mut retagger = Retagger::new(ID.into(), Visibility::Hidden, Some("confirmAction".into()));
    let mut child = child_run();
    child.insert(
        child.len() - 2,
        json!({"type": "TOOL_CALL_START", "toolCallId": "c9", "toolCallName": "confirmAction"}),
    );
    child.insert(
        child.len() - 2,
        json!({"type": "TOOL_CALL_END", "toolCallId": "c9"}),
    );
    let events = parent_stream(&mut retagger, &child, false);
    verify_run(&events).unwrap();
    let shown: Vec<&str> = events
        .iter()
        .filter_map(|e| e.get("toolCallId").and_then(Value::as_str))
        .filter(|id| id.starts_with(ID))
        .collect();
    assert_eq!(shown, [format!("{ID}:c9"), format!("{ID}:c9")]);
    assert!(!events.iter().any(|e| e["type"] == "TEXT_MESSAGE_START"));
    let waiting = retagger.unanswered_confirms();
    assert_eq!(waiting.len(), 1);
    assert_eq!(
        (waiting[0].shown.as_str(), waiting[0].own.as_str()),
        (&*format!("{ID}:c9"), "c9")
    );
}

#[test]
fn a_child_that_fails_midway_has_what_it_opened_closed_before_its_error() {
    let child: Vec<Value> = child_run().into_iter().take(13).collect();
    for shown in [Visibility::Attributed, Visibility::Inline] {
        let mut retagger = Retagger::new(ID.into(), shown, None);
        let events = parent_stream(&mut retagger, &child, true);
        verify_run(&events).unwrap_or_else(|err| panic!("{shown:?}: {err}: {events:#?}"));
    }
    let mut retagger = Retagger::new(ID.into(), Visibility::Attributed, None);
    let events = parent_stream(&mut retagger, &child, true);
    let errors: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "SUBAGENT_ERROR")
        .collect();
    assert_eq!(errors.len(), 2, "the child's own sub-agent, then the child");
    assert_eq!(errors[1]["subagentRunId"], ID);
    assert_eq!(errors[1]["code"], "MODEL_ERROR");
}

#[test]
fn interrupts_and_long_or_strange_ids_are_made_the_parent_s() {
    let retagger = Retagger::new(ID.into(), Visibility::Attributed, None);
    let asked = Interrupt {
        id: "int-1".into(),
        reason: "tool_call".into(),
        message: None,
        tool_call_id: Some(ToolCallId::parse("c1", 128).unwrap()),
        response_schema: None,
        expires_at: None,
        subagent_run_id: None,
        metadata: None,
    };
    let (shown, own) = retagger.interrupts(vec![asked]).remove(0);
    assert_eq!(own, "int-1");
    assert_eq!(shown.id, format!("{ID}:int-1"));
    assert_eq!(shown.subagent_run_id.as_deref(), Some(ID));
    assert_eq!(shown.tool_call_id.unwrap().as_str(), format!("{ID}:c1"));
    let long = "x".repeat(200);
    let hashed = retagger.namespaced(&long);
    assert!(hashed.len() < 64 && hashed.starts_with(ID), "{hashed}");
    assert_eq!(
        hashed,
        retagger.namespaced(&long),
        "the same id maps the same way"
    );
    assert_ne!(retagger.namespaced("a b"), format!("{ID}:a b"));
    assert!(is_child_id(&retagger.namespaced("m1")) && !is_child_id("sa-12:m1"));
}

#[test]
fn a_continued_child_streams_again_the_calls_its_results_answer() {
    let mut retagger = Retagger::new(ID.into(), Visibility::Attributed, None);
    // The child's resumed run: its snapshot names the call it made before, then the result.
    let child = vec![
        json!({"type": "RUN_STARTED", "threadId": "tc", "runId": "rc2"}),
        json!({"type": "MESSAGES_SNAPSHOT", "messages": [
            {"id": "u1", "role": "user", "content": "what time is it"},
            {"id": "m1", "role": "assistant", "toolCalls": [
                {"id": "c1", "type": "function", "function": {"name": "get_current_time", "arguments": "{}"}}]}]}),
        json!({"type": "TOOL_CALL_RESULT", "messageId": "m2", "toolCallId": "c1", "content": "noon", "role": "tool"}),
        json!({"type": "TEXT_MESSAGE_START", "messageId": "m3", "role": "assistant"}),
        json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m3", "delta": "It is noon."}),
        json!({"type": "TEXT_MESSAGE_END", "messageId": "m3"}),
    ];
    let events = parent_stream(&mut retagger, &child, false);
    verify_run(&events).unwrap();
    let kinds: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| {
            e["toolCallId"]
                .as_str()
                .is_some_and(|id| id.starts_with(ID))
        })
        .map(|e| {
            (
                e["type"].as_str().unwrap(),
                e["subagentRunId"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("TOOL_CALL_START", ID),
            ("TOOL_CALL_ARGS", ID),
            ("TOOL_CALL_END", ID),
            ("TOOL_CALL_RESULT", ID)
        ]
    );
}
