use super::*;
use serde_json::json;

// The contract's four request examples, verbatim.
const PLAIN_TEXT: &str = r#"{
  "threadId": "550e8400-e29b-41d4-a716-446655440000",
  "runId": "run-001",
  "state": {},
  "messages": [
    {
      "id": "msg-001",
      "role": "user",
      "content": "帮我查一下北京今天的天气"
    }
  ],
  "tools": [],
  "context": [],
  "forwardedProps": {
    "agent_type": "worker"
  }
}"#;

const MULTIMODAL: &str = r#"{
  "threadId": "550e8400-e29b-41d4-a716-446655440000",
  "runId": "run-002",
  "state": {},
  "messages": [
    {
      "id": "msg-001",
      "role": "user",
      "content": [
        {
          "type": "text",
          "text": "这张图片里的内容是什么?"
        },
        {
          "type": "binary",
          "mimeType": "image/png",
          "url": "https://storage.example.com/agent-inputs/user-123/image.png?signature=xxx"
        }
      ]
    }
  ],
  "tools": [],
  "context": [],
  "forwardedProps": {
    "agent_type": "worker"
  }
}"#;

const WITH_TOOLS: &str = r#"{
  "threadId": "550e8400-e29b-41d4-a716-446655440000",
  "runId": "run-003",
  "state": {},
  "messages": [
    {
      "id": "msg-001",
      "role": "user",
      "content": "北京天气怎么样?"
    }
  ],
  "tools": [
    {
      "name": "get_weather",
      "description": "获取指定城市的天气信息",
      "parameters": {
        "type": "object",
        "properties": {
          "city": {
            "type": "string",
            "description": "城市名称"
          }
        },
        "required": ["city"]
      }
    }
  ],
  "context": [],
  "forwardedProps": {
    "agent_type": "worker"
  }
}"#;

const WITH_CLIENT_TIME: &str = r#"{
  "threadId": "550e8400-e29b-41d4-a716-446655440000",
  "runId": "run-004",
  "state": {},
  "messages": [
    {
      "id": "msg-001",
      "role": "user",
      "content": "帮我明天早上9点创建一个日历"
    }
  ],
  "tools": [],
  "context": [],
  "forwardedProps": {
    "agent_type": "worker",
    "client_time": {
      "device_timezone": "America/Los_Angeles",
      "client_now_iso": "2026-03-16T09:12:33-07:00",
      "client_epoch_ms": 1773658353000
    }
  }
}"#;

// The contract's history example, verbatim.
const HISTORY: &str = r#"{
  "scope": "history_day",
  "threadId": "550e8400-e29b-41d4-a716-446655440000",
  "day": "2026-03-15",
  "hasMore": true,
  "messages": [
    {
      "id": "msg-001",
      "seq": 1,
      "role": "user",
      "content": "帮我创建一个日程",
      "attachments": [
        {
          "mimeType": "image/png",
          "url": "https://project.supabase.co/storage/v1/object/sign/agent-inputs/..."
        }
      ],
      "timestamp": "2026-03-15T10:00:00Z"
    },
    {
      "id": "msg-002",
      "seq": 2,
      "role": "assistant",
      "content": "好的,我来帮您创建日程。",
      "ui_schema": {
        "version": "2.0",
        "locale": "zh-CN",
        "status": "success",
        "theme": "default",
        "root": {
          "type": "stack",
          "appearance": "card",
          "children": [
            {"type": "text", "content": "日程已创建", "role": "title"},
            {"type": "badge", "label": "SUCCESS", "status": "success"},
            {"type": "text", "content": "您的会议日程创建成功", "role": "body"}
          ]
        }
      },
      "timestamp": "2026-03-15T10:00:05Z"
    }
  ]
}"#;

const UUID: &str = "550e8400-e29b-41d4-a716-446655440000";

fn parse(body: &Value) -> Result<V1RunRequest, V1AgentError> {
    parse_run_request(body.to_string().as_bytes(), &Limits::default())
}

