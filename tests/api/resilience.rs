//! A provider's bad minute, end to end over HTTP against the strict stand-in: what is retried,
//! how long it waits, when the fallback answers, and what a client is told when nothing helps.

use crate::helpers::*;
use crate::responses::{input, responses_app};
use crate::strict_models::StrictModels;
use serde_json::{Value, json};

fn message(text: &str) -> Value {
    json!([{"id": "u1", "role": "user", "content": text}])
}

/// `text` with a marker of its own, so each test's requests are its own.
fn unique(marker: &str) -> String {
    format!("{marker} {}", uuid::Uuid::new_v4())
}

#[tokio::test]
async fn retry_after_ms_is_honoured_before_retry_after() {
    let strict = StrictModels::start().await;
    let app = responses_app(&strict, &[("MODEL_MAX_RETRIES", "2")]).await;
    let text = unique("[retry-after-ms]");
    let events = app
        .run(&input(&new_thread(), "r", message(&text)))
        .await
        .events();
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
    let sent = strict.requests_about(&text).await;
    assert_eq!(sent.len(), 2);
    let waited = sent[1]["at"].as_f64().unwrap() - sent[0]["at"].as_f64().unwrap();
    // 700 ms as `retry-after-ms` asked, not the 30 s of `retry-after`.
    assert!((0.7..10.0).contains(&waited), "waited {waited} s");
}

#[tokio::test]
async fn an_overloaded_529_and_an_overload_inside_the_stream_before_output_are_retried() {
    let strict = StrictModels::start().await;
    let app = responses_app(&strict, &[("MODEL_MAX_RETRIES", "2")]).await;
    for marker in ["[529]", "[overload-in-stream]"] {
        let text = unique(marker);
        let events = app
            .run(&input(&new_thread(), "r", message(&text)))
            .await
            .events();
        assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED", "{marker}");
        assert_eq!(text_of(&events), "Hello from the strict model.");
        assert_eq!(strict.requests_about(&text).await.len(), 2, "{marker}");
    }
}

#[tokio::test]
async fn out_of_quota_is_not_retried_and_says_so() {
    let strict = StrictModels::start().await;
    let app = responses_app(&strict, &[("MODEL_MAX_RETRIES", "3")]).await;
    let text = unique("[quota]");
    let events = app
        .run(&input(&new_thread(), "r", message(&text)))
        .await
        .events();
    let end = events.last().unwrap();
    assert_eq!(end["type"], "RUN_ERROR");
    assert_eq!(end["code"], "MODEL_RATE_LIMITED");
    let said = end["message"].as_str().unwrap();
    assert!(
        said.contains("insufficient_quota") && said.contains("exceeded your current quota"),
        "{said}"
    );
    assert_eq!(strict.requests_about(&text).await.len(), 1);
}

#[tokio::test]
async fn a_stall_ends_in_the_idle_timeout_and_the_fallback_answers_in_the_same_run() {
    let strict = StrictModels::start().await;
    let app = responses_app(
        &strict,
        &[
            ("MODEL_MAX_RETRIES", "0"),
            ("MODEL_IDLE_TIMEOUT_MS", "800"),
            ("MODEL_FALLBACKS", "openai:fallback-model"),
        ],
    )
    .await;
    let text = unique("[stall]");
    let events = app
        .run(&input(&new_thread(), "r", message(&text)))
        .await
        .events();
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
    assert_eq!(text_of(&events), "Hello from the strict model.");
    // The turn's tokens are the model's that served it.
    assert_eq!(
        events.last().unwrap()["usage"][0]["model"],
        "fallback-model"
    );
    let models: Vec<Value> = strict
        .requests_about(&text)
        .await
        .iter()
        .map(|entry| entry["body"]["model"].clone())
        .collect();
    assert_eq!(models, [json!("gpt-5-mini"), json!("fallback-model")]);
}

#[tokio::test]
async fn a_failure_after_output_is_not_retried_and_nothing_is_stored() {
    let strict = StrictModels::start().await;
    let app = responses_app(&strict, &[("MODEL_MAX_RETRIES", "3")]).await;
    let thread = new_thread();
    let text = unique("[drop-after-output]");
    let events = app.run(&input(&thread, "r", message(&text))).await.events();
    let end = events.last().unwrap();
    assert_eq!(end["type"], "RUN_ERROR");
    assert_eq!(end["code"], "MODEL_ERROR");
    assert!(!text_of(&events).is_empty(), "some output came first");
    assert_eq!(strict.requests_about(&text).await.len(), 1);
    let stored = app.get(&format!("/threads/{thread}")).await.json();
    let roles: Vec<&str> = stored["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user"], "{stored}");
}

#[tokio::test]
async fn a_model_that_keeps_failing_is_skipped_during_its_cooldown() {
    let strict = StrictModels::start().await;
    let app = responses_app(
        &strict,
        &[
            ("AGENT_MODEL", "primary-down"),
            ("MODEL_MAX_RETRIES", "0"),
            ("MODEL_FALLBACKS", "openai:fallback-model"),
            ("MODEL_COOLDOWN_SECS", "600"),
        ],
    )
    .await;
    let first = unique("[down]");
    let events = app
        .run(&input(&new_thread(), "r1", message(&first)))
        .await
        .events();
    assert_eq!(
        events.last().unwrap()["usage"][0]["model"],
        "fallback-model"
    );
    assert_eq!(strict.requests_about(&first).await.len(), 2);
    // Within the cooldown the failing model is not asked at all.
    let second = unique("[down]");
    let events = app
        .run(&input(&new_thread(), "r2", message(&second)))
        .await
        .events();
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
    let models: Vec<Value> = strict
        .requests_about(&second)
        .await
        .iter()
        .map(|entry| entry["body"]["model"].clone())
        .collect();
    assert_eq!(models, [json!("fallback-model")]);
}

#[tokio::test]
async fn every_model_failing_names_the_attempts_and_the_providers_words() {
    let strict = StrictModels::start().await;
    let app = responses_app(
        &strict,
        &[
            ("AGENT_MODEL", "primary-down"),
            ("MODEL_MAX_RETRIES", "1"),
            ("MODEL_FALLBACKS", "openai:also-down"),
        ],
    )
    .await;
    let text = unique("[quota]");
    let events = app
        .run(&input(&new_thread(), "r", message(&text)))
        .await
        .events();
    let end = events.last().unwrap();
    assert_eq!(end["code"], "MODEL_RATE_LIMITED");
    let said = end["message"].as_str().unwrap();
    assert!(
        said.ends_with("(after 2 attempts: openai:primary-down, openai:also-down)"),
        "{said}"
    );
}
