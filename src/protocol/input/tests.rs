use super::*;
use crate::protocol::ids::MessageId;
use crate::protocol::message::{Role, UserContent, UserPart};
use serde_json::json;

fn parse(value: Value) -> Result<RunInput, InputError> {
    parse_run_input(value.to_string().as_bytes(), &Limits::default())
}

fn field_of(result: Result<RunInput, InputError>) -> String {
    result.unwrap_err().field().unwrap_or("-").to_owned()
}

#[test]
fn parses_the_body_agui_client_1_0_sends() {
    let input = parse(json!({
        "threadId": "550e8400-e29b-41d4-a716-446655440000", "runId": "run_001",
        "protocolVersion": "1.0", "state": {}, "tools": [], "context": [], "forwardedProps": {},
        "messages": [{"id": "msg_1", "role": "user", "content": "hello"}]
    }))
    .unwrap();
    assert_eq!(input.run_id.as_str(), "run_001");
    assert_eq!(input.messages.len(), 1);
    assert_eq!(input.messages[0].role(), Role::User);
    assert_eq!(input.state, Some(json!({})));
}

#[test]
fn parses_snake_case_keys_null_state_and_string_parameters() {
    let input = parse(json!({
        "thread_id": "t1", "run_id": "r1", "state": null,
        "messages": [
            {"id": "u1", "role": "user", "content": "hi"},
            {"id": "a1", "role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"id": "t1", "role": "tool", "tool_call_id": "c1", "content": "done"}
        ],
        "tools": [{"name": "f", "description": "d", "parameters": "{\"type\":\"object\"}"}],
        "forwarded_props": {"client_time": {"device_timezone": "Asia/Shanghai"}},
        "someFutureField": 1
    }))
    .unwrap();
    assert_eq!(input.thread_id.unwrap().as_str(), "t1");
    assert_eq!(input.state, None);
    assert_eq!(input.tools[0].parameters, json!({"type": "object"}));
    assert_eq!(input.messages[1].tool_calls()[0].id.as_str(), "c1");
    assert_eq!(
        input.forwarded_props.device_timezone,
        Some(chrono_tz::Asia::Shanghai)
    );
}

#[test]
fn accepts_legacy_binary_and_1_0_image_parts_by_url() {
    let input = parse(json!({"threadId": "t", "runId": "r", "messages": [{"id": "u", "role": "user", "content": [
        {"type": "text", "text": "what is this"},
        {"type": "binary", "mimeType": "image/png", "url": "https://example.com/a.png"},
        {"type": "image", "source": {"type": "url", "value": "https://example.com/b.jpg", "mimeType": "image/jpeg"}}
    ]}]}))
    .unwrap();
    let Message::User {
        content: UserContent::Parts(parts),
        ..
    } = &input.messages[0]
    else {
        panic!("expected parts")
    };
    assert_eq!(parts.len(), 3);
}

#[test]
fn keeps_reasoning_messages_and_drops_activity_messages() {
    let input = parse(json!({"messages": [
        {"id": "r", "role": "reasoning", "content": "thinking", "encryptedValue": "signature:abc"},
        {"id": "a", "role": "activity", "activityType": "x", "content": {}},
        {"id": "u", "role": "user", "content": "hi"}
    ]}))
    .unwrap();
    assert_eq!(input.messages.len(), 2);
    assert_eq!(
        input.messages[0],
        Message::Reasoning {
            id: MessageId::parse("r", 128).unwrap(),
            content: "thinking".into(),
            encrypted_value: Some("signature:abc".into()),
        }
    );
    assert!(
        input.thread_id.is_none(),
        "a missing threadId starts a new thread"
    );
}

#[test]
fn malformed_json_is_a_syntax_error() {
    let err = parse_run_input(b"{\"messages\": [", &Limits::default()).unwrap_err();
    assert!(matches!(err, InputError::Syntax(_)), "{err:?}");
}

#[test]
fn wrong_shapes_name_the_field() {
    assert_eq!(field_of(parse(json!({"threadId": "t"}))), "body");
    assert_eq!(
        field_of(parse(
            json!({"messages": [{"id": "u", "role": "robot", "content": "x"}]})
        )),
        "messages[0].role"
    );
    assert_eq!(
        field_of(parse(
            json!({"messages": [{"role": "user", "content": "x"}]})
        )),
        "messages[0]"
    );
    assert_eq!(
        field_of(parse(
            json!({"messages": [{"id": "u", "role": "user", "content": 5}]})
        )),
        "messages[0].content"
    );
    assert_eq!(
        field_of(parse(json!({"threadId": "a b", "messages": []}))),
        "threadId"
    );
    assert_eq!(
        field_of(parse(
            json!({"messages": [], "tools": [{"name": "bad name"}]})
        )),
        "tools[0].name"
    );
    assert_eq!(
        field_of(parse(
            json!({"messages": [], "tools": [{"name": "f", "parameters": "{nope"}]})
        )),
        "tools[0].parameters"
    );
    assert_eq!(
        field_of(parse(
            json!({"messages": [], "tools": [{"name": "f", "parameters": {"type": 7}}]})
        )),
        "tools[0].parameters"
    );
}

#[test]
fn duplicate_message_ids_and_tool_names_are_refused() {
    let dup = parse(json!({"messages": [
        {"id": "u", "role": "user", "content": "a"}, {"id": "u", "role": "user", "content": "b"}]}));
    assert_eq!(field_of(dup), "messages[1].id");
    let dup_tools = parse(json!({"messages": [], "tools": [{"name": "f"}, {"name": "f"}]}));
    assert_eq!(field_of(dup_tools), "tools[1].name");
}

#[test]
fn payload_run_id_and_message_limits_refuse_with_their_messages() {
    let limits = Limits::default();
    let too_big = vec![b' '; limits.max_payload_bytes + 1];
    assert_eq!(
        parse_run_input(&too_big, &limits).unwrap_err(),
        InputError::TooLarge { limit: 262_144 }
    );

    let long_run = parse(json!({"runId": "r".repeat(129), "messages": []})).unwrap_err();
    assert_eq!(
        long_run.to_string(),
        "runId: runId exceeds length limit of 128 characters"
    );

    let many: Vec<Value> = (0..201)
        .map(|i| json!({"id": format!("m{i}"), "role": "user", "content": "x"}))
        .collect();
    let too_many = parse(json!({"messages": many})).unwrap_err();
    assert!(
        too_many
            .to_string()
            .contains("RunAgentInput.messages exceeds limit")
    );

    let long_text =
        parse(json!({"messages": [{"id": "u", "role": "user", "content": "x".repeat(10_001)}]}))
            .unwrap_err();
    assert!(
        long_text
            .to_string()
            .contains("user message text exceeds limit")
    );

    let image = |i: usize| json!({"type": "binary", "mimeType": "image/png", "url": format!("https://e.com/{i}.png")});
    let four = parse(
        json!({"messages": [{"id": "u", "role": "user", "content": [image(1), image(2), image(3), image(4)]}]}),
    );
    assert!(
        four.unwrap_err()
            .to_string()
            .contains("Too many attachments")
    );
}

fn parts_of(input: &RunInput) -> &[UserPart] {
    let Message::User {
        content: UserContent::Parts(parts),
        ..
    } = &input.messages[0]
    else {
        panic!("expected parts")
    };
    parts
}

fn one_part(part: Value) -> Result<RunInput, InputError> {
    parse(json!({"messages": [{"id": "u", "role": "user", "content": [part]}]}))
}

#[test]
fn accepts_every_media_part_by_url_or_inline_data_in_1_0_shape() {
    let input = parse(json!({"messages": [{"id": "u", "role": "user", "content": [
        {"type": "image", "source": {"type": "data", "value": "iVBORw0KGgo=", "mimeType": "image/png"}},
        {"type": "audio", "source": {"type": "data", "value": "UklGRg==", "mimeType": "audio/wav"}},
        {"type": "document", "source": {"type": "url", "value": "https://e.com/a.pdf"}, "metadata": {"filename": "a.pdf", "other": 1}},
    ]}]}))
    .unwrap();
    let parts = parts_of(&input);
    assert_eq!(
        serde_json::to_value(parts).unwrap(),
        json!([
            {"type": "image", "source": {"type": "data", "value": "iVBORw0KGgo=", "mimeType": "image/png"}},
            {"type": "audio", "source": {"type": "data", "value": "UklGRg==", "mimeType": "audio/wav"}},
            {"type": "document", "source": {"type": "url", "value": "https://e.com/a.pdf"}, "metadata": {"filename": "a.pdf"}},
        ])
    );
    let video = one_part(json!({"type": "video", "source": {"type": "data", "value": "AAAA", "mimeType": "video/mp4"}})).unwrap();
    assert!(matches!(parts_of(&video)[0], UserPart::Video(_)));
}

#[test]
fn legacy_binary_parts_and_data_urls_become_1_0_parts() {
    for (part, expected) in [
        (
            json!({"type": "binary", "mimeType": "application/pdf", "data": "JVBERi0=", "filename": "r.pdf"}),
            json!({"type": "document", "source": {"type": "data", "value": "JVBERi0=", "mimeType": "application/pdf"}, "metadata": {"filename": "r.pdf"}}),
        ),
        (
            json!({"type": "binary", "mimeType": "audio/mpeg", "url": "https://e.com/a.mp3"}),
            json!({"type": "audio", "source": {"type": "url", "value": "https://e.com/a.mp3", "mimeType": "audio/mpeg"}}),
        ),
        (
            json!({"type": "binary", "mimeType": "image/png", "data": "aGk=", "url": "https://e.com/a.png"}),
            json!({"type": "image", "source": {"type": "data", "value": "aGk=", "mimeType": "image/png"}}),
        ),
        (
            json!({"type": "image", "source": {"type": "url", "value": "data:image/gif;base64,R0lGOA=="}}),
            json!({"type": "image", "source": {"type": "data", "value": "R0lGOA==", "mimeType": "image/gif"}}),
        ),
    ] {
        let input = one_part(part.clone()).unwrap();
        assert_eq!(
            serde_json::to_value(&parts_of(&input)[0]).unwrap(),
            expected,
            "{part}"
        );
        // What the client gets back in a snapshot parses to the same message.
        let again = parse(json!({"messages": &input.messages})).unwrap();
        assert_eq!(again.messages, input.messages);
    }
}

#[test]
fn attachments_are_checked_and_refusals_name_the_field() {
    let refused = |part: Value| {
        let err = one_part(part).unwrap_err();
        (err.field().unwrap_or("-").to_owned(), err.to_string())
    };
    let cases = [
        (
            json!({"type": "binary", "mimeType": "image/png"}),
            "messages[0].content[0]",
            "requires url or data",
        ),
        (
            json!({"type": "binary", "mimeType": "image/png", "data": "not base64!"}),
            "messages[0].content[0].source.value",
            "standard base64",
        ),
        (
            json!({"type": "binary", "mimeType": "image/png", "data": ""}),
            "messages[0].content[0].source.value",
            "empty",
        ),
        (
            json!({"type": "binary", "mimeType": "image/png", "url": "file:///etc/passwd"}),
            "messages[0].content[0]",
            "http(s) URL",
        ),
        (
            json!({"type": "binary", "mimeType": "image png", "data": "aGk="}),
            "messages[0].content[0].source.mimeType",
            "media type",
        ),
        (
            json!({"type": "binary", "mimeType": "application/pdf", "data": "aGk=", "filename": "a\u{7}b"}),
            "messages[0].content[0].filename",
            "file name",
        ),
        (
            json!({"type": "image", "source": {"type": "data", "value": "aGk="}}),
            "messages[0].content[0].source.mimeType",
            "needs its mimeType",
        ),
        (
            json!({"type": "image", "source": {"type": "data", "value": "aGk=", "mimeType": "application/pdf"}}),
            "messages[0].content[0].source.mimeType",
            "image/*",
        ),
        (
            json!({"type": "audio", "source": {"type": "url", "value": "https://e.com/a", "mimeType": "video/mp4"}}),
            "messages[0].content[0].source.mimeType",
            "audio/*",
        ),
        (
            json!({"type": "image", "source": {"type": "url", "value": "data:image/png,rawbytes"}}),
            "messages[0].content[0].source.value",
            "base64",
        ),
        (
            json!({"type": "image", "source": {"type": "url", "value": "data:text/html;base64,@@@@"}}),
            "messages[0].content[0].source.value",
            "standard base64",
        ),
        (
            json!({"type": "document", "source": {"type": "url", "value": "https://e.com/a"}, "metadata": {"filename": 7}}),
            "messages[0].content[0].metadata.filename",
            "string",
        ),
        (
            json!({"type": "image", "source": {"type": "file", "value": ""}}),
            "messages[0].content[0].source.value",
            "file handle",
        ),
        (
            json!({"text": "a part without a type"}),
            "messages[0].content[0]",
            "type",
        ),
    ];
    for (part, field, message) in cases {
        let (got_field, got_message) = refused(part.clone());
        assert_eq!(got_field, field, "{part}");
        assert!(got_message.contains(message), "{part}: {got_message}");
    }
}

#[test]
fn inline_data_is_bounded_by_its_decoded_size() {
    let limits = Limits {
        max_inline_attachment_bytes: 3,
        ..Limits::default()
    };
    let with = |data: &str| {
        let body = json!({"messages": [{"id": "u", "role": "user", "content": [
            {"type": "image", "source": {"type": "data", "value": data, "mimeType": "image/png"}}]}]});
        parse_run_input(body.to_string().as_bytes(), &limits)
    };
    assert!(with("YWJj").is_ok(), "3 bytes");
    let err = with("YWJjZA==").unwrap_err();
    assert_eq!(err.field(), Some("messages[0].content[0].source.value"));
    assert!(
        err.to_string().contains("exceeds the limit of 3 bytes"),
        "{err}"
    );
    let huge = "A".repeat(1_000_000);
    assert!(with(&huge).unwrap_err().to_string().contains("exceeds"));
    let none = Limits {
        max_inline_attachment_bytes: 0,
        ..Limits::default()
    };
    let body = json!({"messages": [{"id": "u", "role": "user", "content": [
        {"type": "binary", "mimeType": "image/png", "data": "YWJj"}]}]});
    assert!(parse_run_input(body.to_string().as_bytes(), &none).is_err());
}

#[test]
fn an_invalid_device_timezone_is_refused() {
    let err = parse(json!({"messages": [], "forwardedProps": {"client_time": {"device_timezone": "Mars/Olympus"}}})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "forwardedProps.client_time.device_timezone: invalid client_time.device_timezone"
    );
}

#[test]
fn a_click_on_a_surface_is_read_from_forwarded_props() {
    let input = parse(
        json!({"threadId": "t", "runId": "r", "messages": [], "forwardedProps": {
            "a2uiCatalogAvailable": true,
            "a2uiAction": {"userAction": {
                "name": "submit", "surfaceId": "signup", "sourceComponentId": "send",
                "timestamp": "2026-11-28T10:00:00.000Z", "context": {"email": "ada@example.com"},
                "dataContextPath": "/"
            }}
        }}),
    )
    .unwrap();
    assert!(input.forwarded_props.a2ui_catalog_available);
    let action = input.forwarded_props.a2ui_action.unwrap();
    assert_eq!(
        (action.name.as_str(), action.surface_id.as_str()),
        ("submit", "signup")
    );
    assert_eq!(action.source_component_id.as_deref(), Some("send"));
    assert_eq!(action.context["email"], json!("ada@example.com"));
    let plain = parse(json!({"threadId": "t", "runId": "r", "messages": []})).unwrap();
    assert!(!plain.forwarded_props.a2ui_catalog_available);
    assert_eq!(plain.forwarded_props.a2ui_action, None);
}

#[test]
fn a_malformed_click_is_refused_naming_its_field() {
    let with = |action: Value| {
        parse(
            json!({"threadId": "t", "runId": "r", "messages": [], "forwardedProps": {"a2uiAction": action}}),
        )
    };
    assert_eq!(
        field_of(with(json!({"name": "x"}))),
        "forwardedProps.a2uiAction"
    );
    assert_eq!(
        field_of(with(json!({"userAction": {"surfaceId": "s"}}))),
        "forwardedProps.a2uiAction.userAction.name"
    );
    assert_eq!(
        field_of(with(
            json!({"userAction": {"name": "x", "surfaceId": "s", "context": [1]}})
        )),
        "forwardedProps.a2uiAction.userAction.context"
    );
    let huge = json!({"userAction": {"name": "x", "surfaceId": "s", "context": {"v": "a".repeat(20_000)}}});
    assert_eq!(
        field_of(with(huge)),
        "forwardedProps.a2uiAction.userAction.context"
    );
}

#[test]
fn parts_of_kinds_agui_does_not_describe_are_skipped_and_named_and_file_handles_kept() {
    let mut skipped = Vec::new();
    let content = content::parse_user_content(
        json!([
            {"type": "text", "text": "look"},
            {"type": "hologram", "uri": "https://e.com/h"},
            {"type": "image", "source": {"type": "carrier-pigeon", "value": "coo"}},
            {"type": "image", "source": {"type": "file", "value": "file-abc", "provider": "anthropic", "mimeType": "image/png"}},
        ]),
        "messages[0].content",
        &Limits::default(),
        &mut skipped,
    )
    .unwrap();
    let UserContent::Parts(parts) = content else {
        panic!("parts")
    };
    assert_eq!(parts.len(), 2);
    let UserPart::Image(handle) = &parts[1] else {
        panic!("an image")
    };
    assert_eq!(
        handle.source,
        crate::protocol::PartSource::File {
            value: "file-abc".into(),
            mime_type: Some("image/png".into()),
            provider: Some("anthropic".into()),
        }
    );
    let fields: Vec<&str> = skipped.iter().map(|part| part.field.as_str()).collect();
    assert_eq!(fields, ["messages[0].content[1]", "messages[0].content[2]"]);
    assert!(
        skipped[0].reason.contains("\"hologram\""),
        "{}",
        skipped[0].reason
    );
    assert!(
        skipped[1].reason.contains("\"carrier-pigeon\""),
        "{}",
        skipped[1].reason
    );
    // A message whose every part was skipped stays, with no text.
    let mut skipped = Vec::new();
    let content = content::parse_user_content(
        json!([{"type": "hologram"}]),
        "messages[0].content",
        &Limits::default(),
        &mut skipped,
    )
    .unwrap();
    assert_eq!(content, UserContent::Text(String::new()));
    // And the whole input parses: the run goes on without them.
    assert!(one_part(json!({"type": "hologram"})).is_ok());
}

#[test]
fn a_tool_result_s_text_parts_are_kept_and_the_rest_skipped_down_to_an_empty_answer() {
    let mut skipped = Vec::new();
    let video = json!({"type": "video", "source": {"type": "data", "value": "AAAA", "mimeType": "video/mp4"}});
    let text = content::tool_content(
        json!([{"type": "text", "text": "Invoice "}, video, {"type": "text", "text": "attached."}]),
        "messages[2].content",
        &mut skipped,
    );
    assert_eq!(text, "Invoice attached.");
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0].field, "messages[2].content[1]");
    assert!(skipped[0].reason.contains("a video part in a tool result"));
    let mut skipped = Vec::new();
    assert_eq!(content::tool_content(json!([video]), "c", &mut skipped), "");
    assert_eq!(skipped.len(), 1);
    // Structured results some clients send stay JSON text.
    let mut skipped = Vec::new();
    assert_eq!(
        content::tool_content(json!([{"id": 1}, {"id": 2}]), "c", &mut skipped),
        r#"[{"id":1},{"id":2}]"#
    );
    assert_eq!(
        content::tool_content(json!("done"), "c", &mut skipped),
        "done"
    );
    assert!(skipped.is_empty());
}
