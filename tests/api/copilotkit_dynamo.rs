//! CopilotKit's routes across two processes of the real binary on one DynamoDB Local table, as
//! two Lambda instances are: a thread made through one is listed and restored by the other, a
//! run in progress in one is joined through the other (its log in the store), and a Stop sent to
//! the other ends it. The demo model (no model configured): no Node needed.

use super::copilotkit_runs::{input, user};
use super::dynamo_local;
use super::helpers::*;
use agui_lambda::testing::protocol::verify::{parse_sse, verify_run};
use futures_util::StreamExt;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

struct Process {
    base: String,
    _child: tokio::process::Child,
}

async fn start(table: &str) -> Process {
    let endpoint = dynamo_local::endpoint().await;
    let port = free_port();
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_agui-lambda"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("PORT", port.to_string())
        .env("THREADS_TABLE", table)
        .env("AWS_ENDPOINT_URL_DYNAMODB", endpoint)
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("RUST_LOG", "warn")
        .kill_on_drop(true)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    await_ready(&format!("{base}/copilotkit/info"), "agui-lambda").await;
    Process {
        base,
        _child: child,
    }
}

async fn post(http: &reqwest::Client, url: &str, body: &Value) -> (u16, String) {
    let response = http.post(url).json(body).send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test]
#[expect(
    clippy::too_many_lines,
    reason = "one scenario told top to bottom: each step's assertions sit beside the step"
)]
async fn a_thread_made_in_one_process_is_listed_restored_joined_and_stopped_in_another() {
    let (_, table) = dynamo_local::new_table().await;
    let (one, two) = tokio::join!(start(&table), start(&table));
    let http = reqwest::Client::new();

    // A thread made through the first process.
    let thread = new_thread();
    let (status, body) = post(
        &http,
        &format!("{}/copilotkit/agent/default/run", one.base),
        &input(
            &thread,
            "r1",
            json!([user("u1", "hello from the first process")]),
        ),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let made = parse_sse(&body).unwrap();
    verify_run(&made).unwrap();

    // The second lists it, with its title, and restores it as it is stored.
    let list: Value = http
        .get(format!("{}/copilotkit/threads?agentId=default", two.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let listed = list["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|record| record["id"] == thread.as_str())
        .unwrap_or_else(|| panic!("the thread is listed: {list}"));
    assert_eq!(listed["name"], "hello from the first process");
    let (status, replay) = post(
        &http,
        &format!("{}/copilotkit/agent/default/connect", two.base),
        &input(&thread, "c1", json!([])),
    )
    .await;
    assert_eq!(status, 200);
    let replay = parse_sse(&replay).unwrap();
    verify_run(&replay).unwrap();
    let stored: Value = http
        .get(format!("{}/threads/{thread}", one.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(replay[1]["messages"], stored["messages"]);
    assert_eq!(
        text_of(&made),
        stored["messages"][1]["content"].as_str().unwrap()
    );

    // A long answer in the first process (the demo repeats the message a word per 30 ms)...
    let long = "stream slowly ".repeat(150);
    let request = http
        .post(format!("{}/copilotkit/agent/default/run", one.base))
        .json(&input(
            &thread,
            "r2",
            json!([
                stored["messages"][0],
                stored["messages"][1],
                user("u2", long.trim())
            ]),
        ));
    let running = tokio::spawn(async move {
        let response = request.send().await.unwrap();
        let mut stream = response.bytes_stream();
        let mut body = String::new();
        while let Some(chunk) = stream.next().await {
            body.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        }
        body
    });
    tokio::time::sleep(Duration::from_millis(1200)).await;
    // ...joined through the second, which follows the run's log in the store...
    let join = http
        .post(format!("{}/copilotkit/agent/default/connect", two.base))
        .json(&input(&thread, "c2", json!([])))
        .send();
    let joined = tokio::spawn(async move { join.await.unwrap().text().await.unwrap() });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // ...and stopped through the second.
    let asked = Instant::now();
    let (status, stop) = post(
        &http,
        &format!("{}/copilotkit/agent/default/stop/{thread}", two.base),
        &json!({"runId": "r2"}),
    )
    .await;
    assert_eq!(status, 200, "{stop}");
    assert_eq!(
        serde_json::from_str::<Value>(&stop).unwrap()["stopped"],
        true
    );
    let original = tokio::time::timeout(Duration::from_secs(5), running)
        .await
        .expect("the run's stream ends within 5 s of the stop")
        .unwrap();
    let stopped_after = asked.elapsed();
    let original = parse_sse(&original).unwrap();
    verify_run(&original).unwrap();
    assert_eq!(original.last().unwrap()["type"], "RUN_FINISHED");
    let joined = parse_sse(
        &tokio::time::timeout(Duration::from_secs(10), joined)
            .await
            .unwrap()
            .unwrap(),
    )
    .unwrap();
    verify_run(&joined).unwrap();
    assert_eq!(joined[0]["runId"], "r2", "the replay is the run it joined");
    assert_eq!(joined.last().unwrap()["type"], "RUN_FINISHED");
    assert_eq!(
        text_of(&joined),
        text_of(&original),
        "the joined client saw the answer as the first did, up to the stop"
    );
    let after: Value = http
        .get(format!("{}/threads/{thread}", two.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(after["activeRunId"], Value::Null);
    assert_eq!(
        after["messages"].as_array().unwrap().last().unwrap()["content"],
        json!(text_of(&original)),
        "the partial answer is kept"
    );
    println!("stopped across processes in {stopped_after:?}");
}
