//! A2A agents as sub-agents, over HTTP: a coordinator profile whose sub-agent `peer_agent` is
//! the `a2a-sdk` peer (tests/python/a2a_peer.py) by its card URL, with its bearer token from
//! `A2A_AGENT_CREDENTIALS`. A streamed answer as the child's text; input required as an
//! interrupt, resumed on the same task and context; authorization given out of band, then
//! followed; failed and rejected as `SUBAGENT_ERROR`; a slow task cancelled with the parent; a
//! second delegation in the thread continuing the context. The peer records `A2A-Version: 1.0`
//! and the card's tenant on every call. aimock's A2A mock is a second peer (`wire_…`): streamed,
//! and polled with a data part as an activity snapshot.

use crate::a2a_client::{TOKEN, aimock_a2a, peer};
use crate::helpers::*;
use agui_lambda::testing::protocol::verify::{parse_sse, verify_run};
use agui_lambda::testing::store::MemoryStore;
use futures_util::StreamExt;
use serde_json::{Value, json};
use std::sync::Arc;

/// The coordinator, delegating to the peer's agent.
async fn coordinator(peer: &str) -> TestApp {
    let card = format!("{peer}/.well-known/agent-card.json");
    let profiles = json!({"coordinator": {"subagents": [{
        "name": "peer_agent",
        "description": "An agent of another company, over A2A.",
        "a2a": card,
        "timeoutMs": 30000
    }]}})
    .to_string();
    let credentials = json!({ card: {"bearer": TOKEN} }).to_string();
    spawn_app_on(
        &[
            ("AGENT_PROFILES", profiles.as_str()),
            ("AGENT_DEFAULT_PROFILE", "coordinator"),
            ("A2A_AGENT_CREDENTIALS", credentials.as_str()),
        ],
        Some(Arc::new(MemoryStore::new())),
    )
    .await
}

/// A 1.0 client's run with one user message (the same message, the same id: a resume resends it).
fn body(thread: &str, run: &str, text: &str) -> Value {
    let id = format!("{thread}-{:x}", text.bytes().map(u64::from).sum::<u64>());
    json!({
        "threadId": thread, "runId": run, "protocolVersion": "1.0",
        "messages": [{"id": id, "role": "user", "content": text}],
        "tools": [], "context": [], "state": {}, "forwardedProps": {},
    })
}

/// A run; its events, checked against the clients' rules.
async fn run(app: &TestApp, body: &Value) -> Vec<Value> {
    let reply = app.run(body).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let events = parse_sse(&reply.body).unwrap();
    verify_run(&events).unwrap_or_else(|err| panic!("{err}\n{}", reply.body));
    events
}

/// The child's text, from its tagged `TEXT_MESSAGE_CONTENT` events.
fn child_text(events: &[Value]) -> String {
    of_type(events, "TEXT_MESSAGE_CONTENT")
        .into_iter()
        .filter(|event| event.get("subagentRunId").is_some())
        .map(|event| event["delta"].as_str().unwrap())
        .collect()
}

/// The parent's own text (untagged).
fn parent_text(events: &[Value]) -> String {
    of_type(events, "TEXT_MESSAGE_CONTENT")
        .into_iter()
        .filter(|event| event.get("subagentRunId").is_none())
        .map(|event| event["delta"].as_str().unwrap())
        .collect()
}

/// The delegation's link, from the result of the parent's call `call_id` in the stored thread.
async fn link(app: &TestApp, thread: &str, call_id: &str) -> Value {
    let page = app.get(&format!("/threads/{thread}")).await.json();
    page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|message| message["role"] == "tool" && message["toolCallId"] == call_id)
        .unwrap_or_else(|| panic!("no result of {call_id}: {page}"))["metadata"]["agui-lambda"]
        ["subagent"]
        .clone()
}

