//! Runs over HTTP against a real DynamoDB (Local): concurrency, long threads, faults, restarts.

use agui_lambda::testing::auth::Principal;
use agui_lambda::testing::protocol::{Message, MessageId, RunId, ThreadId, UserContent};
use agui_lambda::testing::store::{
    DynamoStore, RunFinish, RunLeases, RunStart, ThreadStore, Threads,
};
use aws_sdk_dynamodb::types::AttributeValue;
use futures_util::StreamExt;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

use crate::dynamo_local;
use crate::helpers::*;

async fn dynamo_app() -> (TestApp, aws_sdk_dynamodb::Client, String) {
    let (client, table) = dynamo_local::new_table().await;
    let store: Arc<dyn ThreadStore> = Arc::new(DynamoStore::new(client.clone(), table.clone(), 0));
    (spawn_app_on(&[], Some(store)).await, client, table)
}

fn user_message(id: &str, text: &str) -> Value {
    json!({"id": id, "role": "user", "content": text})
}

async fn stored_ids(app: &TestApp, thread: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut cursor = String::new();
    loop {
        let page = app
            .get(&format!("/threads/{thread}?limit=500{cursor}"))
            .await
            .json();
        ids.extend(
            page["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["id"].as_str().unwrap().to_owned()),
        );
        match page["next"].as_str() {
            Some(next) => cursor = format!("&after={next}"),
            None => return ids,
        }
    }
}

#[tokio::test]
async fn parallel_runs_on_one_thread_admit_exactly_one() {
    let (app, _, _) = dynamo_app().await;
    let thread = new_thread();
    let runs = (0..6).map(|i| {
        let mut body = run_input(
            &thread,
            &format!("r{i}"),
            json!([user_message(&format!("u{i}"), "stream slowly")]),
        );
        body["forwardedProps"] = json!({"busy_thread_policy": "reject"});
        let app = &app;
        async move { app.run(&body).await }
    });
    let replies = futures_util::future::join_all(runs).await;
    let statuses: Vec<u16> = replies.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        5,
        "{statuses:?}"
    );
    let winner = replies.iter().position(|r| r.status == 200).unwrap();
    assert_eq!(
        replies[winner].events().last().unwrap()["type"],
        "RUN_FINISHED"
    );
    let ids = stored_ids(&app, &thread).await;
    assert_eq!(
        ids.len(),
        2,
        "the winner's user message and answer only: {ids:?}"
    );
    assert_eq!(ids[0], format!("u{winner}"));
}

#[tokio::test]
async fn parallel_runs_on_separate_threads_all_succeed_and_store_each_message_once() {
    let (app, _, _) = dynamo_app().await;
    let threads: Vec<String> = (0..6).map(|_| new_thread()).collect();
    let runs = threads.iter().map(|thread| {
        let body = run_input(thread, "r", json!([user_message("u1", "hello")]));
        let app = &app;
        async move { app.run(&body).await }
    });
    for reply in futures_util::future::join_all(runs).await {
        assert_eq!(reply.events().last().unwrap()["type"], "RUN_FINISHED");
    }
    for thread in &threads {
        let ids = stored_ids(&app, thread).await;
        assert_eq!(ids.len(), 2);
        assert_eq!(ids[0], "u1");
    }
}

