//! Content parts and sampling options on the OpenAI-compatible wire: each part type as the
//! Chat Completions part it becomes (asserted on the request aimock received), the parts it
//! cannot take skipped and named on `RUN_STARTED`, and the client's sampling options in the body.

use crate::helpers::*;
use serde_json::json;

const PNG: &str = "iVBORw0KGgo=";
const WAV: &str = "UklGRiQAAABXQVZF";
const PDF: &str = "JVBERi0xLjQK";

#[tokio::test]
async fn wire_each_part_type_becomes_its_chat_completions_part() {
    let app = spawn_wire_app_with(&[("MAX_ATTACHMENTS", "4")]).await;
    let mut input = run_input(
        &new_thread(),
        "r",
        json!([{"id": "u1", "role": "user", "content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "source": {"type": "url", "value": "https://example.com/cat.png"}},
            {"type": "image", "source": {"type": "data", "value": PNG, "mimeType": "image/png"}},
            {"type": "audio", "source": {"type": "data", "value": WAV, "mimeType": "audio/wav"}},
            {"type": "binary", "mimeType": "application/pdf", "data": PDF, "filename": "q3.pdf"},
        ]}]),
    );
    input["forwardedProps"] =
        json!({"temperature": 0.2, "topP": 0.9, "maxTokens": 300, "stop": "END", "seed": 7});
    let events = app.run(&input).await.events();
    assert_eq!(text_of(&events), "Hello! How can I help you today?");
    let body = &app.aimock().requests_about("hello").await[0]["body"];
    assert_eq!(
        body["messages"][1]["content"],
        json!([
            {"type": "text", "text": "hello"},
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}},
            {"type": "input_audio", "input_audio": {"data": WAV, "format": "wav"}},
            {"type": "file", "file": {"filename": "q3.pdf", "file_data": format!("data:application/pdf;base64,{PDF}")}},
        ])
    );
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["top_p"], 0.9);
    assert_eq!(body["max_tokens"], 300);
    assert_eq!(body["stop"], json!(["END"]));
    assert_eq!(body["seed"], 7);
}

#[tokio::test]
async fn wire_parts_the_model_cannot_take_are_skipped_and_named_and_the_run_goes_on() {
    let app = spawn_wire_app().await;
    for (part, says) in [
        (
            json!({"type": "video", "source": {"type": "data", "value": "AAAA", "mimeType": "video/mp4"}}),
            "no video",
        ),
        (
            json!({"type": "document", "source": {"type": "url", "value": "https://example.com/a.pdf"}}),
            "never fetches",
        ),
        (
            json!({"type": "audio", "source": {"type": "data", "value": "AAAA", "mimeType": "audio/ogg"}}),
            "WAV or MP3",
        ),
        (
            json!({"type": "binary", "mimeType": "text/csv", "data": "YSxi"}),
            "as PDF",
        ),
    ] {
        let thread = new_thread();
        let reply = app
            .run(&run_input(
                &thread,
                "r",
                json!([{"id": "u1", "role": "user", "content": [{"type": "text", "text": "hello"}, part.clone()]}]),
            ))
            .await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        let events = reply.events();
        assert_eq!(text_of(&events), "Hello! How can I help you today?");
        let skipped = &events[0]["metadata"]["agui-lambda"]["skippedParts"];
        assert_eq!(skipped[0]["field"], "messages[0].content[1]", "{skipped}");
        assert!(
            skipped[0]["reason"].as_str().unwrap().contains(says),
            "{skipped}"
        );
        // The thread keeps the part as sent; the model was told of it in one line.
        let stored = app.get(&format!("/threads/{thread}")).await.json();
        assert_eq!(
            stored["messages"][0]["content"].as_array().unwrap().len(),
            2
        );
    }
}

#[tokio::test]
async fn wire_reasoning_messages_are_stored_but_not_sent_to_an_openai_compatible_model() {
    let app = spawn_wire_app().await;
    let thread = new_thread();
    let events = app
        .run(&run_input(
            &thread,
            "r",
            json!([
                {"id": "u0", "role": "user", "content": "earlier"},
                {"id": "r0", "role": "reasoning", "content": "thought", "encryptedValue": "signature:s"},
                {"id": "a0", "role": "assistant", "content": "ok"},
                {"id": "u1", "role": "user", "content": "hello"},
            ]),
        ))
        .await
        .events();
    assert_eq!(text_of(&events), "Hello! How can I help you today?");
    let body = &app.aimock().requests_about("hello").await[0]["body"];
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
    let history = app.get(&format!("/threads/{thread}")).await.json();
    assert_eq!(
        history["messages"][1],
        json!({"id": "r0", "role": "reasoning", "content": "thought", "encryptedValue": "signature:s"})
    );
}
