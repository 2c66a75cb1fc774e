use super::*;
use crate::dialects::Encoder;
use crate::protocol::events::{Event, RunErrorCode};
use crate::protocol::events::{ReasoningRole, RunUsage, TextRole, TokenUsage, ToolRole};
use crate::protocol::ids::{MessageId, RunId, ThreadId, ToolCallId};
use crate::protocol::input::{InputError, Limits};
use bytes::Bytes;
use serde_json::{Value, json};

fn mid(id: &str) -> MessageId {
    MessageId::parse(id, 128).unwrap()
}

fn cid(id: &str) -> ToolCallId {
    ToolCallId::parse(id, 128).unwrap()
}

fn decode(frames: Vec<Bytes>) -> Vec<Value> {
    frames
        .iter()
        .map(|frame| {
            let text = std::str::from_utf8(frame).unwrap();
            let json = text
                .strip_prefix("data: ")
                .unwrap()
                .strip_suffix("\n\n")
                .unwrap();
            serde_json::from_str(json).unwrap()
        })
        .collect()
}

fn run(events: Vec<Event>) -> (Vec<Value>, AgentScopeEncoder) {
    let mut encoder = AgentScopeEncoder::new();
    let mut frames = Vec::new();
    for event in &events {
        frames.extend(encoder.encode(event));
    }
    (decode(frames), encoder)
}

fn started() -> Event {
    Event::RunStarted {
        thread_id: ThreadId::parse("t1", 128).unwrap(),
        run_id: RunId::parse("r1", 128).unwrap(),
        parent_run_id: None,
        protocol_version: None,
        metadata: None,
    }
}

fn finished() -> Event {
    Event::RunFinished {
        outcome: None,
        thread_id: ThreadId::parse("t1", 128).unwrap(),
        run_id: RunId::parse("r1", 128).unwrap(),
        usage: RunUsage(vec![TokenUsage {
            input_tokens: 3,
            output_tokens: 4,
            total_tokens: 7,
            ..TokenUsage::default()
        }]),
    }
}