fn message_of(body: &Value) -> String {
    parse(body).unwrap_err().to_string()
}

/// A valid request with the given user content and forwardedProps.
fn request(content: Value, forwarded: Value) -> Value {
    json!({
        "threadId": UUID, "runId": "run-1",
        "messages": [{"id": "u1", "role": "user", "content": content}],
        "forwardedProps": forwarded
    })
}

fn with_parts(parts: Value) -> Value {
    request(parts, json!({"agent_type": "worker"}))
}

fn png(url: &str) -> Value {
    json!({"type": "binary", "mimeType": "image/png", "url": url})
}

/// The compact form of a JSON text, keys in their written order (`preserve_order` is on).
fn compact(text: &str) -> String {
    serde_json::from_str::<Value>(text).unwrap().to_string()
}

#[test]
fn the_contract_s_plain_text_example_parses() {
    let request = parse_run_request(PLAIN_TEXT.as_bytes(), &Limits::default()).unwrap();
    assert_eq!(request.input.thread_id.unwrap().as_str(), UUID);
    assert_eq!(request.input.run_id.as_str(), "run-001");
    assert_eq!(request.agent_type, "worker");
    assert_eq!(request.client_time, None);
    assert!(request.attachments.is_empty());
    assert_eq!(
        request.input.messages,
        vec![Message::User {
            id: MessageId::parse("msg-001", 128).unwrap(),
            content: UserContent::Text("帮我查一下北京今天的天气".into()),
            name: None,
        }]
    );
}

#[test]
fn the_contract_s_multimodal_example_parses_with_its_attachment() {
    let request = parse_run_request(MULTIMODAL.as_bytes(), &Limits::default()).unwrap();
    let url = "https://storage.example.com/agent-inputs/user-123/image.png?signature=xxx";
    assert_eq!(
        request.attachments,
        vec![AttachmentRef {
            message: 0,
            part: 1,
            mime_type: "image/png".into(),
            url: url.into(),
        }]
    );
    let Message::User { content, .. } = &request.input.messages[0] else {
        panic!("expected a user message")
    };
    assert_eq!(content.text(), "这张图片里的内容是什么?");
}

#[test]
fn the_contract_s_tools_example_parses() {
    let request = parse_run_request(WITH_TOOLS.as_bytes(), &Limits::default()).unwrap();
    assert_eq!(request.input.tools.len(), 1);
    assert_eq!(request.input.tools[0].name, "get_weather");
    assert_eq!(
        request.input.tools[0].parameters["required"],
        json!(["city"])
    );
}

#[test]
fn the_contract_s_client_time_example_parses_and_sets_the_device_zone() {
    let request = parse_run_request(WITH_CLIENT_TIME.as_bytes(), &Limits::default()).unwrap();
    let time = request.client_time.unwrap();
    assert_eq!(time.device_timezone, chrono_tz::America::Los_Angeles);
    assert_eq!(time.client_now.to_rfc3339(), "2026-03-16T09:12:33-07:00");
    assert_eq!(time.client_epoch_ms, 1_773_658_353_000);
    assert_eq!(
        request.input.forwarded_props.device_timezone,
        Some(chrono_tz::America::Los_Angeles),
        "the agent reads the zone from the usual input"
    );
}

#[test]
fn an_oversized_payload_is_refused_before_parsing() {
    let limits = Limits::default();
    let body = vec![b' '; limits.max_payload_bytes + 1];
    let err = parse_run_request(&body, &limits).unwrap_err();
    assert_eq!(err, V1AgentError::TooLarge);
    assert_eq!(err.to_string(), "RunAgentInput payload exceeds size limit");
}

