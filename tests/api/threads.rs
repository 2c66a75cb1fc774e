//! The thread routes as an app calls them, over HTTP on DynamoDB Local: the caller's list in
//! pages, titles, delete, fork (at a message and from `parentRunId`), quotas and usage.

use agui_lambda::testing::auth::hash_api_key;
use agui_lambda::testing::protocol::verify::{parse_sse, verify_run};
use agui_lambda::testing::store::{DynamoStore, ThreadStore};
use aws_sdk_dynamodb::types::AttributeValue;
use futures_util::StreamExt;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;

use crate::dynamo_local;
use crate::helpers::*;

const ALICE: &str = "alice-secret-key";
const BOB: &str = "bob-secret-key";

fn api_keys() -> String {
    format!("alice={},bob={}", hash_api_key(ALICE), hash_api_key(BOB))
}

/// An app with two API-key principals, alice and bob, on a fresh DynamoDB Local table.
async fn dynamo_app(extra: &[(&str, &str)]) -> (TestApp, aws_sdk_dynamodb::Client, String) {
    let (client, table) = dynamo_local::new_table().await;
    let store: Arc<dyn ThreadStore> = Arc::new(DynamoStore::new(client.clone(), table.clone(), 0));
    let keys = api_keys();
    let mut overrides = vec![("AUTH_MODE", "api-key"), ("API_KEYS", keys.as_str())];
    overrides.extend_from_slice(extra);
    (spawn_app_on(&overrides, Some(store)).await, client, table)
}

/// A run as `key`; the events, checked.
async fn run_as(app: &TestApp, key: &str, body: &Value) -> Vec<Value> {
    let answer = call(app, key, "POST", "/agent", Some(body.clone())).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let events = parse_sse(&answer.body).unwrap();
    verify_run(&events).unwrap();
    assert_eq!(
        events.last().unwrap()["type"],
        "RUN_FINISHED",
        "{}",
        answer.body
    );
    events
}

fn said(id: &str, text: &str) -> Value {
    json!({"id": id, "role": "user", "content": text})
}

async fn list_all(app: &TestApp, key: &str, limit: usize) -> (Vec<Value>, usize) {
    let mut threads = Vec::new();
    let mut pages = 0;
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            None => format!("/threads?limit={limit}"),
            Some(cursor) => format!(
                "/threads?limit={limit}&cursor={}",
                form_urlencoded::byte_serialize(cursor.as_bytes()).collect::<String>()
            ),
        };
        let page = call(app, key, "GET", &path, None).await;
        assert_eq!(page.status, 200, "{}", page.body);
        let page = page.json();
        pages += 1;
        threads.extend(page["threads"].as_array().unwrap().iter().cloned());
        match page["next"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return (threads, pages),
        }
    }
}

