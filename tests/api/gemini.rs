//! Gemini through its OpenAI-compatible endpoint, against the strict stand-in of
//! `tests/strict_models.py`: a tool call's `thought_signature` is kept on the stored call and sent
//! back with it, or Gemini refuses the next step.

use crate::helpers::*;
use crate::responses::{color_tool, input};
use crate::strict_models::StrictModels;
use agui_lambda::testing::store::MemoryStore;
use agui_lambda::tools::ToolRegistry;
use serde_json::json;
use std::sync::Arc;

async fn gemini_app(strict: &StrictModels) -> TestApp {
    let base = strict.gemini_base();
    spawn_app_on_model_url(
        "http://127.0.0.1:9/unused",
        &[
            ("MODEL_PROVIDER", "gemini"),
            ("GEMINI_BASE_URL", &base),
            ("GEMINI_API_KEY", "gemini-test-key"),
            ("AGENT_MODEL", "gemini-3-pro-preview"),
        ],
        Arc::new(MemoryStore::new()),
        ToolRegistry::with_builtins().unwrap(),
        None,
    )
    .await
}

#[tokio::test]
async fn gemini_a_server_tool_round_trip_sends_the_thought_signature_back() {
    let strict = StrictModels::start().await;
    let app = gemini_app(&strict).await;
    let events = app
        .run(&input(
            &new_thread(),
            "r1",
            json!([{"id": "u1", "role": "user", "content": "[time] what time is it?"}]),
        ))
        .await
        .events();
    assert!(events.iter().any(|e| e["type"] == "TOOL_CALL_RESULT"));
    assert!(text_of(&events).starts_with("Done: "), "{events:#?}");
    let signature_event = events
        .iter()
        .find(|e| e["type"] == "REASONING_ENCRYPTED_VALUE" && e["subtype"] == "tool-call")
        .unwrap();
    assert_eq!(
        signature_event["encryptedValueType"],
        "agui-lambda.gemini-thought-signature"
    );
    assert_eq!(events.last().unwrap()["usage"][0]["provider"], "gemini");

    let sent = strict.requests_about("[time]").await;
    assert_eq!(sent.len(), 2);
    assert_eq!(
        sent[0]["headers"]["authorization"],
        "Bearer gemini-test-key"
    );
    let replayed = sent[1]["body"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap();
    let signature = &replayed["tool_calls"][0]["extra_content"]["google"]["thought_signature"];
    assert_eq!(
        format!("gemini-signature:{}", signature.as_str().unwrap()),
        signature_event["encryptedValue"].as_str().unwrap()
    );
}

#[tokio::test]
async fn gemini_parallel_calls_keep_the_one_signature_gemini_gave() {
    let strict = StrictModels::start().await;
    let app = gemini_app(&strict).await;
    let events = app
        .run(&input(
            &new_thread(),
            "r1",
            json!([{"id": "u1", "role": "user", "content": "[parallel] two zones"}]),
        ))
        .await
        .events();
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
    let sent = strict.requests_about("[parallel]").await;
    let calls = sent[1]["body"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap()["tool_calls"]
        .clone();
    assert!(calls[0].get("extra_content").is_some());
    assert!(calls[1].get("extra_content").is_none());
}

#[tokio::test]
async fn gemini_a_frontend_tool_and_its_resumption() {
    let strict = StrictModels::start().await;
    let app = gemini_app(&strict).await;
    let thread = new_thread();
    let user = json!({"id": "u1", "role": "user", "content": "[color] paint it"});
    let first = app
        .run(&input(&thread, "r1", json!([user.clone()])))
        .await
        .events();
    let kinds = types(&first);
    assert_eq!(kinds[kinds.len() - 2], "TOOL_CALL_END");
    let call_id = first
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_START")
        .unwrap()["toolCallId"]
        .clone();
    let second = app
        .run(&input(
            &thread,
            "r2",
            json!([user, assistant_from(&first),
                   {"id": "t1", "role": "tool", "toolCallId": call_id, "content": "painted"}]),
        ))
        .await
        .events();
    assert_eq!(text_of(&second), "Done: painted");
    let _ = color_tool();
}

#[tokio::test]
async fn gemini_the_stand_in_refuses_a_call_replayed_without_its_signature() {
    let strict = StrictModels::start().await;
    let app = gemini_app(&strict).await;
    app.run(&input(
        &new_thread(),
        "r1",
        json!([{"id": "u1", "role": "user", "content": "[time] signature check"}]),
    ))
    .await
    .events();
    let sent = strict.requests_about("[time] signature check").await;
    let mut stripped = sent[1]["body"].clone();
    for message in stripped["messages"].as_array_mut().unwrap() {
        for call in message["tool_calls"].as_array_mut().into_iter().flatten() {
            call.as_object_mut().unwrap().remove("extra_content");
        }
    }
    let (status, body) = strict
        .post("/v1beta/openai/chat/completions", &stripped)
        .await;
    assert_eq!(status, 400);
    assert!(
        body[0]["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Function call is missing a thought_signature in functionCall parts."),
        "{body}"
    );
}

#[tokio::test]
async fn the_summariser_runs_on_another_provider_than_the_default() {
    let strict = StrictModels::start().await;
    let gemini = strict.gemini_base();
    let app = crate::responses::responses_app(
        &strict,
        &[
            ("GEMINI_BASE_URL", &gemini),
            ("GEMINI_API_KEY", "gemini-test-key"),
            ("CONTEXT_SUMMARY_MODEL", "gemini:gemini-2.5-flash-lite"),
            ("MODEL_CONTEXT_TOKENS", "2000"),
            ("MAX_OUTPUT_TOKENS", "200"),
        ],
    )
    .await;
    // The default agent on OpenAI, its long thread summarised by Gemini.
    let thread = new_thread();
    let padding = "words to fill the window ".repeat(30);
    let mut by_model = std::collections::BTreeSet::new();
    for turn in 0..10 {
        let body = input(
            &thread,
            &format!("r{turn}"),
            json!([{"id": format!("m{turn}"), "role": "user", "content": format!("turn {turn}: {padding}")}]),
        );
        let events = app.run(&body).await.events();
        for entry in events.last().unwrap()["usage"]
            .as_array()
            .into_iter()
            .flatten()
        {
            by_model.insert(format!(
                "{}:{}",
                entry["provider"].as_str().unwrap(),
                entry["model"].as_str().unwrap()
            ));
        }
    }
    // Each model's tokens under its own name, in the runs' usage.
    assert!(by_model.contains("openai:gpt-5-mini"), "{by_model:?}");
    assert!(
        by_model.contains("gemini:gemini-2.5-flash-lite"),
        "{by_model:?}"
    );
    let summaries = strict
        .journal()
        .await
        .into_iter()
        .filter(|entry| entry["body"]["model"] == "gemini-2.5-flash-lite")
        .count();
    assert!(summaries > 0);
}
