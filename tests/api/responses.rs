//! The OpenAI Responses API provider end to end: against the strict stand-in of
//! `tests/strict_models.py` (which refuses a reasoning item re-sent altered, out of order or
//! without the item it produced), and against aimock's Responses endpoint (the `wire_` tests).

use crate::helpers::*;
use crate::strict_models::StrictModels;
use agui_lambda::testing::store::MemoryStore;
use agui_lambda::tools::ToolRegistry;
use serde_json::{Value, json};
use std::sync::Arc;

/// An app on the strict Responses stand-in, its model a reasoning one.
pub(crate) async fn responses_app(strict: &StrictModels, overrides: &[(&str, &str)]) -> TestApp {
    let base = strict.openai_base();
    let mut vars = vec![
        ("OPENAI_API", "responses"),
        ("AGENT_MODEL", "gpt-5-mini"),
        ("REASONING_EFFORT", "low"),
    ];
    vars.extend_from_slice(overrides);
    spawn_app_on_model_url(
        &base,
        &vars,
        Arc::new(MemoryStore::new()),
        ToolRegistry::with_builtins().unwrap(),
        None,
    )
    .await
}

/// `change-background-color`, the frontend tool the stand-in's `[color]` calls.
pub(crate) fn color_tool() -> Value {
    json!([{"name": "change-background-color", "description": "Change the page's background colour",
            "parameters": {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}}])
}

pub(crate) fn input(thread: &str, run: &str, messages: Value) -> Value {
    json!({"threadId": thread, "runId": run, "state": {}, "messages": messages, "tools": color_tool(),
           "context": [], "forwardedProps": {}, "protocolVersion": "1.1"})
}

fn reasoning_items(body: &Value) -> Vec<Value> {
    body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == "reasoning")
        .cloned()
        .collect()
}

#[tokio::test]
async fn responses_plain_chat_streams_the_reasoning_summary_then_the_answer_and_usage() {
    let strict = StrictModels::start().await;
    let app = responses_app(&strict, &[]).await;
    let events = app
        .run(&input(
            &new_thread(),
            "r1",
            json!([{"id": "u1", "role": "user", "content": "hello there"}]),
        ))
        .await
        .events();
    let kinds = types(&events);
    let reasoning_at = kinds.iter().position(|k| *k == "REASONING_START").unwrap();
    let text_at = kinds
        .iter()
        .position(|k| *k == "TEXT_MESSAGE_START")
        .unwrap();
    assert!(reasoning_at < text_at, "{kinds:?}");
    let summary: String = events
        .iter()
        .filter(|e| e["type"] == "REASONING_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(summary, "Thinking about what the user asked.");
    assert_eq!(text_of(&events), "Hello from the strict model.");
    // The encrypted reasoning reaches the client, named for a 1.1 client.
    let encrypted = events
        .iter()
        .find(|e| e["type"] == "REASONING_ENCRYPTED_VALUE" && e["subtype"] == "message")
        .unwrap();
    assert!(
        encrypted["encryptedValue"]
            .as_str()
            .unwrap()
            .starts_with("openai-reasoning:")
    );
    assert_eq!(
        encrypted["encryptedValueType"],
        "agui-lambda.openai-reasoning-item"
    );
    let finished = events.last().unwrap();
    assert_eq!(finished["type"], "RUN_FINISHED");
    let usage = &finished["usage"][0];
    assert_eq!(
        (&usage["provider"], &usage["model"]),
        (&json!("openai"), &json!("gpt-5-mini"))
    );
    let input_tokens = usage["inputTokens"].as_u64().unwrap();
    // The cached tokens and the reasoning tokens are parts of the totals.
    assert!(input_tokens > 64, "{usage}");
    assert_eq!(usage["cachedInputTokens"], 64);
    assert_eq!(
        (&usage["outputTokens"], &usage["reasoningTokens"]),
        (&json!(40), &json!(16))
    );
    assert_eq!(usage["totalTokens"], input_tokens + 40);
    assert_eq!(finished["usage"].as_array().unwrap().len(), 1);
    let sent = strict.requests_about("hello there").await;
    let body = &sent[0]["body"];
    assert_eq!(body["store"], false);
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(
        body["reasoning"],
        json!({"summary": "auto", "effort": "low"})
    );
    assert!(body["instructions"].as_str().unwrap().contains("helpful"));
    // Tools are flat: `name` at the top, no nested `function`.
    let tools = body["tools"].as_array().unwrap();
    assert!(
        tools
            .iter()
            .all(|tool| tool["type"] == "function" && tool.get("function").is_none())
    );
    assert!(tools.iter().any(|tool| tool["name"] == "get_current_time"));
}

#[tokio::test]
async fn responses_a_server_tool_round_trip_sends_the_reasoning_back_unaltered_before_its_call() {
    let strict = StrictModels::start().await;
    let app = responses_app(&strict, &[]).await;
    let events = app
        .run(&input(
            &new_thread(),
            "r1",
            json!([{"id": "u1", "role": "user", "content": "[time] what time is it?"}]),
        ))
        .await
        .events();
    let result = events
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_RESULT")
        .unwrap();
    assert!(result["content"].as_str().unwrap().contains("Europe/Paris"));
    assert!(
        text_of(&events).starts_with("Done: "),
        "{}",
        text_of(&events)
    );
    // The call's item id reaches the client as the call's encrypted value.
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "REASONING_ENCRYPTED_VALUE"
                && e["subtype"] == "tool-call"
                && e["encryptedValueType"] == "agui-lambda.openai-item-id")
    );

    let sent = strict.requests_about("[time]").await;
    assert_eq!(sent.len(), 2, "one call, then the answer after the tool");
    let first_reasoning = reasoning_items(&sent[1]["body"]);
    assert_eq!(first_reasoning.len(), 1);
    let items = sent[1]["body"]["input"].as_array().unwrap();
    let at = items
        .iter()
        .position(|item| item["type"] == "reasoning")
        .unwrap();
    assert_eq!(items[at + 1]["type"], "function_call");
    assert!(items[at + 1]["id"].as_str().unwrap().starts_with("fc_"));
    assert_eq!(items[at + 2]["type"], "function_call_output");
    assert!(
        first_reasoning[0]["encrypted_content"]
            .as_str()
            .is_some_and(|content| !content.is_empty())
    );
}

