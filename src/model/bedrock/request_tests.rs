use super::*;
use crate::model::bedrock::media::s3_uri_for;
use crate::protocol::ToolCall;
use crate::protocol::{Attachment, MessageId, PartSource, ToolCallId};
use aws_sdk_bedrockruntime::types::{ImageFormat, ImageSource};

fn id(text: &str) -> MessageId {
    MessageId::parse(text.to_owned(), 100).unwrap()
}

fn call_id(text: &str) -> ToolCallId {
    ToolCallId::parse(text.to_owned(), 100).unwrap()
}

fn user(text: &str) -> Message {
    Message::User {
        id: id("u"),
        content: UserContent::Text(text.to_owned()),
        name: None,
    }
}

fn spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.to_owned(),
        description: format!("{name} tool"),
        parameters: json!({"type": "object", "properties": {"timezone": {"type": "string"}}}),
    }
}

fn roles(input: &ConverseInput) -> Vec<&str> {
    input.messages.iter().map(|m| m.role().as_str()).collect()
}

/// Two user messages, then an assistant turn calling two tools (one no longer offered), then
/// both tools' results (one an error).
fn a_turn_with_two_tool_results() -> ModelRequest {
    ModelRequest {
        system: Some("Be brief.".to_owned()),
        messages: vec![
            Message::Developer {
                id: id("d"),
                content: "Prefer UTC.".to_owned(),
                name: None,
            },
            user("time and files"),
            user("please"),
            Message::Assistant {
                id: id("a"),
                content: Some("Checking.".to_owned()),
                tool_calls: vec![
                    ToolCall::new(
                        call_id("c1"),
                        "get_current_time".into(),
                        r#"{"timezone":"UTC"}"#.into(),
                    ),
                    ToolCall::new(
                        call_id("c2"),
                        "search_local_files".into(),
                        "not json".into(),
                    ),
                ],
                name: None,
                encrypted_value: None,
            },
            Message::Tool {
                id: id("t1"),
                tool_call_id: call_id("c1"),
                content: "12:00".to_owned(),
                error: None,
                metadata: None,
            },
            Message::Tool {
                id: id("t2"),
                tool_call_id: call_id("c2"),
                content: String::new(),
                error: Some("denied".to_owned()),
                metadata: None,
            },
        ],
        tools: vec![spec("get_current_time")],
        ..ModelRequest::default()
    }
}

