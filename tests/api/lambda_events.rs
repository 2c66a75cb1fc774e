use agui_lambda::testing::config::Config;
use agui_lambda::testing::protocol::verify::{parse_sse, verify_run};
use http_body_util::BodyExt;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

use crate::helpers::repo_path;

async fn answer(app: &agui_lambda::testing::api::App, file: &str) -> (u16, String) {
    // A run goes on after its stream ends (it records its usage last): let it finish, so each
    // answer sees what the previous event did.
    app.live_runs().idle().await;
    let text = std::fs::read_to_string(repo_path(&format!("events/{file}"))).unwrap();
    let request =
        lambda_http::request::from_str(&text).unwrap_or_else(|err| panic!("{file}: {err}"));
    let response = agui_lambda::testing::api::handle(app, request).await;
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

/// The app `cargo lambda watch` runs with nothing configured: the offline demo model (the files
/// must work with no model configured) and in-memory threads.
async fn demo_app() -> agui_lambda::testing::api::App {
    let config = Config::from_map(&HashMap::from([(
        "MODEL_PROVIDER".to_owned(),
        "demo".to_owned(),
    )]))
    .unwrap();
    agui_lambda::testing::startup::AppBuilder::new(&config)
        .build()
        .await
        .unwrap()
}

fn json(file: &str, body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|err| panic!("{file}: {err}: {body}"))
}

const PLAIN_CHAT_THREAD: &str = "5f0c6a1e-2b7d-4c39-9d1e-8a4b2f6c7e10";

