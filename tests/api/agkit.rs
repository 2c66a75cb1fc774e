//! AG-Kit's `send-message` dialect (the AG-Kit send-message protocol) over HTTP.

use serde_json::{Value, json};

use crate::helpers::*;

fn frames(reply: &Reply) -> Vec<Value> {
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.content_type, "text/event-stream");
    agui_lambda::testing::protocol::verify::parse_sse(&reply.body).unwrap()
}

fn text(frames: &[Value]) -> String {
    frames
        .iter()
        .filter(|f| f["type"] == "text")
        .map(|f| f["content"].as_str().unwrap())
        .collect()
}

const COLOR_TOOL: &str = r#"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"color":{"type":"string"}},"required":["color"],"additionalProperties":false}"#;

/// The AG-Kit send-message protocol's background-colour round trip, frame for frame (ids are the model's).
#[tokio::test]
async fn wire_agkit_background_colour_frontend_tool_round_trip() {
    let app = spawn_wire_app().await;
    let conversation = new_thread();
    let first = app
        .post_raw("/send-message", "application/json", json!({
            "messages": [{"role": "user", "content": "Change background color to blue."}],
            "tools": [{"name": "change-background-color", "description": "Change the background color.", "parameters": COLOR_TOOL}],
            "conversationId": conversation,
        }).to_string())
        .await;
    let events = frames(&first);
    assert_eq!(
        events[0],
        json!({"type": "tool-call-start", "toolCallId": "a_b_c", "toolCallName": "change-background-color"})
    );
    let args: String = events
        .iter()
        .filter(|f| f["type"] == "tool-call-args")
        .map(|f| f["delta"].as_str().unwrap())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&args).unwrap(),
        json!({"color": "blue"})
    );
    assert_eq!(
        events.last().unwrap(),
        &json!({"type": "tool-call-end", "toolCallId": "a_b_c"}),
        "the stream ends at the client tool"
    );
    assert!(events.iter().all(|f| {
        ["tool-call-start", "tool-call-args", "tool-call-end"]
            .contains(&f["type"].as_str().unwrap())
    }));

    let second = app
        .post_raw("/send-message", "application/json", json!({
            "messages": [{"role": "tool", "content": "Background color successfully changed to: blue", "toolCallId": "a_b_c"}],
            "conversationId": conversation,
        }).to_string())
        .await;
    let events = frames(&second);
    assert!(events.iter().all(|f| f["type"] == "text"), "{events:?}");
    assert_eq!(
        text(&events),
        "I've successfully changed the background color to blue for you."
    );

    // The whole conversation is one thread, readable (and continuable) from AG-UI.
    let history = app.get(&format!("/threads/{conversation}")).await.json();
    let roles: Vec<&str> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
    let sent = app.aimock().requests_about("Change background color").await;
    assert_eq!(sent.len(), 2);
    let tool = sent[1]["body"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    assert_eq!(tool["tool_call_id"], "a_b_c");
}

