//! DynamoDB cost of runs and load times of long threads, against DynamoDB Local at
//! `AGUI_BENCH_DYNAMODB_ENDPOINT` (scripts/bench.sh starts one). Prints figures; asserts nothing.
//!
//! `AGUI_BENCH_DYNAMODB_ENDPOINT=http://127.0.0.1:8000 cargo bench --bench dynamo_store`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/dynamo_local.rs"]
mod dynamo_local;
use agui_lambda::testing::agent::{Agent, AgentSettings, ToolRegistry};
use agui_lambda::testing::auth::Principal;
use agui_lambda::testing::model::scripted::{ScriptedModel, ScriptedTurn};
use agui_lambda::testing::protocol::input::{ForwardedProps, RunInput};
use agui_lambda::testing::protocol::{
    ClientTool, Event, Message, MessageId, RunId, ThreadId, ToolCall, ToolCallId, UserContent,
};
use agui_lambda::testing::store::{
    DynamoStore, EventLog, RunFinish, RunLeases, RunStart, StoreUsage, Threads, UsageLedger,
};
use futures_util::StreamExt;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn user(id: &str, text: &str) -> Message {
    Message::User {
        id: MessageId::parse(id, 128).unwrap(),
        content: UserContent::Text(text.into()),
        name: None,
    }
}

fn input(thread: &ThreadId, run: &str, messages: Vec<Message>, tools: &[&str]) -> RunInput {
    RunInput {
        thread_id: Some(thread.clone()),
        run_id: RunId::parse(run, 128).unwrap(),
        parent_run_id: None,
        state: None,
        messages,
        tools: tools
            .iter()
            .map(|name| ClientTool {
                name: (*name).into(),
                description: String::new(),
                parameters: json!({"type": "object"}),
            })
            .collect(),
        context: vec![],
        forwarded_props: ForwardedProps::default(),
        protocol_version: None,
        resume: Vec::new(),
        new_message_limits: None,
        skipped_parts: Vec::new(),
        skips_unusable_parts: false,
    }
}

fn delta(before: StoreUsage, after: StoreUsage) -> String {
    format!(
        "{} read call(s) ({:.1} RCU), {} write call(s) ({:.1} WCU)",
        after.read_calls - before.read_calls,
        after.read_capacity_units - before.read_capacity_units,
        after.write_calls - before.write_calls,
        after.write_capacity_units - before.write_capacity_units
    )
}

async fn run(agent: &Agent, input: RunInput) -> Vec<Event> {
    let run = agent
        .start(
            Principal::anonymous(),
            input,
            tokio::time::Instant::now() + Duration::from_secs(60),
        )
        .await
        .unwrap();
    let events = run.into_events().collect().await;
    // The usage write and the event log's last batch follow the terminal event: count them.
    agent.live_runs().idle().await;
    events
}