#[test]
fn every_row_of_the_validation_table_gives_its_message() {
    let worker = json!({"agent_type": "worker"});
    let many_messages: Vec<Value> = (0..201)
        .map(|i| json!({"id": format!("m{i}"), "role": "assistant", "content": "x"}))
        .collect();
    let cases = [
        (
            json!({"threadId": "thread-1", "runId": "r", "messages": [], "forwardedProps": worker}),
            "threadId must be a valid UUID",
        ),
        (
            json!({"threadId": UUID, "runId": "r".repeat(129), "messages": [], "forwardedProps": worker}),
            "runId exceeds length limit",
        ),
        (
            json!({"threadId": UUID, "runId": "r", "messages": many_messages, "forwardedProps": worker}),
            "RunAgentInput.messages exceeds limit",
        ),
        (
            request(json!("字".repeat(10_001)), worker.clone()),
            "RunAgentInput user message text exceeds limit",
        ),
        (
            request(json!("hi"), json!({})),
            "invalid RunAgentInput.forwardedProps",
        ),
        (
            json!({"threadId": UUID, "runId": "r", "forwardedProps": worker, "messages": [
                {"id": "u1", "role": "user", "content": "a"},
                {"id": "u2", "role": "user", "content": "b"}
            ]}),
            "RunAgentInput.messages must contain exactly one user message",
        ),
        (
            json!({"threadId": UUID, "runId": "r", "forwardedProps": worker, "messages": [
                {"id": "s1", "role": "system", "content": "be brief"},
                {"id": "u1", "role": "user", "content": "a"}
            ]}),
            "RunAgentInput.messages[0].role must be user",
        ),
        (
            with_parts(
                json!([{"type": "binary", "mimeType": "application/pdf", "url": "https://x.test/a.pdf"}]),
            ),
            "binary content requires image mimeType",
        ),
        (
            with_parts(json!([{"type": "binary", "mimeType": "image/png"}])),
            "binary content requires url",
        ),
        (
            with_parts(
                json!([{"type": "binary", "mimeType": "image/png", "url": "https://x.test/a.png", "data": "aGk="}]),
            ),
            "binary content data is not allowed",
        ),
        (
            with_parts(json!([
                png("https://x.test/1.png"),
                png("https://x.test/2.png"),
                png("https://x.test/3.png"),
                png("https://x.test/4.png")
            ])),
            "Too many attachments",
        ),
    ];
    for (body, expected) in cases {
        assert_eq!(message_of(&body), expected);
    }
    assert!(parse(&request(json!("字".repeat(10_000)), worker)).is_ok());
}

#[test]
fn every_row_of_the_client_time_table_gives_its_message() {
    let good = json!({
        "device_timezone": "America/Los_Angeles",
        "client_now_iso": "2026-03-16T09:12:33-07:00",
        "client_epoch_ms": 1773658353000_i64
    });
    let with = |key: &str, value: Value| {
        let mut time = good.clone();
        time[key] = value;
        request(
            json!("hi"),
            json!({"agent_type": "worker", "client_time": time}),
        )
    };
    let cases = [
        (
            with("device_timezone", json!("Mars/Olympus")),
            "invalid client_time.device_timezone",
        ),
        (
            with("device_timezone", json!(7)),
            "invalid client_time.device_timezone",
        ),
        (
            with("client_now_iso", json!("2026-03-16T09:12:33")),
            "invalid client_time.client_now_iso",
        ),
        (
            with("client_now_iso", json!("yesterday")),
            "invalid client_time.client_now_iso",
        ),
        (
            with("client_epoch_ms", json!(1773658353000.5)),
            "invalid client_time.client_epoch_ms",
        ),
        (
            with("client_epoch_ms", json!("1773658353000")),
            "invalid client_time.client_epoch_ms",
        ),
    ];
    for (body, expected) in cases {
        assert_eq!(message_of(&body), expected);
    }
    assert!(parse(&with("client_now_iso", json!("2026-03-16T16:12:33Z"))).is_ok());
}