#[tokio::test]
async fn responses_a_frontend_tool_ends_the_run_and_the_resumption_carries_the_reasoning() {
    let strict = StrictModels::start().await;
    let app = responses_app(&strict, &[]).await;
    let thread = new_thread();
    let user = json!({"id": "u1", "role": "user", "content": "[color] make it green"});
    let first = app
        .run(&input(&thread, "r1", json!([user.clone()])))
        .await
        .events();
    let kinds = types(&first);
    assert_eq!(kinds[kinds.len() - 2], "TOOL_CALL_END");
    assert_eq!(kinds[kinds.len() - 1], "RUN_FINISHED");
    let call = first
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_START")
        .unwrap();
    assert_eq!(call["toolCallName"], "change-background-color");
    let assistant = assistant_from(&first);
    let call_id = call["toolCallId"].as_str().unwrap();
    let second = app
        .run(&input(
            &thread,
            "r2",
            json!([user, assistant,
                   {"id": "t1", "role": "tool", "toolCallId": call_id, "content": "{\"ok\":true}"}]),
        ))
        .await
        .events();
    assert!(text_of(&second).starts_with("Done: "));
    let sent = strict.requests_about("[color]").await;
    assert_eq!(reasoning_items(&sent[1]["body"]).len(), 1);
}

#[tokio::test]
async fn responses_a_client_that_kept_the_encrypted_values_continues_on_another_store() {
    let strict = StrictModels::start().await;
    let first_app = responses_app(&strict, &[]).await;
    let thread = new_thread();
    let user = json!({"id": "u1", "role": "user", "content": "[color] make it blue"});
    let first = first_app
        .run(&input(&thread, "r1", json!([user.clone()])))
        .await
        .events();
    // The messages as an AG-UI client keeps them: the reasoning message and the call, each
    // with the encrypted value it was given.
    let reasoning_id = first
        .iter()
        .find(|e| e["type"] == "REASONING_MESSAGE_START")
        .unwrap()["messageId"]
        .clone();
    let value_of = |subtype: &str| {
        first
            .iter()
            .find(|e| e["type"] == "REASONING_ENCRYPTED_VALUE" && e["subtype"] == subtype)
            .unwrap()["encryptedValue"]
            .clone()
    };
    let reasoning = json!({"id": reasoning_id, "role": "reasoning",
                           "content": "Thinking about what the user asked.", "encryptedValue": value_of("message")});
    let mut assistant = assistant_from(&first);
    assistant["toolCalls"][0]["encryptedValue"] = value_of("tool-call");
    let call_id = assistant["toolCalls"][0]["id"].as_str().unwrap().to_owned();
    // A server that has never seen the thread: only what the client sends back.
    let second_app = responses_app(&strict, &[]).await;
    let second = second_app
        .run(&input(
            &thread,
            "r2",
            json!([user, reasoning, assistant,
                   {"id": "t1", "role": "tool", "toolCallId": call_id, "content": "{\"ok\":true}"}]),
        ))
        .await
        .events();
    assert_eq!(second.last().unwrap()["type"], "RUN_FINISHED");
    let sent = strict.requests_about("[color] make it blue").await;
    assert_eq!(reasoning_items(&sent[1]["body"]).len(), 1);
}

