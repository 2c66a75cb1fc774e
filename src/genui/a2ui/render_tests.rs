use super::*;
use crate::genui::a2ui::catalog::{BASIC_CATALOG_ID, Catalog};
use crate::genui::a2ui::emit::{OPERATIONS_KEY, Renderer};
use crate::genui::a2ui::spec_schema::assert_valid_operations;
use crate::genui::a2ui::validate::tests::form;
use crate::protocol::{MessageId, ToolCall, ToolCallId, UserContent};
use serde_json::json;

pub(crate) fn offer() -> Offer {
    Offer {
        renderer: Renderer::Spec {
            catalog_id: BASIC_CATALOG_ID.to_owned(),
        },
        catalog: Catalog::basic(),
    }
}

pub(crate) fn user(text: &str) -> Message {
    Message::User {
        id: MessageId::generate(),
        content: UserContent::Text(text.to_owned()),
        name: None,
    }
}

/// The thread after one render call: the assistant's call and its answer as the run loop keeps
/// them.
pub(crate) struct Thread {
    pub(crate) messages: Vec<Message>,
    calls: usize,
}

impl Thread {
    pub(crate) fn new() -> Self {
        Self {
            messages: vec![user("make me a form")],
            calls: 0,
        }
    }

    /// One render call with `arguments`, started and completed as the run loop does.
    pub(crate) fn call(&mut self, arguments: &Value) -> (Start, Outcome) {
        self.calls += 1;
        let id = format!("call_{}", self.calls);
        let arguments = arguments.to_string();
        let start = start(&self.messages, &id);
        self.messages.push(Message::Assistant {
            id: MessageId::generate(),
            content: None,
            tool_calls: vec![ToolCall::new(
                ToolCallId::parse(id.clone(), 128).unwrap(),
                "render_a2ui".to_owned(),
                arguments.clone(),
            )],
            name: None,
            encrypted_value: None,
        });
        let outcome = complete(
            &arguments,
            &id,
            &offer(),
            &self.messages,
            DEFAULT_MAX_ATTEMPTS,
        );
        self.messages.push(Message::Tool {
            id: MessageId::generate(),
            tool_call_id: ToolCallId::parse(id, 128).unwrap(),
            content: outcome.result.clone(),
            error: outcome.error.clone(),
            metadata: Some(outcome.metadata.clone()),
        });
        (start, outcome)
    }
}

pub(crate) fn form_call() -> Value {
    json!({"surfaceId": "who", "components": serde_json::to_string(&form()).unwrap(), "data": "{\"name\":\"\"}"})
}

#[test]
fn a_valid_call_paints_the_surface_and_tells_the_model_it_was_rendered() {
    let mut thread = Thread::new();
    let (start, outcome) = thread.call(&form_call());
    assert_eq!(start.activity_id, "a2ui-surface-call_1");
    assert_eq!(start.content, Some(json!({"status": "building"})));
    assert_eq!(outcome.activity_id, "a2ui-surface-call_1");
    assert_eq!(outcome.status, Status::Rendered);
    assert_eq!(outcome.error, None);
    assert_eq!(
        serde_json::from_str::<Value>(&outcome.result).unwrap(),
        json!({"status": "rendered", "surfaceId": "who"})
    );
    let operations = outcome.content[OPERATIONS_KEY].as_array().unwrap();
    assert_valid_operations(operations);
    assert_eq!(
        operations[1]["updateComponents"]["components"],
        json!(form())
    );
}

#[test]
fn components_and_data_may_come_as_json_or_as_json_text() {
    let as_json = json!({"surfaceId": "who", "components": form(), "data": {"name": ""}});
    let (_, outcome) = Thread::new().call(&as_json);
    let (_, from_text) = Thread::new().call(&form_call());
    assert_eq!(outcome.content, from_text.content);
}

#[test]
fn an_invalid_attempt_is_not_painted_and_the_next_one_paints_into_the_same_activity() {
    let mut thread = Thread::new();
    let mut broken = form();
    broken[2]["component"] = json!("Fancy");
    broken[1]["children"] = json!(["title", "name", "send", "ghost"]);
    let (_, first) =
        thread.call(&json!({"surfaceId": "who", "components": broken, "data": {"name": ""}}));
    assert_eq!(first.status, Status::Invalid);
    assert!(
        first.content.get(OPERATIONS_KEY).is_none(),
        "nothing painted"
    );
    assert_eq!(first.content["status"], "retrying");
    assert_eq!(first.content["attempt"], 2);
    assert_eq!(first.content["maxAttempts"], 3);
    let codes: Vec<&str> = first.content["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes,
        vec!["unresolved_child", "unknown_component"],
        "in the order of the components"
    );
    assert!(first.result.contains("- [unknown_component] components[2].component: Component type 'Fancy' is not in the catalog"));
    assert!(first.result.contains("attempt 1 of 3"));
    assert!(first.error.is_some());

    let (start, second) = thread.call(&form_call());
    assert_eq!(
        start.activity_id, "a2ui-surface-call_1",
        "the retry paints where the first attempt was shown"
    );
    assert_eq!(
        start.content, None,
        "no building state over the retrying one"
    );
    assert_eq!(second.activity_id, "a2ui-surface-call_1");
    assert_eq!(second.status, Status::Rendered);
}

