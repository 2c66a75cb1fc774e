//! An A2A task whose run outlasts its invocation, under the Lambda emulator: the blocking
//! `SendMessage` answers by its invocation's end, the run goes on in the next invocation, and
//! `GetTask` then finds the task completed with the whole answer, every tool run once.

use crate::lambda_emulator::Delivery;
use crate::long_runs::{setup, stepping, thread};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::time::Instant;

const STEPS: usize = 12;

/// An A2A call's answer (HTTP+JSON binding, as the caller the function's auth lets through).
async fn a2a(request: reqwest::RequestBuilder) -> Value {
    let response = request.header("A2A-Version", "1.0").send().await.unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

#[tokio::test]
async fn long_runs_an_a2a_task_goes_on_past_its_invocation_and_ends_completed() {
    let setup = setup(Delivery::default(), &[], stepping(STEPS)).await;
    let url = &setup.emulator.url;
    let http = reqwest::Client::new();
    let message = json!({
        "messageId": uuid::Uuid::new_v4().to_string(),
        "role": "ROLE_USER",
        "parts": [{"text": "task: work through the steps"}],
    });
    let sent = a2a(http
        .post(format!("{url}/a2a/message:send"))
        .json(&json!({"message": message})))
    .await;
    let task = &sent["task"];
    let id = task["id"].as_str().unwrap().to_owned();
    let context = task["contextId"].as_str().unwrap().to_owned();
    // Twelve 400 ms calls do not fit in one 5 s invocation: the answer came by its end.
    assert_eq!(task["status"]["state"], "TASK_STATE_WORKING", "{sent}");
    let until = Instant::now() + Duration::from_secs(40);
    let done = loop {
        let got = a2a(http.get(format!("{url}/a2a/tasks/{id}"))).await;
        match got["status"]["state"].as_str().unwrap() {
            "TASK_STATE_WORKING" => {}
            _ => break got,
        }
        assert!(Instant::now() < until, "the task did not end: {got}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert!(done.to_string().contains("All steps done."), "{done}");
    let continued = crate::long_runs::continuations(&setup.emulator);
    assert!(
        continued.iter().any(|(_, answer)| answer == "continued"),
        "the run went on in another invocation: {continued:?}"
    );
    let executions = setup.tools.executions();
    assert_eq!(executions.len(), STEPS, "{executions:?}");
    assert!(
        executions.values().all(|count| *count == 1),
        "{executions:?}"
    );
    let stored = thread(url, &context).await;
    assert!(stored["activeRunId"].is_null());
    assert_eq!(
        stored["messages"].as_array().unwrap().len(),
        1 + STEPS * 2 + 1
    );
}