#[tokio::test]
async fn the_thread_list_pages_newest_first_and_shows_only_the_callers_threads() {
    let (app, _, _) = dynamo_app(&[]).await;
    let runs = (0..250).map(|i| {
        let app = &app;
        async move {
            let thread = format!("alice-{i:03}");
            run_as(
                app,
                ALICE,
                &run_input(
                    &thread,
                    "r1",
                    json!([said("u1", &format!("think step by step {i}"))]),
                ),
            )
            .await;
        }
    });
    futures_util::stream::iter(runs)
        .buffer_unordered(8)
        .collect::<Vec<_>>()
        .await;
    for i in 0..3 {
        run_as(
            &app,
            BOB,
            &run_input(
                &format!("bob-{i}"),
                "r1",
                json!([said("u1", "think step by step")]),
            ),
        )
        .await;
    }

    let (threads, pages) = list_all(&app, ALICE, 100).await;
    assert!(pages >= 3, "250 threads in pages of 100: {pages} pages");
    let ids: Vec<&str> = threads
        .iter()
        .map(|thread| thread["threadId"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 250, "every thread once");
    assert_eq!(
        ids.iter().collect::<HashSet<_>>().len(),
        250,
        "no duplicates"
    );
    assert!(ids.iter().all(|id| id.starts_with("alice-")), "never bob's");
    let updated: Vec<&str> = threads
        .iter()
        .map(|thread| thread["updatedAt"].as_str().unwrap())
        .collect();
    assert!(
        updated.windows(2).all(|pair| pair[0] >= pair[1]),
        "newest first"
    );
    let first = &threads[0];
    // The question, the model's reasoning and its answer.
    assert_eq!(first["messageCount"], 3);
    assert_eq!(first["activeRunId"], Value::Null);
    assert!(
        first["title"]
            .as_str()
            .unwrap()
            .starts_with("think step by step")
    );

    // A new run moves the oldest thread to the top.
    let oldest = ids[249].to_owned();
    run_as(
        &app,
        ALICE,
        &run_input(
            &oldest,
            "r2",
            json!([said("u2", "think step by step again")]),
        ),
    )
    .await;
    let top = call(&app, ALICE, "GET", "/threads?limit=1", None)
        .await
        .json();
    assert_eq!(top["threads"][0]["threadId"], oldest.as_str());
    assert_eq!(top["threads"][0]["messageCount"], 6);

    let (bobs, _) = list_all(&app, BOB, 100).await;
    assert_eq!(bobs.len(), 3);
}

#[tokio::test]
async fn a_title_is_derived_from_the_first_message_and_can_be_set() {
    let (app, _, _) = dynamo_app(&[]).await;
    let thread = new_thread();
    run_as(
        &app,
        ALICE,
        &run_input(
            &thread,
            "r1",
            json!([said("u1", "  think step by step   about\n Lisbon ")]),
        ),
    )
    .await;
    let history = call(&app, ALICE, "GET", &format!("/threads/{thread}"), None).await;
    assert_eq!(history.json()["title"], "think step by step about Lisbon");

    let renamed = call(
        &app,
        ALICE,
        "PATCH",
        &format!("/threads/{thread}"),
        Some(json!({"title": "  Trip   planning "})),
    )
    .await;
    assert_eq!(renamed.status, 200, "{}", renamed.body);
    assert_eq!(renamed.json()["title"], "Trip planning");
    // A later run keeps the title the user chose.
    run_as(
        &app,
        ALICE,
        &run_input(&thread, "r2", json!([said("u2", "think step by step")])),
    )
    .await;
    let listed = call(&app, ALICE, "GET", "/threads", None).await.json();
    assert_eq!(listed["threads"][0]["title"], "Trip planning");

    // Refusals: another principal, bad titles, bad bodies.
    let path = format!("/threads/{thread}");
    let bob = call(&app, BOB, "PATCH", &path, Some(json!({"title": "mine"}))).await;
    assert_eq!(
        (bob.status, bob.error_code().as_str()),
        (404, "thread_not_found")
    );
    for (body, field) in [
        (json!({"title": " \n "}), "title"),
        (json!({"title": "x".repeat(201)}), "title"),
        (json!({"title": 7}), "title"),
        (json!({}), "body"),
        (json!({"title": "ok", "colour": "red"}), "colour"),
    ] {
        let refused = call(&app, ALICE, "PATCH", &path, Some(body.clone())).await;
        assert_eq!(refused.status, 422, "{body}: {}", refused.body);
        assert_eq!(refused.json()["error"]["field"], field, "{body}");
    }
    let broken = app
        .http
        .patch(app.url(&path))
        .bearer_auth(ALICE)
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(broken.status(), 400);
    let missing = call(
        &app,
        ALICE,
        "PATCH",
        "/threads/no-such-thread",
        Some(json!({"title": "x"})),
    )
    .await;
    assert_eq!(missing.status, 404);
    let listed = call(&app, ALICE, "GET", "/threads", None).await.json();
    assert_eq!(
        listed["threads"][0]["title"], "Trip planning",
        "nothing changed"
    );
}

/// Every item of the table whose key or `thread` attribute names `thread`.
async fn items_naming(client: &aws_sdk_dynamodb::Client, table: &str, thread: &str) -> Vec<String> {
    let text =
        |item: &std::collections::HashMap<String, AttributeValue>, key: &str| match item.get(key) {
            Some(AttributeValue::S(value)) => value.clone(),
            _ => String::new(),
        };
    dynamo_local::scan(client, table)
        .await
        .iter()
        .filter(|item| {
            text(item, "pk") == format!("THREAD#{thread}") || text(item, "thread") == thread
        })
        .map(|item| format!("{} {}", text(item, "pk"), text(item, "sk")))
        .collect()
}

#[tokio::test]
async fn deleting_a_thousand_message_thread_leaves_nothing_and_frees_the_id() {
    let (app, client, table) = dynamo_app(&[("MAX_MESSAGES", "1000")]).await;
    let thread = new_thread();
    // 998 messages of history sent at once, then two runs that each store a question, the
    // model's reasoning and its answer: 1,004 stored messages and two run event logs.
    let history: Vec<Value> = (0..998)
        .map(|i| {
            if i % 2 == 0 {
                said(&format!("u{i}"), &format!("question {i}"))
            } else {
                json!({"id": format!("a{i}"), "role": "assistant", "content": format!("answer {i}")})
            }
        })
        .collect();
    let mut first = history.clone();
    first.push(said("u998", "think step by step"));
    run_as(&app, ALICE, &run_input(&thread, "r1", json!(first))).await;
    run_as(
        &app,
        ALICE,
        &run_input(&thread, "r2", json!([said("u1000", "think step by step")])),
    )
    .await;
    let listed = call(&app, ALICE, "GET", "/threads", None).await.json();
    assert_eq!(listed["threads"][0]["messageCount"], 1004);
    assert!(items_naming(&client, &table, &thread).await.len() > 1004);

    let path = format!("/threads/{thread}");
    let bob = call(&app, BOB, "DELETE", &path, None).await;
    assert_eq!(
        (bob.status, bob.error_code().as_str()),
        (404, "thread_not_found")
    );
    assert!(
        items_naming(&client, &table, &thread).await.len() > 1002,
        "bob removed nothing"
    );

    let deleted = call(&app, ALICE, "DELETE", &path, None).await;
    assert_eq!(deleted.status, 204, "{}", deleted.body);
    assert_eq!(
        items_naming(&client, &table, &thread).await,
        Vec::<String>::new()
    );
    assert_eq!(call(&app, ALICE, "GET", &path, None).await.status, 404);
    let events = call(&app, ALICE, "GET", &format!("{path}/runs/r1/events"), None).await;
    assert_eq!(events.status, 404);
    let listed = call(&app, ALICE, "GET", "/threads", None).await.json();
    assert_eq!(listed["threads"], json!([]));
    // Idempotent.
    assert_eq!(call(&app, ALICE, "DELETE", &path, None).await.status, 204);

    // The id is free again, for anyone.
    run_as(
        &app,
        BOB,
        &run_input(&thread, "r1", json!([said("u1", "think step by step")])),
    )
    .await;
    let reborn = call(&app, BOB, "GET", &path, None).await.json();
    assert_eq!(reborn["messages"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn deleting_a_thread_stops_its_run_first() {
    let (app, _, _) = dynamo_app(&[]).await;
    let thread = new_thread();
    let body = run_input(&thread, "slow", json!([said("u1", "stream slowly")]));
    let streaming = {
        let app = &app;
        async move { call(app, ALICE, "POST", "/agent", Some(body)).await }
    };
    let deleting = async {
        // Once the run holds the thread.
        for _ in 0..100 {
            let page = call(&app, ALICE, "GET", "/threads", None).await.json();
            if page["threads"][0]["activeRunId"] == "slow" {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        call(&app, ALICE, "DELETE", &format!("/threads/{thread}"), None).await
    };
    let (streamed, deleted) = tokio::join!(streaming, deleting);
    assert_eq!(deleted.status, 204, "{}", deleted.body);
    let events = parse_sse(&streamed.body).unwrap();
    let last = events.last().unwrap();
    assert_eq!(last["type"], "RUN_FINISHED", "{}", streamed.body);
    assert_eq!(last["metadata"]["agui-lambda"]["outcome"], "cancelled");
    assert_eq!(
        call(&app, ALICE, "GET", &format!("/threads/{thread}"), None)
            .await
            .status,
        404
    );
}

async fn messages_of(app: &TestApp, key: &str, thread: &str) -> Vec<Value> {
    let page = call(
        app,
        key,
        "GET",
        &format!("/threads/{thread}?limit=500"),
        None,
    )
    .await;
    assert_eq!(page.status, 200, "{}", page.body);
    page.json()["messages"].as_array().unwrap().clone()
}

fn ids(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|message| message["id"].as_str().unwrap().to_owned())
        .collect()
}

#[expect(
    clippy::too_many_lines,
    reason = "one scenario told top to bottom: each step's assertions sit beside the step"
)]
#[tokio::test]
async fn a_thread_forks_at_a_message_and_from_a_parent_run() {
    let (app, _, _) = dynamo_app(&[]).await;
    let original = new_thread();
    run_as(
        &app,
        ALICE,
        &run_input(&original, "r1", json!([said("u1", "think step by step")])),
    )
    .await;
    run_as(
        &app,
        ALICE,
        &run_input(
            &original,
            "r2",
            json!([said("u2", "think step by step twice")]),
        ),
    )
    .await;
    // Each run stores the question, the model's reasoning and its answer.
    let before = messages_of(&app, ALICE, &original).await;
    assert_eq!(before.len(), 6);
    assert_eq!(before[2]["role"], "assistant");
    let first_answer = before[2]["id"].as_str().unwrap().to_owned();

    // At a message.
    let fork_path = format!("/threads/{original}/fork");
    let forked = call(
        &app,
        ALICE,
        "POST",
        &fork_path,
        Some(json!({"messageId": first_answer})),
    )
    .await;
    assert_eq!(forked.status, 201, "{}", forked.body);
    let forked = forked.json();
    assert_eq!(forked["parentThreadId"], original.as_str());
    assert_eq!(forked["messageCount"], 3);
    assert_eq!(forked["title"], "think step by step");
    let branch = forked["threadId"].as_str().unwrap().to_owned();
    assert_eq!(
        ids(&messages_of(&app, ALICE, &branch).await),
        ids(&before[..3])
    );
    // The branch goes on by itself; the original is untouched.
    run_as(
        &app,
        ALICE,
        &run_input(
            &branch,
            "b1",
            json!([said("u3", "think step by step on a branch")]),
        ),
    )
    .await;
    assert_eq!(messages_of(&app, ALICE, &branch).await.len(), 6);
    assert_eq!(messages_of(&app, ALICE, &original).await, before);

    // A chosen id; a taken one is refused.
    let named = call(
        &app,
        ALICE,
        "POST",
        &fork_path,
        Some(json!({"messageId": "u1", "threadId": "my-branch"})),
    )
    .await;
    assert_eq!(named.status, 201, "{}", named.body);
    assert_eq!(ids(&messages_of(&app, ALICE, "my-branch").await), ["u1"]);
    let taken = call(
        &app,
        ALICE,
        "POST",
        &fork_path,
        Some(json!({"messageId": "u1", "threadId": "my-branch"})),
    )
    .await;
    assert_eq!(
        (taken.status, taken.json()["error"]["field"].clone()),
        (422, json!("threadId"))
    );

    // Refusals.
    let bob = call(
        &app,
        BOB,
        "POST",
        &fork_path,
        Some(json!({"messageId": "u1"})),
    )
    .await;
    assert_eq!(
        (bob.status, bob.error_code().as_str()),
        (404, "thread_not_found")
    );
    let unknown = call(
        &app,
        ALICE,
        "POST",
        &fork_path,
        Some(json!({"messageId": "nope"})),
    )
    .await;
    assert_eq!(
        (unknown.status, unknown.json()["error"]["field"].clone()),
        (422, json!("messageId"))
    );
    let no_body = call(&app, ALICE, "POST", &fork_path, Some(json!({}))).await;
    assert_eq!(no_body.status, 422, "{}", no_body.body);

    // From a parent run: a new thread naming r1 starts where r1 left the original.
    let from_run = new_thread();
    let mut body = run_input(
        &from_run,
        "c1",
        json!([said("u4", "think step by step from r1")]),
    );
    body["parentRunId"] = json!("r1");
    let events = run_as(&app, ALICE, &body).await;
    assert_eq!(events[0]["parentRunId"], "r1");
    let copied = messages_of(&app, ALICE, &from_run).await;
    assert_eq!(copied.len(), 6);
    assert_eq!(ids(&copied[..3]), ids(&before[..3]));
    assert_eq!(copied[3]["id"], "u4");
    assert_eq!(messages_of(&app, ALICE, &original).await, before);
    // The model saw the copied history.
    let asked = app.fixture_requests_about("from r1");
    assert_eq!(asked.len(), 1);
    assert_eq!(
        asked[0]
            .messages
            .iter()
            .filter(|m| matches!(m, agui_lambda::testing::protocol::Message::User { .. }))
            .count(),
        2
    );

    // Another principal cannot fork from alice's run; an unknown run is refused.
    for (key, parent) in [(BOB, "r1"), (ALICE, "no-such-run")] {
        let mut body = run_input(
            &new_thread(),
            "x",
            json!([said("u1", "think step by step")]),
        );
        body["parentRunId"] = json!(parent);
        let refused = call(&app, key, "POST", "/agent", Some(body)).await;
        assert_eq!(refused.status, 422, "{}", refused.body);
        assert_eq!(refused.json()["error"]["field"], "parentRunId");
    }
}

#[tokio::test]
async fn the_new_routes_refuse_bad_input_and_unknown_methods() {
    let (app, _, _) = dynamo_app(&[]).await;
    for (path, code) in [
        ("/threads?limit=0", "invalid_query"),
        ("/threads?limit=101", "invalid_query"),
        ("/threads?cursor=garbage", "invalid_cursor"),
        ("/usage?from=2026-13-01", "invalid_query"),
        ("/usage?from=2026-11-23&to=2026-11-01", "invalid_query"),
        ("/usage?from=2020-01-01&to=2026-01-01", "invalid_query"),
    ] {
        let refused = call(&app, ALICE, "GET", path, None).await;
        assert_eq!(refused.status, 400, "{path}: {}", refused.body);
        assert_eq!(refused.error_code(), code, "{path}");
    }
    for (method, path) in [
        ("PUT", "/threads/x"),
        ("POST", "/threads"),
        ("GET", "/threads/x/fork"),
        ("POST", "/usage"),
    ] {
        let refused = call(&app, ALICE, method, path, None).await;
        assert_eq!(refused.status, 405, "{method} {path}");
        assert_eq!(refused.error_code(), "method_not_allowed");
    }
    for (method, path) in [
        ("GET", "/threads"),
        ("GET", "/usage"),
        ("DELETE", "/threads/x"),
    ] {
        let anonymous = app
            .http
            .request(method.parse().unwrap(), app.url(path))
            .send()
            .await
            .unwrap();
        assert_eq!(anonymous.status(), 401, "{method} {path}");
    }
}

/// A quota check needs the runs to fall in one UTC minute.
async fn away_from_a_minute_boundary() {
    use chrono::Timelike;
    let second = chrono::Utc::now().second();
    if second >= 50 {
        tokio::time::sleep(std::time::Duration::from_secs(u64::from(61 - second))).await;
    }
}

#[expect(
    clippy::too_many_lines,
    reason = "one scenario told top to bottom: each step's assertions sit beside the step"
)]
#[tokio::test]
async fn wire_twenty_parallel_runs_against_a_quota_of_five_and_usage_matches_aimock() {
    let (client, table) = dynamo_local::new_table().await;
    let store: Arc<dyn ThreadStore> = Arc::new(DynamoStore::new(client, table, 0));
    let keys = api_keys();
    let app = spawn_wire_app_on(
        &[
            ("AUTH_MODE", "api-key"),
            ("API_KEYS", keys.as_str()),
            ("QUOTA_RUNS_PER_MINUTE", "5"),
            (
                "QUOTA_OVERRIDES",
                r#"{"bob": {"runsPerMinute": null, "tokensPerDay": 50}}"#,
            ),
        ],
        store,
    )
    .await;
    away_from_a_minute_boundary().await;
    let runs = (0..20).map(|i| {
        let app = &app;
        async move {
            let body = run_input(
                &new_thread(),
                &format!("r{i}"),
                json!([said("u1", "think step by step")]),
            );
            call(app, ALICE, "POST", "/agent", Some(body)).await
        }
    });
    let answers = futures_util::future::join_all(runs).await;
    let admitted: Vec<&Answer> = answers.iter().filter(|a| a.status == 200).collect();
    let refused: Vec<&Answer> = answers.iter().filter(|a| a.status == 429).collect();
    assert_eq!((admitted.len(), refused.len()), (5, 15));
    for answer in &admitted {
        let events = parse_sse(&answer.body).unwrap();
        verify_run(&events).unwrap();
        assert_eq!(
            events.last().unwrap()["type"],
            "RUN_FINISHED",
            "{}",
            answer.body
        );
    }
    for answer in &refused {
        assert_eq!(answer.headers["content-type"], "application/json");
        let retry: u64 = answer.headers["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=60).contains(&retry), "{retry}");
        assert_eq!(answer.error_code(), "quota_exceeded");
        assert_eq!(answer.json()["error"]["retryAfter"], retry);
    }
    // Every dialect is held to the quota.
    let agentscope = call(
        &app,
        ALICE,
        "POST",
        "/process",
        Some(json!({"input": [{"role": "user", "type": "message", "content": [{"type": "text", "text": "think step by step"}]}], "stream": true, "session_id": new_thread()})),
    )
    .await;
    assert_eq!(agentscope.status, 429, "{}", agentscope.body);
    assert!(agentscope.headers.contains_key("retry-after"));

    // Bob has no run quota but 50 tokens a day: a run of 32 tokens, then one more (32 < 50),
    // then none.
    let mut statuses = Vec::new();
    for i in 0..3 {
        let body = run_input(
            &new_thread(),
            &format!("b{i}"),
            json!([said("u1", "think step by step")]),
        );
        let answer = call(&app, BOB, "POST", "/agent", Some(body)).await;
        if answer.status == 429 {
            let retry: u64 = answer.headers["retry-after"]
                .to_str()
                .unwrap()
                .parse()
                .unwrap();
            assert!((1..=86_400).contains(&retry));
            assert!(answer.body.contains("50 tokens"), "{}", answer.body);
        }
        statuses.push(answer.status);
    }
    assert_eq!(statuses, [200, 200, 429]);

    // The usage report is what the model reported, run by run, as aimock's journal shows.
    let journal = app.aimock().journal().await;
    let served: Vec<&Value> = journal
        .iter()
        .filter(|entry| entry["response"]["fixture"].is_object())
        .collect();
    assert_eq!(
        served.len(),
        7,
        "5 of alice's runs and 2 of bob's reached the model"
    );
    let fixture_tokens = |field: &str| -> u64 {
        served
            .iter()
            .map(|entry| {
                entry["response"]["fixture"]["response"]["usage"][field]
                    .as_u64()
                    .unwrap()
            })
            .sum()
    };
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let mut totals = json!({"runs": 0, "inputTokens": 0, "outputTokens": 0});
    for key in [ALICE, BOB] {
        let usage = call(
            &app,
            key,
            "GET",
            &format!("/usage?from={today}&to={today}"),
            None,
        )
        .await;
        assert_eq!(usage.status, 200, "{}", usage.body);
        let usage = usage.json();
        let model = &usage["days"][0]["models"][0];
        assert_eq!(usage["days"][0]["day"], today.as_str());
        assert_eq!(model["provider"], "openai");
        assert_eq!(model["model"], "test-model");
        for field in ["runs", "inputTokens", "outputTokens"] {
            totals[field] =
                json!(totals[field].as_u64().unwrap() + usage["totals"][field].as_u64().unwrap());
        }
    }
    assert_eq!(totals["runs"], 7);
    assert_eq!(totals["inputTokens"], fixture_tokens("prompt_tokens"));
    assert_eq!(totals["outputTokens"], fixture_tokens("completion_tokens"));
}
