//! Store reads per run with long-term memory on: a principal with 10 memories and one with
//! 1,000 (and 2,000 longer ones), cold (the process holds none of them) and warm, against
//! DynamoDB Local at `AGUI_BENCH_DYNAMODB_ENDPOINT` (scripts/bench.sh starts one). Prints
//! figures; asserts nothing (`tests/api/memories.rs` asserts the equal counts).
//!
//! `AGUI_BENCH_DYNAMODB_ENDPOINT=http://127.0.0.1:8000 cargo bench --bench memory_reads`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/dynamo_local.rs"]
mod dynamo_local;
use agui_lambda::testing::agent::{Agent, AgentSettings, MemorySettings, ToolRegistry};
use agui_lambda::testing::auth::Principal;
use agui_lambda::testing::model::scripted::{ScriptedModel, ScriptedTurn};
use agui_lambda::testing::protocol::input::{ForwardedProps, RunInput};
use agui_lambda::testing::protocol::{Message, MessageId, RunId, ThreadId, UserContent};
use agui_lambda::testing::store::DynamoStore;
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn input(text: &str) -> RunInput {
    RunInput {
        thread_id: Some(ThreadId::new_uuid()),
        run_id: RunId::parse(uuid::Uuid::new_v4().to_string(), 128).unwrap(),
        parent_run_id: None,
        state: None,
        messages: vec![Message::User {
            id: MessageId::parse("u1", 128).unwrap(),
            content: UserContent::Text(text.into()),
            name: None,
        }],
        tools: Vec::new(),
        context: vec![],
        forwarded_props: ForwardedProps::default(),
        protocol_version: None,
        resume: Vec::new(),
        new_message_limits: None,
        skipped_parts: Vec::new(),
        skips_unusable_parts: false,
    }
}

/// One run as `owner` in a new thread: its store read calls and how long it took.
async fn run(
    agent: &Agent,
    store: &DynamoStore,
    model: &ScriptedModel,
    owner: &str,
) -> (u64, Duration) {
    model.push(ScriptedTurn::text("Noted."));
    let before = store.usage().read_calls;
    let began = Instant::now();
    let run = agent
        .start(
            Principal::new(owner),
            input("what do you remember about topic 3?"),
            tokio::time::Instant::now() + Duration::from_secs(60),
        )
        .await
        .unwrap();
    let _: Vec<_> = run.into_events().collect().await;
    agent.live_runs().idle().await;
    (store.usage().read_calls - before, began.elapsed())
}

#[tokio::main]
async fn main() {
    let Ok(endpoint) = std::env::var("AGUI_BENCH_DYNAMODB_ENDPOINT") else {
        eprintln!(
            "memory_reads: set AGUI_BENCH_DYNAMODB_ENDPOINT (scripts/bench.sh starts DynamoDB Local); skipped"
        );
        return;
    };
    let (client, table) = dynamo_local::fresh_table(&endpoint).await;
    let store = Arc::new(DynamoStore::new(client, table, 0));
    let model = ScriptedModel::default();
    let agent = Agent::new(
        Arc::new(model.clone()),
        Arc::new(ToolRegistry::with_builtins().unwrap()),
        store.clone(),
        AgentSettings {
            memory: MemorySettings {
                enabled: true,
                max_items: 2_000,
                ..MemorySettings::default()
            },
            ..AgentSettings::default()
        },
    );
    // (principal, memories, padding): the last at about the default MEMORY_MAX_CHARS (500).
    let principals = [
        ("ten", 10, 0),
        ("thousand", 1_000, 0),
        ("two-thousand-long", 2_000, 470),
    ];
    let text = |n: usize, padding: usize| {
        format!(
            "fact number {n} about topic {} {}",
            n % 37,
            "x".repeat(padding)
        )
    };
    println!("store read calls per run with MEMORY=on (a new thread each run; DynamoDB Local):");
    for (owner, count, padding) in principals {
        let texts: Vec<String> = (0..count).map(|n| text(n, padding)).collect();
        let seeding = Instant::now();
        store
            .seed_memories(&Principal::new(owner), &texts)
            .await
            .unwrap();
        let seeded = seeding.elapsed();
        let (cold, cold_took) = run(&agent, &store, &model, owner).await;
        let (warm, warm_took) = run(&agent, &store, &model, owner).await;
        println!(
            "  {count:>5} memories ({:>3} chars each, seeded in {seeded:.1?}): cold {cold} reads ({cold_took:.1?}), warm {warm} reads ({warm_took:.1?})",
            texts[0].len()
        );
    }
}
