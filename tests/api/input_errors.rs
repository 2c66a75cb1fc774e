use crate::helpers::*;
use serde_json::{Value, json};

/// Every client mistake gets its status and a JSON error naming the problem, before anything
/// streams, and nothing is stored.
#[tokio::test]
async fn client_mistakes_get_a_clear_4xx_and_store_nothing() {
    let app = spawn_app().await;
    let thread = new_thread();
    let user = |content: Value| json!([{"id": "u1", "role": "user", "content": content}]);
    let cases: Vec<(&str, String, u16, &str, &str)> = vec![
        ("broken JSON", "{\"threadId\": ".into(), 400, "invalid_json", ""),
        ("no messages", json!({"threadId": thread}).to_string(), 422, "invalid_request", "body"),
        ("unknown role", json!({"threadId": thread, "messages": [{"id": "a", "role": "robot", "content": "x"}]}).to_string(), 422, "invalid_request", "messages[0].role"),
        ("runId too long", json!({"threadId": thread, "runId": "r".repeat(129), "messages": user(json!("hi"))}).to_string(), 422, "invalid_request", "runId"),
        ("too much text", json!({"threadId": thread, "messages": user(json!("x".repeat(10_001)))}).to_string(), 422, "invalid_request", "messages[0].content"),
        ("inline data that is not base64", json!({"threadId": thread, "messages": user(json!([{"type": "binary", "mimeType": "image/png", "data": "not base64!"}]))}).to_string(), 422, "invalid_request", "messages[0].content[0].source.value"),
        ("tool result for no call", json!({"threadId": thread, "messages": [{"id": "t", "role": "tool", "toolCallId": "nope", "content": "x"}]}).to_string(), 422, "invalid_tool_result", "messages"),
        ("frontend tool named like a server tool", json!({"threadId": thread, "messages": user(json!("hi")), "tools": [{"name": "get_current_time"}]}).to_string(), 422, "invalid_request", "tools"),
        ("bad device timezone", json!({"threadId": thread, "messages": user(json!("hi")), "forwardedProps": {"client_time": {"device_timezone": "Nowhere/Land"}}}).to_string(), 422, "invalid_request", "forwardedProps.client_time.device_timezone"),
        ("oversized body", format!("{{\"threadId\":\"{thread}\",\"messages\":[],\"pad\":\"{}\"}}", "x".repeat(6_300_000)), 413, "payload_too_large", ""),
    ];
    for (name, body, status, code, field) in cases {
        let reply = app.post_raw("/agent", "application/json", body).await;
        assert_eq!(reply.status, status, "{name}: {}", reply.body);
        assert_eq!(reply.content_type, "application/json", "{name}");
        let error = &reply.json()["error"];
        assert_eq!(error["code"], code, "{name}");
        assert!(!error["message"].as_str().unwrap().is_empty(), "{name}");
        if !field.is_empty() {
            assert_eq!(error["field"], field, "{name}");
        }
    }
    assert_eq!(
        app.get(&format!("/threads/{thread}")).await.status,
        404,
        "nothing was stored"
    );
    assert!(
        app.model_requests().await == 0,
        "the model was never called"
    );
}

#[tokio::test]
async fn wrong_content_type_method_and_route() {
    let app = spawn_app().await;
    let form = app
        .post_raw("/agent", "application/x-www-form-urlencoded", "a=b")
        .await;
    assert_eq!(form.status, 415);
    assert_eq!(form.json()["error"]["code"], "unsupported_media_type");
    assert_eq!(app.get("/agent").await.status, 405);
    assert_eq!(app.get("/nowhere").await.status, 404);
    assert_eq!(app.get("/threads/x?limit=0").await.status, 400);
}

#[tokio::test]
async fn a_second_run_while_the_thread_is_busy_gets_409_under_the_reject_policy() {
    let app = spawn_app_with(&[("BUSY_THREAD_POLICY", "reject")]).await;
    let thread = new_thread();
    // The disconnect fixture streams slowly, so the first run still holds the lease.
    let slow_input = run_input(
        &thread,
        "r1",
        json!([{"id": "u1", "role": "user", "content": "drop the connection"}]),
    );
    let slow = app.run(&slow_input);
    let second = async {
        tokio::time::sleep(std::time::Duration::from_millis(40)).await;
        app.run(&run_input(
            &thread,
            "r2",
            json!([{"id": "u2", "role": "user", "content": "hello"}]),
        ))
        .await
    };
    let (first, second) = tokio::join!(slow, second);
    assert_eq!(second.status, 409, "{}", second.body);
    assert_eq!(second.json()["error"]["code"], "thread_busy");
    first.events();
    let history = app.get(&format!("/threads/{thread}")).await.json();
    let ids: Vec<&str> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["u1"], "the refused run stored nothing");
}

#[tokio::test]
async fn wire_snake_case_and_legacy_shapes_are_accepted() {
    let app = spawn_wire_app().await;
    let body = json!({
        "thread_id": new_thread(), "run_id": "r", "state": null,
        "messages": [{"id": "u1", "role": "user", "content": [{"type": "text", "text": "hello"}, {"type": "binary", "mimeType": "image/png", "url": "https://example.com/cat.png"}]}],
        "tools": [{"name": "change_background_color", "description": "the AG-Kit send-message protocol", "parameters": "{\"type\":\"object\",\"properties\":{\"color\":{\"type\":\"string\"}}}"}],
    });
    let events = app.run(&body).await.events();
    assert_eq!(text_of(&events), "Hello! How can I help you today?");
    let sent = &app.aimock().requests_about("hello").await[0]["body"];
    assert_eq!(
        sent["messages"][1]["content"][1],
        json!({"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}})
    );
    assert_eq!(
        sent["tools"][1]["function"]["parameters"]["properties"]["color"]["type"],
        "string"
    );
}