#[test]
fn tool_results_of_one_turn_share_one_user_message_and_roles_alternate() {
    let request = a_turn_with_two_tool_results();
    let input = converse_input(&request, false, CachePoints::Off).unwrap();
    assert_eq!(
        input.system,
        [
            SystemContentBlock::Text("Be brief.".into()),
            SystemContentBlock::Text("Prefer UTC.".into())
        ]
    );
    assert_eq!(roles(&input), ["user", "assistant", "user"]);
    assert_eq!(
        input.messages[0].content().len(),
        2,
        "two user messages merged"
    );
    let assistant = input.messages[1].content();
    assert_eq!(assistant[0], ContentBlock::Text("Checking.".into()));
    let ContentBlock::ToolUse(first) = &assistant[1] else {
        panic!("a toolUse block")
    };
    assert_eq!(first.tool_use_id(), "c1");
    assert_eq!(
        crate::model::bedrock::from_document(first.input()),
        json!({"timezone": "UTC"})
    );
    let ContentBlock::ToolUse(second) = &assistant[2] else {
        panic!("a toolUse block")
    };
    assert_eq!(
        crate::model::bedrock::from_document(second.input()),
        json!({})
    );
    let results: Vec<(&str, &ToolResultContentBlock)> = input.messages[2]
        .content()
        .iter()
        .map(|block| match block {
            ContentBlock::ToolResult(result) => (result.tool_use_id(), &result.content()[0]),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        results,
        [
            ("c1", &ToolResultContentBlock::Text("12:00".into())),
            ("c2", &ToolResultContentBlock::Text("Error: denied".into()))
        ]
    );
    // search_local_files is in the history but no longer offered: it still gets a spec.
    let names: Vec<&str> = input
        .tool_config
        .as_ref()
        .unwrap()
        .tools()
        .iter()
        .map(|tool| match tool {
            Tool::ToolSpec(spec) => spec.name(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(names, ["get_current_time", "search_local_files"]);
}

#[test]
fn no_tools_and_no_tool_blocks_means_no_tool_config() {
    let request = ModelRequest {
        system: None,
        messages: vec![user("hello")],
        tools: vec![],
        sampling: Default::default(),
        ..ModelRequest::default()
    };
    let input = converse_input(&request, false, CachePoints::Off).unwrap();
    assert!(input.tool_config.is_none());
    assert!(input.system.is_empty());
}

#[test]
fn a_history_starting_with_the_assistant_gets_a_user_opening_and_blank_text_is_dropped() {
    let request = ModelRequest {
        system: Some("  ".to_owned()),
        messages: vec![
            Message::Assistant {
                id: id("a"),
                content: Some("Hi, I am your assistant.".to_owned()),
                tool_calls: vec![],
                name: None,
                encrypted_value: None,
            },
            user("   "),
            user("hello"),
        ],
        tools: vec![],
        sampling: Default::default(),
        ..ModelRequest::default()
    };
    let input = converse_input(&request, false, CachePoints::Off).unwrap();
    assert_eq!(roles(&input), ["user", "assistant", "user"]);
    assert_eq!(
        input.messages[2].content(),
        [ContentBlock::Text("hello".into())]
    );
    assert!(input.system.is_empty());
}

#[test]
fn s3_images_become_s3_locations_and_other_urls_a_note_never_a_fetch() {
    let image = |url: &str, mime: Option<&str>| {
        UserPart::Image(Attachment {
            source: PartSource::Url {
                value: url.to_owned(),
                mime_type: mime.map(str::to_owned),
            },
            metadata: None,
        })
    };
    let request = ModelRequest {
        system: None,
        messages: vec![Message::User {
            id: id("u"),
            content: UserContent::Parts(vec![
                UserPart::Text {
                    text: "what is this".to_owned(),
                },
                image(
                    "https://my-bucket.s3.eu-west-1.amazonaws.com/uploads/cat%20photo.png?X-Amz-Signature=abc",
                    None,
                ),
                image("https://example.com/dog.jpg", Some("image/jpeg")),
            ]),
            name: None,
        }],
        tools: vec![],
        sampling: Default::default(),
        ..ModelRequest::default()
    };
    let input = converse_input(&request, false, CachePoints::Off).unwrap();
    let blocks = input.messages[0].content();
    let ContentBlock::Image(s3) = &blocks[1] else {
        panic!("{:?}", blocks[1])
    };
    assert_eq!(s3.format(), &ImageFormat::Png);
    let Some(ImageSource::S3Location(location)) = s3.source() else {
        panic!("an S3 location")
    };
    assert_eq!(location.uri(), "s3://my-bucket/uploads/cat photo.png");
    let ContentBlock::Text(note) = &blocks[2] else {
        panic!("{:?}", blocks[2])
    };
    assert!(note.contains("https://example.com/dog.jpg"));
}

#[test]
fn stored_attachment_paths_become_s3_locations_as_they_are() {
    let request = ModelRequest {
        system: None,
        messages: vec![Message::User {
            id: id("u"),
            content: UserContent::Parts(vec![UserPart::Image(Attachment {
                source: PartSource::Url {
                    value: "s3://inputs/agent-inputs/0123/4567.webp".to_owned(),
                    mime_type: Some("image/webp".to_owned()),
                },
                metadata: None,
            })]),
            name: None,
        }],
        tools: vec![],
        sampling: Default::default(),
        ..ModelRequest::default()
    };
    let input = converse_input(&request, false, CachePoints::Off).unwrap();
    let ContentBlock::Image(image) = &input.messages[0].content()[0] else {
        panic!("{:?}", input.messages[0].content())
    };
    assert_eq!(image.format(), &ImageFormat::Webp);
    let Some(ImageSource::S3Location(location)) = image.source() else {
        panic!("an S3 location")
    };
    assert_eq!(location.uri(), "s3://inputs/agent-inputs/0123/4567.webp");
    assert_eq!(location.bucket_owner(), None);
    assert_eq!(s3_uri_for("s3://Bad_Bucket/k.png"), None);
    assert_eq!(s3_uri_for("s3://bucket/"), None);
    assert_eq!(s3_uri_for("s3://bucket"), None);
}

#[test]
fn only_s3_hosts_map_to_s3_uris() {
    assert_eq!(
        s3_uri_for("https://s3.us-east-1.amazonaws.com/bucket/a/b.png").as_deref(),
        Some("s3://bucket/a/b.png")
    );
    assert_eq!(
        s3_uri_for("https://bucket.s3.amazonaws.com/k.gif").as_deref(),
        Some("s3://bucket/k.gif")
    );
    assert_eq!(s3_uri_for("http://bucket.s3.amazonaws.com/k.gif"), None);
    assert_eq!(
        s3_uri_for("https://bucket.s3.amazonaws.com.evil.example/k.gif"),
        None
    );
    assert_eq!(
        s3_uri_for("https://evil.example/s3.amazonaws.com/k.gif"),
        None
    );
    assert_eq!(
        s3_uri_for("https://dynamodb.us-east-1.amazonaws.com/x/y"),
        None
    );
    assert_eq!(s3_uri_for("https://bucket.s3.amazonaws.com/"), None);
}

fn reasoning(id_text: &str, text: &str, value: Option<&str>) -> Message {
    Message::Reasoning {
        id: id(id_text),
        content: text.to_owned(),
        encrypted_value: value.map(str::to_owned),
    }
}

fn calling(id_text: &str, call: &str) -> Message {
    Message::Assistant {
        id: id(id_text),
        content: None,
        tool_calls: vec![ToolCall::new(
            call_id(call),
            "get_current_time".into(),
            "{}".into(),
        )],
        name: None,
        encrypted_value: None,
    }
}

fn result(call: &str) -> Message {
    Message::Tool {
        id: id("t"),
        tool_call_id: call_id(call),
        content: "noon".into(),
        error: None,
        metadata: None,
    }
}

#[test]
fn signed_and_redacted_reasoning_open_the_next_assistant_message() {
    let request = ModelRequest {
        messages: vec![
            user("what time is it"),
            reasoning("r1", "Check the clock.", Some("signature:sig-1")),
            reasoning("r2", "", Some("redacted:AAEC")),
            reasoning("r3", "Unsigned thoughts.", None),
            reasoning("r4", "Another provider's.", Some("gAAAA-foreign")),
            calling("a1", "c1"),
            result("c1"),
        ],
        tools: vec![spec("get_current_time")],
        ..ModelRequest::default()
    };
    let input = converse_input(&request, true, CachePoints::Off).unwrap();
    assert_eq!(roles(&input), ["user", "assistant", "user"]);
    let assistant = input.messages[1].content();
    assert_eq!(
        assistant.len(),
        3,
        "two reasoning blocks, then the tool use"
    );
    let ContentBlock::ReasoningContent(ReasoningContentBlock::ReasoningText(signed)) =
        &assistant[0]
    else {
        panic!("signed reasoning first")
    };
    assert_eq!(signed.text(), "Check the clock.");
    assert_eq!(signed.signature(), Some("sig-1"));
    assert_eq!(
        assistant[1],
        ContentBlock::ReasoningContent(ReasoningContentBlock::RedactedContent(
            aws_smithy_types::Blob::new(vec![0, 1, 2])
        ))
    );
    assert!(matches!(assistant[2], ContentBlock::ToolUse(_)));

    // Without extended thinking nothing of the reasoning is sent.
    let input = converse_input(&request, false, CachePoints::Off).unwrap();
    assert_eq!(input.messages[1].content().len(), 1);
}

#[test]
fn reasoning_not_followed_by_an_assistant_message_is_dropped() {
    let request = ModelRequest {
        messages: vec![
            user("a"),
            reasoning("r1", "lost", Some("signature:s")),
            user("b"),
            calling("a1", "c1"),
            result("c1"),
        ],
        ..ModelRequest::default()
    };
    let input = converse_input(&request, true, CachePoints::Off).unwrap();
    assert_eq!(roles(&input), ["user", "assistant", "user"]);
    assert!(matches!(
        input.messages[1].content()[0],
        ContentBlock::ToolUse(_)
    ));
}

fn settings(max_tokens: Option<u32>, budget: Option<u32>) -> BedrockSettings {
    BedrockSettings {
        model_id: "m".into(),
        max_tokens,
        reasoning_budget_tokens: budget,
        cache_points: CachePoints::Off,
    }
}

#[test]
fn sampling_options_become_the_inference_config_and_seed_is_not_sent() {
    let sampling = Sampling {
        temperature: Some(0.5),
        top_p: Some(0.8),
        max_tokens: Some(300),
        stop: vec!["END".into()],
        seed: Some(7),
    };
    let config = inference_config(&settings(Some(1024), None), &sampling).unwrap();
    assert_eq!(config.max_tokens(), Some(300));
    assert_eq!(config.temperature(), Some(0.5));
    assert_eq!(config.top_p(), Some(0.8));
    assert_eq!(config.stop_sequences(), ["END"]);
    assert!(additional_fields(&settings(None, None)).is_none());

    let defaults = inference_config(&settings(Some(1024), None), &Sampling::default()).unwrap();
    assert_eq!(defaults.max_tokens(), Some(1024));
    assert_eq!(defaults.temperature(), None);
    assert!(inference_config(&settings(None, None), &Sampling::default()).is_none());
}

#[test]
fn extended_thinking_adds_its_budget_and_drops_what_claude_refuses_with_it() {
    let thinking = settings(Some(1024), Some(2048));
    let fields = additional_fields(&thinking).unwrap();
    assert_eq!(
        super::super::from_document(&fields),
        json!({"thinking": {"type": "enabled", "budget_tokens": 2048}})
    );
    let sampling = Sampling {
        temperature: Some(0.5),
        top_p: Some(0.8),
        max_tokens: Some(300),
        ..Sampling::default()
    };
    let config = inference_config(&thinking, &sampling).unwrap();
    assert_eq!(config.max_tokens(), Some(2048 + 300));
    assert_eq!(config.temperature(), None);
    assert_eq!(config.top_p(), None);
    let high_top_p = Sampling {
        top_p: Some(0.97),
        ..Sampling::default()
    };
    let config = inference_config(&thinking, &high_top_p).unwrap();
    assert_eq!(config.max_tokens(), Some(2048 + 1024));
    assert_eq!(config.top_p(), Some(0.97));
    let config = inference_config(&settings(None, Some(2048)), &Sampling::default()).unwrap();
    assert_eq!(
        config.max_tokens(),
        Some(i32::try_from(2048 + THINKING_ANSWER_TOKENS).unwrap())
    );
}

#[test]
fn every_part_type_becomes_its_block_in_the_user_message() {
    let data = |mime: &str| Attachment {
        source: PartSource::Data {
            value: "AAEC".into(),
            mime_type: mime.into(),
        },
        metadata: None,
    };
    let request = ModelRequest {
        messages: vec![Message::User {
            id: id("u"),
            content: UserContent::Parts(vec![
                UserPart::Text {
                    text: "look".into(),
                },
                UserPart::Image(data("image/webp")),
                UserPart::Document(data("application/pdf")),
                UserPart::Document(data("text/csv")),
                UserPart::Video(data("video/mp4")),
                UserPart::Audio(data("audio/wav")),
            ]),
            name: None,
        }],
        ..ModelRequest::default()
    };
    let input = converse_input(&request, false, CachePoints::Off).unwrap();
    let blocks = input.messages[0].content();
    assert!(matches!(&blocks[0], ContentBlock::Text(text) if text == "look"));
    assert!(
        matches!(&blocks[1], ContentBlock::Image(image) if image.format() == &ImageFormat::Webp)
    );
    let names: Vec<&str> = blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Document(document) => Some(document.name()),
            _ => None,
        })
        .collect();
    assert_eq!(names, ["document", "document (2)"], "distinct names");
    assert!(matches!(&blocks[4], ContentBlock::Video(_)));
    assert!(matches!(&blocks[5], ContentBlock::Text(note) if note.contains("audio")));
}

#[test]
fn cache_points_close_the_system_prompt_the_summary_the_tools_and_the_last_user_turn() {
    let request = ModelRequest {
        summary: Some("Earlier: the user is Sam.".to_owned()),
        ..a_turn_with_two_tool_results()
    };
    let input = converse_input(&request, false, CachePoints::All).unwrap();
    let point = SystemContentBlock::CachePoint(cache_point().unwrap());
    assert_eq!(
        input.system,
        [
            SystemContentBlock::Text("Be brief.".into()),
            point.clone(),
            SystemContentBlock::Text("Earlier: the user is Sam.".into()),
            point,
            SystemContentBlock::Text("Prefer UTC.".into()),
        ]
    );
    let last = input.messages.last().unwrap().content();
    assert!(last.last().unwrap().is_cache_point(), "{last:?}");
    assert_eq!(
        last.iter().filter(|block| block.is_tool_result()).count(),
        2
    );
    assert!(
        input.messages[..input.messages.len() - 1]
            .iter()
            .all(|message| !message.content().iter().any(ContentBlock::is_cache_point))
    );
    let tools = input.tool_config.unwrap();
    assert!(tools.tools().last().unwrap().is_cache_point());

    let nova = converse_input(&request, false, CachePoints::SystemAndMessages).unwrap();
    assert!(
        !nova
            .tool_config
            .unwrap()
            .tools()
            .iter()
            .any(Tool::is_cache_point),
        "Nova caches no tools"
    );
    let off = converse_input(&request, false, CachePoints::Off).unwrap();
    assert_eq!(off.system.len(), 3, "no cache points when off");
}

#[test]
fn cache_points_go_only_to_models_that_take_them() {
    for (model, points) in [
        (
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            CachePoints::All,
        ),
        (
            "anthropic.claude-3-7-sonnet-20250219-v1:0",
            CachePoints::All,
        ),
        ("anthropic.claude-3-5-haiku-20241022-v1:0", CachePoints::All),
        ("anthropic.claude-3-haiku-20240307-v1:0", CachePoints::Off),
        (
            "anthropic.claude-3-5-sonnet-20240620-v1:0",
            CachePoints::Off,
        ),
        ("amazon.nova-lite-v1:0", CachePoints::SystemAndMessages),
        ("meta.llama3-1-8b-instruct-v1:0", CachePoints::Off),
        (
            "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc",
            CachePoints::Off,
        ),
    ] {
        assert_eq!(CachePoints::for_model(model), points, "{model}");
    }
}

#[test]
fn a_forced_tool_is_the_tool_configs_choice() {
    let request = ModelRequest {
        messages: vec![user("what next?")],
        tools: vec![ToolSpec {
            name: "copilotkitSuggest".into(),
            description: "Suggest what the user could say next".into(),
            parameters: json!({"type": "object", "properties": {}}),
        }],
        tool_choice: Some("copilotkitSuggest".into()),
        ..ModelRequest::default()
    };
    let input = converse_input(&request, false, CachePoints::Off).unwrap();
    match input.tool_config.unwrap().tool_choice() {
        Some(ToolChoice::Tool(choice)) => assert_eq!(choice.name(), "copilotkitSuggest"),
        other => panic!("{other:?}"),
    }
    let free = ModelRequest {
        tool_choice: None,
        ..request
    };
    let input = converse_input(&free, false, CachePoints::Off).unwrap();
    assert!(input.tool_config.unwrap().tool_choice().is_none());
}