#[test]
fn forwarded_props_allow_only_a_real_agent_type_and_client_time() {
    for forwarded in [
        json!(null),
        json!("worker"),
        json!({"agent_type": ""}),
        json!({"agent_type": "  "}),
        json!({"agent_type": 5}),
        json!({"agent_type": "memory"}),
        json!({"agent_type": "Memory"}),
        json!({"agent_type": "worker", "temperature": 0.2}),
        json!({"agent_type": "worker", "client_time": "now"}),
    ] {
        assert_eq!(
            message_of(&request(json!("hi"), forwarded.clone())),
            "invalid RunAgentInput.forwardedProps",
            "{forwarded}"
        );
    }
    let missing = json!({"threadId": UUID, "runId": "r", "messages": [{"id": "u", "role": "user", "content": "hi"}]});
    assert_eq!(message_of(&missing), "invalid RunAgentInput.forwardedProps");
    let null_time = request(
        json!("hi"),
        json!({"agent_type": "worker", "client_time": null}),
    );
    assert_eq!(parse(&null_time).unwrap().client_time, None);
}

#[test]
fn the_contract_s_table_order_decides_which_message_a_doubly_wrong_body_gets() {
    // A bad threadId beats a bad runId; a too-long text beats bad forwardedProps; bad
    // forwardedProps beat a missing user message.
    let body =
        json!({"threadId": "x", "runId": "r".repeat(129), "messages": [], "forwardedProps": {}});
    assert_eq!(message_of(&body), "threadId must be a valid UUID");
    let body = request(json!("a".repeat(10_001)), json!({}));
    assert_eq!(
        message_of(&body),
        "RunAgentInput user message text exceeds limit"
    );
    let body = json!({"threadId": UUID, "runId": "r", "messages": [], "forwardedProps": {}});
    assert_eq!(message_of(&body), "invalid RunAgentInput.forwardedProps");
    // Within a part: type, then url, then data.
    let part = json!([{"type": "binary", "mimeType": "text/plain", "data": "aGk="}]);
    assert_eq!(
        message_of(&with_parts(part)),
        "binary content requires image mimeType"
    );
    let part = json!([{"type": "binary", "mimeType": "image/png", "data": "aGk="}]);
    assert_eq!(message_of(&with_parts(part)), "binary content requires url");
}

#[test]
fn our_own_messages_cover_what_the_contract_does_not_name() {
    let limits = Limits::default();
    let of = |body: &[u8]| parse_run_request(body, &limits).unwrap_err();
    assert_eq!(of(b"{\"threadId\":").to_string(), msg::NOT_JSON);
    assert!(of(b"{\"threadId\":").is_syntax());
    assert_eq!(of(b"[]").to_string(), msg::NOT_OBJECT);
    assert!(!of(b"[]").is_syntax());
    let cases = [
        (json!({"runId": "r"}), "threadId is required"),
        (json!({"threadId": 5}), "threadId must be a valid UUID"),
        (json!({"threadId": UUID}), "runId is required"),
        (json!({"threadId": UUID, "runId": ""}), "runId is required"),
        (
            json!({"threadId": UUID, "runId": 7}),
            "runId must be a string",
        ),
        (
            json!({"threadId": UUID, "runId": "run 1"}),
            "runId may contain only letters, digits and - _ . : characters",
        ),
        (
            json!({"threadId": UUID, "runId": "r"}),
            "RunAgentInput.messages is required",
        ),
        (
            json!({"threadId": UUID, "runId": "r", "messages": {}}),
            "RunAgentInput.messages must be an array",
        ),
        (
            json!({"threadId": UUID, "thread_id": UUID}),
            "threadId and thread_id must not both be given",
        ),
    ];
    for (body, expected) in cases {
        assert_eq!(message_of(&body), expected);
    }
}

#[test]
fn thread_ids_are_hyphenated_uuids_of_either_case_kept_lowercase() {
    for bad in [
        "550e8400e29b41d4a716446655440000",
        "{550e8400-e29b-41d4-a716-446655440000}",
        "550e8400-e29b-41d4-a716-44665544000g",
        "550e8400-e29b-41d4-a716-4466554400000",
    ] {
        let mut body = request(json!("hi"), json!({"agent_type": "worker"}));
        body["threadId"] = json!(bad);
        assert_eq!(message_of(&body), "threadId must be a valid UUID", "{bad}");
    }
    let mut body = request(json!("hi"), json!({"agent_type": "worker"}));
    body["threadId"] = json!(UUID.to_ascii_uppercase());
    assert_eq!(
        parse(&body).unwrap().input.thread_id.unwrap().as_str(),
        UUID
    );
}

