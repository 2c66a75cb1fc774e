//! CopilotKit's agent routes over the real handler: `/run` streams an AG-UI run, `/connect`
//! replays a thread as one verifiable run (or joins the run in progress), `/stop` ends a run
//! with `RUN_FINISHED` and keeps its partial answer, and the next run is admitted at once.

use super::helpers::*;
use agui_lambda::testing::protocol::verify::{parse_sse, verify_run};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(crate) const SAGA: &str = "[copilotkit] recite the long saga";
pub(crate) const POEM: &str = "[copilotkit] write a short poem";

/// A `RunAgentInput` as CopilotKit's client sends it: the whole history, no tools.
pub(crate) fn input(thread: &str, run: &str, messages: Value) -> Value {
    json!({"threadId": thread, "runId": run, "state": {}, "messages": messages, "tools": [],
           "context": [], "forwardedProps": {}})
}

pub(crate) fn user(id: &str, text: &str) -> Value {
    json!({"id": id, "role": "user", "content": text})
}

pub(crate) async fn post(app: &TestApp, path: &str, body: &Value) -> Reply {
    app.post_raw(path, "application/json", body.to_string())
        .await
}

/// The events of a stream, checked as one well-formed run.
pub(crate) fn run_events(reply: &Reply) -> Vec<Value> {
    reply.events()
}

/// A stream being read in the background: what arrived so far, and the whole once it ends.
pub(crate) struct Streaming {
    pub seen: Arc<Mutex<String>>,
    pub done: tokio::task::JoinHandle<(u16, String)>,
}

/// A long answer under way on `thread` through CopilotKit's run route: its first words arrived.
async fn saga_under_way(app: &TestApp, thread: &str) -> Streaming {
    let running = stream(
        app,
        "/copilotkit/agent/default/run",
        &input(thread, "saga-run", json!([user("u1", SAGA)])),
    );
    running.until_text(40).await;
    running
}

pub(crate) fn stream(app: &TestApp, path: &str, body: &Value) -> Streaming {
    let request = app
        .http
        .post(app.url(path))
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(body.to_string());
    let seen = Arc::new(Mutex::new(String::new()));
    let sink = seen.clone();
    let done = tokio::spawn(async move {
        use futures_util::StreamExt;
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let mut body = response.bytes_stream();
        while let Some(chunk) = body.next().await {
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        }
        let text = sink.lock().unwrap().clone();
        (status, text)
    });
    Streaming { seen, done }
}

impl Streaming {
    /// Waits until the stream has carried at least `chars` characters of answer text.
    pub(crate) async fn until_text(&self, chars: usize) {
        for _ in 0..400 {
            let text = self.seen.lock().unwrap().clone();
            let events = parse_sse(&text).unwrap_or_default();
            if text_of(&events).len() >= chars {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("the answer did not stream: {}", self.seen.lock().unwrap());
    }
}

async fn stored(app: &TestApp, thread: &str) -> Value {
    let reply = app.get(&format!("/threads/{thread}")).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.json()
}

#[tokio::test]
async fn a_run_streams_and_connect_replays_it_as_one_run() {
    let app = spawn_app().await;
    let thread = new_thread();
    let reply = post(
        &app,
        "/copilotkit/agent/default/run",
        &input(&thread, "r1", json!([user("u1", POEM)])),
    )
    .await;
    let events = run_events(&reply);
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
    let answer = text_of(&events);
    assert!(answer.starts_with("Here is a short poem"), "{answer}");

    // The client connects with no messages and the runId it made up.
    let replay = post(
        &app,
        "/copilotkit/agent/default/connect",
        &input(&thread, "connect-1", json!([])),
    )
    .await;
    let events = run_events(&replay);
    assert_eq!(
        types(&events),
        [
            "RUN_STARTED",
            "MESSAGES_SNAPSHOT",
            "STATE_SNAPSHOT",
            "RUN_FINISHED"
        ]
    );
    assert_eq!(events[0]["runId"], "connect-1");
    assert_eq!(events[3]["runId"], "connect-1");
    let messages = events[1]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0], user("u1", POEM));
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["content"], answer);
    assert_eq!(events[2]["snapshot"], json!({}));
    assert_eq!(
        messages,
        stored(&app, &thread).await["messages"].as_array().unwrap(),
        "the replay is the stored thread"
    );
    // Idempotent: the React provider connects twice on mount.
    let again = post(
        &app,
        "/copilotkit/agent/default/connect",
        &input(&thread, "connect-2", json!([])),
    )
    .await;
    assert_eq!(run_events(&again)[1]["messages"], events[1]["messages"]);
    assert_eq!(
        app.model_requests().await,
        1,
        "a replay never calls the model"
    );
}

