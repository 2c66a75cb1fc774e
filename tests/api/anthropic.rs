//! The Anthropic Messages API provider end to end: against the strict stand-in of
//! `strict_messages.rs` (which refuses what the real API refuses: a thinking block altered or
//! missing from its tool loop, a tool use left unanswered, roles out of turn, no
//! `anthropic-version`, no key, no `max_tokens`), and against aimock's Claude endpoint (the
//! `wire_` tests).

use crate::helpers::*;
use crate::responses::input;
use crate::strict_messages::{Seen, StrictMessages};
use agui_lambda::testing::store::MemoryStore;
use agui_lambda::tools::ToolRegistry;
use serde_json::{Value, json};
use std::sync::Arc;

const KEY: &str = "sk-ant-test-key";

/// An app on the strict stand-in, thinking with a 1,024-token budget.
async fn anthropic_app(strict: &StrictMessages, overrides: &[(&str, &str)]) -> TestApp {
    let mut vars = vec![
        ("MODEL_PROVIDER", "anthropic"),
        ("ANTHROPIC_BASE_URL", strict.url.as_str()),
        ("ANTHROPIC_API_KEY", KEY),
        ("AGENT_MODEL", "claude-sonnet-4-5"),
        ("ANTHROPIC_THINKING_BUDGET_TOKENS", "1024"),
    ];
    vars.extend_from_slice(overrides);
    spawn_app_on_model_url(
        &strict.url,
        &vars,
        Arc::new(MemoryStore::new()),
        ToolRegistry::with_builtins().unwrap(),
        None,
    )
    .await
}

fn message(text: &str) -> Value {
    json!([{"id": "u1", "role": "user", "content": text}])
}

/// `text` with a marker of its own, so each test's requests are its own.
fn unique(marker: &str) -> String {
    format!("{marker} {}", uuid::Uuid::new_v4())
}

/// The encrypted values the run gave the client for its reasoning messages, in order.
fn reasoning_values(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "REASONING_ENCRYPTED_VALUE" && e["subtype"] == "message")
        .map(|e| e["encryptedValue"].as_str().unwrap().to_owned())
        .collect()
}

/// The thinking and redacted thinking blocks of every assistant message of a request.
fn thinking_blocks(seen: &Seen) -> Vec<Value> {
    seen.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| m["content"].as_array().unwrap().clone())
        .filter(|b| b["type"] == "thinking" || b["type"] == "redacted_thinking")
        .collect()
}

/// A stored reasoning value as the block the model sent: what must come back byte for byte.
fn as_block(value: &str, text: &str) -> Value {
    if let Some(signature) = value.strip_prefix("signature:") {
        json!({"type": "thinking", "thinking": text, "signature": signature})
    } else {
        use base64::Engine;
        let data = base64::engine::general_purpose::STANDARD
            .decode(value.strip_prefix("redacted:").unwrap())
            .unwrap();
        json!({"type": "redacted_thinking", "data": String::from_utf8(data).unwrap()})
    }
}