#[tokio::test]
async fn responses_parallel_calls_each_keep_their_item_and_follow_the_reasoning() {
    let strict = StrictModels::start().await;
    let app = responses_app(&strict, &[]).await;
    let events = app
        .run(&input(
            &new_thread(),
            "r1",
            json!([{"id": "u1", "role": "user", "content": "[parallel] two clocks"}]),
        ))
        .await
        .events();
    assert_eq!(
        events
            .iter()
            .filter(|e| e["type"] == "TOOL_CALL_RESULT")
            .count(),
        2
    );
    let sent = strict.requests_about("[parallel]").await;
    let kinds: Vec<&str> = sent[1]["body"]["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["type"].as_str().unwrap_or("message"))
        .collect();
    assert_eq!(
        kinds,
        [
            "message",
            "reasoning",
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output"
        ]
    );
}

#[tokio::test]
async fn responses_the_stand_in_refuses_reasoning_altered_or_without_its_following_item() {
    let strict = StrictModels::start().await;
    let app = responses_app(&strict, &[]).await;
    app.run(&input(
        &new_thread(),
        "r1",
        json!([{"id": "u1", "role": "user", "content": "[time] refusal check"}]),
    ))
    .await
    .events();
    let sent = strict.requests_about("[time] refusal check").await;
    let good = sent[1]["body"].clone();
    let items = good["input"].as_array().unwrap().clone();
    let at = items
        .iter()
        .position(|item| item["type"] == "reasoning")
        .unwrap();
    let rs_id = items[at]["id"].as_str().unwrap().to_owned();
    let fc_id = items[at + 1]["id"].as_str().unwrap().to_owned();

    let mut without_follower = good.clone();
    let mut parted = items.clone();
    parted.insert(
        at + 1,
        json!({"role": "user", "content": "an item between"}),
    );
    without_follower["input"] = json!(parted);
    let (status, body) = strict.post("/v1/responses", &without_follower).await;
    assert_eq!(status, 400);
    assert_eq!(
        body["error"]["message"],
        format!(
            "Item '{rs_id}' of type 'reasoning' was provided without its required following item."
        )
    );

    let mut altered = good.clone();
    altered["input"][at]["encrypted_content"] = json!("AAAA");
    let (status, body) = strict.post("/v1/responses", &altered).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (400, &json!("invalid_encrypted_content"))
    );

    let mut no_reasoning = good.clone();
    let mut dropped = items.clone();
    dropped.remove(at);
    no_reasoning["input"] = json!(dropped);
    let (status, body) = strict.post("/v1/responses", &no_reasoning).await;
    assert_eq!(status, 400);
    assert_eq!(
        body["error"]["message"],
        format!(
            "Item '{fc_id}' of type 'function_call' was provided without its required 'reasoning' item: '{rs_id}'."
        )
    );
}

/// aimock's Responses endpoint: the same fixtures as Chat Completions, over `/v1/responses`.
async fn wire_responses_app() -> TestApp {
    spawn_wire_app_with(&[("OPENAI_API", "responses"), ("REASONING_EFFORT", "low")]).await
}

#[tokio::test]
async fn wire_responses_plain_chat_on_aimock() {
    let app = wire_responses_app().await;
    let events = app
        .run(&run_input(
            &new_thread(),
            "r",
            json!([{"id": "u1", "role": "user", "content": "hello"}]),
        ))
        .await
        .events();
    assert_eq!(text_of(&events), "Hello! How can I help you today?");
    let sent = app.aimock().journal().await;
    assert!(sent[0]["path"].as_str().unwrap().ends_with("/responses"));
}

