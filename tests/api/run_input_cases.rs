//! What AG-UI's run-input rules ask a producer to tolerate, on the OpenAI-compatible wire: parts
//! the model cannot take (a video, another provider's file handle), parts and sources of kinds
//! AG-UI does not describe, a tool result whose parts are all dropped, unknown members, a resume
//! entry for no interrupt. Each run finishes; what was skipped is reported on `RUN_STARTED`.

use crate::helpers::*;
use serde_json::{Value, json};

const VIDEO: &str = "AAAAIGZ0eXBpc29t";

fn video() -> Value {
    json!({"type": "video", "source": {"type": "data", "value": VIDEO, "mimeType": "video/mp4"}})
}

fn declaring(version: Option<&str>, mut input: Value) -> Value {
    if let Some(version) = version {
        input["protocolVersion"] = json!(version);
    }
    input
}

/// `RUN_STARTED.metadata["agui-lambda"].skippedParts`: each skipped part's field and reason.
fn skipped(events: &[Value]) -> Vec<(String, String)> {
    let started = &events[0];
    assert_eq!(started["type"], "RUN_STARTED");
    started["metadata"]["agui-lambda"]["skippedParts"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|part| {
            (
                part["field"].as_str().unwrap().to_owned(),
                part["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn finished(events: &[Value]) {
    assert_eq!(
        events.last().unwrap()["type"],
        "RUN_FINISHED",
        "{:?}",
        events.last()
    );
}

#[tokio::test]
async fn wire_unusable_and_unknown_parts_are_skipped_reported_and_the_run_finishes() {
    let app = spawn_wire_app().await;
    for version in [Some("1.1"), Some("1.0"), None] {
        let content = json!([
            {"type": "text", "text": "hello"},
            video(),
            {"type": "image", "source": {"type": "file", "value": "file-0123", "provider": "anthropic", "mimeType": "image/png"}},
            {"type": "hologram", "uri": "https://example.com/h"},
            {"type": "image", "source": {"type": "carrier-pigeon", "value": "coo"}},
        ]);
        let input = declaring(
            version,
            run_input(
                &new_thread(),
                "r",
                json!([{"id": "u1", "role": "user", "content": content}]),
            ),
        );
        let reply = app.run(&input).await;
        assert_eq!(reply.status, 200, "{version:?}: {}", reply.body);
        let events = reply.events();
        finished(&events);
        assert_eq!(text_of(&events), "Hello! How can I help you today?");
        let reported = skipped(&events);
        let fields: Vec<&str> = reported.iter().map(|(field, _)| field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "messages[0].content[1]",
                "messages[0].content[2]",
                "messages[0].content[3]",
                "messages[0].content[4]"
            ],
            "{version:?}"
        );
        assert!(reported[0].1.contains("no video"), "{reported:?}");
        assert!(reported[1].1.contains("file handle"), "{reported:?}");
        assert!(reported[2].1.contains("\"hologram\""), "{reported:?}");
        assert!(reported[3].1.contains("\"carrier-pigeon\""), "{reported:?}");
    }
    // The model got the text and a line for each attachment it cannot see, nothing else.
    let body = &app.aimock().requests_about("hello").await[0]["body"];
    let parts = body["messages"][1]["content"].as_array().unwrap();
    assert_eq!(parts[0], json!({"type": "text", "text": "hello"}));
    assert_eq!(parts.len(), 3, "{parts:?}");
    assert!(parts[1]["text"].as_str().unwrap().contains("a video"));
}

#[tokio::test]
async fn wire_unknown_members_and_message_properties_are_ignored() {
    let app = spawn_wire_app().await;
    let mut input = run_input(
        &new_thread(),
        "r",
        json!([{"id": "u1", "role": "user", "content": "hello", "sentiment": {"score": 0.9}}]),
    );
    input["agentMood"] = json!("cheerful");
    input["protocolVersion"] = json!("1.1");
    input["context"] =
        json!([{"description": "the user's city", "value": "Paris", "source": "gps"}]);
    let events = app.run(&input).await.events();
    finished(&events);
    assert_eq!(events[0]["protocolVersion"], "1.1");
    // And the context reached the model, as AG-UI asks of every entry.
    let body = &app.aimock().requests_about("hello").await[0]["body"];
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("the user's city: Paris"), "{system}");
}

#[tokio::test]
async fn wire_a_tool_result_whose_parts_are_all_dropped_answers_the_call_with_nothing() {
    let app = spawn_wire_app().await;
    let thread = new_thread();
    let ask = json!({"id": "u1", "role": "user", "content": "search my local files"});
    let first = app
        .run(&declaring(
            Some("1.1"),
            run_input(&thread, "r1", json!([ask.clone()])),
        ))
        .await
        .events();
    let call = assistant_from(&first);
    let call_id = call["toolCalls"][0]["id"].clone();
    let answered = json!([ask, call, {"id": "t1", "role": "tool", "toolCallId": call_id, "content": [video()]}]);
    let second = app
        .run(&declaring(Some("1.1"), run_input(&thread, "r2", answered)))
        .await
        .events();
    finished(&second);
    let reported = skipped(&second);
    assert_eq!(reported.len(), 1, "{reported:?}");
    assert_eq!(reported[0].0, "messages[2].content[0]");
    let body = &app.aimock().requests_about("search my local files").await[1]["body"];
    let tool = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|message| message["role"] == "tool")
        .unwrap();
    assert_eq!(tool["content"], "", "{tool}");
}

#[tokio::test]
async fn a_resume_entry_for_an_interrupt_the_thread_never_raised_is_ignored() {
    let app = spawn_app().await;
    let mut input = run_input(
        &new_thread(),
        "r",
        json!([{"id": "u1", "role": "user", "content": "hello"}]),
    );
    input["protocolVersion"] = json!("1.1");
    input["resume"] = json!([{"interruptId": "never-raised", "status": "resolved", "payload": {"approved": true}}]);
    let events = app.run(&input).await.events();
    finished(&events);
    assert_eq!(text_of(&events), "Hello! How can I help you today?");
}

#[tokio::test]
async fn each_client_is_told_the_version_its_stream_speaks() {
    let app = spawn_app().await;
    for (declared, told) in [
        (Some("1.1"), "1.1"),
        (Some("1.0"), "1.0"),
        (None, "1.1"),
        (Some("1.7"), "1.1"),
        (Some("banana"), "1.1"),
    ] {
        let input = declaring(
            declared,
            run_input(
                &new_thread(),
                "r",
                json!([{"id": "u1", "role": "user", "content": "hello"}]),
            ),
        );
        let events = app.run(&input).await.events();
        finished(&events);
        assert_eq!(events[0]["protocolVersion"], told, "{declared:?}");
    }
}
