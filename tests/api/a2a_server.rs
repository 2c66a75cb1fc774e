//! The A2A server through the real handler over HTTP, on both stores: tasks are owner-only
//! (another caller's task, context and list are as if they did not exist), stored in the threads
//! table and gone with their thread; the card is public while every operation authenticates.
//! The bindings' shapes and the official SDKs' view are tests/python/a2a_server_check.py and
//! tests/node/a2a.test.mjs.

use crate::both_stores::{Subject, on_both_stores};
use crate::helpers::{TestApp, spawn_app_on, spawn_app_with};
use agui_lambda::testing::auth::hash_api_key;
use serde_json::{Value, json};

const ALICE: &str = "alice-a2a-key";
const BOB: &str = "bob-a2a-key";

fn keys() -> String {
    format!("alice={},bob={}", hash_api_key(ALICE), hash_api_key(BOB))
}

/// A JSON-RPC call as `key`: the answer's body.
async fn rpc(app: &TestApp, key: &str, method: &str, params: Value) -> Value {
    let response = app
        .http
        .post(app.url("/a2a"))
        .header("authorization", format!("Bearer {key}"))
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": "1", "method": method, "params": params}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

fn send(text: &str, extra: Value) -> Value {
    let mut message = json!({"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER", "parts": [{"text": text}]});
    if let (Some(message), Some(extra)) = (message.as_object_mut(), extra.as_object()) {
        message.extend(extra.clone());
    }
    json!({"message": message})
}

fn code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("an error: {answer}"))
}

async fn tasks_are_owner_only_and_gone_with_their_thread(subject: Subject) {
    let app = spawn_app_on(
        &[("AUTH_MODE", "api-key"), ("API_KEYS", &keys())],
        Some(subject.store.clone()),
    )
    .await;
    let sent = rpc(&app, ALICE, "SendMessage", send("hello", json!({}))).await;
    let task = &sent["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    let (id, context) = (
        task["id"].as_str().unwrap(),
        task["contextId"].as_str().unwrap(),
    );
    let second = rpc(
        &app,
        ALICE,
        "SendMessage",
        send("hello", json!({"contextId": context})),
    )
    .await;
    assert_eq!(second["result"]["task"]["contextId"], context);

    let listed = rpc(&app, ALICE, "ListTasks", json!({"contextId": context})).await;
    assert_eq!(
        listed["result"]["tasks"].as_array().unwrap().len(),
        2,
        "{listed}"
    );
    assert_eq!(listed["result"]["totalSize"], 2);

    // Bob sees none of it, and cannot reach it by id or by context.
    assert_eq!(
        code(&rpc(&app, BOB, "GetTask", json!({"id": id})).await),
        -32001
    );
    assert_eq!(
        code(&rpc(&app, BOB, "CancelTask", json!({"id": id})).await),
        -32001
    );
    assert_eq!(
        code(&rpc(&app, BOB, "SubscribeToTask", json!({"id": id})).await),
        -32001
    );
    assert_eq!(
        code(&rpc(&app, BOB, "SendMessage", send("hi", json!({"taskId": id}))).await),
        -32001
    );
    assert_eq!(
        code(
            &rpc(
                &app,
                BOB,
                "SendMessage",
                send("hello", json!({"contextId": context}))
            )
            .await
        ),
        -32602
    );
    let bobs = rpc(&app, BOB, "ListTasks", json!({})).await;
    assert_eq!(bobs["result"]["tasks"], json!([]), "{bobs}");
    assert_eq!(bobs["result"]["totalSize"], 0);

    // Deleting the thread deletes its tasks.
    let deleted = app
        .http
        .delete(app.url(&format!("/threads/{context}")))
        .header("authorization", format!("Bearer {ALICE}"))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    assert_eq!(
        code(&rpc(&app, ALICE, "GetTask", json!({"id": id})).await),
        -32001
    );
    let listed = rpc(&app, ALICE, "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["totalSize"], 0, "{listed}");
    if let Some((client, table)) = &subject.table {
        let items = client.scan().table_name(table).send().await.unwrap();
        let left: Vec<String> = items
            .items()
            .iter()
            .filter_map(|item| item.get("sk")?.as_s().ok().cloned())
            .filter(|sk| sk.starts_with("A2A#"))
            .collect();
        assert!(
            left.is_empty(),
            "task items left after the thread was deleted: {left:?}"
        );
    }
}

on_both_stores!(tasks_are_owner_only_and_gone_with_their_thread);

#[tokio::test]
async fn the_card_is_public_and_every_operation_authenticates() {
    let app = spawn_app_with(&[("AUTH_MODE", "api-key"), ("API_KEYS", &keys())]).await;
    let card = app.get("/.well-known/agent-card.json").await.json();
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    assert_eq!(
        card["securityRequirements"][0]["schemes"]["bearer"],
        json!({})
    );
    assert_eq!(card["capabilities"]["streaming"], true);
    let refused = app
        .http
        .post(app.url("/a2a"))
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": "1", "method": "ListTasks", "params": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    assert_eq!(refused.headers()["www-authenticate"], "Bearer");
    let body: Value = refused.json().await.unwrap();
    assert_eq!(
        body["jsonrpc"], "2.0",
        "refused in the binding's shape: {body}"
    );
    let rest = app
        .http
        .get(app.url("/a2a/tasks"))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .unwrap();
    assert_eq!(rest.status(), 401);
    let body: Value = rest.json().await.unwrap();
    assert_eq!(body["error"]["code"], 401, "{body}");
}

#[tokio::test]
async fn a_profile_is_a_tenant_with_a_card_of_its_own() {
    let profiles = r#"{"researcher": {"systemPrompt": "You research."}}"#;
    let app = spawn_app_with(&[("AGENT_PROFILES", profiles)]).await;
    let card = app.get("/.well-known/agent-card.json").await.json();
    assert_eq!(card["skills"][0]["id"], "researcher");
    let own = app
        .get("/a2a/researcher/.well-known/agent-card.json")
        .await
        .json();
    assert_eq!(own["supportedInterfaces"][0]["tenant"], "researcher");
    assert_eq!(
        app.get("/a2a/nobody/.well-known/agent-card.json")
            .await
            .status,
        404
    );
    let answer = app
        .http
        .post(app.url("/a2a/researcher/message:send"))
        .header("A2A-Version", "1.0")
        .json(&send("hello", json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(
        body["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{body}"
    );
    let unknown = app
        .http
        .post(app.url("/a2a/nobody/message:send"))
        .header("A2A-Version", "1.0")
        .json(&send("hello", json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 400);
}