fn stored_roles(app_thread: &Value) -> Vec<String> {
    app_thread["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn anthropic_plain_chat_streams_thinking_then_the_answer_with_the_headers_the_api_wants() {
    let strict = StrictMessages::start(KEY).await;
    let app = anthropic_app(&strict, &[]).await;
    let events = app
        .run(&input(&new_thread(), "r1", message("hello there")))
        .await
        .events();
    let kinds = types(&events);
    let reasoning_at = kinds.iter().position(|k| *k == "REASONING_START").unwrap();
    let text_at = kinds
        .iter()
        .position(|k| *k == "TEXT_MESSAGE_START")
        .unwrap();
    assert!(reasoning_at < text_at, "{kinds:?}");
    let thinking: String = events
        .iter()
        .filter(|e| e["type"] == "REASONING_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(thinking, "Thinking about what the user asked.");
    assert_eq!(text_of(&events), "Hello from the strict model.");
    // The signature and the redacted block reach the client, named for a 1.1 client.
    let values = reasoning_values(&events);
    assert_eq!(values.len(), 2, "{values:?}");
    assert!(values[0].starts_with("signature:") && values[1].starts_with("redacted:"));
    let types: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "REASONING_ENCRYPTED_VALUE")
        .map(|e| e["encryptedValueType"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "agui-lambda.thinking-signature",
            "agui-lambda.redacted-thinking"
        ]
    );

    let sent = strict.requests_about("hello there");
    assert_eq!(sent.len(), 1);
    let headers = &sent[0].headers;
    assert_eq!(headers["anthropic-version"], "2023-06-01");
    assert_eq!(headers["x-api-key"], KEY);
    assert_eq!(headers["authorization"], format!("Bearer {KEY}"));
    assert_eq!(headers["anthropic-beta"], "interleaved-thinking-2025-05-14");
    let body = &sent[0].body;
    assert_eq!(body["model"], "claude-sonnet-4-5");
    assert_eq!(body["stream"], true);
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 1024})
    );
    // The budget on top of the answer's allowance (ANTHROPIC_MAX_TOKENS' default).
    assert_eq!(body["max_tokens"], 1024 + 8192);
    assert!(
        body["system"][0]["text"]
            .as_str()
            .unwrap()
            .contains("helpful")
    );
    assert_eq!(
        body["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    let tools = body["tools"].as_array().unwrap();
    assert!(tools.iter().all(|t| t["input_schema"]["type"] == "object"));
    assert!(tools.iter().any(|t| t["name"] == "get_current_time"));
    assert!(tools.iter().any(|t| t["name"] == "change-background-color"));
    assert_eq!(
        tools.last().unwrap()["cache_control"],
        json!({"type": "ephemeral"})
    );
}

#[tokio::test]
async fn anthropic_a_server_tool_round_trip_sends_the_thinking_back_unmodified_and_in_order() {
    let strict = StrictMessages::start(KEY).await;
    let app = anthropic_app(&strict, &[]).await;
    let events = app
        .run(&input(
            &new_thread(),
            "r1",
            message("[time] what time is it?"),
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

    let sent = strict.requests_about("[time]");
    assert_eq!(sent.len(), 2, "the call, then the answer after the tool");
    assert!(sent.iter().all(|seen| seen.status == 200));
    // The first answer's thinking, then its redacted block, exactly as streamed, at the head
    // of the assistant turn whose tool use the second request continues.
    let thinking: String = events
        .iter()
        .take_while(|e| e["type"] != "TOOL_CALL_START")
        .filter(|e| e["type"] == "REASONING_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    let values = reasoning_values(&events);
    let first_turn = vec![as_block(&values[0], &thinking), as_block(&values[1], "")];
    let messages = sent[1].body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{messages:#?}");
    let turn = messages[1]["content"].as_array().unwrap();
    assert_eq!(turn[..2], first_turn[..]);
    assert_eq!(turn[2]["type"], "tool_use");
    assert_eq!(turn[2]["input"], json!({"timezone": "Europe/Paris"}));
    assert_eq!(messages[2]["content"][0]["type"], "tool_result");
    assert_eq!(messages[2]["content"][0]["tool_use_id"], turn[2]["id"]);
    assert_eq!(thinking_blocks(&sent[1]), first_turn);
}

#[tokio::test]
async fn anthropic_parallel_calls_are_answered_in_one_user_message() {
    let strict = StrictMessages::start(KEY).await;
    let app = anthropic_app(&strict, &[]).await;
    let events = app
        .run(&input(
            &new_thread(),
            "r1",
            message("[parallel] two clocks"),
        ))
        .await
        .events();
    let results = events
        .iter()
        .filter(|e| e["type"] == "TOOL_CALL_RESULT")
        .count();
    assert_eq!(results, 2);
    assert!(text_of(&events).starts_with("Done: "));
    let sent = strict.requests_about("[parallel]");
    assert_eq!(sent.len(), 2);
    let messages = sent[1].body["messages"].as_array().unwrap();
    let kinds: Vec<&str> = messages[2]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["tool_result", "tool_result"]);
}

#[tokio::test]
async fn anthropic_a_frontend_tool_ends_the_run_and_the_resumption_carries_the_thinking() {
    let strict = StrictMessages::start(KEY).await;
    let app = anthropic_app(&strict, &[]).await;
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
    let call_id = call["toolCallId"].as_str().unwrap();
    let second = app
        .run(&input(
            &thread,
            "r2",
            json!([user, assistant_from(&first),
                   {"id": "t1", "role": "tool", "toolCallId": call_id, "content": "green"}]),
        ))
        .await
        .events();
    assert_eq!(text_of(&second), "Done: green");
    let sent = strict.requests_about("[color]");
    assert_eq!(sent.len(), 2);
    assert!(sent[1].body["thinking"].is_object(), "thinking stayed on");
    let values = reasoning_values(&first);
    assert_eq!(
        thinking_blocks(&sent[1]),
        [
            as_block(&values[0], "Thinking about what the user asked."),
            as_block(&values[1], "")
        ]
    );
}

#[tokio::test]
async fn anthropic_a_client_that_kept_the_thinking_continues_on_another_server() {
    let strict = StrictMessages::start(KEY).await;
    let first_app = anthropic_app(&strict, &[]).await;
    let thread = new_thread();
    let user = json!({"id": "u1", "role": "user", "content": "[color] make it blue"});
    let first = first_app
        .run(&input(&thread, "r1", json!([user.clone()])))
        .await
        .events();
    // The messages as an AG-UI client keeps them: each reasoning message with its text and
    // the encrypted value it was given, then the call.
    let starts: Vec<Value> = first
        .iter()
        .filter(|e| e["type"] == "REASONING_MESSAGE_START")
        .map(|e| e["messageId"].clone())
        .collect();
    let values = reasoning_values(&first);
    let texts = ["Thinking about what the user asked.", ""];
    let reasoning: Vec<Value> = (0..2)
        .map(|i| json!({"id": starts[i], "role": "reasoning", "content": texts[i], "encryptedValue": values[i]}))
        .collect();
    let assistant = assistant_from(&first);
    let call_id = assistant["toolCalls"][0]["id"].clone();
    let result = json!({"id": "t1", "role": "tool", "toolCallId": call_id, "content": "blue"});
    // A server that has never seen the thread: only what the client sends back.
    let second_app = anthropic_app(&strict, &[]).await;
    let second = second_app
        .run(&input(
            &thread,
            "r2",
            json!([user, reasoning[0], reasoning[1], assistant, result]),
        ))
        .await
        .events();
    assert_eq!(text_of(&second), "Done: blue");
    let sent = strict.requests_about("[color] make it blue");
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[1].status, 200);
    assert_eq!(
        thinking_blocks(&sent[1]),
        [as_block(&values[0], texts[0]), as_block(&values[1], "")]
    );
    // Thinking altered on the way is what the API refuses; the run says so.
    let mut altered = reasoning[0].clone();
    altered["content"] = json!("Thinking about something else.");
    let third_app = anthropic_app(&strict, &[]).await;
    let third = third_app
        .run(&input(
            &new_thread(),
            "r3",
            json!([{"id": "u1", "role": "user", "content": "[color] make it blue"}, altered,
                   reasoning[1], assistant_from(&first),
                   {"id": "t1", "role": "tool", "toolCallId": call_id, "content": "blue"}]),
        ))
        .await
        .events();
    let end = third.last().unwrap();
    assert_eq!(end["code"], "MODEL_REFUSED", "{end}");
    assert!(
        end["message"]
            .as_str()
            .unwrap()
            .contains("Invalid `signature`"),
        "{end}"
    );
}

#[tokio::test]
async fn anthropic_an_approval_interrupts_and_the_resume_still_sends_the_thinking_first() {
    let strict = StrictMessages::start(KEY).await;
    let app = anthropic_app(&strict, &[("APPROVAL_REQUIRED_TOOLS", "get_current_time")]).await;
    let thread = new_thread();
    let user = json!({"id": "u1", "role": "user", "content": "[time] with approval"});
    let first = app
        .run(&input(&thread, "r1", json!([user.clone()])))
        .await
        .events();
    let outcome = &first.last().unwrap()["outcome"];
    assert_eq!(outcome["type"], "interrupt", "{outcome}");
    let mut resumed = input(&thread, "r2", json!([user, assistant_from(&first)]));
    resumed["resume"] = json!([{"interruptId": outcome["interrupts"][0]["id"], "status": "resolved",
                                "payload": {"approved": true}}]);
    let second = app.run(&resumed).await.events();
    assert!(second.iter().any(|e| e["type"] == "TOOL_CALL_RESULT"));
    assert!(text_of(&second).starts_with("Done: "), "{second:#?}");
    let sent = strict.requests_about("[time] with approval");
    assert_eq!(sent.len(), 2);
    assert!(sent[1].body["thinking"].is_object());
    assert_eq!(thinking_blocks(&sent[1]).len(), 2);
}

#[tokio::test]
async fn anthropic_usage_counts_cache_reads_and_writes_in_the_input_total() {
    let strict = StrictMessages::start(KEY).await;
    let app = anthropic_app(&strict, &[]).await;
    let events = app
        .run(&input(&new_thread(), "r1", message("hello, how much?")))
        .await
        .events();
    let finished = events.last().unwrap();
    assert_eq!(finished["type"], "RUN_FINISHED");
    // 30 uncached + 2,000 read from the cache + 1,000 written to it.
    assert_eq!(
        finished["usage"],
        json!([{"provider": "anthropic", "model": "claude-sonnet-4-5", "inputTokens": 3030,
                "outputTokens": 40, "totalTokens": 3070, "reasoningTokens": 16,
                "cachedInputTokens": 2000, "cacheWriteInputTokens": 1000}])
    );
    // Without prompt caching no breakpoint is sent and nothing is read or written.
    let plain = anthropic_app(&strict, &[("PROMPT_CACHE", "off")]).await;
    let events = plain
        .run(&input(&new_thread(), "r1", message("hello, uncached")))
        .await
        .events();
    assert!(
        !strict.requests_about("hello, uncached")[0]
            .body
            .to_string()
            .contains("cache_control")
    );
    assert_eq!(events.last().unwrap()["usage"][0]["inputTokens"], 30);
    assert_eq!(events.last().unwrap()["usage"][0]["cachedInputTokens"], 0);
}

#[tokio::test]
async fn anthropic_an_overload_before_output_is_retried_transparently_and_a_529_too() {
    let strict = StrictMessages::start(KEY).await;
    let app = anthropic_app(&strict, &[("MODEL_MAX_RETRIES", "2")]).await;
    for marker in ["[overload-in-stream]", "[529]"] {
        let text = unique(marker);
        let events = app
            .run(&input(&new_thread(), "r", message(&text)))
            .await
            .events();
        assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED", "{marker}");
        assert_eq!(text_of(&events), "Hello from the strict model.");
        // Nothing of the failed attempt reached the client.
        assert_eq!(reasoning_values(&events).len(), 2, "{marker}");
        let sent = strict.requests_about(&text);
        assert_eq!(sent.len(), 2, "{marker}");
        assert_eq!(sent[0].status, if marker == "[529]" { 529 } else { 200 });
    }
}

#[tokio::test]
async fn anthropic_an_overload_after_output_ends_the_run_and_nothing_is_stored() {
    let strict = StrictMessages::start(KEY).await;
    let app = anthropic_app(&strict, &[("MODEL_MAX_RETRIES", "3")]).await;
    let thread = new_thread();
    let text = unique("[overload-after-output]");
    let events = app.run(&input(&thread, "r", message(&text))).await.events();
    let end = events.last().unwrap();
    assert_eq!(end["type"], "RUN_ERROR");
    assert_eq!(end["code"], "MODEL_UNAVAILABLE");
    assert!(
        end["message"]
            .as_str()
            .unwrap()
            .contains("overloaded_error"),
        "{end}"
    );
    assert!(!text_of(&events).is_empty(), "some output came first");
    assert_eq!(strict.requests_about(&text).len(), 1);
    let stored = app.get(&format!("/threads/{thread}")).await.json();
    assert_eq!(stored_roles(&stored), ["user"], "{stored}");
}

#[tokio::test]
async fn anthropic_a_stall_ends_in_the_idle_timeout_and_the_fallback_answers() {
    let strict = StrictMessages::start(KEY).await;
    let app = anthropic_app(
        &strict,
        &[
            ("MODEL_MAX_RETRIES", "0"),
            ("MODEL_IDLE_TIMEOUT_MS", "500"),
            ("MODEL_FALLBACKS", "anthropic:fallback-model"),
        ],
    )
    .await;
    let text = unique("[stall]");
    let events = app
        .run(&input(&new_thread(), "r", message(&text)))
        .await
        .events();
    assert_eq!(text_of(&events), "Hello from the strict model.");
    assert_eq!(
        events.last().unwrap()["usage"][0]["model"],
        "fallback-model"
    );
    let models: Vec<Value> = strict
        .requests_about(&text)
        .iter()
        .map(|seen| seen.body["model"].clone())
        .collect();
    assert_eq!(
        models,
        [json!("claude-sonnet-4-5"), json!("fallback-model")]
    );
}

#[tokio::test]
async fn anthropic_prompt_too_long_is_the_overflow_signal_the_run_compacts_on() {
    let strict = StrictMessages::start_with_window(KEY, Some(4_000)).await;
    // The server believes Claude's 200,000-token window: only the refusal tells it otherwise.
    let app = anthropic_app(&strict, &[("MAX_OUTPUT_TOKENS", "500")]).await;
    let thread = new_thread();
    let padding = "words to fill the window ".repeat(60);
    let mut refused = false;
    for turn in 0..12 {
        let text = format!("turn {turn}: {padding}");
        let events = app
            .run(&input(
                &thread,
                &format!("r{turn}"),
                json!([{"id": format!("u{turn}"), "role": "user", "content": text}]),
            ))
            .await
            .events();
        assert_eq!(
            events.last().unwrap()["type"],
            "RUN_FINISHED",
            "turn {turn}: {events:#?}"
        );
        let refusals = strict
            .journal()
            .iter()
            .filter(|seen| {
                seen.refusal
                    .as_deref()
                    .is_some_and(|r| r.starts_with("prompt is too long"))
            })
            .count();
        if refusals > 0 {
            refused = true;
            assert!(
                events.iter().any(|e| e["type"] == "ACTIVITY_SNAPSHOT"
                    && e["activityType"] == "context-compaction"),
                "turn {turn} compacted after the refusal"
            );
            break;
        }
    }
    assert!(refused, "the window was reached");
}

#[tokio::test]
async fn anthropic_the_stand_in_refuses_what_the_api_refuses() {
    let strict = StrictMessages::start(KEY).await;
    let http = reqwest::Client::new();
    let url = format!("{}/v1/messages", strict.url);
    let post = |headers: Vec<(&'static str, String)>, body: Value| {
        let mut request = http.post(&url).json(&body);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let body: Value = response.json().await.unwrap();
            assert_eq!(body["type"], "error", "{body}");
            (
                status,
                body["error"]["message"].as_str().unwrap().to_owned(),
            )
        }
    };
    let auth = || {
        vec![
            ("x-api-key", KEY.to_owned()),
            ("anthropic-version", "2023-06-01".to_owned()),
        ]
    };
    let user = |text: &str| json!({"role": "user", "content": [{"type": "text", "text": text}]});
    let valid = json!({"model": "claude-sonnet-4-5", "max_tokens": 100, "stream": true,
                       "messages": [user("hi")]});
    let (status, said) = post(vec![("x-api-key", KEY.to_owned())], valid.clone()).await;
    assert_eq!(
        (status, said.as_str()),
        (400, "anthropic-version: header is required")
    );
    let (status, said) = post(
        vec![("anthropic-version", "2023-06-01".to_owned())],
        valid.clone(),
    )
    .await;
    assert_eq!(
        (status, said.as_str()),
        (401, "x-api-key header is required")
    );
    let mut body = valid.clone();
    body.as_object_mut().unwrap().remove("max_tokens");
    assert_eq!(
        post(auth(), body).await,
        (400, "max_tokens: Field required".into())
    );
    let mut body = valid.clone();
    body["messages"] = json!([user("a"), user("b")]);
    assert!(post(auth(), body).await.1.contains("roles must alternate"));
    let mut body = valid.clone();
    body["messages"] = json!([{"role": "assistant", "content": "hi"}, user("b")]);
    assert!(
        post(auth(), body)
            .await
            .1
            .contains("first message must use the \"user\" role")
    );
    // A tool use without its result in the next user message.
    let call = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "get_current_time", "input": {}}]});
    let mut body = valid.clone();
    body["tools"] = json!([{"name": "get_current_time", "input_schema": {"type": "object"}}]);
    body["messages"] = json!([user("time?"), call, user("well?")]);
    assert!(post(auth(), body.clone()).await.1.contains(
        "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1"
    ));
    // With thinking, the tool loop's assistant turn must open with its thinking…
    let result = json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "12:00"}]});
    body["messages"] = json!([user("time?"), call, result]);
    body["max_tokens"] = json!(2000);
    body["thinking"] = json!({"type": "enabled", "budget_tokens": 1024});
    let (status, said) = post(auth(), body.clone()).await;
    assert_eq!(status, 400);
    assert!(
        said.starts_with("messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`."),
        "{said}"
    );
    // …and a thinking block is accepted only byte for byte as issued.
    body["messages"][1]["content"] = json!([
        {"type": "thinking", "thinking": "I will check.", "signature": "forged=="},
        {"type": "tool_use", "id": "toolu_1", "name": "get_current_time", "input": {}}]);
    assert_eq!(
        post(auth(), body).await,
        (
            400,
            "messages.1.content.0: Invalid `signature` in `thinking` block".into()
        )
    );
    assert!(strict.journal().iter().all(|seen| seen.status != 200));
}

