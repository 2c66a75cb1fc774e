//! The v1 agent API as its clients call it, over HTTP on DynamoDB Local: a detached run
//! (`POST /api/v1/agent/runs` → `TaskAcceptedResponse`), followed by run id and read back by day
//! (`GET /api/v1/agent/history`); the contract's exact refusals on its route only; agent profiles by
//! `agent_type`; history paged across three days; image uploads through signed URLs into moto.

use agui_lambda::testing::auth::Principal;
use agui_lambda::testing::auth::hash_api_key;
use agui_lambda::testing::protocol::verify::{parse_sse, verify_run};
use agui_lambda::testing::protocol::{Message, MessageId, RunId, ThreadId, UserContent};
use agui_lambda::testing::store::{DynamoStore, RunFinish, RunStart, ThreadStore};
use serde_json::{Value, json};
use std::sync::Arc;

use crate::helpers::*;
use crate::{dynamo_local, s3_local};

const ALICE: &str = "alice-secret-key";
const BOB: &str = "bob-secret-key";

fn api_keys() -> String {
    format!("alice={},bob={}", hash_api_key(ALICE), hash_api_key(BOB))
}

async fn dynamo_store() -> Arc<dyn ThreadStore> {
    let (client, table) = dynamo_local::new_table().await;
    Arc::new(DynamoStore::new(client, table, 0))
}

/// Alice and bob by API key, the fixture model, DynamoDB Local.
async fn v1_app(extra: &[(&str, &str)]) -> (TestApp, Arc<dyn ThreadStore>) {
    let store = dynamo_store().await;
    let keys = api_keys();
    let mut overrides = vec![("AUTH_MODE", "api-key"), ("API_KEYS", keys.as_str())];
    overrides.extend_from_slice(extra);
    (spawn_app_on(&overrides, Some(store.clone())).await, store)
}

/// The contract's plain-text request example, with our ids and text.
fn v1_request(thread: &str, run: &str, text: &str) -> Value {
    json!({
        "threadId": thread,
        "runId": run,
        "state": {},
        "messages": [{"id": format!("msg-{run}"), "role": "user", "content": text}],
        "tools": [],
        "context": [],
        "forwardedProps": {"agent_type": "worker"}
    })
}

fn new_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// POST /api/v1/agent/runs, expected accepted.
async fn accept(app: &TestApp, key: &str, body: &Value) -> Value {
    let answer = call_raw(
        app,
        key,
        "POST",
        "/api/v1/agent/runs",
        Some(body.to_string()),
    )
    .await;
    assert_eq!(answer.status, 202, "{}", answer.body);
    answer.json()
}

