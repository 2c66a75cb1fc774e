//! Open Generative UI through the real handler: a client that offers CopilotKit's
//! `generateSandboxedUi` gets the model's call of it as the activity that previews it, patched
//! as the arguments stream (the fixtures write the call 12 characters at a time), and the run
//! still ends at the frontend-tool boundary. Each provider's own test (OpenAI here; Responses,
//! Anthropic and Bedrock in their files) plays the same call through its wire format and checks
//! it with [`assert_previewed`].

use super::helpers::*;
use serde_json::{Value, json};

pub(crate) const ASK: &str = "[ogui] sketch a card slowly";

/// The tool as CopilotKit 1.74 registers it (its zod schema as JSON Schema).
pub(crate) fn sandboxed_ui_tool() -> Value {
    json!({"name": "generateSandboxedUi", "description": "Generate a sandboxed UI",
           "parameters": {"type": "object", "properties": {
               "initialHeight": {"type": "number"},
               "placeholderMessages": {"type": "array", "items": {"type": "string"}},
               "css": {"type": "string"}, "html": {"type": "string"},
               "jsFunctions": {"type": "string"},
               "jsExpressions": {"type": "array", "items": {"type": "string"}}}}})
}

pub(crate) fn ogui_input(thread: &str, run: &str, messages: Value) -> Value {
    let mut input = run_input(thread, run, messages);
    input["tools"] = json!([sandboxed_ui_tool()]);
    input
}

pub(crate) fn ask(thread: &str) -> Value {
    ogui_input(
        thread,
        "r1",
        json!([{"id": "u1", "role": "user", "content": ASK}]),
    )
}

/// The call's arguments as the fixture writes them.
fn fixture_arguments() -> Value {
    let fixtures: Value =
        serde_json::from_str(include_str!("../fixtures/aimock-openai.json")).unwrap();
    fixtures["fixtures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["match"]["userMessage"] == ASK && f["match"]["hasToolResult"] == false)
        .unwrap()["response"]["toolCalls"][0]["arguments"]
        .clone()
}

/// Checks a run that called `generateSandboxedUi` against what CopilotKit's renderer needs: the
/// activity opens before the call, every patch follows the piece of arguments it came from (at
/// most one per piece), the HTML arrives in pieces, generation ends right before the call does,
/// the run ends right after it, and the patches build the whole call. Returns the call's id.
pub(crate) fn assert_previewed(events: &[Value]) -> String {
    let kinds = types(events);
    let start = kinds.iter().position(|k| *k == "TOOL_CALL_START").unwrap();
    let call = events[start]["toolCallId"].as_str().unwrap().to_owned();
    assert_eq!(events[start]["toolCallName"], "generateSandboxedUi");
    let activity = format!("{call}-activity");
    let opening = &events[start - 1];
    assert_eq!(opening["type"], "ACTIVITY_SNAPSHOT", "{kinds:?}");
    assert_eq!(opening["messageId"], activity);
    assert_eq!(opening["activityType"], "open-generative-ui");
    assert_eq!(opening["content"], json!({"generating": true}));

    let mut content = opening["content"].clone();
    let mut html_pieces = 0;
    let deltas: Vec<usize> = (0..events.len())
        .filter(|&i| events[i]["type"] == "ACTIVITY_DELTA")
        .collect();
    let args = kinds.iter().filter(|k| **k == "TOOL_CALL_ARGS").count();
    assert!(
        deltas.len() <= args + 1,
        "{} patches for {args} pieces",
        deltas.len()
    );
    for &i in &deltas {
        let delta = &events[i];
        assert_eq!(delta["messageId"], activity);
        let previous = kinds[i - 1];
        let last = i == *deltas.last().unwrap();
        if last {
            assert_eq!(
                delta["patch"],
                json!([{"op": "add", "path": "/generating", "value": false}])
            );
            assert_eq!(kinds[i + 1], "TOOL_CALL_END");
        } else {
            assert_eq!(
                previous, "TOOL_CALL_ARGS",
                "a patch follows its piece: {kinds:?}"
            );
        }
        for op in delta["patch"].as_array().unwrap() {
            assert_eq!(op["op"], "add");
            assert!(op.get("value").is_some_and(|v| !v.is_null()), "{op}");
            html_pieces += usize::from(op["path"] == "/html/-");
        }
        let patch: json_patch::Patch = serde_json::from_value(delta["patch"].clone()).unwrap();
        json_patch::patch(&mut content, &patch).unwrap();
    }
    assert!(
        html_pieces >= 10,
        "the HTML in pieces as written: {html_pieces}"
    );
    assert_eq!(kinds[kinds.len() - 2], "TOOL_CALL_END");
    assert_eq!(kinds[kinds.len() - 1], "RUN_FINISHED");

    let html: String = content["html"]
        .as_array()
        .unwrap()
        .iter()
        .map(|piece| piece.as_str().unwrap())
        .collect();
    let args = fixture_arguments();
    assert_eq!(html, args["html"]);
    assert_eq!(content["css"], args["css"]);
    assert_eq!(content["jsFunctions"], args["jsFunctions"]);
    assert_eq!(content["jsExpressions"], args["jsExpressions"]);
    assert_eq!(content["placeholderMessages"], args["placeholderMessages"]);
    assert_eq!(content["initialHeight"], args["initialHeight"]);
    for done in [
        "cssComplete",
        "htmlComplete",
        "jsFunctionsComplete",
        "jsExpressionsComplete",
    ] {
        assert_eq!(content[done], true, "{done}");
    }
    assert_eq!(content["generating"], false);
    call
}

/// The follow-up CopilotKit posts once its handler answered "UI generated".
pub(crate) fn follow_up(thread: &str, first: &[Value], call: &str) -> Value {
    ogui_input(
        thread,
        "r2",
        json!([{"id": "u1", "role": "user", "content": ASK}, assistant_from(first),
               {"id": "t1", "role": "tool", "toolCallId": call, "content": "UI generated"}]),
    )
}

#[tokio::test]
async fn a_sandboxed_ui_call_streams_as_the_activity_that_previews_it() {
    let app = spawn_app().await;
    let thread = new_thread();
    let first = app.run(&ask(&thread)).await.events();
    let call = assert_previewed(&first);
    let second = app.run(&follow_up(&thread, &first, &call)).await.events();
    assert_eq!(text_of(&second), "The card is on the page.");
    assert!(of_type(&second, "ACTIVITY_SNAPSHOT").is_empty());
}

#[tokio::test]
async fn wire_open_generative_ui_on_aimock_over_chat_completions() {
    let app = spawn_wire_app().await;
    let thread = new_thread();
    let first = app.run(&ask(&thread)).await.events();
    let call = assert_previewed(&first);
    let second = app.run(&follow_up(&thread, &first, &call)).await.events();
    assert_eq!(text_of(&second), "The card is on the page.");
}
