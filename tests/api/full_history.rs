//! Clients that resend the whole thread in every request (`HttpAgent`, CopilotKit) and clients
//! that send only what is new: the limits count only what the thread does not hold, a resent
//! message never rewrites the stored one, and a body over the AG-UI routes' limit is told what
//! to do.

use crate::both_stores::{Subject, on_both_stores};
use crate::helpers::*;
use agui_lambda::testing::store::MemoryStore;
use serde_json::{Value, json};
use std::sync::Arc;

/// One turn of a full-history client: `history` plus a new user message, posted; the answer
/// appended to `history` as the client keeps it. Returns the run's events.
async fn full_history_turn(
    app: &TestApp,
    thread: &str,
    history: &mut Vec<Value>,
    text: &str,
) -> Vec<Value> {
    history.push(json!({"id": uuid::Uuid::new_v4().to_string(), "role": "user", "content": text}));
    let reply = app
        .run(&run_input(
            thread,
            &uuid::Uuid::new_v4().to_string(),
            json!(history),
        ))
        .await;
    let events = reply.events();
    let id = events
        .iter()
        .find(|e| e["type"] == "TEXT_MESSAGE_START")
        .unwrap()["messageId"]
        .clone();
    history.push(json!({"id": id, "role": "assistant", "content": text_of(&events)}));
    events
}