/// The peer's recorded calls about `task_id` (`""`: new tasks), each checked for A2A 1.0 and
/// the tenant; the card's reads are not A2A calls.
async fn calls_about(base: &str, task_id: &str) -> Vec<Value> {
    let calls: Vec<Value> = reqwest::get(format!("{base}/__calls"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let about: Vec<Value> = calls
        .into_iter()
        .filter(|call| !call["rpc"].is_null())
        .filter(|call| call["taskId"].as_str().unwrap_or_default() == task_id)
        .collect();
    for call in &about {
        assert_eq!(call["version"], "1.0", "{call}");
        assert_eq!(call["tenant"], "acme", "{call}");
    }
    about
}

#[tokio::test]
async fn an_a2a_agent_streams_its_answer_as_the_child_s_text_and_keeps_its_context() {
    let base = peer().await;
    let app = coordinator(base).await;
    let thread = new_thread();
    let events = run(&app, &body(&thread, "r1", "[a2a-child] streamed answer")).await;
    let started = of_type(&events, "SUBAGENT_STARTED");
    assert_eq!(started.len(), 1, "{events:#?}");
    assert_eq!(started[0]["name"], "peer_agent");
    assert_eq!(child_text(&events), "Hello from the peer.");
    // One message, closed once (lastChunk), tagged with the child's run.
    assert_eq!(
        of_type(&events, "TEXT_MESSAGE_END")
            .iter()
            .filter(|event| event.get("subagentRunId").is_some())
            .count(),
        1
    );
    let finished = of_type(&events, "SUBAGENT_FINISHED");
    assert_eq!(finished.len(), 1, "{events:#?}");
    let result = of_type(&events, "TOOL_CALL_RESULT")[0];
    assert_eq!(result["content"], "Hello from the peer.");
    assert_eq!(parent_text(&events), "Coordinator: the peer answered.");
    let first = link(&app, &thread, "call_a2a_streamed").await;
    assert_eq!(first["kind"], "a2a");
    assert_eq!(first["outcome"], "finished");
    let context = first["contextId"].as_str().unwrap().to_owned();
    assert_eq!(first["threadId"], context.as_str());
    assert!(first["taskId"].is_string());

    // A second delegation in the same thread continues the same context, in a new task.
    let events = run(&app, &body(&thread, "r2", "[a2a-child] follows up")).await;
    assert_eq!(child_text(&events), "You said: echo the follow-up");
    let second = link(&app, &thread, "call_a2a_follows").await;
    assert_eq!(second["contextId"], context.as_str());
    assert_ne!(second["taskId"], first["taskId"]);
    let calls = calls_about(base, "").await;
    assert!(
        calls
            .iter()
            .any(|call| call["contextId"] == context.as_str()
                && call["rpc"] == "SendStreamingMessage"),
        "the follow-up names the context: {calls:#?}"
    );
}

#[tokio::test]
async fn input_required_is_an_interrupt_whose_answer_resumes_the_same_task() {
    let base = peer().await;
    let app = coordinator(base).await;
    let thread = new_thread();
    let first = run(&app, &body(&thread, "r1", "[a2a-child] needs a city")).await;
    let end = first.last().unwrap();
    assert_eq!(end["outcome"]["type"], "interrupt", "{end}");
    let interrupt = &end["outcome"]["interrupts"][0];
    assert_eq!(interrupt["reason"], "input_required");
    assert_eq!(interrupt["message"], "Which city?");
    assert_eq!(interrupt["responseSchema"]["type"], "object");
    let a2a = &interrupt["metadata"]["agui-lambda"]["a2a"];
    let (task, context) = (a2a["taskId"].clone(), a2a["contextId"].clone());
    assert_eq!(a2a["state"], "TASK_STATE_INPUT_REQUIRED");
    let suspended = of_type(&first, "SUBAGENT_FINISHED");
    assert_eq!(
        suspended[0]["outcome"]["type"], "suspended",
        "{suspended:?}"
    );
    assert_eq!(suspended[0]["outcome"]["interruptIds"][0], interrupt["id"]);

    let mut resume = body(&thread, "r2", "[a2a-child] needs a city");
    resume["resume"] =
        json!([{"interruptId": interrupt["id"], "status": "resolved", "payload": "Lyon"}]);
    let second = run(&app, &resume).await;
    assert_eq!(child_text(&second), "Booked for Lyon.");
    assert_eq!(parent_text(&second), "Coordinator: the booking is made.");
    assert!(
        second
            .last()
            .unwrap()
            .get("outcome")
            .is_none_or(|o| o["type"] == "success")
    );
    // The answer went to the same task, in the same context.
    let calls = calls_about(base, task.as_str().unwrap()).await;
    assert!(
        calls
            .iter()
            .any(|call| call["contextId"] == context && call["rpc"] == "SendStreamingMessage"),
        "{calls:#?}"
    );
    let kept = link(&app, &thread, "call_a2a_needs").await;
    assert_eq!(kept["taskId"], task);
    assert_eq!(kept["outcome"], "finished");
}

#[tokio::test]
async fn authorization_given_out_of_band_is_followed_on_the_same_task() {
    let base = peer().await;
    let app = coordinator(base).await;
    let thread = new_thread();
    let first = run(&app, &body(&thread, "r1", "[a2a-child] needs sign-in")).await;
    let interrupt = first.last().unwrap()["outcome"]["interrupts"][0].clone();
    assert_eq!(interrupt["reason"], "auth_required", "{interrupt}");
    assert_eq!(interrupt["message"], "Sign in to the calendar, please.");
    let task = interrupt["metadata"]["agui-lambda"]["a2a"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    // The user signs in with the agent's provider, then says so.
    reqwest::Client::new()
        .post(format!("{base}/__authorize/{task}"))
        .send()
        .await
        .unwrap();
    let mut resume = body(&thread, "r2", "[a2a-child] needs sign-in");
    resume["resume"] = json!([{"interruptId": interrupt["id"], "status": "resolved"}]);
    let second = run(&app, &resume).await;
    assert_eq!(child_text(&second), "Signed in: your calendar is free.");
    assert_eq!(parent_text(&second), "Coordinator: the calendar is read.");
    // Followed (subscribed, or read when it had ended), never sent a second message.
    let calls = calls_about(base, &task).await;
    assert!(
        calls
            .iter()
            .any(|call| matches!(call["rpc"].as_str(), Some("SubscribeToTask" | "GetTask"))),
        "{calls:#?}"
    );
}

#[tokio::test]
async fn failed_and_rejected_tasks_are_sub_agent_errors_with_codes() {
    let base = peer().await;
    let app = coordinator(base).await;
    for (text, code, answer) in [
        (
            "[a2a-child] breaks",
            "PEER_BROKE",
            "Coordinator: the peer failed, so I answer myself.",
        ),
        (
            "[a2a-child] refuses",
            "A2A_TASK_REJECTED",
            "Coordinator: the peer refused.",
        ),
    ] {
        let events = run(&app, &body(&new_thread(), "r1", text)).await;
        let errors = of_type(&events, "SUBAGENT_ERROR");
        assert_eq!(errors.len(), 1, "{events:#?}");
        assert_eq!(errors[0]["code"], code);
        // The parent goes on: the failure is its call's result.
        assert_eq!(parent_text(&events), answer);
    }
}

#[tokio::test]
async fn cancelling_the_parent_cancels_the_remote_task() {
    let base = peer().await;
    let app = coordinator(base).await;
    let thread = new_thread();
    let response = app
        .http
        .post(app.url("/agent"))
        .json(&body(&thread, "r1", "[a2a-child] ticks slowly"))
        .send()
        .await
        .unwrap();
    let mut frames = response.bytes_stream();
    let mut text = String::new();
    while !text.contains("tick 1.") {
        let chunk = frames.next().await.expect("the stream goes on").unwrap();
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    let cancel = app
        .http
        .post(app.url(&format!("/threads/{thread}/runs/r1/cancel")))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(cancel.status(), 202);
    while let Some(chunk) = frames.next().await {
        text.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
    }
    let events = parse_sse(&text).unwrap();
    verify_run(&events).unwrap_or_else(|err| panic!("{err}: {events:#?}"));
    assert_eq!(of_type(&events, "SUBAGENT_ERROR")[0]["code"], "CANCELLED");
    assert_eq!(events.last().unwrap()["outcome"]["type"], "cancelled");
    // The peer was asked to cancel the task (the link names it).
    let task = link(&app, &thread, "call_a2a_ticks").await["taskId"].clone();
    let calls = calls_about(base, task.as_str().unwrap()).await;
    assert!(
        calls.iter().any(|call| call["rpc"] == "CancelTask"),
        "no CancelTask: {calls:#?}"
    );
}

#[tokio::test]
async fn wire_aimocks_a2a_mock_streamed_and_polled_as_sub_agents() {
    let (_streaming, streamed) = aimock_a2a("tests/fixtures/aimock-a2a.json").await;
    let (_polled, polled) = aimock_a2a("tests/fixtures/aimock-a2a-polled.json").await;
    let profiles = json!({"coordinator": {"subagents": [
        {"name": "mock_research", "a2a": streamed, "description": "Streams."},
        {"name": "mock_summary", "a2a": polled, "description": "Answers whole."}
    ]}})
    .to_string();
    let app = spawn_app_on(
        &[
            ("AGENT_PROFILES", profiles.as_str()),
            ("AGENT_DEFAULT_PROFILE", "coordinator"),
        ],
        Some(Arc::new(MemoryStore::new())),
    )
    .await;
    let events = run(&app, &body(&new_thread(), "r1", "[a2a-child] asks aimock")).await;
    let started = of_type(&events, "SUBAGENT_STARTED");
    assert_eq!(started.len(), 2, "{events:#?}");
    let by_name = |name: &str| {
        started.iter().find(|event| event["name"] == name).unwrap()["subagentRunId"].clone()
    };
    let text_by = |run: &Value| -> String {
        of_type(&events, "TEXT_MESSAGE_CONTENT")
            .into_iter()
            .filter(|event| &event["subagentRunId"] == run)
            .map(|event| event["delta"].as_str().unwrap())
            .collect()
    };
    // Streamed (SendStreamingMessage) and polled (SendMessage, then GetTask).
    assert_eq!(text_by(&by_name("mock_research")), "Found three papers.");
    let summary = by_name("mock_summary");
    assert_eq!(text_by(&summary), "A short summary.");
    let activity = of_type(&events, "ACTIVITY_SNAPSHOT")
        .into_iter()
        .find(|event| event["subagentRunId"] == summary)
        .unwrap_or_else(|| panic!("no data part: {events:#?}"));
    assert_eq!(activity["activityType"], "a2a-data");
    assert_eq!(activity["content"]["words"], 3);
    assert_eq!(of_type(&events, "SUBAGENT_FINISHED").len(), 2);
    assert_eq!(
        parent_text(&events),
        "Coordinator: both mock agents answered."
    );
}

#[tokio::test]
async fn a_question_nobody_answers_cancels_the_remote_task() {
    let base = peer().await;
    let app = coordinator(base).await;
    // A 0.0.x client cannot answer an interrupt: the task is cancelled, the call an error.
    let thread = new_thread();
    let mut old = body(&thread, "r1", "[a2a-child] needs a city");
    old.as_object_mut().unwrap().remove("protocolVersion");
    let events = run(&app, &old).await;
    assert!(events.last().unwrap().get("outcome").is_none());
    let result = of_type(&events, "TOOL_CALL_RESULT")
        .into_iter()
        .find(|event| event["toolCallId"] == "call_a2a_needs")
        .unwrap_or_else(|| panic!("{events:#?}"));
    let content = result["content"].as_str().unwrap();
    assert!(
        content.contains("(A2A_INPUT_REQUIRED)") && content.contains("Which city?"),
        "{content}"
    );
    let task = link(&app, &thread, "call_a2a_needs").await["taskId"].clone();
    let calls = calls_about(base, task.as_str().unwrap()).await;
    assert!(
        calls.iter().any(|call| call["rpc"] == "CancelTask"),
        "{calls:#?}"
    );

    // A 1.0 client that declines the question: the task is cancelled, the child fails.
    let thread = new_thread();
    let first = run(&app, &body(&thread, "r1", "[a2a-child] needs a city")).await;
    let interrupt = first.last().unwrap()["outcome"]["interrupts"][0].clone();
    let mut resume = body(&thread, "r2", "[a2a-child] needs a city");
    resume["resume"] = json!([{"interruptId": interrupt["id"], "status": "cancelled"}]);
    let second = run(&app, &resume).await;
    assert_eq!(
        of_type(&second, "SUBAGENT_ERROR")[0]["code"],
        "A2A_TASK_CANCELED"
    );
    let task = interrupt["metadata"]["agui-lambda"]["a2a"]["taskId"]
        .as_str()
        .unwrap();
    let calls = calls_about(base, task).await;
    assert!(
        calls.iter().any(|call| call["rpc"] == "CancelTask"),
        "{calls:#?}"
    );
}