async fn wire_anthropic_app() -> TestApp {
    spawn_wire_app_at(|aimock| {
        vec![
            ("MODEL_PROVIDER", "anthropic".to_owned()),
            ("ANTHROPIC_BASE_URL", aimock.to_owned()),
            ("ANTHROPIC_API_KEY", KEY.to_owned()),
            ("AGENT_MODEL", "claude-sonnet-4-5".to_owned()),
            ("ANTHROPIC_THINKING_BUDGET_TOKENS", "1024".to_owned()),
        ]
    })
    .await
}

#[tokio::test]
async fn wire_anthropic_plain_chat_and_usage_on_aimock() {
    let app = wire_anthropic_app().await;
    let events = app
        .run(&run_input(&new_thread(), "r", message("hello")))
        .await
        .events();
    assert_eq!(text_of(&events), "Hello! How can I help you today?");
    let finished = events.last().unwrap();
    assert_eq!(
        finished["usage"],
        json!([{"provider": "anthropic", "model": "claude-sonnet-4-5", "inputTokens": 10,
                "outputTokens": 9, "totalTokens": 19}])
    );
    let sent = app.aimock().journal().await;
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["path"], "/v1/messages");
    assert_eq!(sent[0]["headers"]["anthropic-version"], "2023-06-01");
    // aimock keeps keys out of its journal: present is all it shows.
    assert!(sent[0]["headers"]["x-api-key"].is_string());
    assert!(sent[0]["headers"]["authorization"].is_string());
}

