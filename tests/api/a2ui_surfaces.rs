//! A2UI surfaces over HTTP on DynamoDB Local: a scripted model builds a form, a new process on
//! the same table gives a new client the surface back in its last state, and a later run updates
//! that surface (same `surfaceId`) from what the thread kept; a click answered by the strict
//! Anthropic stand-in.

use agui_lambda::testing::model::{
    DeltaStream, DemoModel, FinishReason, ModelDelta, ModelError, ModelProvider, ModelRequest,
    Usage,
};
use agui_lambda::testing::protocol::{Message, UserContent};
use agui_lambda::testing::store::{DynamoStore, MemoryStore, ThreadStore};
use agui_lambda::tools::ToolRegistry;
use async_trait::async_trait;
use serde_json::{Value, json};
use std::sync::Arc;

use crate::dynamo_local;
use crate::helpers::*;
use crate::strict_messages::StrictMessages;

/// Builds the form for "[form]", adds an e-mail field to it for "[email]" (naming only the new
/// components and the column that lists them), and says so after the render tool answers.
struct FormModel;

fn form_call() -> Value {
    let components = json!([
        {"id": "root", "component": "Card", "child": "body"},
        {"id": "body", "component": "Column", "children": ["title", "name", "send"]},
        {"id": "title", "component": "Text", "text": "Sign up"},
        {"id": "name", "component": "TextField", "label": "Your name", "value": {"path": "/name"}},
        {"id": "send", "component": "Button", "child": "send-label",
         "action": {"event": {"name": "submit", "context": {"name": {"path": "/name"}}}}},
        {"id": "send-label", "component": "Text", "text": "Send"}
    ]);
    json!({"surfaceId": "signup", "components": components.to_string(),
           "data": json!({"name": ""}).to_string()})
}

fn email_call() -> Value {
    let components = json!([
        {"id": "body", "component": "Column", "children": ["title", "name", "email", "send"]},
        {"id": "email", "component": "TextField", "label": "E-mail", "value": {"path": "/email"}}
    ]);
    json!({"surfaceId": "signup", "components": components.to_string(),
           "data": json!({"email": ""}).to_string()})
}

fn last_user_text(request: &ModelRequest) -> String {
    request
        .messages
        .iter()
        .rev()
        .find_map(|message| match message {
            Message::User { content, .. } => Some(match content {
                UserContent::Text(text) => text.clone(),
                parts @ UserContent::Parts(_) => parts.text(),
            }),
            _ => None,
        })
        .unwrap_or_default()
}

#[async_trait]
impl ModelProvider for FormModel {
    fn identity(&self) -> agui_lambda::testing::model::ModelIdentity {
        agui_lambda::testing::model::ModelIdentity {
            provider: "openai".to_owned(),
            model: "scripted-forms".to_owned(),
        }
    }

    fn describe(&self) -> String {
        "scripted forms".to_owned()
    }

    async fn stream(&self, request: &ModelRequest) -> Result<DeltaStream, ModelError> {
        let offered = request.tools.iter().any(|tool| tool.name == "render_a2ui");
        let said = last_user_text(request);
        let call = match request.messages.last() {
            Some(Message::Tool { .. }) => None,
            _ if offered && said.contains("[form]") => Some(form_call()),
            _ if offered && said.contains("[email]") => Some(email_call()),
            _ => None,
        };
        let mut deltas = match call {
            Some(arguments) => vec![
                ModelDelta::ToolCallStart {
                    index: 0,
                    id: None,
                    name: "render_a2ui".to_owned(),
                },
                ModelDelta::ToolCallArgs {
                    index: 0,
                    delta: arguments.to_string(),
                },
                ModelDelta::Finish(FinishReason::ToolCalls),
            ],
            None => vec![
                ModelDelta::Text(format!("offered: {offered}; done.")),
                ModelDelta::Finish(FinishReason::Stop),
            ],
        };
        deltas.push(ModelDelta::Usage(Usage::default()));
        Ok(Box::pin(futures_util::stream::iter(
            deltas.into_iter().map(Ok),
        )))
    }
}

async fn app_on(client: &aws_sdk_dynamodb::Client, table: &str) -> TestApp {
    let store: Arc<dyn ThreadStore> =
        Arc::new(DynamoStore::new(client.clone(), table.to_owned(), 0));
    spawn_app_on_scripted(Arc::new(FormModel), &[], store).await
}

fn painting(thread: &str, run: &str, text: &str) -> Value {
    let mut body = run_input(
        thread,
        run,
        json!([{"id": format!("u-{run}"), "role": "user", "content": text}]),
    );
    body["forwardedProps"] = json!({"a2uiCatalogAvailable": true});
    body
}