#[tokio::test]
async fn connect_to_a_thread_there_is_none_of_is_an_empty_stream() {
    let app = spawn_app().await;
    for thread in [new_thread(), "not a valid id".to_owned()] {
        let reply = post(
            &app,
            "/copilotkit/agent/default/connect",
            &input(&thread, "c1", json!([])),
        )
        .await;
        if thread.contains(' ') {
            assert_eq!(reply.status, 422, "{}", reply.body);
            continue;
        }
        assert_eq!(reply.status, 200, "{}", reply.body);
        assert_eq!(reply.content_type, "text/event-stream");
        assert_eq!(reply.body, "");
    }
}

#[tokio::test]
async fn a_long_thread_is_replayed_whole_in_one_snapshot() {
    let app = spawn_app().await;
    let thread = new_thread();
    // 140 messages: more than the replay's first page.
    let mut history = Vec::new();
    for turn in 0..70 {
        history.push(user(&format!("u{turn}"), &format!("turn {turn}")));
        history.push(json!({"id": format!("a{turn}"), "role": "assistant", "content": format!("reply {turn}")}));
    }
    history.push(user("last", POEM));
    let reply = post(
        &app,
        "/copilotkit/agent/default/run",
        &input(&thread, "r1", json!(history)),
    )
    .await;
    run_events(&reply);
    let replay = post(
        &app,
        "/copilotkit/agent/default/connect",
        &input(&thread, "c", json!([])),
    )
    .await;
    let events = run_events(&replay);
    let ids: Vec<&str> = events[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 142);
    assert_eq!(&ids[..3], ["u0", "a0", "u1"]);
    assert_eq!(ids[140], "last");
}

#[tokio::test]
async fn connect_joins_a_run_in_progress_history_then_live_tail() {
    let app = spawn_app().await;
    let thread = new_thread();
    let first = saga_under_way(&app, &thread).await;

    let joined = post(
        &app,
        "/copilotkit/agent/default/connect",
        &input(&thread, "connect-1", json!([])),
    )
    .await;
    let events = run_events(&joined);
    assert_eq!(
        &types(&events)[..3],
        ["RUN_STARTED", "MESSAGES_SNAPSHOT", "STATE_SNAPSHOT"]
    );
    assert_eq!(
        events[0]["runId"], "saga-run",
        "the replay is the run it joined"
    );
    assert_eq!(
        events[1]["messages"],
        json!([user("u1", SAGA)]),
        "the history: the run's input, stored when it began"
    );
    let last = events.last().unwrap();
    assert_eq!(last["type"], "RUN_FINISHED");
    assert_eq!(last["runId"], "saga-run");
    let (status, original) = first.done.await.unwrap();
    assert_eq!(status, 200);
    let original = parse_sse(&original).unwrap();
    assert_eq!(
        text_of(&events),
        text_of(&original),
        "the joined client sees the whole answer, from its first word"
    );
    assert!(
        text_of(&events).ends_with("The end of the long saga."),
        "{}",
        text_of(&events)
    );
    assert_eq!(app.model_requests().await, 1);
}

