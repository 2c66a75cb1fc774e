//! What a full-history client's request costs the server: a 600-turn thread (1,500-character
//! messages each way) is built with a client that sends only new messages, then the next turn
//! is sent both ways: the whole history resent (about 1.9 MB, as `HttpAgent` sends it), and only
//! the last held message with the new one. Each is one Lambda Function URL event, answered as
//! the function answers it: the event's JSON parsed, the request handled, the run's stream read
//! to its end (the demo model, echoing, without its word delay).
//!
//! Printed per request: CPU time of the process (user + system, from /proc/self/stat, averaged
//! over `REPEATS` requests) and how far its resident size rose above where it was before the
//! request (VmHWM after /proc/self/clear_refs reset it; Linux only). `cargo bench --bench full_history`; `cargo test --bench
//! full_history` runs it once, unoptimised, as a smoke test with 60 turns.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agui_lambda::testing::config::Config;
use agui_lambda::testing::model::{DemoModel, ModelProvider};
use agui_lambda::testing::startup;
use agui_lambda::testing::store::MemoryStore;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A field of /proc/self/status, in kB.
fn status_kb(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|line| line.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Resets the process's peak resident size to its current one (Linux 4.0 and later).
fn reset_peak_rss() {
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
}

const REPEATS: usize = 5;

/// User + system CPU of this process so far (clock ticks of 10 ms).
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // Fields after the command's closing parenthesis; utime and stime are the 12th and 13th.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

/// A user message of 1,500 characters, named by its turn.
fn paragraph(turn: usize) -> String {
    let words = "Here is what happened today, and what I would like you to keep in mind. ";
    format!("turn {turn}. {}", words.repeat(21))
        .chars()
        .take(1500)
        .collect()
}

/// A Function URL event that posts `body` to `/agent`.
fn event(body: &Value) -> Vec<u8> {
    let mut event: Value =
        serde_json::from_slice(&std::fs::read("events/plain-chat.json").unwrap()).unwrap();
    event["body"] = json!(body.to_string());
    event["isBase64Encoded"] = json!(false);
    serde_json::to_vec(&event).unwrap()
}

struct Answer {
    /// The assistant message the client keeps.
    message: Value,
    cpu: Duration,
    wall: Duration,
    /// Peak resident size above the size before the request, in kB.
    peak_kb: usize,
}

/// One request as the function handles it, from the event's bytes to the stream's last byte.
async fn handle(app: &agui_lambda::testing::api::App, event: Vec<u8>) -> Answer {
    reset_peak_rss();
    let before_kb = status_kb("VmRSS:");
    let (cpu, wall) = (process_cpu(), Instant::now());
    let payload: Value = serde_json::from_slice(&event).unwrap();
    drop(event);
    let response = agui_lambda::testing::api::answer_event(
        app,
        lambda_runtime::LambdaEvent::new(payload, lambda_runtime::Context::default()),
    )
    .await;
    assert_eq!(response.status(), 200);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let (cpu, wall) = (process_cpu() - cpu, wall.elapsed());
    let peak_kb = status_kb("VmHWM:").saturating_sub(before_kb);
    let events =
        agui_lambda::testing::protocol::verify::parse_sse(std::str::from_utf8(&body).unwrap())
            .unwrap();
    let id = events
        .iter()
        .find(|e| e["type"] == "TEXT_MESSAGE_START")
        .unwrap()["messageId"]
        .clone();
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    Answer {
        message: json!({"id": id, "role": "assistant", "content": text}),
        cpu,
        wall,
        peak_kb,
    }
}

fn input(thread: &str, messages: &[Value]) -> Value {
    json!({"threadId": thread, "runId": uuid::Uuid::new_v4().to_string(), "messages": messages,
           "tools": [], "context": [], "state": {}, "forwardedProps": {}})
}

fn main() {
    // `cargo test --bench` passes no `--bench`: a smoke run, short and unoptimised.
    let measured = std::env::args().any(|arg| arg == "--bench");
    let turns = if measured { 600 } else { 60 };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let config = Config::from_map(&[("MODEL_PROVIDER".to_owned(), "demo".to_owned())].into()).unwrap();
        let model: Arc<dyn ModelProvider> = Arc::new(DemoModel { word_delay: Duration::ZERO });
        let app = startup::AppBuilder::new(&config)
            .model(model)
            .store(Arc::new(MemoryStore::new()))
            .build()
            .await
            .unwrap();
        let thread = uuid::Uuid::new_v4().to_string();
        let mut history: Vec<Value> = Vec::new();
        for turn in 0..turns {
            let user = json!({"id": uuid::Uuid::new_v4().to_string(), "role": "user", "content": paragraph(turn)});
            let sent = [history.last().cloned(), Some(user.clone())];
            let sent: Vec<Value> = sent.into_iter().flatten().collect();
            let answer = handle(&app, event(&input(&thread, &sent))).await;
            history.push(user);
            history.push(answer.message);
        }
        println!("full_history: a thread of {turns} turns ({} messages) on the memory store", history.len());
        for (name, whole) in [("whole history resent", true), ("only new messages", false)] {
            let (mut cpu, mut wall, mut peak, mut bytes) = (Duration::ZERO, Duration::ZERO, 0, 0);
            for _ in 0..REPEATS {
                let user = json!({"id": uuid::Uuid::new_v4().to_string(), "role": "user", "content": paragraph(history.len())});
                let mut sent = if whole { history.clone() } else { vec![history.last().cloned().unwrap()] };
                sent.push(user.clone());
                let body = input(&thread, &sent);
                bytes = body.to_string().len();
                let answer = handle(&app, event(&body)).await;
                cpu += answer.cpu;
                wall += answer.wall;
                peak = peak.max(answer.peak_kb);
                history.push(user);
                history.push(answer.message);
            }
            let per = u32::try_from(REPEATS).unwrap();
            println!(
                "full_history: {name}: body {:.0} KB; per request CPU {:.1} ms, wall {:.1} ms; resident size up {:.1} MB at its peak (largest of {REPEATS})",
                bytes as f64 / 1e3,
                (cpu / per).as_secs_f64() * 1e3,
                (wall / per).as_secs_f64() * 1e3,
                peak as f64 / 1e3,
            );
        }
    });
}
