use super::*;
use crate::model::ModelRequest;
use crate::protocol::{MessageId, ToolCallId};

fn mid(id: &str) -> MessageId {
    MessageId::parse(id, 128).unwrap()
}

fn reasoning(id: &str, model: &str, next: Option<&str>, rs: &str) -> Message {
    let item = ReasoningItem {
        model: model.into(),
        next: next.map(str::to_owned),
        item: json!({"id": rs, "type": "reasoning", "summary": [], "encrypted_content": format!("enc-{rs}")}),
    };
    Message::Reasoning {
        id: mid(id),
        content: String::new(),
        encrypted_value: Some(ReasoningArtefact::Item(item.to_text()).encode()),
    }
}

fn call(id: &str, fc: Option<&str>) -> ToolCall {
    ToolCall::new(
        ToolCallId::parse(id, 128).unwrap(),
        "get_current_time".into(),
        "{}".into(),
    )
    .with_encrypted_value(fc.map(|fc| Artefact::OpenAiItem(fc.into()).encode()))
}

fn history() -> Vec<Message> {
    vec![
        Message::User {
            id: mid("u1"),
            content: UserContent::Text("what time is it?".into()),
            name: None,
        },
        reasoning("r1", "gpt-5", Some("fc_1"), "rs_1"),
        Message::Assistant {
            id: mid("a1"),
            content: None,
            tool_calls: vec![call("call_1", Some("fc_1"))],
            name: None,
            encrypted_value: None,
        },
        Message::Tool {
            id: mid("t1"),
            tool_call_id: ToolCallId::parse("call_1", 128).unwrap(),
            content: "{\"iso\":\"12:00\"}".into(),
            error: None,
            metadata: None,
        },
        reasoning("r2", "gpt-5", Some("msg_2"), "rs_2"),
        Message::Assistant {
            id: mid("a2"),
            content: Some("It is noon.".into()),
            tool_calls: Vec::new(),
            name: None,
            encrypted_value: Some(Artefact::OpenAiItem("msg_2".into()).encode()),
        },
    ]
}

#[test]
fn earlier_output_items_go_back_in_order_under_their_ids() {
    let request = ModelRequest {
        messages: history(),
        ..ModelRequest::default()
    };
    let items = input_items(&request, "gpt-5");
    assert_eq!(
        items,
        vec![
            json!({"role": "user", "content": "what time is it?"}),
            json!({"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "enc-rs_1"}),
            json!({"type": "function_call", "call_id": "call_1", "name": "get_current_time", "arguments": "{}", "id": "fc_1"}),
            json!({"type": "function_call_output", "call_id": "call_1", "output": "{\"iso\":\"12:00\"}"}),
            json!({"id": "rs_2", "type": "reasoning", "summary": [], "encrypted_content": "enc-rs_2"}),
            json!({"type": "message", "id": "msg_2", "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": "It is noon.", "annotations": []}]}),
        ]
    );
}

#[test]
fn another_models_reasoning_stays_behind_with_the_ids_that_would_need_it() {
    let request = ModelRequest {
        messages: history(),
        ..ModelRequest::default()
    };
    let items = input_items(&request, "gpt-5.4-mini");
    assert!(
        !items
            .iter()
            .any(|item| item["type"] == "reasoning" || item.get("id").is_some()),
        "{items:#?}"
    );
    assert_eq!(
        items[1],
        json!({"type": "function_call", "call_id": "call_1", "name": "get_current_time", "arguments": "{}"})
    );
    assert_eq!(
        items[3],
        json!({"role": "assistant", "content": "It is noon."})
    );
}

#[test]
fn interleaved_reasoning_goes_before_each_item_it_produced() {
    let request = ModelRequest {
        messages: vec![
            reasoning("r1", "gpt-5", Some("fc_1"), "rs_1"),
            reasoning("r2", "gpt-5", Some("fc_2"), "rs_2"),
            Message::Assistant {
                id: mid("a1"),
                content: None,
                tool_calls: vec![call("call_1", Some("fc_1")), call("call_2", Some("fc_2"))],
                name: None,
                encrypted_value: None,
            },
        ],
        ..ModelRequest::default()
    };
    let ids: Vec<String> = input_items(&request, "gpt-5")
        .iter()
        .map(|item| item["id"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(ids, ["rs_1", "fc_1", "rs_2", "fc_2"]);
}

#[test]
fn user_parts_system_messages_and_errors_map_to_input_items() {
    let request = ModelRequest {
        messages: vec![
            Message::System {
                id: mid("s"),
                content: "Be brief.".into(),
                name: None,
            },
            Message::User {
                id: mid("u"),
                content: UserContent::Parts(vec![
                    UserPart::Text {
                        text: "read".into(),
                    },
                    UserPart::Image(crate::protocol::Attachment {
                        source: PartSource::Data {
                            value: "iVBO".into(),
                            mime_type: "image/png".into(),
                        },
                        metadata: None,
                    }),
                    UserPart::Document(crate::protocol::Attachment {
                        source: PartSource::Data {
                            value: "JVBERi0=".into(),
                            mime_type: "application/pdf".into(),
                        },
                        metadata: None,
                    }),
                ]),
                name: None,
            },
        ],
        ..ModelRequest::default()
    };
    let items = input_items(&request, "gpt-5");
    assert_eq!(items[0], json!({"role": "system", "content": "Be brief."}));
    assert_eq!(
        items[1]["content"],
        json!([
            {"type": "input_text", "text": "read"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBO", "detail": "auto"},
            {"type": "input_file", "filename": "document.pdf", "file_data": "data:application/pdf;base64,JVBERi0="},
        ])
    );
    let audio = UserPart::Audio(crate::protocol::Attachment {
        source: PartSource::Data {
            value: "UklG".into(),
            mime_type: "audio/wav".into(),
        },
        metadata: None,
    });
    assert!(check_part(&audio).is_err());
}
