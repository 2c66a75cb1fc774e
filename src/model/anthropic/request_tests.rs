use super::*;
use crate::model::ModelRequest;
use crate::protocol::{Attachment, MessageId, PartSource, ToolCallId};

fn mid(id: &str) -> MessageId {
    MessageId::parse(id, 128).unwrap()
}

fn settings() -> AnthropicSettings {
    AnthropicSettings {
        base_url: "http://127.0.0.1:9".into(),
        api_key: None,
        model: "claude-sonnet-4-5".into(),
        max_tokens: 8_192,
        thinking_budget_tokens: None,
        cache_control: false,
    }
}

fn thinking() -> AnthropicSettings {
    AnthropicSettings {
        thinking_budget_tokens: Some(2_048),
        ..settings()
    }
}

fn user(id: &str, text: &str) -> Message {
    Message::User {
        id: mid(id),
        content: UserContent::Text(text.into()),
        name: None,
    }
}

fn assistant(id: &str, text: Option<&str>, calls: Vec<ToolCall>) -> Message {
    Message::Assistant {
        id: mid(id),
        content: text.map(str::to_owned),
        tool_calls: calls,
        name: None,
        encrypted_value: None,
    }
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall::new(
        ToolCallId::parse(id, 128).unwrap(),
        name.into(),
        arguments.into(),
    )
}

fn result(id: &str, call: &str, content: &str, error: Option<&str>) -> Message {
    Message::Tool {
        id: mid(id),
        tool_call_id: ToolCallId::parse(call, 128).unwrap(),
        content: content.into(),
        error: error.map(str::to_owned),
        metadata: None,
    }
}

fn reasoning(id: &str, text: &str, value: Option<String>) -> Message {
    Message::Reasoning {
        id: mid(id),
        content: text.into(),
        encrypted_value: value,
    }
}

fn signed(signature: &str) -> Option<String> {
    Some(ReasoningArtefact::Signature(signature.into()).encode())
}

fn spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("{name} tool"),
        parameters: json!({"type": "object", "properties": {"timezone": {"type": "string"}}}),
    }
}

fn request(messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        messages,
        ..ModelRequest::default()
    }
}

fn roles(body: &Value) -> Vec<&str> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect()
}

/// A server-tool round trip with thinking: the signed thinking, the call, its result.
fn tool_loop() -> Vec<Message> {
    vec![
        user("u1", "what time is it?"),
        reasoning("r1", "The user wants the time.", signed("sig-1==")),
        reasoning(
            "r2",
            "",
            Some(ReasoningArtefact::Redacted(b"EmwKAhgBEgy3va3p".to_vec()).encode()),
        ),
        assistant(
            "a1",
            Some("Checking."),
            vec![call("toolu_1", "get_current_time", r#"{"timezone":"UTC"}"#)],
        ),
        result("t1", "toolu_1", "12:00", None),
    ]
}

#[test]
fn a_plain_request_has_model_max_tokens_stream_and_one_user_message() {
    let built = body(&request(vec![user("u1", "hello")]), &settings());
    assert!(!built.thinking);
    assert_eq!(
        built.body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 8_192,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}],
            "stream": true,
        })
    );
    let mut capped = request(vec![user("u1", "hello")]);
    capped.sampling.max_tokens = Some(300);
    assert_eq!(body(&capped, &settings()).body["max_tokens"], 300);
    // With thinking, the budget comes on top of the answer's allowance.
    let built = body(&capped, &thinking());
    assert!(built.thinking);
    assert_eq!(built.body["max_tokens"], 2_348);
    assert_eq!(
        built.body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2_048})
    );
}

#[test]
fn roles_alternate_from_a_user_turn_with_tool_results_first() {
    let messages = vec![
        assistant("a0", Some("Welcome back."), Vec::new()),
        user("u1", "time and files"),
        user("u2", "   "),
        user("u3", "please"),
        assistant(
            "a1",
            None,
            vec![
                call("c1", "get_current_time", r#"{"timezone":"UTC"}"#),
                call("c2", "search_local_files", "not json"),
            ],
        ),
        result("t1", "c1", "12:00", None),
        user("u4", "and hurry"),
        result("t2", "c2", "", Some("the disk is gone")),
    ];
    let mut request = request(messages);
    request.tools = vec![spec("get_current_time")];
    let built = body(&request, &settings()).body;
    assert_eq!(
        roles(&built),
        ["user", "assistant", "user", "assistant", "user"]
    );
    assert_eq!(
        built["messages"][0]["content"],
        json!([{"type": "text", "text": "(The conversation continues.)"}])
    );
    assert_eq!(
        built["messages"][2]["content"],
        json!([{"type": "text", "text": "time and files"}, {"type": "text", "text": "please"}])
    );
    assert_eq!(
        built["messages"][3]["content"],
        json!([
            {"type": "tool_use", "id": "c1", "name": "get_current_time", "input": {"timezone": "UTC"}},
            {"type": "tool_use", "id": "c2", "name": "search_local_files", "input": {}},
        ])
    );
    // Both results, before the user's words; the failed one flagged.
    assert_eq!(
        built["messages"][4]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "c1", "content": "12:00"},
            {"type": "tool_result", "tool_use_id": "c2", "content": "Error: the disk is gone", "is_error": true},
            {"type": "text", "text": "and hurry"},
        ])
    );
    // A tool the history calls that is no longer offered still has a definition.
    let names: Vec<&str> = built["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["get_current_time", "search_local_files"]);
    assert_eq!(
        built["tools"][0],
        json!({"name": "get_current_time", "description": "get_current_time tool",
               "input_schema": {"type": "object", "properties": {"timezone": {"type": "string"}}}})
    );
}