#[tokio::test]
async fn stop_ends_the_run_with_run_finished_and_keeps_the_partial_answer() {
    let app = spawn_app().await;
    let thread = new_thread();
    let running = saga_under_way(&app, &thread).await;
    let asked = Instant::now();
    let stopped = post(
        &app,
        &format!("/copilotkit/agent/default/stop/{thread}"),
        &json!({"runId": "saga-run"}),
    )
    .await;
    assert_eq!(stopped.status, 200, "{}", stopped.body);
    assert_eq!(stopped.json()["stopped"], true);

    let (status, body) = tokio::time::timeout(Duration::from_secs(5), running.done)
        .await
        .expect("the stream ends within 5 s of the stop")
        .unwrap();
    let took = asked.elapsed();
    assert_eq!(status, 200);
    let events = parse_sse(&body).unwrap();
    verify_run(&events).unwrap();
    let last = events.last().unwrap();
    assert_eq!(
        last["type"], "RUN_FINISHED",
        "a client that declares no version gets a finished run, not RUN_ERROR: {last}"
    );
    assert!(
        last.get("outcome").is_none(),
        "0.0.x clients take no outcome"
    );
    assert!(
        took < Duration::from_secs(2),
        "the stream ended {took:?} after the stop"
    );
    let partial = text_of(&events);
    assert!(partial.len() < 978, "the answer was cut short");

    // The thread keeps what was said, in its place, and is free again.
    let thread_now = stored(&app, &thread).await;
    assert_eq!(thread_now["activeRunId"], Value::Null);
    let messages = thread_now["messages"].as_array().unwrap();
    assert_eq!(messages[0], user("u1", SAGA));
    assert_eq!(messages[1]["content"], partial);
    let next = post(
        &app,
        "/copilotkit/agent/default/run",
        &input(
            &thread,
            "after-stop",
            json!([messages[0], messages[1], user("u2", POEM)]),
        ),
    )
    .await;
    assert_eq!(next.status, 200, "{}", next.body);
    assert_eq!(run_events(&next).last().unwrap()["type"], "RUN_FINISHED");

    // Nothing runs any more: a second stop says so.
    let again = post(
        &app,
        &format!("/copilotkit/agent/default/stop/{thread}"),
        &json!({}),
    )
    .await;
    assert_eq!(again.json()["stopped"], false);
}

#[tokio::test]
async fn a_stop_with_no_body_stops_the_threads_active_run() {
    let app = spawn_app().await;
    let thread = new_thread();
    let running = saga_under_way(&app, &thread).await;
    let reply = app
        .http
        .post(app.url(&format!("/copilotkit/agent/default/stop/{thread}")))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 200);
    let (_, body) = tokio::time::timeout(Duration::from_secs(5), running.done)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        parse_sse(&body).unwrap().last().unwrap()["type"],
        "RUN_FINISHED"
    );
}

#[tokio::test]
async fn the_follow_up_run_after_a_frontend_tool_is_admitted_at_once() {
    let app = spawn_app().await;
    let thread = new_thread();
    let paint = "[copilotkit] paint the page yellow";
    let tool = json!([{"name": "change-background-color", "description": "Change the background color",
                       "parameters": {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}}]);
    let mut body = input(&thread, "r1", json!([user("u1", paint)]));
    body["tools"] = tool.clone();
    let events = run_events(&post(&app, "/copilotkit/agent/default/run", &body).await);
    let call = assistant_from(&events);
    assert_eq!(
        call["toolCalls"][0]["function"]["name"],
        "change-background-color"
    );
    // The client runs the handler and posts the follow-up the instant the stream ends.
    let mut follow_up = input(
        &thread,
        "r2",
        json!([user("u1", paint), call, {"id": "t1", "role": "tool",
               "toolCallId": "call_ck_paint", "content": "Background color successfully changed to: yellow"}]),
    );
    follow_up["tools"] = tool;
    let reply = post(&app, "/copilotkit/agent/default/run", &follow_up).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        text_of(&run_events(&reply)),
        "Done: the page background is yellow now."
    );
}