/// Every event file parses as a Function URL request and gets its documented answer.
#[tokio::test]
async fn every_event_file_gets_its_documented_status() {
    let app = demo_app().await;

    let (status, page) = answer(&app, "dev-page.json").await;
    assert_eq!(
        status, 200,
        "dev-page.json: DEV_UI is on by default outside Lambda"
    );
    assert!(page.contains("<html"), "dev-page.json: {page}");

    for file in ["history-read.json", "run-events.json", "run-cancel.json"] {
        let (status, _) = answer(&app, file).await;
        assert_eq!(status, 404, "{file}: no thread yet");
    }

    for file in [
        "plain-chat.json",
        "frontend-tool-call.json",
        "tool-result-continuation.json",
        "server-tool.json",
    ] {
        let (status, body) = answer(&app, file).await;
        assert_eq!(status, 200, "{file}: {body}");
        let events = parse_sse(&body).unwrap();
        verify_run(&events).unwrap_or_else(|err| panic!("{file}: {err}"));
        assert_eq!(
            events.last().unwrap()["type"],
            "RUN_FINISHED",
            "{file}: {body}"
        );
        if file == "server-tool.json" {
            let result = events
                .iter()
                .find(|e| e["type"] == "TOOL_CALL_RESULT")
                .expect("the demo model calls get_current_time");
            assert!(result["content"].as_str().unwrap().contains("Europe/Paris"));
        }
        if file == "frontend-tool-call.json" {
            let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
            assert!(
                kinds.contains(&"TOOL_CALL_END") && !kinds.contains(&"TOOL_CALL_RESULT"),
                "{kinds:?}"
            );
        }
    }

    let (status, body) = answer(&app, "capabilities.json").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""interrupts":true"#), "{body}");

    let (status, body) = answer(&app, "invalid-input.json").await;
    assert_eq!(status, 422);
    assert!(body.contains("runId exceeds length limit"));

    let (status, body) = answer(&app, "history-read.json").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("msg-user-1"));
    assert!(body.contains(r#""activeRunId":null"#), "{body}");

    // The plain chat's run, replayed after Last-Event-ID 2 and then cancelled once it ended.
    let (status, body) = answer(&app, "run-events.json").await;
    assert_eq!(status, 200, "{body}");
    let replay = agui_lambda::testing::protocol::verify::parse_sse_with_ids(&body).unwrap();
    assert_eq!(replay.first().unwrap().0, Some(3), "{body}");
    assert_eq!(replay.last().unwrap().1["type"], "RUN_FINISHED");
    let (status, body) = answer(&app, "run-cancel.json").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""status":"ended""#), "{body}");
}

/// The thread and usage routes' events: on a fresh process, then on the plain chat's thread.
#[tokio::test]
async fn thread_and_usage_events_get_their_documented_status() {
    let app = demo_app().await;

    let (status, body) = answer(&app, "threads-list.json").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        json("threads-list.json", &body),
        serde_json::json!({"threads": [], "next": null})
    );
    for file in ["thread-rename.json", "thread-fork.json"] {
        let (status, body) = answer(&app, file).await;
        assert_eq!(status, 404, "{file}: no thread yet: {body}");
        assert!(body.contains("thread_not_found"), "{file}: {body}");
    }
    let (status, body) = answer(&app, "thread-delete.json").await;
    assert_eq!(status, 204, "deleting what is not there is done: {body}");
    let (status, body) = answer(&app, "usage.json").await;
    assert_eq!(status, 200, "{body}");
    let usage = json("usage.json", &body);
    assert_eq!(usage["days"], serde_json::json!([]), "{body}");
    assert_eq!(usage["totals"]["runs"], 0, "{body}");

    let (status, body) = answer(&app, "plain-chat.json").await;
    assert_eq!(status, 200, "{body}");

    let (status, body) = answer(&app, "threads-list.json").await;
    assert_eq!(status, 200, "{body}");
    let list = json("threads-list.json", &body);
    assert_eq!(list["next"], Value::Null, "{body}");
    let threads = list["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 1, "{body}");
    assert_eq!(threads[0]["threadId"], PLAIN_CHAT_THREAD);
    assert_eq!(
        threads[0]["title"], "hello",
        "derived from the first user message"
    );
    assert_eq!(threads[0]["messageCount"], 2, "{body}");
    assert_eq!(threads[0]["activeRunId"], Value::Null, "{body}");
    assert!(
        threads[0]["updatedAt"].as_str().unwrap().ends_with('Z'),
        "{body}"
    );

    let (status, body) = answer(&app, "usage.json").await;
    assert_eq!(status, 200, "{body}");
    let usage = json("usage.json", &body);
    assert_eq!(usage["totals"]["runs"], 1, "{body}");
    assert_eq!(usage["days"][0]["models"][0]["provider"], "demo", "{body}");

    let (status, body) = answer(&app, "thread-rename.json").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        json("thread-rename.json", &body),
        serde_json::json!({"threadId": PLAIN_CHAT_THREAD, "title": "Greetings"})
    );
    let (status, body) = answer(&app, "history-read.json").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(json("history-read.json", &body)["title"], "Greetings");

    let (status, body) = answer(&app, "thread-fork.json").await;
    assert_eq!(status, 201, "{body}");
    let fork = json("thread-fork.json", &body);
    assert_eq!(fork["parentThreadId"], PLAIN_CHAT_THREAD);
    assert_eq!(fork["messageId"], "msg-user-1");
    assert_eq!(
        fork["messageCount"], 1,
        "up to and including the user message"
    );
    assert_eq!(fork["title"], "Greetings");
    let fork_id = fork["threadId"].as_str().unwrap().to_owned();
    assert_ne!(fork_id, PLAIN_CHAT_THREAD);

    let (status, body) = answer(&app, "thread-delete.json").await;
    assert_eq!(status, 204, "{body}");
    assert!(body.is_empty(), "{body}");
    let (status, _) = answer(&app, "history-read.json").await;
    assert_eq!(status, 404, "the thread is gone");
    let (status, _) = answer(&app, "thread-delete.json").await;
    assert_eq!(status, 204, "idempotent");

    // The fork outlives its source; the usage record outlives the thread.
    let (status, body) = answer(&app, "threads-list.json").await;
    assert_eq!(status, 200, "{body}");
    let list = json("threads-list.json", &body);
    let ids: Vec<&str> = list["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|thread| thread["threadId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [fork_id.as_str()], "{body}");
    let (status, body) = answer(&app, "usage.json").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(json("usage.json", &body)["totals"]["runs"], 1, "{body}");
}

/// events/README.md's table names every event file, and only those.
#[test]
fn every_event_file_is_in_the_events_readme() {
    let readme = std::fs::read_to_string(repo_path("events/README.md")).unwrap();
    let listed: std::collections::BTreeSet<String> = readme
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split_once('`'))
        .map(|(file, _)| file.to_owned())
        .collect();
    let files: std::collections::BTreeSet<String> = std::fs::read_dir(repo_path("events"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".json"))
        .collect();
    assert_eq!(listed, files);
}

const V1_THREAD: &str = "550e8400-e29b-41d4-a716-446655440000";