#[test]
fn system_prompt_summary_and_history_system_messages_are_system_blocks() {
    let mut request = request(vec![
        Message::Developer {
            id: mid("d"),
            content: "Prefer UTC.".into(),
            name: None,
        },
        user("u1", "hi"),
    ]);
    request.system = Some("Be brief.".into());
    request.summary = Some("Summary: the user is Sam.".into());
    let built = body(&request, &settings()).body;
    assert_eq!(
        built["system"],
        json!([
            {"type": "text", "text": "Be brief."},
            {"type": "text", "text": "Summary: the user is Sam."},
            {"type": "text", "text": "Prefer UTC."},
        ])
    );
    assert_eq!(roles(&built), ["user"]);
}

/// Every `cache_control` of a body, by where it is.
fn breakpoints(body: &Value) -> Vec<String> {
    let mut found = Vec::new();
    for (place, blocks) in [("system", &body["system"]), ("tools", &body["tools"])] {
        for (index, block) in blocks.as_array().into_iter().flatten().enumerate() {
            if block.get("cache_control").is_some() {
                assert_eq!(block["cache_control"], json!({"type": "ephemeral"}));
                found.push(format!("{place}.{index}"));
            }
        }
    }
    for (index, message) in body["messages"].as_array().unwrap().iter().enumerate() {
        for (block_index, block) in message["content"].as_array().unwrap().iter().enumerate() {
            if block.get("cache_control").is_some() {
                found.push(format!("messages.{index}.{block_index}"));
            }
        }
    }
    found
}

#[test]
fn cache_breakpoints_go_where_bedrock_puts_its_cache_points_four_at_most() {
    let cached = AnthropicSettings {
        cache_control: true,
        ..settings()
    };
    let mut request = request(tool_loop());
    request.system = Some("Be brief.".into());
    request.summary = Some("Summary.".into());
    request.tools = vec![spec("get_current_time"), spec("search_local_files")];
    let built = body(&request, &cached).body;
    // After the tools, the system prompt, the summary, and on the last user turn.
    assert_eq!(
        breakpoints(&built),
        ["system.0", "system.1", "tools.1", "messages.2.0"]
    );
    request.summary = None;
    assert_eq!(
        breakpoints(&body(&request, &cached).body),
        ["system.0", "tools.1", "messages.2.0"]
    );
    request.system = None;
    request.tools.clear();
    // The history's tool still has a definition, and it ends the tools.
    assert_eq!(
        breakpoints(&body(&request, &cached).body),
        ["tools.0", "messages.2.0"]
    );
    assert!(breakpoints(&body(&request, &settings()).body).is_empty());
}

#[test]
fn thinking_blocks_open_their_assistant_turn_byte_for_byte() {
    let built = body(&request(tool_loop()), &thinking());
    assert!(built.thinking);
    assert_eq!(
        built.body["messages"][1],
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "The user wants the time.", "signature": "sig-1=="},
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3p"},
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_current_time", "input": {"timezone": "UTC"}},
        ]})
    );
    // Without thinking nothing of the reasoning is sent.
    let plain = body(&request(tool_loop()), &settings()).body;
    assert_eq!(plain["messages"][1]["content"][0]["type"], "text");
    assert!(plain.get("thinking").is_none());
}