/// The operations of the run's painted `a2ui-surface` activities, in order.
fn painted(events: &[Value]) -> Vec<(String, Vec<Value>)> {
    of_type(events, "ACTIVITY_SNAPSHOT")
        .into_iter()
        .filter(|event| event["activityType"] == "a2ui-surface")
        .filter_map(|event| {
            let operations = event["content"]["a2ui_operations"].as_array()?;
            Some((event["messageId"].as_str()?.to_owned(), operations.clone()))
        })
        .collect()
}

/// The ids of the components an operation list paints, and its data model.
fn components_and_data(operations: &[Value]) -> (Vec<String>, Value) {
    let mut ids = Vec::new();
    let mut data = Value::Null;
    for operation in operations {
        assert_eq!(operation["version"], "v0.9", "{operation}");
        if let Some(update) = operation.get("updateComponents") {
            assert_eq!(update["surfaceId"], "signup");
            ids.extend(
                update["components"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c["id"].as_str().unwrap().to_owned()),
            );
        }
        if let Some(update) = operation.get("updateDataModel") {
            assert_eq!(update["surfaceId"], "signup");
            data = update["value"].clone();
        }
    }
    ids.sort();
    (ids, data)
}

/// The surfaces a thread keeps for a reload, oldest first: each render answer's activity.
async fn kept_surfaces(app: &TestApp, thread: &str) -> Vec<Value> {
    let page = app
        .get(&format!("/threads/{thread}?limit=500"))
        .await
        .json();
    page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|message| message["metadata"]["agui-lambda"]["activity"].as_object())
        .filter(|activity| activity["activityType"] == "a2ui-surface")
        .map(|activity| Value::Object(activity.clone()))
        .collect()
}

#[tokio::test]
async fn a_surface_comes_back_after_a_reload_and_a_later_run_updates_it() {
    let (client, table) = dynamo_local::new_table().await;
    let first = app_on(&client, &table).await;
    let thread = new_thread();

    let events = first
        .run(&painting(&thread, "r1", "[form] sign me up"))
        .await
        .events();
    let surfaces = painted(&events);
    assert_eq!(surfaces.len(), 1, "one surface painted: {events:?}");
    let (built_id, operations) = &surfaces[0];
    assert!(
        operations[0]["createSurface"]["surfaceId"] == "signup",
        "{operations:?}"
    );
    let built = components_and_data(operations);
    assert_eq!(
        built.0,
        ["body", "name", "root", "send", "send-label", "title"]
    );
    let result = &of_type(&events, "TOOL_CALL_RESULT")[0]["content"];
    assert!(
        result.as_str().unwrap().contains("\"status\":\"rendered\""),
        "{result}"
    );

    // A new process on the same table, as a reloaded page or another Lambda instance meets it:
    // the thread gives the surface back as it was painted.
    let second = app_on(&client, &table).await;
    let kept = kept_surfaces(&second, &thread).await;
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0]["messageId"], built_id.as_str());
    assert_eq!(
        components_and_data(kept[0]["content"]["a2ui_operations"].as_array().unwrap()),
        built
    );

    // A later run on the new process updates the same surface: its call names only what
    // changes, the operations carry the whole surface with the earlier components kept.
    let events = second
        .run(&painting(&thread, "r2", "[email] add my e-mail"))
        .await
        .events();
    let surfaces = painted(&events);
    assert_eq!(surfaces.len(), 1, "the update painted: {events:?}");
    let (updated_id, operations) = &surfaces[0];
    assert_ne!(updated_id, built_id, "an update is an activity of its own");
    let (ids, data) = components_and_data(operations);
    assert_eq!(
        ids,
        [
            "body",
            "email",
            "name",
            "root",
            "send",
            "send-label",
            "title"
        ]
    );
    // Both fields' initial values (and the key that lets CopilotKit paint empty fields at once).
    assert_eq!(data, json!({"name": "", "email": "", "_surface": "signup"}));
    let column = operations
        .iter()
        .filter_map(|op| op["updateComponents"]["components"].as_array())
        .flatten()
        .find(|c| c["id"] == "body")
        .unwrap();
    assert_eq!(
        column["children"],
        json!(["title", "name", "email", "send"])
    );

    // The first process, reloading again, shows the surface in its last state.
    let kept = kept_surfaces(&first, &thread).await;
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert_eq!(kept[1]["messageId"], updated_id.as_str());
    assert_eq!(
        components_and_data(kept[1]["content"]["a2ui_operations"].as_array().unwrap()),
        (ids, data)
    );
}