#[expect(
    clippy::too_many_lines,
    reason = "a bench's report: one measurement after another, printed in order"
)]
#[tokio::main]
async fn main() {
    let Ok(endpoint) = std::env::var("AGUI_BENCH_DYNAMODB_ENDPOINT") else {
        eprintln!(
            "dynamo_store: set AGUI_BENCH_DYNAMODB_ENDPOINT (scripts/bench.sh starts DynamoDB Local); skipped"
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
        AgentSettings::default(),
    );

    println!("DynamoDB calls per run (DynamoDB Local reports the capacity DynamoDB would charge):");
    let thread = ThreadId::new_uuid();
    model.push(ScriptedTurn::text("Hello! How can I help you today?"));
    let before = store.usage();
    run(
        &agent,
        input(&thread, "chat", vec![user("u1", "hello")], &[]),
    )
    .await;
    println!(
        "  one-turn chat, new thread:          {}",
        delta(before, store.usage())
    );

    model.push(ScriptedTurn::text("Still here."));
    let before = store.usage();
    run(
        &agent,
        input(&thread, "chat2", vec![user("u2", "hello again")], &[]),
    )
    .await;
    println!(
        "  one-turn chat, existing thread:     {}",
        delta(before, store.usage())
    );

    model.push(ScriptedTurn::tool_calls(
        Some("Let me check."),
        &[("c1", "get_current_time", "{}")],
    ));
    model.push(ScriptedTurn::text("It is late."));
    let before = store.usage();
    run(
        &agent,
        input(&thread, "server-tool", vec![user("u3", "time?")], &[]),
    )
    .await;
    println!(
        "  server tool (two model turns):      {}",
        delta(before, store.usage())
    );

    let frontend = ThreadId::new_uuid();
    model.push(ScriptedTurn::tool_calls(
        None,
        &[("f1", "confirmAction", r#"{"action":"x"}"#)],
    ));
    let before = store.usage();
    let events = run(
        &agent,
        input(
            &frontend,
            "ft1",
            vec![user("u1", "do it")],
            &["confirmAction"],
        ),
    )
    .await;
    let first = delta(before, store.usage());
    let parent = events
        .iter()
        .find_map(|event| match event {
            Event::ToolCallStart {
                parent_message_id: Some(id),
                ..
            } => Some(id.clone()),
            _ => None,
        })
        .unwrap();
    let history = vec![
        user("u1", "do it"),
        Message::Assistant {
            id: parent,
            content: None,
            tool_calls: vec![ToolCall::new(
                ToolCallId::parse("f1", 128).unwrap(),
                "confirmAction".into(),
                r#"{"action":"x"}"#.into(),
            )],
            name: None,
            encrypted_value: None,
        },
        Message::Tool {
            id: MessageId::parse("t1", 128).unwrap(),
            tool_call_id: ToolCallId::parse("f1", 128).unwrap(),
            content: "confirmed".into(),
            error: None,
            metadata: None,
        },
    ];
    model.push(ScriptedTurn::text("Done."));
    let before = store.usage();
    run(&agent, input(&frontend, "ft2", history, &["confirmAction"])).await;
    println!("  frontend tool round trip: run 1:    {first}");
    println!(
        "                            run 2:    {}",
        delta(before, store.usage())
    );

    // A 500-token answer streamed over about 5 s (10 ms a token), event recording on and off.
    for record_events in [true, false] {
        let demo = Agent::new(
            Arc::new(agui_lambda::testing::model::DemoModel {
                word_delay: Duration::from_millis(10),
            }),
            Arc::new(ToolRegistry::with_builtins().unwrap()),
            store.clone(),
            AgentSettings {
                record_events,
                ..AgentSettings::default()
            },
        );
        let words: Vec<String> = (0..486).map(|i| format!("w{i}")).collect();
        let before = store.usage();
        let began = Instant::now();
        let events = run(
            &demo,
            input(
                &ThreadId::new_uuid(),
                "long",
                vec![user("u1", &words.join(" "))],
                &[],
            ),
        )
        .await;
        println!(
            "  500-token answer over {:.1} s, recording {}: {} events, {}",
            began.elapsed().as_secs_f64(),
            if record_events { "on " } else { "off" },
            events.len(),
            delta(before, store.usage())
        );
    }

    println!("Load time of a thread (median of 15 consistent loads, ~1 KB messages):");
    let filler = "x".repeat(1_000);
    for count in [10usize, 100, 1000] {
        let thread = ThreadId::new_uuid();
        let messages: Vec<Message> = (0..count)
            .map(|i| user(&format!("m{i}"), &format!("{i} {filler}")))
            .collect();
        let lease = store
            .begin_run(RunStart {
                owner: &Principal::anonymous(),
                thread_id: &thread,
                run_id: &RunId::parse("seed", 128).unwrap(),
                loaded: None,
                lease_expires_at_ms: chrono::Utc::now().timestamp_millis() + 60_000,
                new_messages: &messages,
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
        let mut times = Vec::new();
        let before = store.usage();
        for _ in 0..15 {
            let started = Instant::now();
            let loaded = store
                .load(&Principal::anonymous(), &thread)
                .await
                .unwrap()
                .unwrap();
            times.push(started.elapsed());
            assert_eq!(loaded.messages.len(), count);
        }
        times.sort();
        let after = store.usage();
        println!(
            "  {count:>5} messages: {:>7.1} ms  ({} Query page(s), {:.1} RCU per load)",
            times[times.len() / 2].as_secs_f64() * 1000.0,
            (after.read_calls - before.read_calls) / 15,
            (after.read_capacity_units - before.read_capacity_units) / 15.0
        );
    }

    threads_and_quotas(&store, &model).await;
}

/// Creates `owner`'s thread holding `count` ~200-byte messages, in one run with `events`
/// recorded event batches.
async fn seed_thread(
    store: &DynamoStore,
    owner: &Principal,
    count: usize,
    events: u64,
) -> ThreadId {
    let thread = ThreadId::new_uuid();
    let messages: Vec<Message> = (0..count)
        .map(|i| user(&format!("m{i}"), &format!("{i} {}", "y".repeat(200))))
        .collect();
    let lease = store
        .begin_run(RunStart {
            owner,
            thread_id: &thread,
            run_id: &RunId::parse("seed", 128).unwrap(),
            loaded: None,
            lease_expires_at_ms: chrono::Utc::now().timestamp_millis() + 60_000,
            new_messages: &messages,
            state: None,
            title: Some("seeded"),
            at_ms: chrono::Utc::now().timestamp_millis(),
            copied_at_ms: &[],
        })
        .await
        .unwrap();
    for batch in 0..events {
        let frame =
            bytes::Bytes::from(format!(r#"{{"type":"CUSTOM","name":"n","value":{batch}}}"#));
        store
            .append_events(&lease, batch * 10 + 1, &vec![frame; 10])
            .await
            .unwrap();
    }
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
    thread
}

#[expect(
    clippy::too_many_lines,
    reason = "a bench's report: one measurement after another, printed in order"
)]
/// DynamoDB cost of the thread list, delete, fork and the quota check.
async fn threads_and_quotas(store: &Arc<DynamoStore>, model: &ScriptedModel) {
    use agui_lambda::testing::agent::Quotas;
    use agui_lambda::testing::store::QuotaLimits;
    println!("Threads, usage and quotas:");
    let owner = Principal::new("bench-list");
    for _ in 0..250 {
        seed_thread(store, &owner, 2, 0).await;
    }
    let mut cursor: Option<String> = None;
    let mut page = 0;
    loop {
        let before = store.usage();
        let began = Instant::now();
        let list = store
            .list_threads(&owner, 100, cursor.as_deref())
            .await
            .unwrap();
        page += 1;
        println!(
            "  list, page {page} of 100 ({} threads): {:.1} ms, {}",
            list.threads.len(),
            began.elapsed().as_secs_f64() * 1000.0,
            delta(before, store.usage())
        );
        match list.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }

    let deleter = Principal::new("bench-delete");
    for count in [100usize, 1000] {
        let thread = seed_thread(store, &deleter, count, count as u64 / 10).await;
        let before = store.usage();
        let began = Instant::now();
        store.delete_thread(&deleter, &thread).await.unwrap();
        let after = store.usage();
        println!(
            "  delete, {count} messages + {} event batches: {:.1} ms, {} (per 100 messages: {:.1} write calls, {:.1} WCU)",
            count / 10,
            began.elapsed().as_secs_f64() * 1000.0,
            delta(before, after),
            (after.write_calls - before.write_calls) as f64 * 100.0 / count as f64,
            (after.write_capacity_units - before.write_capacity_units) * 100.0 / count as f64,
        );
    }

    let forker = Principal::new("bench-fork");
    for count in [100usize, 1000] {
        let source = seed_thread(store, &forker, count, 0).await;
        let loaded = store.load(&forker, &source).await.unwrap().unwrap();
        let before = store.usage();
        let began = Instant::now();
        store
            .create_thread(agui_lambda::testing::store::NewThread {
                owner: &forker,
                thread_id: &ThreadId::new_uuid(),
                messages: &loaded.messages,
                state: None,
                title: Some("fork"),
                at_ms: chrono::Utc::now().timestamp_millis(),
                copied_at_ms: &[],
            })
            .await
            .unwrap();
        println!(
            "  fork of {count} messages (copy; the source's one load not counted): {:.1} ms, {}",
            began.elapsed().as_secs_f64() * 1000.0,
            delta(before, store.usage())
        );
    }

    // The same one-turn chat with and without quotas: the difference is the quota check.
    for (label, default) in [
        ("no quota", QuotaLimits::default()),
        (
            "tokens/day + runs/minute",
            QuotaLimits {
                tokens_per_day: Some(1_000_000),
                runs_per_minute: Some(1_000),
                reserve_tokens: 1_000,
            },
        ),
        (
            "runs/minute only",
            QuotaLimits {
                tokens_per_day: None,
                runs_per_minute: Some(1_000),
                reserve_tokens: 0,
            },
        ),
    ] {
        let agent = Agent::new(
            Arc::new(model.clone()),
            Arc::new(ToolRegistry::with_builtins().unwrap()),
            store.clone(),
            AgentSettings {
                quotas: Quotas {
                    default,
                    ..Quotas::default()
                },
                ..AgentSettings::default()
            },
        );
        model.push(ScriptedTurn::text("Hello! How can I help you today?"));
        let before = store.usage();
        run(
            &agent,
            input(
                &ThreadId::new_uuid(),
                "quota",
                vec![user("u1", "hello")],
                &[],
            ),
        )
        .await;
        println!(
            "  one-turn chat, new thread, {label:<24} {}",
            delta(before, store.usage())
        );
    }
    let limits = QuotaLimits {
        tokens_per_day: Some(1_000_000),
        runs_per_minute: Some(1_000),
        reserve_tokens: 1_000,
    };
    let before = store.usage();
    let reservation = store
        .reserve(&owner, &limits, chrono::Utc::now())
        .await
        .unwrap();
    let reserved = delta(before, store.usage());
    let before = store.usage();
    store
        .settle(agui_lambda::testing::store::Settlement {
            reservation: &reservation,
            run: Some(&[agui_lambda::testing::store::RunTokens {
                provider: "openai",
                model: "gpt-4o-mini",
                input: 20,
                output: 12,
                reasoning: 0,
                cached_input: 0,
            }]),
        })
        .await
        .unwrap();
    println!("  quota check at the start (both quotas): {reserved}");
    println!(
        "  usage settled at the end:               {}",
        delta(before, store.usage())
    );
}
