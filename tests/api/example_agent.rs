//! `examples/calculator` through the real handler: its tool, registered as the example's
//! `main` registers it, is offered to the model, called, streamed as `TOOL_CALL_RESULT`, changes
//! the state and is what the model answers from. (The example's own binary runs against aimock
//! in the test command's end-to-end step, `tests/node/example.test.mjs`.)

#[path = "../../examples/calculator/tool.rs"]
mod calculator;

use super::helpers::*;
use agui_lambda::tools::ToolRegistry;
use serde_json::{Value, json};

async fn calculator_app() -> TestApp {
    let mut tools = ToolRegistry::with_builtins().unwrap();
    tools.add(calculator::calculator()).unwrap();
    spawn_app_with_tools(&[], tools).await
}

/// The `tool` messages of a model request, as JSON.
fn tool_messages(request: &agui_lambda::testing::model::ModelRequest) -> Vec<Value> {
    serde_json::to_value(&request.messages)
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .cloned()
        .collect()
}

#[tokio::test]
async fn the_example_tool_is_called_its_result_streamed_and_used_in_the_answer() {
    let app = calculator_app().await;
    let events = app
        .run(&run_input(
            &new_thread(),
            "r",
            json!([{"id": "u1", "role": "user", "content": "calculate 6 times 7"}]),
        ))
        .await
        .events();

    let start = events
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_START")
        .unwrap();
    assert_eq!(start["toolCallName"], "calculate");
    let result = events
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_RESULT")
        .unwrap();
    assert_eq!(result["toolCallId"], start["toolCallId"]);
    assert_eq!(result["content"], r#"{"result":42}"#);
    let delta = events.iter().find(|e| e["type"] == "STATE_DELTA").unwrap();
    assert_eq!(
        delta["delta"],
        json!([{"op": "add", "path": "/lastResult", "value": 42}])
    );
    assert_eq!(text_of(&events), "6 times 7 is 42.");

    let asked = app.fixture_requests_about("calculate 6 times 7");
    assert_eq!(asked.len(), 2);
    let offered = &asked[0].tools;
    let spec = offered
        .iter()
        .find(|tool| tool.name == "calculate")
        .unwrap();
    assert_eq!(spec.parameters["required"], json!(["a", "b", "operation"]));
    let answered_from = tool_messages(&asked[1]);
    assert_eq!(answered_from.len(), 1);
    assert!(
        answered_from[0].to_string().contains(r#"{\"result\":42}"#),
        "the model answers from the tool's result: {answered_from:?}"
    );
}

#[tokio::test]
async fn input_the_tool_refuses_goes_back_to_the_model_as_a_tool_error() {
    let app = calculator_app().await;
    let events = app
        .run(&run_input(
            &new_thread(),
            "r",
            json!([{"id": "u1", "role": "user", "content": "calculate 1 divided by 0"}]),
        ))
        .await
        .events();
    let result = events
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_RESULT")
        .unwrap();
    assert_eq!(
        result["content"],
        "Error: cannot divide by zero; ask the user for another divisor"
    );
    assert!(
        !events.iter().any(|e| e["type"] == "STATE_DELTA"),
        "a refused call changes no state"
    );
    assert_eq!(
        text_of(&events),
        "I cannot divide by zero. What should I divide by instead?"
    );
    assert_eq!(types(&events).last(), Some(&"RUN_FINISHED"));
}