/// A click on a surface against the strict Anthropic stand-in (thinking on, so the replayed tool
/// loop must keep its signed thinking): the click reaches the model as the user's turn, with the
/// value typed, after the render call and its answer, and the run finishes.
#[tokio::test]
async fn a_click_reaches_a_strict_provider_as_the_users_turn_and_the_run_finishes() {
    const KEY: &str = "sk-ant-test-key";
    let strict = StrictMessages::start(KEY).await;
    let vars = [
        ("MODEL_PROVIDER", "anthropic"),
        ("ANTHROPIC_BASE_URL", strict.url.as_str()),
        ("ANTHROPIC_API_KEY", KEY),
        ("AGENT_MODEL", "claude-sonnet-4-5"),
        ("ANTHROPIC_THINKING_BUDGET_TOKENS", "1024"),
    ];
    let app = spawn_app_on_model_url(
        &strict.url,
        &vars,
        Arc::new(MemoryStore::new()),
        ToolRegistry::with_builtins().unwrap(),
        None,
    )
    .await;
    let thread = new_thread();
    let events = app
        .run(&painting(&thread, "r1", "[form] please"))
        .await
        .events();
    assert_eq!(painted(&events).len(), 1, "{events:?}");

    let mut click = run_input(&thread, "r2", json!([]));
    click["forwardedProps"] = json!({"a2uiCatalogAvailable": true, "a2uiAction": {"userAction": {
        "name": "submit", "surfaceId": "signup", "sourceComponentId": "send",
        "context": {"name": "Ada Lovelace"}, "timestamp": "2026-11-28T10:00:00Z"}}});
    let events = app.run(&click).await.events();
    let said = of_type(&events, "TEXT_MESSAGE_START")
        .into_iter()
        .find(|start| start["role"] == "user")
        .expect("the click shown as the user's message");
    let shown: String = of_type(&events, "TEXT_MESSAGE_CONTENT")
        .into_iter()
        .filter(|content| content["messageId"] == said["messageId"])
        .map(|content| content["delta"].as_str().unwrap())
        .collect();
    assert!(shown.contains("\"name\":\"Ada Lovelace\""), "{shown}");
    assert!(
        text_of(&events).contains("Hello from the strict model."),
        "{events:?}"
    );

    let seen = strict.requests_about("Ada Lovelace");
    assert_eq!(seen.len(), 1, "one model call for the click");
    assert_eq!(seen[0].status, 200, "{:?}", seen[0].refusal);
    let messages = seen[0].body["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant", "user"]);
    let history = serde_json::to_string(messages).unwrap();
    assert!(
        history.contains("\"name\":\"render_a2ui\""),
        "the render call replayed: {history}"
    );
    let last = messages.last().unwrap().to_string();
    assert!(
        last.contains("User performed action \\\"submit\\\" on surface \\\"signup\\\""),
        "{last}"
    );
}

/// The demo model (`cargo run` with no key) builds its form through the same render tool, which
/// validates and paints it, and answers a click on it with the value typed.
#[tokio::test]
async fn the_demo_models_form_is_painted_and_its_click_answered_with_the_value_typed() {
    let app = spawn_app_on_scripted(
        Arc::new(DemoModel::default()),
        &[],
        Arc::new(MemoryStore::new()),
    )
    .await;
    let thread = new_thread();
    let events = app
        .run(&painting(&thread, "r1", "Show me a form"))
        .await
        .events();
    let statuses: Vec<&Value> = of_type(&events, "ACTIVITY_SNAPSHOT")
        .into_iter()
        .filter_map(|event| event["content"].get("status"))
        .collect();
    assert!(
        statuses.iter().all(|status| *status == "building"),
        "{statuses:?}"
    );
    let surfaces = painted(&events);
    assert_eq!(surfaces.len(), 1, "{events:?}");
    let operations = &surfaces[0].1;
    assert_eq!(operations[0]["createSurface"]["surfaceId"], "demo-form");
    let components = operations[1]["updateComponents"]["components"]
        .as_array()
        .unwrap();
    assert!(
        components
            .iter()
            .any(|c| c["component"] == "TextField" && c["value"] == json!({"path": "/name"}))
    );

    let mut click = run_input(&thread, "r2", json!([]));
    click["forwardedProps"] = json!({"a2uiCatalogAvailable": true, "a2uiAction": {"userAction": {
        "name": "submit", "surfaceId": "demo-form", "sourceComponentId": "send",
        "context": {"name": "Grace Hopper"}, "timestamp": "2026-11-28T10:00:00Z"}}});
    let events = app.run(&click).await.events();
    assert!(
        text_of(&events).ends_with(
            "You pressed \"submit\" on the surface \"demo-form\" with name: Grace Hopper."
        ),
        "{}",
        text_of(&events)
    );
}

/// `GET /capabilities` says when surfaces are painted (the dev page offers its form suggestion
/// from it): `auto` with nothing configured, else the `A2UI` setting.
#[tokio::test]
async fn capabilities_report_the_a2ui_mode() {
    let plain = spawn_app().await.get("/capabilities").await.json();
    assert_eq!(
        plain["custom"]["a2ui"],
        json!({"mode": "auto", "version": "v0.9", "maxAttempts": 3})
    );
    let off = spawn_app_with(&[("A2UI", "off")]).await;
    assert_eq!(
        off.get("/capabilities").await.json()["custom"]["a2ui"]["mode"],
        "off"
    );
}