#[test]
fn snake_case_aliases_are_accepted() {
    let body = json!({
        "thread_id": UUID, "run_id": "run-9", "parent_run_id": "run-8",
        "messages": [
            {"id": "u1", "role": "user", "content": [
                {"type": "text", "text": "look"},
                {"type": "binary", "mime_type": "image/jpeg", "url": "https://x.test/a.jpg"}
            ]},
            {"id": "a1", "role": "assistant", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ]},
            {"id": "t1", "role": "tool", "tool_call_id": "c1", "content": "done"}
        ],
        "forwarded_props": {"agent_type": "worker", "client_time": {
            "device_timezone": "Asia/Shanghai",
            "client_now_iso": "2026-03-16T09:12:33+08:00",
            "client_epoch_ms": 1773623553000_i64
        }}
    });
    let request = parse(&body).unwrap();
    assert_eq!(request.input.run_id.as_str(), "run-9");
    assert_eq!(request.input.parent_run_id.unwrap().as_str(), "run-8");
    assert_eq!(request.input.messages[1].tool_calls()[0].id.as_str(), "c1");
    assert_eq!(request.attachments[0].mime_type, "image/jpeg");
    assert_eq!(
        request.input.forwarded_props.device_timezone,
        Some(chrono_tz::Asia::Shanghai)
    );
    let conflict = json!({"threadId": UUID, "runId": "r", "forwardedProps": {"agent_type": "w"}, "messages": [
        {"id": "t", "role": "tool", "toolCallId": "c1", "tool_call_id": "c2", "content": "x"}
    ]});
    assert_eq!(
        message_of(&conflict),
        "toolCallId and tool_call_id must not both be given"
    );
}

#[test]
fn image_parts_by_url_are_attachments_and_other_sources_are_refused() {
    let image = |source: Value| with_parts(json!([{"type": "image", "source": source}]));
    let request = parse(&image(
        json!({"type": "url", "value": "https://x.test/a.webp", "mimeType": "image/webp"}),
    ))
    .unwrap();
    assert_eq!(request.attachments[0].part, 0);
    assert_eq!(request.attachments[0].mime_type, "image/webp");
    let cases = [
        (
            json!({"type": "url", "value": "https://x.test/a.bmp", "mimeType": "image/bmp"}),
            "binary content requires image mimeType",
        ),
        (
            json!({"type": "url", "value": "https://x.test/a.png"}),
            "binary content requires image mimeType",
        ),
        (
            json!({"type": "data", "value": "aGk=", "mimeType": "image/png"}),
            "binary content requires url",
        ),
        (
            json!({"type": "url", "value": "data:image/png;base64,aGk=", "mimeType": "image/png"}),
            "binary content data is not allowed",
        ),
    ];
    for (source, expected) in cases {
        assert_eq!(message_of(&image(source)), expected);
    }
    let audio = with_parts(
        json!([{"type": "audio", "source": {"type": "url", "value": "https://x.test/a.mp3", "mimeType": "audio/mpeg"}}]),
    );
    assert_eq!(message_of(&audio), "binary content requires image mimeType");
    let data_url = with_parts(json!([png("DATA:image/png;base64,aGk=")]));
    assert_eq!(message_of(&data_url), "binary content data is not allowed");
}

#[test]
fn three_attachments_are_fine_and_remaining_input_errors_name_their_field() {
    let three = with_parts(json!([
        png("https://x.test/1.png"),
        png("https://x.test/2.png"),
        png("https://x.test/3.png")
    ]));
    assert_eq!(parse(&three).unwrap().attachments.len(), 3);
    let ftp = with_parts(json!([png("ftp://x.test/1.png")]));
    assert_eq!(
        message_of(&ftp),
        "messages[0].content[0]: attachment url must be an http(s) URL"
    );
}