/// The run's events by run id alone, checked as one AG-UI run.
async fn follow(app: &TestApp, key: &str, run: &str) -> Vec<Value> {
    let answer = call_raw(
        app,
        key,
        "GET",
        &format!("/api/v1/agent/runs/{run}/events"),
        None,
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let events = parse_sse(&answer.body).unwrap();
    verify_run(&events).unwrap_or_else(|err| panic!("{err}\n{}", answer.body));
    events
}

fn today_utc() -> String {
    chrono::Utc::now().format("%Y-%m-%d").to_string()
}

#[expect(
    clippy::too_many_lines,
    reason = "one scenario told top to bottom: each step's assertions sit beside the step"
)]
#[tokio::test]
async fn a_detached_run_is_accepted_at_once_followed_by_run_id_and_read_back_by_day() {
    let (app, _store) = v1_app(&[]).await;
    let thread = new_uuid();
    let run = format!("run-{}", new_uuid());

    let answer = call_raw(
        &app,
        ALICE,
        "POST",
        "/api/v1/agent/runs",
        Some(v1_request(&thread, &run, "hello").to_string()),
    )
    .await;
    assert_eq!(answer.status, 202, "{}", answer.body);
    // TaskAcceptedResponse, key for key in the contract's order; the task is the run.
    assert_eq!(
        answer.body,
        format!(r#"{{"taskId":"{run}","threadId":"{thread}","runId":"{run}","created":true}}"#)
    );
    assert_eq!(answer.headers["x-run-id"], run.as_str());

    let events = follow(&app, ALICE, &run).await;
    assert_eq!(events.first().unwrap()["type"], "RUN_STARTED");
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
    assert_eq!(text_of(&events), "Hello! How can I help you today?");
    // Owner only: bob learns nothing of alice's run.
    let foreign = call_raw(
        &app,
        BOB,
        "GET",
        &format!("/api/v1/agent/runs/{run}/events"),
        None,
    )
    .await;
    assert_eq!(foreign.status, 404, "{}", foreign.body);

    let history = call_raw(
        &app,
        ALICE,
        "GET",
        &format!("/api/v1/agent/history?threadId={thread}"),
        None,
    )
    .await;
    assert_eq!(history.status, 200, "{}", history.body);
    let body = history.json();
    assert_eq!(body["scope"], "history_day");
    assert_eq!(body["threadId"], thread.as_str());
    assert_eq!(body["day"], today_utc());
    assert_eq!(body["hasMore"], false);
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{body}");
    let user = &messages[0];
    assert_eq!(user["id"], format!("msg-{run}"));
    assert_eq!(user["seq"], 1);
    assert_eq!(user["role"], "user");
    assert_eq!(user["content"], "hello");
    assert_eq!(user["attachments"], json!([]));
    let assistant = &messages[1];
    assert_eq!(assistant["seq"], 2);
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["content"], "Hello! How can I help you today?");
    assert_eq!(assistant["ui_schema"], Value::Null);
    assert!(assistant.as_object().unwrap().contains_key("ui_schema"));
    for message in messages {
        let stamp = message["timestamp"].as_str().unwrap();
        assert!(
            stamp.len() == 20 && stamp.ends_with('Z') && stamp.starts_with(&today_utc()),
            "{stamp}"
        );
    }

    // Without threadId: the caller's latest thread; bob has none.
    let latest = call_raw(&app, ALICE, "GET", "/api/v1/agent/history", None).await;
    assert_eq!(latest.json()["threadId"], thread.as_str());
    let none = call_raw(&app, BOB, "GET", "/api/v1/agent/history", None).await;
    assert_eq!(
        none.body,
        r#"{"scope":"history_day","threadId":null,"day":null,"hasMore":false,"messages":[]}"#
    );
    let foreign = call_raw(
        &app,
        BOB,
        "GET",
        &format!("/api/v1/agent/history?threadId={thread}"),
        None,
    )
    .await;
    assert_eq!(foreign.status, 404, "{}", foreign.body);

    // A run id is one task: sent again, it is refused and nothing runs twice.
    let again = call_raw(
        &app,
        ALICE,
        "POST",
        "/api/v1/agent/runs",
        Some(v1_request(&thread, &run, "hello").to_string()),
    )
    .await;
    assert_eq!(again.status, 409, "{}", again.body);
    assert_eq!(again.json()["error"]["code"], "run_id_taken");

    // The next run continues the thread (created: false) and the day grows.
    let second = format!("run-{}", new_uuid());
    let accepted = accept(
        &app,
        ALICE,
        &v1_request(&thread, &second, "think step by step"),
    )
    .await;
    assert_eq!(accepted["created"], false);
    let events = follow(&app, ALICE, &second).await;
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
    let day = call_raw(
        &app,
        ALICE,
        "GET",
        &format!("/api/v1/agent/history?threadId={thread}"),
        None,
    )
    .await
    .json();
    let seqs: Vec<u64> = day["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["seq"].as_u64().unwrap())
        .collect();
    // The stored reasoning message (seq 4) is not part of the history's union.
    assert_eq!(seqs, [1, 2, 3, 5], "{day}");

    // Once the thread is deleted, its runs are gone too (at once, not after a wait).
    let deleted = call_raw(&app, ALICE, "DELETE", &format!("/threads/{thread}"), None).await;
    assert_eq!(deleted.status, 204, "{}", deleted.body);
    let gone = call_raw(
        &app,
        ALICE,
        "GET",
        &format!("/api/v1/agent/runs/{run}/events"),
        None,
    )
    .await;
    assert_eq!(gone.status, 404, "{}", gone.body);
}

#[tokio::test]
async fn a_detached_run_is_refused_when_it_cannot_run_and_a_failed_start_is_recorded() {
    // A token quota of 1 a day: the first run is admitted and spends more.
    let (app, store) = v1_app(&[("QUOTA_TOKENS_PER_DAY", "1")]).await;
    let thread = new_uuid();
    let first = format!("run-{}", new_uuid());
    accept(&app, ALICE, &v1_request(&thread, &first, "hello")).await;
    follow(&app, ALICE, &first).await;
    // Over the quota: refused at once, as a streamed run would be.
    let over = call_raw(
        &app,
        ALICE,
        "POST",
        "/api/v1/agent/runs",
        Some(v1_request(&thread, &format!("run-{}", new_uuid()), "hello").to_string()),
    )
    .await;
    assert_eq!(over.status, 429, "{}", over.body);
    assert!(over.headers.contains_key("retry-after"));

    // A thread busy with a slow run: another detached run is refused before it is accepted.
    let (busy_app, _) = v1_app(&[]).await;
    let busy = new_uuid();
    let slow = format!("run-{}", new_uuid());
    accept(&busy_app, ALICE, &v1_request(&busy, &slow, "stream slowly")).await;
    let mut holding = false;
    for _ in 0..200 {
        let thread = call_raw(&busy_app, ALICE, "GET", &format!("/threads/{busy}"), None).await;
        if thread.status == 200 && thread.json()["activeRunId"] == slow.as_str() {
            holding = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(holding, "the slow run took its thread");
    let refused = call_raw(
        &busy_app,
        ALICE,
        "POST",
        "/api/v1/agent/runs",
        Some(v1_request(&busy, &format!("run-{}", new_uuid()), "hello").to_string()),
    )
    .await;
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert_eq!(refused.json()["error"]["code"], "thread_busy");
    let events = follow(&busy_app, ALICE, &slow).await;
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");

    // Bob names alice's thread: nothing tells him it exists, so the run is accepted, then
    // fails to start; the failure is what his events show, and alice's thread is untouched.
    let intruder = format!("run-{}", new_uuid());
    let accepted = accept(&app, BOB, &v1_request(&thread, &intruder, "hello")).await;
    assert_eq!(accepted["created"], true);
    let answer = call_raw(
        &app,
        BOB,
        "GET",
        &format!("/api/v1/agent/runs/{intruder}/events"),
        None,
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let events = parse_sse(&answer.body).unwrap();
    verify_run(&events).unwrap();
    assert_eq!(types(&events), ["RUN_STARTED", "RUN_ERROR"]);
    assert_eq!(events[1]["code"], "THREAD_NOT_FOUND");

    // Only the accepted runs' messages are stored.
    let thread_id = ThreadId::parse(&thread, 128).unwrap();
    let stored = store
        .load(&Principal::new("alice"), &thread_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.messages.len(), 2);
}

#[expect(
    clippy::too_many_lines,
    reason = "one scenario told top to bottom: each step's assertions sit beside the step"
)]
#[tokio::test]
async fn the_contract_s_rules_and_words_hold_on_its_route_only() {
    let (app, _store) = v1_app(&[]).await;
    let thread = new_uuid();
    let post = |body: String| {
        let app = &app;
        async move { call_raw(app, ALICE, "POST", "/api/v1/agent/runs", Some(body)).await }
    };
    let with = |edit: &dyn Fn(&mut Value)| {
        let mut body = v1_request(&thread, "run-rules", "hello");
        edit(&mut body);
        body.to_string()
    };
    let cases: Vec<(String, u16, &str)> = vec![
        (
            with(&|b| b["threadId"] = json!("not-a-uuid")),
            422,
            "threadId must be a valid UUID",
        ),
        (
            with(&|b| b["runId"] = json!("r".repeat(129))),
            422,
            "runId exceeds length limit",
        ),
        (
            with(&|b| {
                b["messages"] = json!([
                    {"id": "a1", "role": "assistant", "content": "earlier"},
                    {"id": "u1", "role": "user", "content": "hello"}
                ])
            }),
            422,
            "RunAgentInput.messages[0].role must be user",
        ),
        (
            with(&|b| {
                b["messages"] = json!([
                    {"id": "u1", "role": "user", "content": "hello"},
                    {"id": "u2", "role": "user", "content": "again"}
                ])
            }),
            422,
            "RunAgentInput.messages must contain exactly one user message",
        ),
        (
            with(&|b| b["forwardedProps"] = json!({"agent_type": "worker", "temperature": 0.2})),
            422,
            "invalid RunAgentInput.forwardedProps",
        ),
        (
            with(&|b| b["forwardedProps"] = json!({})),
            422,
            "invalid RunAgentInput.forwardedProps",
        ),
        (
            with(&|b| b["forwardedProps"] = json!({"agent_type": "memory"})),
            422,
            "invalid RunAgentInput.forwardedProps",
        ),
        (
            with(&|b| {
                b["messages"][0]["content"] = json!([
                    {"type": "text", "text": "what is this?"},
                    {"type": "binary", "mimeType": "image/png", "data": "aGVsbG8="}
                ])
            }),
            422,
            "binary content requires url",
        ),
        (
            with(&|b| {
                b["messages"][0]["content"] = json!([
                    {"type": "binary", "mimeType": "image/png",
                     "url": "https://storage.example.com/agent-inputs/user-123/image.png?signature=xxx"}
                ])
            }),
            422,
            // No bucket is configured here: no URL is one this server signed.
            "binary content requires signed url",
        ),
        (
            with(&|b| {
                b["forwardedProps"] = json!({"agent_type": "worker", "client_time": {
                    "device_timezone": "Mars/Olympus", "client_now_iso": "2026-03-16T09:12:33-07:00",
                    "client_epoch_ms": 1773658353000_u64}})
            }),
            422,
            "invalid client_time.device_timezone",
        ),
        (
            format!(
                r#"{{"threadId":"{thread}","runId":"r","messages":[],"forwardedProps":{{"agent_type":"worker"}},"pad":"{}"}}"#,
                "x".repeat(300 * 1024)
            ),
            413,
            "RunAgentInput payload exceeds size limit",
        ),
    ];
    for (body, status, message) in cases {
        let answer = post(body).await;
        assert_eq!(answer.status, status, "{message}: {}", answer.body);
        assert_eq!(answer.message(), message);
        assert!(
            answer.json()["error"].get("field").is_none(),
            "{}",
            answer.body
        );
    }
    let broken = post("{not json".to_owned()).await;
    assert_eq!(broken.status, 400, "{}", broken.body);
    // Nothing was stored by any refusal.
    let list = call_raw(&app, ALICE, "GET", "/threads", None).await;
    assert_eq!(list.json()["threads"], json!([]));

    // The same history-first body is an ordinary AG-UI run on /agent (HttpAgent resends the
    // whole thread, with sampling options in forwardedProps).
    let mut lenient = v1_request(&thread, "run-lenient", "hello");
    lenient["messages"] = json!([
        {"id": "a1", "role": "assistant", "content": "earlier"},
        {"id": "u1", "role": "user", "content": "hello"}
    ]);
    lenient["forwardedProps"] = json!({"temperature": 0.2});
    let answer = call_raw(&app, ALICE, "POST", "/agent", Some(lenient.to_string())).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
}

#[tokio::test]
async fn wire_agent_types_choose_their_profiles_prompt_and_model() {
    let store = dynamo_store().await;
    let profiles = json!({
        "worker": {"systemPrompt": "You are the worker profile.", "model": "worker-model"},
        "planner": {"systemPrompt": "You are the planner profile.", "model": "planner-model"}
    })
    .to_string();
    let app = spawn_wire_app_on(&[("AGENT_PROFILES", profiles.as_str())], store).await;
    for (agent_type, prompt, model) in [
        ("worker", "You are the worker profile.", "worker-model"),
        ("planner", "You are the planner profile.", "planner-model"),
    ] {
        let run = format!("run-{agent_type}-{}", new_uuid());
        let mut body = v1_request(&new_uuid(), &run, &format!("hello from {agent_type}"));
        body["forwardedProps"]["agent_type"] = json!(agent_type);
        let answer = app
            .post_raw("/api/v1/agent/runs", "application/json", body.to_string())
            .await;
        assert_eq!(answer.status, 202, "{}", answer.body);
        let events = app.get(&format!("/api/v1/agent/runs/{run}/events")).await;
        let events = parse_sse(&events.body).unwrap();
        assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED", "{events:?}");
        let requests = app
            .aimock()
            .requests_about(&format!("hello from {agent_type}"))
            .await;
        assert_eq!(requests.len(), 1, "{requests:?}");
        let request = &requests[0]["body"];
        assert_eq!(request["model"], model);
        assert_eq!(request["messages"][0]["role"], "system");
        assert_eq!(request["messages"][0]["content"], prompt);
    }
    for agent_type in ["writer", "memory"] {
        let mut body = v1_request(&new_uuid(), "run-unknown", "hello");
        body["forwardedProps"]["agent_type"] = json!(agent_type);
        let answer = app
            .post_raw("/api/v1/agent/runs", "application/json", body.to_string())
            .await;
        assert_eq!(answer.status, 422, "{}", answer.body);
        assert_eq!(
            answer.json()["error"]["message"],
            "invalid RunAgentInput.forwardedProps"
        );
    }
}

fn message_id(id: &str) -> MessageId {
    MessageId::parse(id, 128).unwrap()
}

/// One run of alice's stored at `at` (UTC, RFC 3339): a user message and its answer.
async fn stored_exchange(store: &dyn ThreadStore, thread: &ThreadId, n: usize, at: &str) {
    let at_ms = chrono::DateTime::parse_from_rfc3339(at)
        .unwrap()
        .timestamp_millis();
    let owner = Principal::new("alice");
    let loaded = store.load(&owner, thread).await.unwrap();
    let run_id = RunId::parse(format!("r{n}"), 128).unwrap();
    let input = [Message::User {
        id: message_id(&format!("u{n}")),
        content: UserContent::Text(format!("question {n}")),
        name: None,
    }];
    let lease = store
        .begin_run(RunStart {
            owner: &owner,
            thread_id: thread,
            run_id: &run_id,
            loaded: loaded.as_ref(),
            lease_expires_at_ms: chrono::Utc::now().timestamp_millis() + 60_000,
            new_messages: &input,
            state: None,
            title: None,
            at_ms,
            copied_at_ms: &[],
        })
        .await
        .unwrap();
    let output = [Message::Assistant {
        id: message_id(&format!("a{n}")),
        content: Some(format!("answer {n}")),
        tool_calls: Vec::new(),
        name: None,
        encrypted_value: None,
    }];
    store
        .finish_run(RunFinish {
            lease: &lease,
            new_messages: &output,
            state: None,
            interrupts: None,
            at_ms: at_ms + 5_000,
            context: None,
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn the_history_pages_back_day_by_day_in_the_clients_time_zone() {
    let (app, store) = v1_app(&[]).await;
    let thread = ThreadId::parse(new_uuid(), 128).unwrap();
    // Three UTC days; the last exchange is still the 14th in Los Angeles.
    for (n, at) in [
        "2026-03-13T10:00:00Z",
        "2026-03-14T10:00:00Z",
        "2026-03-14T12:00:00Z",
        "2026-03-15T06:00:00Z",
    ]
    .into_iter()
    .enumerate()
    {
        stored_exchange(store.as_ref(), &thread, n, at).await;
    }
    let page = |query: String| {
        let app = &app;
        async move {
            let answer = call_raw(
                app,
                ALICE,
                "GET",
                &format!("/api/v1/agent/history?{query}"),
                None,
            )
            .await;
            assert_eq!(answer.status, 200, "{}", answer.body);
            answer.json()
        }
    };
    let ids = |page: &Value| -> Vec<String> {
        page["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_owned())
            .collect()
    };

    let latest = page(format!("threadId={thread}")).await;
    assert_eq!(latest["day"], "2026-03-15");
    assert_eq!(latest["hasMore"], true);
    assert_eq!(ids(&latest), ["u3", "a3"]);
    assert_eq!(latest["messages"][0]["seq"], 7);
    assert_eq!(latest["messages"][0]["timestamp"], "2026-03-15T06:00:00Z");
    assert_eq!(latest["messages"][1]["timestamp"], "2026-03-15T06:00:05Z");

    let middle = page(format!("threadId={thread}&before=2026-03-15")).await;
    assert_eq!(middle["day"], "2026-03-14");
    assert_eq!(middle["hasMore"], true);
    assert_eq!(ids(&middle), ["u1", "a1", "u2", "a2"]);

    let first = page(format!("threadId={thread}&before=2026-03-14")).await;
    assert_eq!(first["day"], "2026-03-13");
    assert_eq!(first["hasMore"], false);
    assert_eq!(ids(&first), ["u0", "a0"]);
    assert_eq!(first["messages"][0]["seq"], 1);

    let beyond = page(format!("threadId={thread}&before=2026-03-13")).await;
    assert_eq!(beyond["day"], Value::Null);
    assert_eq!(beyond["hasMore"], false);
    assert_eq!(beyond["messages"], json!([]));

    // In Los Angeles (UTC-7 in March) 06:00Z on the 15th is the evening of the 14th.
    let client_time = json!({
        "device_timezone": "America/Los_Angeles",
        "client_now_iso": "2026-03-16T09:12:33-07:00",
        "client_epoch_ms": 1773677553000_i64
    })
    .to_string();
    let encoded: String = form_urlencoded::byte_serialize(client_time.as_bytes()).collect();
    let local = page(format!("threadId={thread}&client_time={encoded}")).await;
    assert_eq!(local["day"], "2026-03-14");
    assert_eq!(ids(&local), ["u1", "a1", "u2", "a2", "u3", "a3"]);
    assert_eq!(local["hasMore"], true);

    for bad in ["before=15-03-2026", "client_time=%7B%7D"] {
        let answer = call_raw(
            &app,
            ALICE,
            "GET",
            &format!("/api/v1/agent/history?threadId={thread}&{bad}"),
            None,
        )
        .await;
        assert_eq!(answer.status, 400, "{bad}: {}", answer.body);
    }
}

#[expect(
    clippy::too_many_lines,
    reason = "one scenario told top to bottom: each step's assertions sit beside the step"
)]
#[tokio::test]
async fn an_image_goes_up_by_signed_url_into_a_run_and_comes_back_signed_in_the_history() {
    let store = dynamo_store().await;
    let blobs = s3_local::new_blobs(1024 * 1024).await;
    let keys = api_keys();
    let app = spawn_app_with_blobs(
        &[("AUTH_MODE", "api-key"), ("API_KEYS", keys.as_str())],
        store,
        blobs,
    )
    .await;
    let png: Vec<u8> = [&b"\x89PNG\r\n\x1a\n"[..], &[7_u8; 200]].concat();

    let upload = call_raw(
        &app,
        ALICE,
        "POST",
        "/api/v1/agent/attachments",
        Some(json!({"mimeType": "image/png", "size": png.len()}).to_string()),
    )
    .await;
    assert_eq!(upload.status, 201, "{}", upload.body);
    let upload = upload.json();
    assert_eq!(upload["method"], "PUT");
    let mut put = app.http.put(upload["uploadUrl"].as_str().unwrap());
    for (name, value) in upload["headers"].as_object().unwrap() {
        put = put.header(name, value.as_str().unwrap());
    }
    let stored = put.body(png.clone()).send().await.unwrap();
    assert!(
        stored.status().is_success(),
        "{}",
        stored.text().await.unwrap()
    );
    let url = upload["url"].as_str().unwrap().to_owned();

    let with_image = |thread: &str, run: &str, url: &str| {
        let mut body = v1_request(thread, run, "");
        body["messages"][0]["content"] = json!([
            {"type": "text", "text": "hello, what is in this picture?"},
            {"type": "binary", "mimeType": "image/png", "url": url}
        ]);
        body.to_string()
    };
    // Bob cannot use alice's upload, and a URL we never signed is refused; nothing is stored.
    let thread = new_uuid();
    let foreign = call_raw(
        &app,
        BOB,
        "POST",
        "/api/v1/agent/runs",
        Some(with_image(&thread, "run-bob", &url)),
    )
    .await;
    assert_eq!(foreign.status, 422, "{}", foreign.body);
    assert_eq!(foreign.message(), "binary content requires signed url");
    let unsigned = url.split('?').next().unwrap().to_owned();
    let forged = call_raw(
        &app,
        ALICE,
        "POST",
        "/api/v1/agent/runs",
        Some(with_image(&thread, "run-forged", &unsigned)),
    )
    .await;
    assert_eq!(forged.status, 422, "{}", forged.body);
    assert_eq!(forged.message(), "binary content requires signed url");

    let run = format!("run-{}", new_uuid());
    let accepted = call_raw(
        &app,
        ALICE,
        "POST",
        "/api/v1/agent/runs",
        Some(with_image(&thread, &run, &url)),
    )
    .await;
    assert_eq!(accepted.status, 202, "{}", accepted.body);
    let events = follow(&app, ALICE, &run).await;
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
    // The model was handed a fresh presigned GET of the object, never the client's URL.
    let requests = app.fixture_requests_about("hello, what is in this picture?");
    let seen = format!("{:?}", requests.last().unwrap().messages);
    assert!(seen.contains("X-Amz-Signature"), "{seen}");
    assert!(!seen.contains("s3://"), "{seen}");

    // The thread stores the internal path; the history gives a fresh signed URL that reads the
    // same bytes.
    let history = call_raw(
        &app,
        ALICE,
        "GET",
        &format!("/api/v1/agent/history?threadId={thread}"),
        None,
    )
    .await
    .json();
    let attachment = &history["messages"][0]["attachments"][0];
    assert_eq!(attachment["mimeType"], "image/png");
    let signed = attachment["url"].as_str().unwrap();
    assert!(signed.contains("X-Amz-Signature"), "{signed}");
    let bytes = app
        .http
        .get(signed)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(bytes.as_ref(), png.as_slice());
    let raw = call_raw(&app, ALICE, "GET", &format!("/threads/{thread}"), None)
        .await
        .json();
    assert!(raw["messages"].to_string().contains("s3://"), "{raw}");

    // Uploads are images within the size limit.
    for (body, field) in [
        (json!({"mimeType": "image/tiff", "size": 10}), "mimeType"),
        (
            json!({"mimeType": "image/png", "size": 2 * 1024 * 1024}),
            "size",
        ),
    ] {
        let answer = call_raw(
            &app,
            ALICE,
            "POST",
            "/api/v1/agent/attachments",
            Some(body.to_string()),
        )
        .await;
        assert_eq!(answer.status, 422, "{field}: {}", answer.body);
    }
}