/// The stored messages, as `[id, role, content]` triples.
async fn stored(app: &TestApp, thread: &str) -> Vec<(String, String, String)> {
    let page = app
        .get(&format!("/threads/{thread}?limit=500"))
        .await
        .json();
    assert!(page["next"].is_null(), "one page holds the thread");
    page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["id"].as_str().unwrap().to_owned(),
                m["role"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn triples(history: &[Value]) -> Vec<(String, String, String)> {
    history
        .iter()
        .map(|m| {
            (
                m["id"].as_str().unwrap().to_owned(),
                m["role"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_full_history_client_goes_past_the_message_limit_of_a_request() {
    let app = spawn_app_with(&[("MAX_MESSAGES", "20")]).await;
    let thread = new_thread();
    let mut history = Vec::new();
    // 15 turns: the last request carries 29 messages the thread holds and one it does not.
    for turn in 0..15 {
        let events = full_history_turn(
            &app,
            &thread,
            &mut history,
            &format!("[long-thread] turn {turn}"),
        )
        .await;
        assert!(
            !types(&events).contains(&"MESSAGES_SNAPSHOT"),
            "turn {turn}: an up-to-date client needs no snapshot"
        );
    }
    assert_eq!(history.len(), 30);
    assert_eq!(stored(&app, &thread).await, triples(&history));
}

#[tokio::test]
async fn new_messages_keep_the_limits_that_held_ones_are_not_checked_against_again() {
    let store: Arc<MemoryStore> = Arc::new(MemoryStore::new());
    let thread = new_thread();
    // A message stored while the text limit was higher...
    let generous = spawn_app_on(&[("MAX_USER_TEXT_CHARS", "20000")], Some(store.clone())).await;
    let mut history = Vec::new();
    let long = format!("[long-thread] {}", "x".repeat(14_000));
    full_history_turn(&generous, &thread, &mut history, &long).await;
    // ...is resent as it is to a server with the default limit (10,000): it is held, not checked.
    let app = spawn_app_on(&[("MAX_MESSAGES", "3")], Some(store)).await;
    full_history_turn(&app, &thread, &mut history, "[long-thread] next").await;
    assert_eq!(stored(&app, &thread).await, triples(&history));

    // A new message over the text limit is refused, named by its place in the input.
    let mut too_long = history.clone();
    too_long.push(json!({"id": "u-long", "role": "user", "content": "x".repeat(10_001)}));
    let reply = app
        .run(&run_input(&thread, "r-long", json!(too_long)))
        .await;
    assert_eq!(reply.status, 422, "{}", reply.body);
    assert_eq!(
        reply.json()["error"]["field"],
        format!("messages[{}].content", history.len())
    );
    assert_eq!(reply.json()["error"]["code"], "invalid_request");

    // More new messages than MAX_MESSAGES are refused; the held ones do not count.
    let mut many = history.clone();
    for n in 0..4 {
        many.push(
            json!({"id": format!("u-many-{n}"), "role": "user", "content": "[long-thread] many"}),
        );
    }
    let reply = app.run(&run_input(&thread, "r-many", json!(many))).await;
    assert_eq!(reply.status, 422, "{}", reply.body);
    assert_eq!(reply.json()["error"]["field"], "messages");
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("4 messages the thread does not hold yet, over the limit of 3"),
        "{}",
        reply.body
    );
    assert_eq!(
        stored(&app, &thread).await,
        triples(&history),
        "nothing was stored"
    );
}

/// A client cannot rewrite history by resending an id: the stored message wins, nothing changes.
async fn a_resent_message_with_changed_content_changes_nothing(subject: Subject) {
    let app = spawn_app_on(&[], Some(subject.store.clone())).await;
    let thread = new_thread();
    let mut history = Vec::new();
    full_history_turn(
        &app,
        &thread,
        &mut history,
        "[long-thread] the original question",
    )
    .await;
    let before = stored(&app, &thread).await;

    let mut rewritten = history.clone();
    rewritten[0]["content"] = json!("[long-thread] a question I never asked");
    rewritten[1]["content"] = json!("an answer the model never gave");
    full_history_turn(&app, &thread, &mut rewritten, "[long-thread] and then").await;

    let after = stored(&app, &thread).await;
    assert_eq!(
        after[..2],
        before[..],
        "the stored messages are as they were"
    );
    assert_eq!(after.len(), 4);
    assert_eq!(after[2].2, "[long-thread] and then");
    // The model saw the stored history, not the rewritten one.
    let request = app.fixture_requests_about("and then").pop().unwrap();
    let seen = format!("{:?}", request.messages);
    assert!(
        seen.contains("the original question") && !seen.contains("never asked"),
        "{seen}"
    );
}

on_both_stores!(a_resent_message_with_changed_content_changes_nothing);

#[tokio::test]
async fn a_client_that_sends_only_new_messages_after_its_last_held_one_needs_no_snapshot() {
    let app = spawn_app().await;
    let thread = new_thread();
    let mut history = Vec::new();
    full_history_turn(&app, &thread, &mut history, "[long-thread] one").await;

    // The last message it holds, then the new one.
    let next = json!({"id": "u2", "role": "user", "content": "[long-thread] two"});
    let anchored = json!([history.last().unwrap(), next]);
    let events = app.run(&run_input(&thread, "r2", anchored)).await.events();
    assert!(!types(&events).contains(&"MESSAGES_SNAPSHOT"));
    let stored_now = stored(&app, &thread).await;
    assert_eq!(stored_now.len(), 4);
    assert_eq!(stored_now[2].0, "u2");

    // A client that is behind (it holds only the first answer) gets the whole thread back.
    let behind = json!([history.last().unwrap(), {"id": "u3", "role": "user", "content": "[long-thread] three"}]);
    let events = app.run(&run_input(&thread, "r3", behind)).await.events();
    let snapshot = events
        .iter()
        .find(|e| e["type"] == "MESSAGES_SNAPSHOT")
        .expect("a snapshot");
    let ids: Vec<&str> = snapshot["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 5);
    assert_eq!(ids[2], "u2");
    assert_eq!(ids[4], "u3");

    // One that names nothing the thread holds sends only what is new: no snapshot.
    let bare = json!([{"id": "u4", "role": "user", "content": "[long-thread] four"}]);
    let events = app.run(&run_input(&thread, "r4", bare)).await.events();
    assert!(!types(&events).contains(&"MESSAGES_SNAPSHOT"));
    assert_eq!(stored(&app, &thread).await.len(), 8);
}

#[tokio::test]
async fn a_body_over_the_ag_ui_limit_is_told_to_send_only_new_messages() {
    let app = spawn_app_with(&[("AGUI_MAX_PAYLOAD_BYTES", "400000")]).await;
    let thread = new_thread();
    let padded = |bytes: usize| {
        format!(
            "{{\"threadId\":\"{thread}\",\"messages\":[{{\"id\":\"u1\",\"role\":\"user\",\"content\":\"[long-thread] hi\"}}],\"pad\":\"{}\"}}",
            "x".repeat(bytes)
        )
    };
    // Over the strict routes' 256 KB, under the AG-UI routes' limit: taken.
    let reply = app
        .post_raw("/agent", "application/json", padded(300_000))
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    // The same on AG-Kit's route keeps the 256 KB limit.
    let agkit = app
        .post_raw("/ag-kit/send-message", "application/json", padded(300_000))
        .await;
    assert_eq!(agkit.status, 413);
    assert!(
        !agkit.json()["error"]["message"]
            .as_str()
            .unwrap()
            .to_owned()
            .contains("send only"),
        "{}",
        agkit.body
    );

    let reply = app
        .post_raw("/agent", "application/json", padded(500_000))
        .await;
    assert_eq!(reply.status, 413);
    let error = &reply.json()["error"];
    assert_eq!(error["code"], "payload_too_large");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("400000 bytes"), "{message}");
    assert!(
        message.contains("send only those it does not hold yet"),
        "{message}"
    );
    assert!(message.contains("Sending only new messages"), "{message}");
}