#[test]
fn set_attachment_url_swaps_the_url_once() {
    let mut request = parse_run_request(MULTIMODAL.as_bytes(), &Limits::default()).unwrap();
    let at = request.attachments[0].clone();
    let internal = "s3://bucket/agent-inputs/user-123/image.png".to_owned();
    assert!(set_attachment_url(
        &mut request.input,
        &at,
        internal.clone()
    ));
    let Message::User {
        content: UserContent::Parts(parts),
        ..
    } = &request.input.messages[0]
    else {
        panic!("expected parts")
    };
    let UserPart::Image(attachment) = &parts[1] else {
        panic!("expected an image")
    };
    assert_eq!(
        attachment.source,
        PartSource::Url {
            value: internal,
            mime_type: Some("image/png".into())
        }
    );
    assert!(
        !set_attachment_url(&mut request.input, &at, "s3://other".into()),
        "a stale reference changes nothing"
    );
    let nowhere = AttachmentRef { part: 0, ..at };
    assert!(!set_attachment_url(
        &mut request.input,
        &nowhere,
        "s3://x".into()
    ));
}

#[test]
fn parse_client_time_reads_the_history_query_parameter() {
    let time = parse_client_time(&json!({
        "device_timezone": "Europe/Paris",
        "client_now_iso": "2026-03-16T17:12:33+01:00",
        "client_epoch_ms": 1773677553000_i64,
        "extra": true
    }))
    .unwrap();
    assert_eq!(time.device_timezone, chrono_tz::Europe::Paris);
    assert_eq!(
        parse_client_time(&json!([])).unwrap_err().to_string(),
        "invalid RunAgentInput.forwardedProps"
    );
    assert_eq!(
        parse_client_time(&json!({"device_timezone": "Europe/Paris"}))
            .unwrap_err()
            .to_string(),
        "invalid client_time.client_now_iso"
    );
}

#[test]
fn task_accepted_serialises_in_the_contract_s_shape() {
    let accepted = TaskAccepted {
        task_id: "task-1".into(),
        thread_id: ThreadId::parse(UUID, 128).unwrap(),
        run_id: RunId::parse("run-001", 128).unwrap(),
        created: true,
    };
    let text = serde_json::to_string(&accepted).unwrap();
    assert_eq!(
        text,
        r#"{"taskId":"task-1","threadId":"550e8400-e29b-41d4-a716-446655440000","runId":"run-001","created":true}"#
    );
    assert_eq!(
        serde_json::from_str::<TaskAccepted>(&text).unwrap(),
        accepted
    );
}

fn documented_history(ui_schema: Option<Value>) -> HistorySnapshot {
    let at = |text: &str| DateTime::parse_from_rfc3339(text).unwrap().to_utc();
    HistorySnapshot::new(
        Some(ThreadId::parse(UUID, 128).unwrap()),
        NaiveDate::from_ymd_opt(2026, 3, 15),
        true,
        vec![
            HistoryMessage::User {
                id: MessageId::parse("msg-001", 128).unwrap(),
                seq: 1,
                role: UserRole::User,
                content: "帮我创建一个日程".into(),
                attachments: vec![HistoryAttachment {
                    mime_type: "image/png".into(),
                    url: "https://project.supabase.co/storage/v1/object/sign/agent-inputs/..."
                        .into(),
                }],
                timestamp: at("2026-03-15T10:00:00Z"),
            },
            HistoryMessage::Assistant {
                id: MessageId::parse("msg-002", 128).unwrap(),
                seq: 2,
                role: AssistantRole::Assistant,
                content: "好的,我来帮您创建日程。".into(),
                ui_schema,
                timestamp: at("2026-03-15T10:00:05Z"),
            },
        ],
    )
}