#[test]
fn a_model_that_never_gets_it_right_ends_in_failed_after_three_attempts() {
    let mut thread = Thread::new();
    let broken = json!({"surfaceId": "who", "components": [{"id": "top", "component": "Text", "text": "x"}]});
    let outcomes: Vec<Outcome> = (0..3).map(|_| thread.call(&broken).1).collect();
    assert_eq!(
        outcomes.iter().map(|o| o.status).collect::<Vec<_>>(),
        vec![Status::Invalid, Status::Invalid, Status::Failed]
    );
    assert!(
        outcomes
            .iter()
            .all(|o| o.activity_id == "a2ui-surface-call_1")
    );
    let last = &outcomes[2];
    assert_eq!(last.content["status"], "failed");
    assert_eq!(
        last.content["error"],
        "Failed to generate valid A2UI after 3 attempt(s)"
    );
    assert_eq!(last.content["attempts"].as_array().unwrap().len(), 3);
    let result: Value = serde_json::from_str(&last.result).unwrap();
    assert_eq!(result["code"], "a2ui_recovery_exhausted");
    // A later call starts afresh.
    let (start, _) = thread.call(&form_call());
    assert_eq!(start.activity_id, "a2ui-surface-call_4");
}

#[test]
fn arguments_that_are_not_a_surface_count_as_an_attempt() {
    let mut thread = Thread::new();
    let (_, outcome) = thread.call(&json!({"surfaceId": "", "components": "not json"}));
    assert_eq!(outcome.status, Status::Invalid);
    let codes: Vec<&str> = outcome.content["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, vec!["invalid_prop", "empty_components"]);
    let outcome = complete(
        "{\"surfaceId\": \"x\", \"compo",
        "call_9",
        &offer(),
        &thread.messages,
        3,
    );
    assert!(outcome.result.contains("not a JSON object"));
}

#[test]
fn a_later_call_with_the_same_surface_id_updates_the_surface_it_made() {
    let mut thread = Thread::new();
    thread.call(&form_call());
    thread.messages.push(user("add an email field"));
    let update = json!({
        "surfaceId": "who",
        "components": [
            {"id": "body", "component": "Column", "children": ["title", "name", "email", "send"]},
            {"id": "email", "component": "TextField", "label": "Email", "value": {"path": "/email"}},
        ],
        "data": {"email": "ada@example.com"},
    });
    let (start, outcome) = thread.call(&update);
    assert_eq!(
        start.activity_id, "a2ui-surface-call_2",
        "an update is a new activity"
    );
    assert_eq!(outcome.status, Status::Rendered);
    let operations = outcome.content[OPERATIONS_KEY].as_array().unwrap();
    assert_valid_operations(operations);
    let ids: Vec<&str> = operations[1]["updateComponents"]["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        vec![
            "root",
            "body",
            "title",
            "name",
            "send",
            "send-label",
            "email"
        ]
    );
    assert_eq!(
        operations[2]["updateDataModel"]["value"],
        json!({"name": "", "email": "ada@example.com"})
    );
}

#[test]
fn a_component_an_update_leaves_unreachable_is_dropped() {
    let mut thread = Thread::new();
    thread.call(&form_call());
    let (_, outcome) = thread.call(&json!({
        "surfaceId": "who",
        "components": [{"id": "body", "component": "Column", "children": ["title"]}],
    }));
    let ids: Vec<&str> = outcome.content[OPERATIONS_KEY][1]["updateComponents"]["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec!["root", "body", "title"]);
}

#[test]
fn progress_is_shown_every_twenty_tokens_of_arguments() {
    assert_eq!(progress(0, 40), None);
    assert_eq!(progress(0, 80), Some(20));
    assert_eq!(progress(20, 150), None);
    assert_eq!(progress(20, 160), Some(40));
}

#[test]
fn a_run_that_ends_mid_retry_shows_the_surface_failed() {
    let mut thread = Thread::new();
    assert_eq!(abandoned(&thread.messages), None);
    thread.call(&json!({"surfaceId": "who", "components": []}));
    let (activity, content) = abandoned(&thread.messages).unwrap();
    assert_eq!(activity, "a2ui-surface-call_1");
    assert_eq!(content["status"], "failed");
    thread.call(&form_call());
    assert_eq!(abandoned(&thread.messages), None);
}
