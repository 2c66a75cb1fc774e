use super::*;
use crate::protocol::ToolCall;
use crate::protocol::{MessageId, ToolCallId};

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

#[test]
fn tool_results_of_one_turn_share_one_user_message_and_roles_alternate() {
    let request = ModelRequest {
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
            },
            Message::Tool {
                id: id("t1"),
                tool_call_id: call_id("c1"),
                content: "12:00".to_owned(),
                error: None,
            },
            Message::Tool {
                id: id("t2"),
                tool_call_id: call_id("c2"),
                content: String::new(),
                error: Some("denied".to_owned()),
            },
        ],
        tools: vec![spec("get_current_time")],
    };
    let input = converse_input(&request).unwrap();
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
    };
    let input = converse_input(&request).unwrap();
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
            },
            user("   "),
            user("hello"),
        ],
        tools: vec![],
    };
    let input = converse_input(&request).unwrap();
    assert_eq!(roles(&input), ["user", "assistant", "user"]);
    assert_eq!(
        input.messages[2].content(),
        [ContentBlock::Text("hello".into())]
    );
    assert!(input.system.is_empty());
}

#[test]
fn s3_images_become_s3_locations_and_other_urls_a_note_never_a_fetch() {
    let image = |url: &str, mime: Option<&str>| UserPart::Image {
        source: WireImage::Url {
            value: url.to_owned(),
            mime_type: mime.map(str::to_owned),
        },
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
    };
    let input = converse_input(&request).unwrap();
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