#[tokio::test]
async fn a_thousand_message_thread_over_two_megabytes_loads_and_continues() {
    let (app, client, table) = dynamo_app().await;
    let store = DynamoStore::new(client, table, 0);
    let thread = ThreadId::new_uuid();
    let owner = Principal::anonymous();
    let filler = "x".repeat(2_100);
    let history: Vec<Message> = (0..1000)
        .map(|i| Message::User {
            id: MessageId::parse(format!("old{i}"), 128).unwrap(),
            content: UserContent::Text(format!("{i} {filler}")),
            name: None,
        })
        .collect();
    let lease = store
        .begin_run(RunStart {
            owner: &owner,
            thread_id: &thread,
            run_id: &RunId::parse("seed", 128).unwrap(),
            loaded: None,
            lease_expires_at_ms: chrono::Utc::now().timestamp_millis() + 60_000,
            new_messages: &history,
            state: None,
            title: None,
            at_ms: chrono::Utc::now().timestamp_millis(),
            copied_at_ms: &[],
        })
        .await
        .unwrap();
    store
        .finish_run(RunFinish {
            lease: &lease,
            new_messages: &[],
            state: None,
            interrupts: None,
            at_ms: chrono::Utc::now().timestamp_millis(),
            context: None,
        })
        .await
        .unwrap();
    let loaded = store.load(&owner, &thread).await.unwrap().unwrap();
    assert_eq!(loaded.messages.len(), 1000);
    assert!(serde_json::to_string(&loaded.messages).unwrap().len() > 2_000_000);

    // A client that holds the thread up to its second-last message: behind, it gets all of it.
    let held = json!({"id": "old998", "role": "user", "content": format!("998 {filler}")});
    let events = app
        .run(&run_input(
            thread.as_str(),
            "next",
            json!([held, user_message("new", "hello")]),
        ))
        .await
        .events();
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
    assert_eq!(text_of(&events), "Hello! How can I help you today?");
    let snapshot = events
        .iter()
        .find(|e| e["type"] == "MESSAGES_SNAPSHOT")
        .unwrap();
    assert_eq!(snapshot["messages"].as_array().unwrap().len(), 1001);
    let ids = stored_ids(&app, thread.as_str()).await;
    assert_eq!(ids.len(), 1002);
    assert_eq!(
        (ids[0].as_str(), ids[999].as_str(), ids[1000].as_str()),
        ("old0", "old999", "new")
    );
}

#[tokio::test]
async fn an_unreachable_store_answers_503_before_streaming() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let client = dynamo_local::client(&format!("http://127.0.0.1:{closed}"));
    let store: Arc<dyn ThreadStore> = Arc::new(DynamoStore::new(client, "threads", 0));
    let app = spawn_app_on(&[], Some(store)).await;
    let reply = app
        .run(&run_input(
            &new_thread(),
            "r",
            json!([user_message("u1", "hello")]),
        ))
        .await;
    assert_eq!(reply.status, 503, "{}", reply.body);
    assert_eq!(reply.json()["error"]["code"], "store_unavailable");
    assert!(
        !reply.body.contains("127.0.0.1"),
        "no internal detail in the body: {}",
        reply.body
    );
    assert_eq!(
        app.get(&format!("/threads/{}", new_thread())).await.status,
        503
    );
    assert_eq!(app.model_requests().await, 0);
}

#[tokio::test]
async fn losing_the_lease_mid_run_is_a_run_error_that_keeps_the_users_message() {
    let (app, client, table) = dynamo_app().await;
    let thread = new_thread();
    let body = run_input(&thread, "r1", json!([user_message("u1", "stream slowly")]));
    let run = app.run(&body);
    let thief = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        client
            .update_item()
            .table_name(&table)
            .key("pk", AttributeValue::S(format!("THREAD#{thread}")))
            .key("sk", AttributeValue::S("META".into()))
            .update_expression("SET leaseRun = :thief, version = version + :one")
            .expression_attribute_values(":thief", AttributeValue::S("thief".into()))
            .expression_attribute_values(":one", AttributeValue::N("1".into()))
            .send()
            .await
            .unwrap();
    };
    let (reply, ()) = tokio::join!(run, thief);
    let last = reply.events().last().unwrap().clone();
    assert_eq!(last["type"], "RUN_ERROR");
    assert_eq!(last["code"], "CONFLICT");
    assert_eq!(
        stored_ids(&app, &thread).await,
        ["u1"],
        "the input survives; the lost run wrote nothing half-way"
    );
}

#[tokio::test]
async fn a_thread_written_by_one_process_is_continued_by_another() {
    let (client, table) = dynamo_local::new_table().await;
    let first = spawn_app_on(
        &[],
        Some(Arc::new(DynamoStore::new(client.clone(), table.clone(), 0))),
    )
    .await;
    let thread = new_thread();
    let run1 = first
        .run(&run_input(
            &thread,
            "r1",
            json!([user_message("u1", "hello")]),
        ))
        .await
        .events();
    drop(first);
    let second = spawn_app_on(&[], Some(Arc::new(DynamoStore::new(client, table, 0)))).await;
    let mut assistant = json!({"id": run1.iter().find(|e| e["type"] == "TEXT_MESSAGE_START").unwrap()["messageId"], "role": "assistant", "content": text_of(&run1)});
    assistant["content"] = json!(text_of(&run1));
    let events = second
        .run(&run_input(
            &thread,
            "r2",
            json!([
                user_message("u1", "hello"),
                assistant,
                user_message("u2", "hello again")
            ]),
        ))
        .await
        .events();
    assert!(
        !types(&events).contains(&"MESSAGES_SNAPSHOT"),
        "the full history matched the store"
    );
    let sent = second.fixture_requests_about("hello again");
    assert_eq!(sent[0].messages.len(), 3, "u1 + answer + u2");
    assert_eq!(stored_ids(&second, &thread).await.len(), 4);
}