#[test]
fn the_history_snapshot_serialises_byte_for_byte_as_the_contract_s_example() {
    let documented: Value = serde_json::from_str(HISTORY).unwrap();
    let schema = documented["messages"][1]["ui_schema"].clone();
    let snapshot = documented_history(Some(schema));
    assert_eq!(serde_json::to_string(&snapshot).unwrap(), compact(HISTORY));
    assert_eq!(
        serde_json::from_str::<HistorySnapshot>(HISTORY).unwrap(),
        snapshot
    );
}

#[test]
fn without_a_compiled_schema_ui_schema_is_an_explicit_null() {
    // The contract's example shows a compiled UI schema, which we never produce: ours is null.
    let mut expected: Value = serde_json::from_str(HISTORY).unwrap();
    expected["messages"][1]["ui_schema"] = Value::Null;
    let snapshot = documented_history(None);
    let text = serde_json::to_string(&snapshot).unwrap();
    assert_eq!(text, expected.to_string());
    assert_eq!(
        serde_json::from_str::<HistorySnapshot>(&text).unwrap(),
        snapshot
    );
    let empty = HistorySnapshot::empty(None);
    assert_eq!(
        serde_json::to_string(&empty).unwrap(),
        r#"{"scope":"history_day","threadId":null,"day":null,"hasMore":false,"messages":[]}"#
    );
}

#[test]
fn history_message_shows_users_and_speaking_assistants_only() {
    let id = |text: &str| MessageId::parse(text, 128).unwrap();
    let user = Message::User {
        id: id("u1"),
        content: UserContent::Parts(vec![
            UserPart::Text { text: "a".into() },
            UserPart::Image(crate::protocol::Attachment {
                source: PartSource::Url {
                    value: "s3://bucket/a.png".into(),
                    mime_type: Some("image/png".into()),
                },
                metadata: None,
            }),
            UserPart::Text { text: "b".into() },
        ]),
        name: None,
    };
    // 10:00:00.999 is shown as 10:00:00: whole seconds, as the contract shows them.
    let at_ms = 1_773_568_800_999;
    let mut shown = history_message(7, at_ms, &user).unwrap();
    for url in shown.attachment_urls_mut() {
        *url = format!("https://signed.test/{url}");
    }
    assert_eq!(
        serde_json::to_value(&shown).unwrap(),
        json!({"id": "u1", "seq": 7, "role": "user", "content": "a\nb",
            "attachments": [{"mimeType": "image/png", "url": "https://signed.test/s3://bucket/a.png"}],
            "timestamp": "2026-03-15T10:00:00Z"})
    );

    let assistant = |content: Option<&str>| Message::Assistant {
        id: id("a1"),
        content: content.map(str::to_owned),
        tool_calls: Vec::new(),
        name: None,
        encrypted_value: None,
    };
    assert_eq!(
        serde_json::to_value(history_message(8, at_ms, &assistant(Some("ok"))).unwrap()).unwrap(),
        json!({"id": "a1", "seq": 8, "role": "assistant", "content": "ok", "ui_schema": null,
            "timestamp": "2026-03-15T10:00:00Z"})
    );
    assert_eq!(history_message(8, at_ms, &assistant(None)), None);
    assert_eq!(history_message(8, at_ms, &assistant(Some(""))), None);
    let hidden = [
        Message::Tool {
            id: id("t1"),
            tool_call_id: crate::protocol::ToolCallId::parse("c1", 128).unwrap(),
            content: "done".into(),
            error: None,
            metadata: None,
        },
        Message::System {
            id: id("s1"),
            content: "x".into(),
            name: None,
        },
        Message::Developer {
            id: id("d1"),
            content: "x".into(),
            name: None,
        },
        Message::Reasoning {
            id: id("r1"),
            content: "x".into(),
            encrypted_value: None,
        },
    ];
    for message in &hidden {
        assert_eq!(history_message(9, at_ms, message), None, "{message:?}");
    }
}