/// The v1 agent API's routes as Function URL events, and the self-invocation that carries a detached
/// run on Lambda (`detached-run.json`): it starts only a run that was accepted, and only once.
#[tokio::test]
async fn v1_agent_events_get_their_documented_status_and_a_detached_run_runs_once() {
    use agui_lambda::testing::auth::Principal;
    use agui_lambda::testing::protocol::{RunId, ThreadId};
    use agui_lambda::testing::store::{MemoryStore, TaskRecord, TaskRecords, TaskState, Threads};
    let config = Config::from_map(&HashMap::from([(
        "MODEL_PROVIDER".to_owned(),
        "demo".to_owned(),
    )]))
    .unwrap();
    let store = Arc::new(MemoryStore::new());
    let app = Arc::new(
        agui_lambda::testing::startup::AppBuilder::new(&config)
            .model(
                agui_lambda::testing::startup::model_from_config(&config)
                    .await
                    .unwrap(),
            )
            .store(store.clone())
            .build()
            .await
            .unwrap(),
    );
    // What the servers do; under Lambda, detached runs then go by self-invocation instead.
    app.remember_self();

    for file in ["v1-agent-run-events.json", "v1-agent-history.json"] {
        let (status, body) = answer(&app, file).await;
        assert_eq!(status, 404, "{file}: nothing yet: {body}");
    }
    let (status, body) = answer(&app, "v1-agent-attachments.json").await;
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("attachments_disabled"), "{body}");

    let (status, body) = answer(&app, "v1-agent-run.json").await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(
        body,
        format!(
            r#"{{"taskId":"run-001","threadId":"{V1_THREAD}","runId":"run-001","created":true}}"#
        )
    );
    let (status, body) = answer(&app, "v1-agent-run-events.json").await;
    assert_eq!(status, 200, "{body}");
    let events = parse_sse(&body).unwrap();
    verify_run(&events).unwrap();
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
    let (status, body) = answer(&app, "v1-agent-history.json").await;
    assert_eq!(status, 200, "{body}");
    let history = json("v1-agent-history.json", &body);
    assert_eq!(history["scope"], "history_day");
    assert_eq!(history["messages"].as_array().unwrap().len(), 2, "{body}");

    // The self-invocation of a run nobody accepted runs nothing.
    let text = std::fs::read_to_string(repo_path("events/detached-run.json")).unwrap();
    let event: Value = serde_json::from_str(&text).unwrap();
    let deliver = || {
        let app = app.clone();
        let event = event.clone();
        async move {
            let response = agui_lambda::testing::api::answer_event(
                &app,
                lambda_runtime::LambdaEvent::new(event, lambda_runtime::Context::default()),
            )
            .await;
            let body = response.into_body().collect().await.unwrap().to_bytes();
            app.live_runs().idle().await;
            json("detached-run.json", std::str::from_utf8(&body).unwrap())
        }
    };
    assert_eq!(deliver().await["detachedRun"], "duplicate");
    let owner = Principal::new("anonymous");
    let thread = ThreadId::parse(V1_THREAD, 128).unwrap();
    let before = store
        .load(&owner, &thread)
        .await
        .unwrap()
        .unwrap()
        .messages
        .len();
    assert_eq!(before, 2);

    // Accepted (as the answering invocation records it), it runs once however often it comes.
    let run_id = RunId::parse("run-002", 128).unwrap();
    store
        .create_task(&TaskRecord {
            owner: owner.clone(),
            run_id: run_id.clone(),
            thread_id: thread.clone(),
            created_thread: false,
            accepted_at_ms: chrono::Utc::now().timestamp_millis(),
            state: TaskState::Accepted,
        })
        .await
        .unwrap();
    assert_eq!(deliver().await["detachedRun"], "started");
    assert_eq!(deliver().await["detachedRun"], "duplicate");
    let after = store.load(&owner, &thread).await.unwrap().unwrap();
    assert_eq!(after.messages.len(), 4, "one more exchange, not two");
    let task = store.task(&owner, &run_id).await.unwrap().unwrap();
    assert_eq!(task.state, TaskState::Started);
}

/// Without an exporter the function still names the invocation's trace: the X-Ray root Lambda
/// hands over, in the `x-trace-id` header, so a user can look the request up in X-Ray.
#[tokio::test]
async fn the_x_ray_trace_of_the_invocation_is_named_in_the_response() {
    let app = demo_app().await;
    let text = std::fs::read_to_string(repo_path("events/plain-chat.json")).unwrap();
    let event: Value = serde_json::from_str(&text).unwrap();
    let mut context = lambda_runtime::Context::default();
    context.xray_trace_id =
        Some("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1".into());
    let response = agui_lambda::testing::api::answer_event(
        &app,
        lambda_runtime::LambdaEvent::new(event.clone(), context),
    )
    .await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["x-trace-id"],
        "5759e988bd862e3fe1be46a994272793"
    );
    let _ = response.into_body().collect().await.unwrap();
    app.live_runs().idle().await;

    // No X-Ray header (tracing off for the function) and no exporter: no trace to name.
    let response = agui_lambda::testing::api::answer_event(
        &app,
        lambda_runtime::LambdaEvent::new(event, lambda_runtime::Context::default()),
    )
    .await;
    assert!(response.headers().get("x-trace-id").is_none());
    let _ = response.into_body().collect().await.unwrap();
    app.live_runs().idle().await;
}