fn shape(frames: &[Value]) -> Vec<String> {
    frames
        .iter()
        .map(|f| {
            format!(
                "{}:{}:{}",
                f["object"].as_str().unwrap(),
                f["type"].as_str().unwrap_or(""),
                f["status"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn text_streams_as_deltas_then_the_full_text() {
    let (frames, encoder) = run(vec![
        started(),
        Event::StepStarted {
            step_name: "s".into(),
        },
        Event::TextMessageStart {
            message_id: mid("m1"),
            role: TextRole::Assistant,
        },
        Event::TextMessageContent {
            message_id: mid("m1"),
            delta: "Hel".into(),
        },
        Event::TextMessageContent {
            message_id: mid("m1"),
            delta: "lo".into(),
        },
        Event::TextMessageEnd {
            message_id: mid("m1"),
        },
        finished(),
    ]);
    assert_eq!(
        shape(&frames),
        [
            "response::created",
            "response::in_progress",
            "message:message:created",
            "message:message:in_progress",
            "content:text:in_progress",
            "content:text:in_progress",
            "content:text:completed",
            "message:message:completed",
            "response::completed",
        ]
    );
    let sequence: Vec<u64> = frames
        .iter()
        .map(|f| f["sequence_number"].as_u64().unwrap())
        .collect();
    assert_eq!(sequence, (0..9).collect::<Vec<_>>());
    assert_eq!(frames[0]["session_id"], "t1");
    assert_eq!(frames[4]["msg_id"], "m1");
    assert_eq!(frames[4]["delta"], true);
    assert_eq!(frames[6]["text"], "Hello");
    assert_eq!(frames[6]["delta"], false);
    let last = &frames[8];
    assert_eq!(last["usage"]["total_tokens"], 7);
    assert_eq!(last["output"][0]["content"][0]["text"], "Hello");
    assert!(last["completed_at"].is_i64());
    let response = encoder.response();
    assert_eq!(response["status"], "completed");
    assert!(response.get("sequence_number").is_none());
}

#[test]
fn parallel_tool_calls_do_not_interleave_and_results_name_their_tool() {
    let start = |id: &str, name: &str| Event::ToolCallStart {
        tool_call_id: cid(id),
        tool_call_name: name.into(),
        parent_message_id: Some(mid("turn")),
    };
    let args = |id: &str, delta: &str| Event::ToolCallArgs {
        tool_call_id: cid(id),
        delta: delta.into(),
    };
    let (frames, _) = run(vec![
        started(),
        start("c1", "a"),
        args("c1", "{\"x\":"),
        start("c2", "b"),
        args("c2", "{}"),
        args("c1", "1}"),
        Event::ToolCallEnd {
            tool_call_id: cid("c1"),
        },
        Event::ToolCallEnd {
            tool_call_id: cid("c2"),
        },
        Event::ToolCallResult {
            message_id: mid("res1"),
            tool_call_id: cid("c1"),
            content: "ok".into(),
            role: ToolRole::Tool,
        },
        finished(),
    ]);
    let messages: Vec<(&str, &str)> = frames
        .iter()
        .filter(|f| f["object"] == "message")
        .map(|f| (f["id"].as_str().unwrap(), f["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        messages,
        [
            ("turn", "created"),
            ("turn", "in_progress"),
            ("turn", "completed"),
            ("turn_2", "created"),
            ("turn_2", "in_progress"),
            ("turn_2", "completed"),
            ("res1", "created"),
            ("res1", "in_progress"),
            ("res1", "completed"),
        ]
    );
    let completed: Vec<&Value> = frames
        .iter()
        .filter(|f| f["object"] == "content" && f["status"] == "completed")
        .collect();
    assert_eq!(
        completed[0]["data"],
        json!({"call_id": "c1", "name": "a", "arguments": "{\"x\":1}"})
    );
    assert_eq!(
        completed[1]["data"],
        json!({"call_id": "c2", "name": "b", "arguments": "{}"})
    );
    assert_eq!(
        completed[2]["data"],
        json!({"call_id": "c1", "name": "a", "output": "ok"})
    );
    let output = &frames.last().unwrap()["output"];
    assert_eq!(output[2]["type"], "function_call_output");
    assert_eq!(output[2]["role"], "tool");
}

#[test]
fn reasoning_is_a_reasoning_message_and_errors_fail_the_response() {
    let (frames, encoder) = run(vec![
        started(),
        Event::ReasoningStart {
            message_id: mid("r"),
        },
        Event::ReasoningMessageStart {
            message_id: mid("r"),
            role: ReasoningRole::Reasoning,
        },
        Event::ReasoningMessageContent {
            message_id: mid("r"),
            delta: "hmm".into(),
        },
        Event::ReasoningMessageEnd {
            message_id: mid("r"),
        },
        Event::ReasoningEnd {
            message_id: mid("r"),
        },
        Event::TextMessageStart {
            message_id: mid("m"),
            role: TextRole::Assistant,
        },
        Event::TextMessageContent {
            message_id: mid("m"),
            delta: "par".into(),
        },
        Event::RunError {
            message: "boom".into(),
            code: RunErrorCode::ModelError,
            usage: RunUsage::default(),
        },
    ]);
    assert_eq!(frames[2]["type"], "reasoning");
    assert_eq!(frames[2]["role"], "assistant");
    let last = frames.last().unwrap();
    assert_eq!(last["status"], "failed");
    assert_eq!(
        last["error"],
        json!({"code": "MODEL_ERROR", "message": "boom"})
    );
    assert_eq!(frames[frames.len() - 2]["status"], "incomplete");
    assert_eq!(encoder.response()["status"], "failed");
}

#[test]
fn a_request_becomes_the_equivalent_run_input() {
    let body = json!({
        "input": [
            {"id": "u1", "role": "user", "type": "message",
             "content": [{"type": "text", "text": "look"}, {"type": "image", "image_url": "https://example.com/a.png"}]},
            {"id": "a1", "role": "assistant", "type": "message", "content": [{"type": "text", "text": "Let me"}]},
            {"id": "a1_2", "role": "assistant", "type": "function_call",
             "content": [{"type": "data", "data": {"call_id": "c1", "name": "f", "arguments": "{}"}}]},
            {"id": "o1", "role": "tool", "type": "function_call_output",
             "content": [{"type": "data", "data": {"call_id": "c1", "output": "done"}}]},
            {"type": "reasoning", "role": "assistant", "content": [{"type": "text", "text": "x"}]}
        ],
        "stream": false,
        "session_id": "s-1",
        "temperature": 0.2,
        "tools": [{"type": "function", "function": {"name": "f", "description": "d",
                   "parameters": {"type": "object", "properties": {}}}}]
    });
    let request = parse_request(body.to_string().as_bytes(), &Limits::default()).unwrap();
    assert!(!request.stream);
    let input = request.input;
    assert_eq!(input.thread_id.unwrap().as_str(), "s-1");
    assert_eq!(input.tools[0].name, "f");
    let messages = serde_json::to_value(&input.messages).unwrap();
    assert_eq!(messages.as_array().unwrap().len(), 3);
    assert_eq!(messages[1]["id"], "a1");
    assert_eq!(messages[1]["content"], "Let me");
    assert_eq!(messages[1]["toolCalls"][0]["id"], "c1");
    assert_eq!(messages[2]["toolCallId"], "c1");
    assert_eq!(
        messages[0]["content"][1]["source"]["value"],
        "https://example.com/a.png"
    );
}

#[test]
fn sampling_fields_are_checked_and_passed_on_as_forwarded_props() {
    let limits = Limits::default();
    let body = json!({
        "input": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "temperature": 0.2, "top_p": 0.9, "max_tokens": 300, "stop": ["END"], "seed": 7,
        "n": 1, "model": "anything"
    });
    let request = parse_request(body.to_string().as_bytes(), &limits).unwrap();
    let sampling = request.input.forwarded_props.sampling;
    assert_eq!(sampling.temperature, Some(0.2));
    assert_eq!(sampling.top_p, Some(0.9));
    assert_eq!(sampling.max_tokens, Some(300));
    assert_eq!(sampling.stop, ["END"]);
    assert_eq!(sampling.seed, Some(7));
    for (body, field) in [
        (json!({"temperature": 9}), "temperature"),
        (json!({"top_p": 0}), "top_p"),
        (json!({"max_tokens": -1}), "max_tokens"),
        (json!({"stop": [""]}), "stop[0]"),
        (json!({"seed": "x"}), "seed"),
    ] {
        let mut body = body;
        body["input"] = json!([{"role": "user", "content": [{"type": "text", "text": "hi"}]}]);
        match parse_request(body.to_string().as_bytes(), &limits) {
            Err(InputError::Invalid { field: got, .. }) => assert_eq!(got, field, "{body}"),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn errors_name_the_agent_request_field() {
    let limits = Limits::default();
    let field = |body: Value| match parse_request(body.to_string().as_bytes(), &limits) {
        Err(InputError::Invalid { field, .. }) => field,
        other => panic!("{other:?}"),
    };
    assert_eq!(field(json!({})), "body");
    assert_eq!(
        field(
            json!({"input": [{"role": "user", "content": [{"type": "text", "text": "x".repeat(10_001)}]}]})
        ),
        "input[0].content"
    );
    assert_eq!(
        field(
            json!({"input": [{"role": "user", "content": [{"type": "image", "image_url": "data:image/png;base64,AA"}]}]})
        ),
        "input[0].content[0].image_url"
    );
    assert_eq!(
        field(
            json!({"input": [{"role": "user", "content": [{"type": "file", "file_url": "https://x"}]}]})
        ),
        "input[0].content[0]"
    );
    assert_eq!(
        field(
            json!({"input": [{"type": "function_call", "content": [{"type": "data", "data": {"call_id": "c", "name": "bad name"}}]}]})
        ),
        "input[0].content[0].data.name"
    );
    assert_eq!(
        field(
            json!({"input": [], "tools": [{"type": "function", "function": {"name": "bad name"}}]})
        ),
        "tools[0].function.name"
    );
    assert_eq!(field(json!({"input": [], "id": "r".repeat(129)})), "id");
    assert_eq!(
        field(json!({"input": [{"type": "mcp_approval_request"}]})),
        "input[0].type"
    );
    assert!(matches!(
        parse_request(b"{", &limits),
        Err(InputError::Syntax(_))
    ));
}

#[test]
fn a_refusal_is_a_failed_response() {
    let body = error_response_body("thread_busy", "busy");
    assert_eq!(body["object"], "response");
    assert_eq!(body["status"], "failed");
    assert_eq!(
        body["error"],
        json!({"code": "thread_busy", "message": "busy"})
    );
}