#[tokio::test]
async fn wire_without_a_conversation_id_a_thread_starts_and_its_id_comes_back() {
    let app = spawn_wire_app().await;
    let response = app
        .http
        .post(app.url("/ag-kit/send-message"))
        .header("content-type", "application/json")
        .body(json!({"messages": [{"role": "user", "content": "hello"}]}).to_string())
        .send()
        .await
        .unwrap();
    let conversation = response.headers()["x-conversation-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(response.headers()["x-thread-id"], conversation.as_str());
    let body = response.text().await.unwrap();
    assert!(body.contains(r#"{"type":"text","content":"#), "{body}");
    let again = app
        .post_raw("/ag-kit/send-message", "application/json", json!({"messages": [{"role": "user", "content": "hello again"}], "conversationId": conversation}).to_string())
        .await;
    assert_eq!(text(&frames(&again)), "Hello! How can I help you today?");
    let sent = app.aimock().requests_about("hello again").await;
    assert_eq!(
        sent[0]["body"]["messages"].as_array().unwrap().len(),
        4,
        "system + the earlier turn + the new message"
    );
}

/// Decided where that protocol is silent: a server tool shows as the call plus `tool-result`; a
/// failed run ends with an `error` frame; state and reasoning are not sent.
#[tokio::test]
async fn server_tools_and_failures_in_this_dialect() {
    let app = spawn_app().await;
    let reply = app
        .post_raw("/send-message", "application/json", json!({"messages": [{"role": "user", "content": "what time is it"}], "conversationId": new_thread()}).to_string())
        .await;
    let events = frames(&reply);
    let kinds: Vec<&str> = events.iter().map(|f| f["type"].as_str().unwrap()).collect();
    let result = events
        .iter()
        .find(|f| f["type"] == "tool-result")
        .expect("a tool-result frame");
    assert_eq!(result["toolCallId"], "call_time_1");
    assert!(result["content"].as_str().unwrap().contains("Europe/Paris"));
    assert!(
        kinds.iter().position(|k| *k == "tool-call-end")
            < kinds.iter().position(|k| *k == "tool-result")
    );
    assert!(text(&events).ends_with("It is now the time shown in Paris."));

    let failed = app
        .post_raw("/send-message", "application/json", json!({"messages": [{"role": "user", "content": "rate limit me"}], "conversationId": new_thread()}).to_string())
        .await;
    let events = frames(&failed);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "error");
    assert_eq!(last["code"], "MODEL_RATE_LIMITED");
    assert!(last["message"].as_str().unwrap().contains("429"));
}

#[tokio::test]
async fn agui_bodies_on_send_message_stay_agui_and_threads_cross_dialects() {
    let app = spawn_app().await;
    let thread = new_thread();
    // Started in AG-UI on /send-message …
    let events = app
        .post_raw(
            "/send-message",
            "application/json",
            run_input(
                &thread,
                "r1",
                json!([{"id": "u1", "role": "user", "content": "hello"}]),
            )
            .to_string(),
        )
        .await
        .events();
    assert_eq!(events[0]["type"], "RUN_STARTED");
    let answer_id = &events
        .iter()
        .find(|e| e["type"] == "TEXT_MESSAGE_START")
        .unwrap()["messageId"];
    let answer = json!({"id": answer_id, "role": "assistant", "content": text_of(&events)});
    // … continued in AG-Kit, which sees (and the model gets) the whole history …
    let agkit = app
        .post_raw("/send-message", "application/json", json!({"messages": [{"role": "user", "content": "hello again"}], "conversationId": thread}).to_string())
        .await;
    assert_eq!(text(&frames(&agkit)), "Hello! How can I help you today?");
    // … and back in AG-UI, where the client, which holds the first answer, catches up with a
    // snapshot of all five messages.
    let back = app
        .run(&run_input(
            &thread,
            "r3",
            json!([answer, {"id": "u3", "role": "user", "content": "hello there"}]),
        ))
        .await
        .events();
    let snapshot = back
        .iter()
        .find(|e| e["type"] == "MESSAGES_SNAPSHOT")
        .unwrap();
    let roles: Vec<&str> = snapshot["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant", "user"]);
}

#[tokio::test]
async fn agkit_refusals_use_the_same_json_errors() {
    let app = spawn_app().await;
    let reply = app.post_raw("/ag-kit/send-message", "application/json", json!({"messages": [{"role": "tool", "content": "x", "toolCallId": "nope"}], "conversationId": new_thread()}).to_string()).await;
    assert_eq!(reply.status, 422);
    assert_eq!(reply.json()["error"]["code"], "invalid_tool_result");
    let reply = app
        .post_raw(
            "/ag-kit/send-message",
            "application/json",
            json!({"messages": "hi"}).to_string(),
        )
        .await;
    assert_eq!(reply.status, 422);
    assert_eq!(reply.json()["error"]["field"], "messages");
}