/// The real binary, killed with SIGKILL in the middle of a run and started again: the thread
/// stays consistent and the next run continues it once the dead run's heartbeat lease
/// (`RUN_LEASE_SECS=3`) has expired, not the run's deadline.
#[tokio::test]
async fn a_process_killed_mid_run_leaves_a_thread_the_next_process_continues() {
    let endpoint = dynamo_local::endpoint().await;
    let (_, table) = dynamo_local::new_table().await;
    // The demo model (no model configured): the test needs no Node.
    let start = |port: u16| {
        tokio::process::Command::new(env!("CARGO_BIN_EXE_agui-lambda"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("PORT", port.to_string())
            .env("THREADS_TABLE", &table)
            .env("AWS_ENDPOINT_URL_DYNAMODB", endpoint)
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("RUN_LEASE_SECS", "3")
            .env("RUST_LOG", "warn")
            .kill_on_drop(true)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let free_port = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    };
    let http = reqwest::Client::new();
    let thread = new_thread();

    let port = free_port();
    let mut process = start(port);
    let url = format!("http://127.0.0.1:{port}/agent");
    // The demo repeats the message a word per 30 ms: about 6 s, cut after its first word.
    let long = "stream slowly ".repeat(100);
    let body = run_input(&thread, "r1", json!([user_message("u1", long.trim())]));
    let response = loop {
        match http.post(&url).json(&body).send().await {
            Ok(response) => break response,
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    };
    assert_eq!(response.status(), 200);
    let mut stream = response.bytes_stream();
    let mut seen = String::new();
    while !seen.contains("TEXT_MESSAGE_CONTENT") {
        seen.push_str(&String::from_utf8_lossy(
            &stream.next().await.unwrap().unwrap(),
        ));
    }
    process.start_kill().unwrap();
    process.wait().await.unwrap();
    let killed = tokio::time::Instant::now();

    let port = free_port();
    let _restarted = start(port);
    let url = format!("http://127.0.0.1:{port}/agent");
    let next = run_input(&thread, "r2", json!([user_message("u2", "hello")]));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut next = next;
    next["forwardedProps"] = json!({"busy_thread_policy": "reject"});
    let reply = loop {
        if let Ok(response) = http.post(&url).json(&next).send().await {
            let status = response.status().as_u16();
            let text = response.text().await.unwrap();
            if status == 200 {
                break text;
            }
            assert_eq!(
                status, 409,
                "only the dead run's lease may hold the thread: {text}"
            );
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the dead run's lease never expired"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let freed_after = killed.elapsed();
    assert!(
        freed_after < Duration::from_secs(6),
        "a 3 s lease freed the thread only {freed_after:?} after the kill"
    );
    let events = agui_lambda::testing::protocol::verify::parse_sse(&reply).unwrap();
    agui_lambda::testing::protocol::verify::verify_run(&events).unwrap();
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
    let roles = stored_roles(&http, &format!("http://127.0.0.1:{port}/threads/{thread}")).await;
    assert_eq!(
        roles,
        ["u1:user", "u2:user", "assistant"],
        "the killed run's input is kept and its half-streamed answer is not; then the new answer"
    );
}

/// `id:role` of each message at a `GET /threads/{id}` URL (the role alone for an assistant's).
async fn stored_roles(http: &reqwest::Client, url: &str) -> Vec<String> {
    let page: Value = http.get(url).send().await.unwrap().json().await.unwrap();
    page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| match m["role"].as_str().unwrap() {
            "assistant" => "assistant".to_owned(),
            role => format!("{}:{role}", m["id"].as_str().unwrap()),
        })
        .collect()
}