/// A raw event file through the function's event entry point, as the Lambda runtime hands it.
async fn answer_raw(
    app: &agui_lambda::testing::api::App,
    event: Value,
) -> http::Response<impl http_body::Body<Data = bytes::Bytes, Error: std::fmt::Debug>> {
    app.live_runs().idle().await;
    agui_lambda::testing::api::answer_event(
        app,
        lambda_runtime::LambdaEvent::new(event, lambda_runtime::Context::default()),
    )
    .await
}

fn event_file(file: &str) -> Value {
    let text = std::fs::read_to_string(repo_path(&format!("events/{file}"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

const REST_THREAD: &str = "9b2e4c1a-6f3d-4e8b-a1c7-2d5f8e9a0b13";

/// API Gateway REST (1.0 proxy) events reach the same routes as Function URL events, whatever
/// the stage (`/prod/agent` is `/agent`), and the run streams: its events arrive frame by frame.
#[tokio::test]
async fn rest_proxy_events_reach_the_same_routes_and_stream() {
    let app = demo_app().await;
    let response = answer_raw(&app, event_file("rest-plain-chat.json")).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut body = std::pin::pin!(response.into_body());
    let (mut frames, mut text) = (0, String::new());
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.unwrap().into_data() {
            frames += 1;
            text.push_str(std::str::from_utf8(&data).unwrap());
        }
    }
    assert!(frames > 3, "one body of {frames} frames: not streamed");
    let events = parse_sse(&text).unwrap();
    verify_run(&events).unwrap();
    assert_eq!(events[0]["threadId"], REST_THREAD);
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");

    let (status, body) = answer(&app, "rest-history-read.json").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("hello through API Gateway"), "{body}");

    // A REST event with a body flagged base64 that is not: refused, not a panic.
    let mut broken = event_file("rest-plain-chat.json");
    broken["isBase64Encoded"] = Value::Bool(true);
    broken["body"] = Value::String("not base64!".into());
    let response = answer_raw(&app, broken).await;
    assert_eq!(response.status(), 400);
}

/// With `AUTH_MODE=iam` behind a REST method whose authorization is `AWS_IAM`, the caller API
/// Gateway verified (`requestContext.identity.userArn`) owns the thread, as behind an `AWS_IAM`
/// Function URL; an event without one is refused.
#[tokio::test]
async fn rest_events_carry_the_iam_caller() {
    let config = Config::from_map(&HashMap::from([
        ("MODEL_PROVIDER".to_owned(), "demo".to_owned()),
        ("AUTH_MODE".to_owned(), "iam".to_owned()),
    ]))
    .unwrap();
    let app = agui_lambda::testing::startup::AppBuilder::new(&config)
        .build()
        .await
        .unwrap();
    let (status, _) = answer(&app, "rest-plain-chat.json").await;
    assert_eq!(status, 401, "no caller");

    let alice = "arn:aws:iam::123456789012:user/alice";
    let signed = |file: &str, arn: &str| {
        let mut event = event_file(file);
        event["requestContext"]["identity"]["userArn"] = Value::String(arn.to_owned());
        event
    };
    let response = answer_raw(&app, signed("rest-plain-chat.json", alice)).await;
    assert_eq!(response.status(), 200);
    let _ = response.into_body().collect().await.unwrap();
    let response = answer_raw(&app, signed("rest-history-read.json", alice)).await;
    assert_eq!(response.status(), 200);
    let bob = "arn:aws:iam::123456789012:user/bob";
    let response = answer_raw(&app, signed("rest-history-read.json", bob)).await;
    assert_eq!(response.status(), 404, "another caller's thread");
}

/// The memory routes' events: refused while memory is off (the default), answered with it on.
#[tokio::test]
async fn memory_events_get_their_documented_status() {
    let app = demo_app().await;
    for file in [
        "memory-save.json",
        "memories-list.json",
        "memories-delete.json",
    ] {
        let (status, body) = answer(&app, file).await;
        assert_eq!(status, 404, "{file}: {body}");
        assert!(body.contains("memory_disabled"), "{file}: {body}");
    }
    let config = Config::from_map(&HashMap::from([
        ("MODEL_PROVIDER".to_owned(), "demo".to_owned()),
        ("MEMORY".to_owned(), "on".to_owned()),
    ]))
    .unwrap();
    let app = agui_lambda::testing::startup::AppBuilder::new(&config)
        .build()
        .await
        .unwrap();
    let (status, body) = answer(&app, "memory-save.json").await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(json("memory-save.json", &body)["pinned"], true, "{body}");
    let (status, body) = answer(&app, "memories-list.json").await;
    assert_eq!(status, 200, "{body}");
    let listed = json("memories-list.json", &body);
    assert_eq!(listed["memories"][0]["text"], "Sam is vegetarian", "{body}");
    assert_eq!(listed["next"], Value::Null, "{body}");
    let (status, body) = answer(&app, "memories-delete.json").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(json("memories-delete.json", &body)["deleted"], 1, "{body}");
}