#[tokio::test]
async fn wire_anthropic_server_tool_round_trip_on_aimock() {
    let app = wire_anthropic_app().await;
    let events = app
        .run(&run_input(&new_thread(), "r", message("what time is it")))
        .await
        .events();
    let result = events
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_RESULT")
        .unwrap();
    assert!(result["content"].as_str().unwrap().contains("Europe/Paris"));
    assert_eq!(
        text_of(&events),
        "Let me check the time.It is now the time shown in Paris."
    );
    // aimock's journal holds the request as it understood it: the call and its result.
    let sent = app.aimock().journal().await;
    assert_eq!(sent.len(), 2);
    let messages = sent[1]["body"]["messages"].as_array().unwrap();
    let tool = messages.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool["tool_call_id"], "call_time_1");
}

#[tokio::test]
async fn wire_anthropic_frontend_tool_on_aimock() {
    let app = wire_anthropic_app().await;
    let thread = new_thread();
    let user = json!({"id": "u1", "role": "user", "content": "search my local files"});
    let first = app
        .run(&run_input(&thread, "r1", json!([user.clone()])))
        .await
        .events();
    let kinds = types(&first);
    assert_eq!(kinds[kinds.len() - 2], "TOOL_CALL_END");
    let call = first
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_START")
        .unwrap();
    assert_eq!(call["toolCallName"], "search_local_files");
    let second = app
        .run(&run_input(
            &thread,
            "r2",
            json!([user, assistant_from(&first),
                   {"id": "t1", "role": "tool", "toolCallId": call["toolCallId"], "content": "2 files"}]),
        ))
        .await
        .events();
    assert_eq!(
        text_of(&second),
        "I found 2 files: annual-report.pdf and q3-report.docx."
    );
}

#[tokio::test]
async fn wire_anthropic_reasoning_on_aimock() {
    let app = wire_anthropic_app().await;
    let events = app
        .run(&run_input(
            &new_thread(),
            "r",
            message("think step by step"),
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
    let values = reasoning_values(&events);
    assert_eq!(values.len(), 1);
    assert!(values[0].starts_with("signature:"), "{values:?}");
}