#[test]
fn reasoning_this_server_did_not_sign_is_dropped() {
    let item = ReasoningArtefact::Item(r#"{"model":"gpt-5","item":{"id":"rs_1"}}"#.into());
    let messages = vec![
        user("u1", "hi"),
        reasoning("r0", "a client's own reasoning", None),
        reasoning("r1", "an OpenAI summary", Some(item.encode())),
        reasoning("r2", "foreign", Some("gAAAA-encrypted".into())),
        reasoning(
            "r3",
            "",
            Some(ReasoningArtefact::Redacted(vec![0xff, 0xfe]).encode()),
        ),
        reasoning("r4", "kept", signed("sig-4")),
        assistant("a1", Some("Hello."), Vec::new()),
        // Reasoning not followed by its assistant message opens nothing.
        reasoning("r5", "orphan", signed("sig-5")),
        user("u2", "again"),
    ];
    let built = body(&request(messages), &thinking()).body;
    assert_eq!(
        built["messages"][1]["content"],
        json!([
            {"type": "thinking", "thinking": "kept", "signature": "sig-4"},
            {"type": "text", "text": "Hello."},
        ])
    );
    assert_eq!(roles(&built), ["user", "assistant", "user"]);
}

#[test]
fn a_tool_loop_that_began_without_thinking_continues_without_it() {
    // Thinking was off (or another provider answered) when the call was made.
    let mut messages = tool_loop();
    messages.retain(|m| !matches!(m, Message::Reasoning { .. }));
    let built = body(&request(messages.clone()), &thinking());
    assert!(!built.thinking);
    assert!(built.body.get("thinking").is_none());
    assert_eq!(built.body["max_tokens"], 8_192);
    // Once the user speaks again a new turn starts: thinking is back.
    messages.push(assistant("a2", Some("It is noon."), Vec::new()));
    messages.push(user("u2", "thanks"));
    assert!(body(&request(messages), &thinking()).thinking);
    // A later step of a loop that began with thinking needs none of its own.
    let mut later = tool_loop();
    later.push(assistant(
        "a2",
        None,
        vec![call("toolu_2", "get_current_time", "{}")],
    ));
    later.push(result("t2", "toolu_2", "12:01", None));
    assert!(body(&request(later), &thinking()).thinking);
}

#[test]
fn sampling_follows_what_claude_accepts() {
    let mut request = request(vec![user("u1", "hi")]);
    request.sampling = Sampling {
        temperature: Some(1.5),
        top_p: Some(0.9),
        max_tokens: None,
        stop: vec!["END".into(), " ".into()],
        seed: Some(7),
    };
    let built = body(&request, &settings()).body;
    // Claude's temperature ends at 1; it and top_p are not sent together; no seed.
    assert_eq!(built["temperature"], json!(1.0));
    assert!(built.get("top_p").is_none());
    assert!(built.get("seed").is_none());
    assert_eq!(built["stop_sequences"], json!(["END"]));
    request.sampling.temperature = None;
    assert_eq!(body(&request, &settings()).body["top_p"], json!(0.9));
    // With thinking: no temperature, top_p only from 0.95.
    request.sampling.temperature = Some(0.2);
    let built = body(&request, &thinking()).body;
    assert!(built.get("temperature").is_none() && built.get("top_p").is_none());
    request.sampling.temperature = None;
    request.sampling.top_p = Some(0.97);
    assert_eq!(body(&request, &thinking()).body["top_p"], json!(0.97));
}

#[test]
fn call_ids_the_api_would_refuse_get_a_stable_stand_in_on_both_ends() {
    let messages = vec![
        user("u1", "hi"),
        assistant("a1", None, vec![call("call:1.a", "get_current_time", "{}")]),
        result("t1", "call:1.a", "12:00", None),
    ];
    let built = body(&request(messages), &settings()).body;
    let id = built["messages"][1]["content"][0]["id"].as_str().unwrap();
    assert!(id.starts_with("toolu_") && id.len() == 30, "{id}");
    assert_eq!(built["messages"][2]["content"][0]["tool_use_id"], id);
    assert_eq!(tool_use_id("toolu_01A-b"), "toolu_01A-b");
    assert_eq!(tool_use_id("call:1.a"), id);
}

#[test]
fn user_parts_become_content_blocks() {
    let messages = vec![Message::User {
        id: mid("u1"),
        content: UserContent::Parts(vec![
            UserPart::Text {
                text: "what is this?".into(),
            },
            UserPart::Image(Attachment {
                source: PartSource::Data {
                    value: "AAEC".into(),
                    mime_type: "image/png".into(),
                },
                metadata: None,
            }),
            UserPart::Document(Attachment {
                source: PartSource::Url {
                    value: "https://example.com/a.pdf".into(),
                    mime_type: None,
                },
                metadata: None,
            }),
        ]),
        name: None,
    }];
    let built = body(&request(messages), &settings()).body;
    assert_eq!(
        built["messages"][0]["content"],
        json!([
            {"type": "text", "text": "what is this?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAEC"}},
            {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}},
        ])
    );
}

#[test]
fn a_forced_tool_is_named_and_that_call_goes_without_thinking() {
    let request = ModelRequest {
        messages: vec![user("u1", "what next?")],
        tools: vec![crate::model::ToolSpec {
            name: "copilotkitSuggest".into(),
            description: "Suggest what the user could say next".into(),
            parameters: json!({"type": "object", "properties": {}}),
        }],
        tool_choice: Some("copilotkitSuggest".into()),
        ..ModelRequest::default()
    };
    let forced = body(&request, &thinking());
    assert_eq!(
        forced.body["tool_choice"],
        json!({"type": "tool", "name": "copilotkitSuggest"})
    );
    assert!(
        !forced.thinking,
        "Claude refuses a forced tool while it thinks"
    );
    assert!(forced.body.get("thinking").is_none());
    let free = ModelRequest {
        tool_choice: None,
        ..request
    };
    let free = body(&free, &thinking());
    assert!(free.thinking);
    assert!(free.body.get("tool_choice").is_none());
}