#[tokio::test]
async fn wire_responses_server_tool_round_trip_on_aimock() {
    let app = wire_responses_app().await;
    let events = app
        .run(&run_input(
            &new_thread(),
            "r",
            json!([{"id": "u1", "role": "user", "content": "what time is it"}]),
        ))
        .await
        .events();
    assert!(events.iter().any(|e| e["type"] == "TOOL_CALL_RESULT"));
    assert_eq!(
        text_of(&events),
        "Let me check the time.It is now the time shown in Paris."
    );
    let finished = events.last().unwrap();
    assert_eq!(finished["usage"][0]["provider"], "openai");
}

#[tokio::test]
async fn wire_responses_reasoning_and_encrypted_content_on_aimock() {
    let app = wire_responses_app().await;
    let events = app
        .run(&run_input(
            &new_thread(),
            "r",
            json!([{"id": "u1", "role": "user", "content": "think step by step"}]),
        ))
        .await
        .events();
    let reasoning: String = events
        .iter()
        .filter(|e| e["type"] == "REASONING_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(reasoning, "First I consider the question.");
    assert_eq!(text_of(&events), "The answer is 42.");
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "REASONING_ENCRYPTED_VALUE")
    );
}

#[tokio::test]
async fn wire_responses_frontend_tool_on_aimock() {
    let app = wire_responses_app().await;
    let events = app
        .run(&run_input(
            &new_thread(),
            "r",
            json!([{"id": "u1", "role": "user", "content": "search my local files"}]),
        ))
        .await
        .events();
    let kinds = types(&events);
    assert_eq!(kinds[kinds.len() - 2], "TOOL_CALL_END");
    assert_eq!(kinds[kinds.len() - 1], "RUN_FINISHED");
}

#[tokio::test]
async fn responses_an_approval_interrupts_and_the_resume_still_sends_the_reasoning_in_order() {
    let strict = StrictModels::start().await;
    let app = responses_app(&strict, &[("APPROVAL_REQUIRED_TOOLS", "get_current_time")]).await;
    let thread = new_thread();
    let user = json!({"id": "u1", "role": "user", "content": "[time] with approval"});
    let first = app
        .run(&input(&thread, "r1", json!([user.clone()])))
        .await
        .events();
    let outcome = &first.last().unwrap()["outcome"];
    assert_eq!(outcome["type"], "interrupt", "{outcome}");
    let interrupt = outcome["interrupts"][0].clone();
    let mut resumed = input(&thread, "r2", json!([user, assistant_from(&first)]));
    resumed["resume"] = json!([{"interruptId": interrupt["id"], "status": "resolved",
                                "payload": {"approved": true}}]);
    let second = app.run(&resumed).await.events();
    assert!(second.iter().any(|e| e["type"] == "TOOL_CALL_RESULT"));
    assert!(text_of(&second).starts_with("Done: "), "{second:#?}");
    let sent = strict.requests_about("[time] with approval").await;
    assert_eq!(reasoning_items(&sent.last().unwrap()["body"]).len(), 1);
}

#[tokio::test]
async fn responses_a_thread_compacted_under_a_small_window_keeps_passing_the_strict_rules() {
    let strict = StrictModels::start().await;
    let app = responses_app(
        &strict,
        &[
            ("MODEL_CONTEXT_TOKENS", "2000"),
            ("MAX_OUTPUT_TOKENS", "200"),
        ],
    )
    .await;
    let thread = new_thread();
    let mut messages: Vec<Value> = Vec::new();
    let padding = "words to fill the window ".repeat(30);
    let mut compacted = 0;
    for turn in 0..12 {
        messages.push(json!({"id": format!("u{turn}"), "role": "user",
                             "content": format!("[time] turn {turn}: {padding}")}));
        let events = app
            .run(&input(
                &thread,
                &format!("r{turn}"),
                json!([messages.last().unwrap()]),
            ))
            .await
            .events();
        assert_eq!(
            events.last().unwrap()["type"],
            "RUN_FINISHED",
            "turn {turn}: {events:#?}"
        );
        compacted += events
            .iter()
            .filter(|e| {
                e["type"] == "ACTIVITY_SNAPSHOT" && e["activityType"] == "context-compaction"
            })
            .count();
    }
    assert!(compacted > 0, "the thread was compacted");
}
