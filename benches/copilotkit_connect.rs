//! What CopilotKit's reload costs: `POST /copilotkit/agent/default/connect` of a thread at rest
//! with 10, 100 and 1,000 messages, next to the same thread's `GET /threads/{id}` (one page of
//! 100, our own history route) and `GET /threads/{id}?limit=500`, and `GET /copilotkit/info`.
//! The app serves on loopback over HTTP; the store is DynamoDB Local at
//! `AGUI_BENCH_DYNAMODB_ENDPOINT` (scripts/bench.sh starts one), or the in-memory store without.
//!
//! Printed per request (median of `REPEATS`): time to the first byte of the answer (for a
//! replay, its first event), time to its last byte, bytes sent, and the store's read calls and
//! read units. Asserts nothing but that each answer is whole.
//!
//! `AGUI_BENCH_DYNAMODB_ENDPOINT=http://127.0.0.1:8000 cargo bench --bench copilotkit_connect`;
//! `cargo test --bench copilotkit_connect` runs it once, unoptimised, as a smoke test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/dynamo_local.rs"]
mod dynamo_local;
use agui_lambda::testing::auth::Principal;
use agui_lambda::testing::config::Config;
use agui_lambda::testing::model::{DemoModel, ModelProvider};
use agui_lambda::testing::protocol::{Message, MessageId, ThreadId, UserContent};
use agui_lambda::testing::startup;
use agui_lambda::testing::store::{DynamoStore, MemoryStore, NewThread, ThreadStore};
use futures_util::StreamExt;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

const REPEATS: usize = 7;

/// A thread's `count` messages: questions of ~300 characters, answers of ~1,200.
fn messages(count: usize) -> Vec<Message> {
    let words = "Here is what happened today, and what I would like you to keep in mind. ";
    (0..count)
        .map(|seq| {
            let id = MessageId::parse(format!("m{seq}"), 128).unwrap();
            if seq % 2 == 0 {
                Message::User {
                    id,
                    content: UserContent::Text(words.repeat(4).chars().take(300).collect()),
                    name: None,
                }
            } else {
                Message::Assistant {
                    id,
                    content: Some(words.repeat(17).chars().take(1200).collect()),
                    tool_calls: Vec::new(),
                    name: None,
                    encrypted_value: None,
                }
            }
        })
        .collect()
}

/// What one request cost.
struct Cost {
    first_byte: Duration,
    last_byte: Duration,
    bytes: usize,
    reads: u64,
    read_units: f64,
}

/// The store's read calls and units so far (DynamoDB only).
fn reads(store: Option<&DynamoStore>) -> (u64, f64) {
    store.map_or((0, 0.0), |store| {
        let usage = store.usage();
        (usage.read_calls, usage.read_capacity_units)
    })
}

async fn measure(
    http: &reqwest::Client,
    request: reqwest::RequestBuilder,
    store: Option<&DynamoStore>,
) -> Cost {
    let _ = http;
    let before = reads(store);
    let began = Instant::now();
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.bytes_stream();
    let mut first_byte = None;
    let mut bytes = 0;
    while let Some(chunk) = body.next().await {
        let chunk = chunk.unwrap();
        if !chunk.is_empty() && first_byte.is_none() {
            first_byte = Some(began.elapsed());
        }
        bytes += chunk.len();
    }
    let last_byte = began.elapsed();
    let after = reads(store);
    Cost {
        first_byte: first_byte.unwrap_or(last_byte),
        last_byte,
        bytes,
        reads: after.0 - before.0,
        read_units: after.1 - before.1,
    }
}

fn median(mut costs: Vec<Cost>) -> Cost {
    costs.sort_by_key(|cost| cost.last_byte);
    costs.swap_remove(costs.len() / 2)
}

fn print(what: &str, cost: &Cost) {
    println!(
        "  {what:<44} first byte {:>7.2} ms   last byte {:>7.2} ms   {:>9} bytes   {:>2} reads {:>6.1} RCU",
        cost.first_byte.as_secs_f64() * 1000.0,
        cost.last_byte.as_secs_f64() * 1000.0,
        cost.bytes,
        cost.reads,
        cost.read_units,
    );
}

#[tokio::main]
async fn main() {
    let smoke = std::env::args().any(|arg| arg == "--test") || cfg!(debug_assertions);
    let (store, dynamo): (Arc<dyn ThreadStore>, Option<Arc<DynamoStore>>) =
        match std::env::var("AGUI_BENCH_DYNAMODB_ENDPOINT") {
            Ok(endpoint) => {
                let (client, table) = dynamo_local::fresh_table(&endpoint).await;
                let store = Arc::new(DynamoStore::new(client, table, 0));
                (store.clone(), Some(store))
            }
            Err(_) => (Arc::new(MemoryStore::new()), None),
        };
    println!(
        "copilotkit_connect: {} store{}",
        if dynamo.is_some() {
            "DynamoDB Local"
        } else {
            "in-memory"
        },
        if smoke { " (smoke run)" } else { "" }
    );
    let config = Config::from_map(&HashMap::new()).unwrap();
    let model: Arc<dyn ModelProvider> = Arc::new(DemoModel {
        word_delay: Duration::ZERO,
    });
    let app = startup::AppBuilder::new(&config)
        .model(model)
        .store(store.clone())
        .build()
        .await
        .unwrap();
    let (addr, _server) =
        agui_lambda::testing::api::bind(Arc::new(app), "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
    let url = |path: &str| format!("http://{addr}{path}");
    let http = reqwest::Client::new();
    let owner = Principal::new("anonymous");
    let repeats = if smoke { 1 } else { REPEATS };

    let info = median(
        futures_util::future::join_all((0..repeats).map(|_| async {
            measure(&http, http.get(url("/copilotkit/info")), dynamo.as_deref()).await
        }))
        .await,
    );
    print("GET /copilotkit/info", &info);
    assert_eq!(info.reads, 0, "/info reads no store");

    for count in [10, 100, 1000] {
        let thread_id = ThreadId::new_uuid();
        let all = messages(count);
        store
            .create_thread(NewThread {
                owner: &owner,
                thread_id: &thread_id,
                messages: &all,
                state: Some(&json!({"step": count})),
                title: Some("A long conversation"),
                at_ms: chrono::Utc::now().timestamp_millis(),
                copied_at_ms: &[],
            })
            .await
            .unwrap();
        println!("a thread of {count} messages:");
        let body = json!({"threadId": thread_id, "runId": "connect", "state": {}, "messages": [],
                          "tools": [], "context": [], "forwardedProps": {}})
        .to_string();
        let mut costs = Vec::new();
        for _ in 0..repeats {
            let request = http
                .post(url("/copilotkit/agent/default/connect"))
                .header("content-type", "application/json")
                .header("accept", "text/event-stream")
                .body(body.clone());
            costs.push(measure(&http, request, dynamo.as_deref()).await);
        }
        print("POST /copilotkit/agent/default/connect", &median(costs));
        for path in [
            format!("/threads/{thread_id}"),
            format!("/threads/{thread_id}?limit=500"),
        ] {
            let mut costs = Vec::new();
            for _ in 0..repeats {
                costs.push(measure(&http, http.get(url(&path)), dynamo.as_deref()).await);
            }
            let shown = path.replace(thread_id.as_str(), "{id}");
            print(&format!("GET {shown}"), &median(costs));
        }
    }
}
