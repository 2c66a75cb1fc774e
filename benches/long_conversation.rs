//! Long threads and the model's window. Prints figures; asserts nothing.
//!
//! 1. A run on threads of 10, 100, 1,000 and 10,000 messages on DynamoDB Local (at
//!    `AGUI_BENCH_DYNAMODB_ENDPOINT`; skipped without it), each past its first checkpoint
//!    (`CONTEXT_STRATEGY=summarize`), for a client that names the last message it holds, one
//!    that sends only its new message (incremental), one that holds a stale part of the thread
//!    (behind: it gets the snapshot) and, for comparison, sending the whole thread to the model
//!    (`CONTEXT_STRATEGY=off`): the run's store read calls, the bytes and items they read and
//!    their read units (its EMF record), the response's bytes (its events as SSE frames), time
//!    from the request to the model call, and the model's input tokens.
//! 2. A 300-turn conversation in an 8,000-token window (in memory, a model that counts four
//!    characters a token): total input tokens with compaction (summary calls included) next to
//!    sending the whole history every turn, and the prefix reuse: for each model request, the
//!    share of its bytes that repeats the previous request's prefix.
//! 3. 120 turns, each stating a fact, then a recall, against a strict OpenAI-compatible model on
//!    loopback (`tests/api/window_model.rs`) whose window is 8,000 tokens (a longer request gets
//!    OpenAI's `context_length_exceeded`), over HTTP with the answer's reserve at its default:
//!    the server told the window (`MODEL_CONTEXT_TOKENS=8000`), and not told (it learns the
//!    window from the model's refusal). Facts recalled, refusals, summary calls and their prompt
//!    tokens, model calls and theirs.
//!
//! `AGUI_BENCH_DYNAMODB_ENDPOINT=http://127.0.0.1:8000 cargo bench --bench long_conversation`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/dynamo_local.rs"]
mod dynamo_local;
#[allow(dead_code)]
#[path = "../tests/api/window_model.rs"]
mod window_model;
use agui_lambda::testing::agent::{
    Agent, AgentSettings, ContextSettings, ContextStrategy, SUMMARY_MARKER, ToolRegistry,
};
use agui_lambda::testing::auth::Principal;
use agui_lambda::testing::model::{
    DeltaStream, FinishReason, ModelDelta, ModelError, ModelIdentity, ModelProvider, ModelRequest,
    Usage,
};
use agui_lambda::testing::protocol::input::{ForwardedProps, RunInput};
use agui_lambda::testing::protocol::sse::{encode_event, now_ms};
use agui_lambda::testing::protocol::{Event, Message, MessageId, RunId, ThreadId, UserContent};
use agui_lambda::testing::store::{
    Checkpoint, ContextUpdate, DynamoStore, MemoryStore, RunFinish, RunLeases, RunStart,
    ThreadStore,
};
use agui_lambda::testing::telemetry::emf::Emf;
use async_trait::async_trait;
use futures_util::StreamExt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A model that counts four characters a token, keeps `[fact]` lines in its summaries, records
/// every request and when it came.
#[derive(Default)]
struct CountingModel {
    requests: Mutex<Vec<(Instant, ModelRequest, u64)>>,
}

fn tokens_of(request: &ModelRequest) -> u64 {
    let text = |text: &str| (text.chars().count() as u64).div_ceil(4);
    let system =
        request.system.as_deref().map_or(0, text) + request.summary.as_deref().map_or(0, text);
    system
        + request
            .messages
            .iter()
            .map(|message| 4 + text(&serde_json::to_string(message).unwrap()))
            .sum::<u64>()
}

#[async_trait]
impl ModelProvider for CountingModel {
    async fn stream(&self, request: &ModelRequest) -> Result<DeltaStream, ModelError> {
        let tokens = tokens_of(request);
        self.requests
            .lock()
            .unwrap()
            .push((Instant::now(), request.clone(), tokens));
        let summary = request
            .system
            .as_deref()
            .is_some_and(|system| system.starts_with(SUMMARY_MARKER));
        let text = if summary {
            let prompt = serde_json::to_string(&request.messages).unwrap();
            let facts: Vec<&str> = prompt
                .split("\\n")
                .filter(|line| line.contains("[fact]"))
                .collect();
            format!("Facts: {}", facts.join("; "))
        } else {
            "Noted.".to_owned()
        };
        let deltas = vec![
            Ok(ModelDelta::Text(text)),
            Ok(ModelDelta::Usage(Usage {
                input_tokens: tokens,
                output_tokens: 4,
                ..Usage::default()
            })),
            Ok(ModelDelta::Finish(FinishReason::Stop)),
        ];
        Ok(Box::pin(futures_util::stream::iter(deltas)))
    }

    fn describe(&self) -> String {
        "counting bench model".to_owned()
    }

    fn identity(&self) -> ModelIdentity {
        ModelIdentity {
            provider: "bench".to_owned(),
            model: "bench-8k".to_owned(),
        }
    }
}

fn message(id: String, user: bool, text: String) -> Message {
    let id = MessageId::parse(id, 128).unwrap();
    if user {
        Message::User {
            id,
            content: UserContent::Text(text),
            name: None,
        }
    } else {
        Message::Assistant {
            id,
            content: Some(text),
            tool_calls: Vec::new(),
            name: None,
            encrypted_value: None,
        }
    }
}

fn input(thread: &ThreadId, run: &str, messages: Vec<Message>) -> RunInput {
    RunInput {
        thread_id: Some(thread.clone()),
        run_id: RunId::parse(run, 128).unwrap(),
        parent_run_id: None,
        state: None,
        messages,
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

fn agent(
    model: Arc<CountingModel>,
    store: Arc<dyn ThreadStore>,
    strategy: ContextStrategy,
) -> Agent {
    Agent::new(
        model,
        Arc::new(ToolRegistry::with_builtins().unwrap()),
        store,
        AgentSettings {
            max_output_tokens: Some(1_000),
            context: ContextSettings {
                window_tokens: Some(8_000),
                strategy,
                ..ContextSettings::default()
            },
            ..AgentSettings::default()
        },
    )
}

/// One run of `messages` on `thread`; its events.
async fn run(agent: &Agent, thread: &ThreadId, run_id: &str, messages: Vec<Message>) -> Vec<Event> {
    let run = agent
        .start(
            Principal::anonymous(),
            input(thread, run_id, messages),
            tokio::time::Instant::now() + Duration::from_secs(60),
        )
        .await
        .unwrap();
    let events: Vec<Event> = run.into_events().collect().await;
    agent.live_runs().idle().await;
    events
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    conversation_in_a_small_window().await;
    untold_window().await;
    match std::env::var("AGUI_BENCH_DYNAMODB_ENDPOINT") {
        Ok(endpoint) => runs_on_long_threads(&endpoint).await,
        Err(_) => eprintln!(
            "long_conversation: set AGUI_BENCH_DYNAMODB_ENDPOINT (scripts/bench.sh starts DynamoDB Local) for the store figures; skipped"
        ),
    }
}

/// Figure 2: 300 turns of ~500 characters in an 8,000-token window.
async fn conversation_in_a_small_window() {
    let model = Arc::new(CountingModel::default());
    let store: Arc<dyn ThreadStore> = Arc::new(MemoryStore::default());
    let agent = agent(model.clone(), store, ContextStrategy::Summarize);
    let thread = ThreadId::new_uuid();
    let filler = "The user keeps talking about the project plan and its details. ".repeat(7);
    let mut last: Option<Message> = None;
    let mut whole_history_tokens = 0u64;
    let mut history_tokens = 0u64;
    let mut compacted_runs = Vec::new();
    for turn in 1..=300 {
        let text = if turn == 1 {
            format!("[fact] The launch code is 7-ALPHA-42.\n{filler}")
        } else {
            format!("Turn {turn}.\n{filler}")
        };
        let user = message(format!("u{turn}"), true, text);
        let sent: Vec<Message> = last.iter().cloned().chain([user.clone()]).collect();
        let events = run(&agent, &thread, &format!("r{turn}"), sent).await;
        let compacted = events
            .iter()
            .any(|event| matches!(event, Event::ActivitySnapshot { .. }));
        compacted_runs.push(compacted);
        let answer = events.iter().find_map(|event| match event {
            Event::TextMessageStart { message_id, .. } => Some(message_id.clone()),
            _ => None,
        });
        let answer = message(answer.unwrap().to_string(), false, "Noted.".to_owned());
        // What sending the whole thread would cost this turn: every message so far.
        history_tokens += 4 + (serde_json::to_string(&user).unwrap().len() as u64).div_ceil(4);
        whole_history_tokens += history_tokens + 10;
        history_tokens += 4 + (serde_json::to_string(&answer).unwrap().len() as u64).div_ceil(4);
        last = Some(answer);
    }
    let requests = model.requests.lock().unwrap().clone();
    let is_summary = |request: &ModelRequest| {
        request
            .system
            .as_deref()
            .is_some_and(|system| system.starts_with(SUMMARY_MARKER))
    };
    let with_compaction: u64 = requests.iter().map(|(_, _, tokens)| tokens).sum();
    let summary_tokens: u64 = requests
        .iter()
        .filter(|(_, request, _)| is_summary(request))
        .map(|(_, _, tokens)| tokens)
        .sum();
    let largest = requests.iter().map(|(_, _, tokens)| *tokens).max().unwrap();
    println!("A 300-turn conversation (~500-character messages) in an 8,000-token window:");
    println!(
        "  input tokens with compaction: {with_compaction} ({summary_tokens} of them in {} summary calls); largest request {largest} tokens",
        requests
            .iter()
            .filter(|(_, request, _)| is_summary(request))
            .count()
    );
    println!(
        "  sending the whole history every turn: {whole_history_tokens} input tokens ({:.1}x), and every request past turn ~60 over the window",
        whole_history_tokens as f64 / with_compaction as f64
    );
    prefix_reuse(&requests, &compacted_runs, &is_summary);
}

/// Figure 3: 120 turns with a fact each, the window told and not.
async fn untold_window() {
    const TURNS: usize = 120;
    println!(
        "{TURNS} turns, each with a fact, then a recall, against a model with an 8,000-token window it does not tell (the answer's reserve at its default):"
    );
    for told in [true, false] {
        let model = window_model::WindowModel::start(8_000).await;
        let base = window_app(&model.url, told).await;
        let recalled = facts_conversation(&base, TURNS).await;
        let seen = model.seen();
        let (summaries, main): (Vec<_>, Vec<_>) = seen.iter().partition(|seen| seen.is_summary());
        let tokens =
            |seen: &[&window_model::Seen]| seen.iter().map(|seen| seen.tokens).sum::<u64>();
        println!(
            "  {}: {recalled} of {TURNS} facts recalled; {} refused; {} summary calls ({} to condense), {} prompt tokens; {} model calls, {} prompt tokens",
            if told {
                "told (MODEL_CONTEXT_TOKENS=8000)"
            } else {
                "not told"
            },
            seen.iter().filter(|seen| seen.outcome != "ok").count(),
            summaries.len(),
            summaries.iter().filter(|seen| seen.is_condense()).count(),
            tokens(&summaries),
            main.len(),
            tokens(&main),
        );
    }
}

/// An app over HTTP on the OpenAI-compatible model at `url`, told its window or not.
async fn window_app(url: &str, told: bool) -> String {
    let mut vars: std::collections::HashMap<String, String> = [
        ("OPENAI_BASE_URL", url),
        ("OPENAI_API_KEY", "bench-key"),
        ("AGENT_MODEL", "window-8k"),
        ("MODEL_MAX_RETRIES", "0"),
        ("RUST_LOG", "off"),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value.to_owned()))
    .collect();
    if told {
        vars.insert("MODEL_CONTEXT_TOKENS".to_owned(), "8000".to_owned());
    }
    let config = agui_lambda::testing::config::Config::from_map(&vars).unwrap();
    let app = agui_lambda::testing::startup::AppBuilder::new(&config)
        .build()
        .await
        .unwrap();
    let (addr, _server) =
        agui_lambda::testing::api::bind(Arc::new(app), "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
    format!("http://{addr}")
}

/// `turns` turns of about 500 characters, each stating a fact, then a recall: how many of the
/// facts the recall names.
async fn facts_conversation(base: &str, turns: usize) -> usize {
    let http = reqwest::Client::new();
    let thread = uuid::Uuid::new_v4().to_string();
    let fact = |n: usize| format!("k{n}={:04}", (n * 7_919) % 10_000);
    let filler = "The user keeps talking about the project plan and its details. ".repeat(7);
    let mut last: Option<serde_json::Value> = None;
    let mut answer = String::new();
    for n in 1..=turns + 1 {
        let text = if n > turns {
            "[recall] Which facts did I tell you?".to_owned()
        } else {
            format!("Turn {n}.\n[fact] {}\n{filler}", fact(n))
        };
        let user = serde_json::json!({"id": format!("u{n}"), "role": "user", "content": text});
        let body = serde_json::json!({
            "threadId": thread, "runId": format!("r{n}"), "state": {}, "tools": [],
            "context": [], "forwardedProps": {},
            "messages": last.iter().cloned().chain([user]).collect::<Vec<_>>(),
        });
        let sse = http
            .post(format!("{base}/agent"))
            .json(&body)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let events = agui_lambda::testing::protocol::verify::parse_sse(&sse).unwrap();
        assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED", "turn {n}");
        let id = events
            .iter()
            .rev()
            .find(|event| event["type"] == "TEXT_MESSAGE_START")
            .map(|event| event["messageId"].clone());
        answer = events
            .iter()
            .filter(|event| event["type"] == "TEXT_MESSAGE_CONTENT")
            .filter_map(|event| event["delta"].as_str())
            .collect();
        last = id.map(|id| serde_json::json!({"id": id, "role": "assistant", "content": answer}));
    }
    (1..=turns).filter(|&n| answer.contains(&fact(n))).count()
}

/// The share of each main request's bytes that repeats the previous main request's prefix.
fn prefix_reuse(
    requests: &[(Instant, ModelRequest, u64)],
    compacted_runs: &[bool],
    is_summary: &dyn Fn(&ModelRequest) -> bool,
) {
    let main: Vec<String> = requests
        .iter()
        .filter(|(_, request, _)| !is_summary(request))
        .map(|(_, request, _)| prompt_bytes(request))
        .collect();
    let (mut steady, mut after_compaction) = (Vec::new(), Vec::new());
    for (turn, pair) in main.windows(2).enumerate() {
        let common = pair[0]
            .bytes()
            .zip(pair[1].bytes())
            .take_while(|(a, b)| a == b)
            .count();
        let share = common as f64 / pair[1].len() as f64;
        if compacted_runs[turn + 1] {
            after_compaction.push(share);
        } else {
            steady.push(share);
        }
    }
    let describe = |shares: &[f64]| {
        let mean = shares.iter().sum::<f64>() / shares.len().max(1) as f64;
        let min = shares.iter().copied().fold(1.0, f64::min);
        format!(
            "{} requests, mean {:.1} %, lowest {:.1} %",
            shares.len(),
            mean * 100.0,
            min * 100.0
        )
    };
    println!(
        "  prefix reuse, runs without a compaction: {}",
        describe(&steady)
    );
    println!(
        "  prefix reuse, runs that compacted:      {}",
        describe(&after_compaction)
    );
}

/// The request as a provider reads it, in order: tools, system prompt, summary, messages.
fn prompt_bytes(request: &ModelRequest) -> String {
    format!(
        "{}\n{}\n{}\n{}",
        serde_json::to_string(
            &request
                .tools
                .iter()
                .map(|tool| &tool.name)
                .collect::<Vec<_>>()
        )
        .unwrap(),
        request.system.as_deref().unwrap_or_default(),
        request.summary.as_deref().unwrap_or_default(),
        serde_json::to_string(&request.messages).unwrap()
    )
}

/// Figure 1: one run on threads of 10 to 10,000 messages on DynamoDB Local, by kind of client.
async fn runs_on_long_threads(endpoint: &str) {
    let (client, table) = dynamo_local::fresh_table(endpoint).await;
    let store = Arc::new(DynamoStore::new(client, table, 0));
    println!(
        "\nOne run on a long thread, DynamoDB Local (a checkpoint covers all but the last 20 messages):"
    );
    println!(
        "  messages | client (strategy)          | read calls | bytes read | items read | read units | response bytes | request to model call | model input tokens"
    );
    for count in [10, 100, 1_000, 10_000] {
        let thread = seed(&store, count).await;
        let mut held = format!("m{}", count - 1);
        for client in Client::ALL {
            let model = Arc::new(CountingModel::default());
            let (emf, records) = Emf::in_memory("Bench", "long-conversation");
            let agent =
                agent(model.clone(), store.clone(), client.strategy()).with_metrics(Some(emf));
            let user = message(
                format!("q-{client:?}"),
                true,
                "One more question.".to_owned(),
            );
            let sent = match client {
                Client::Incremental => vec![user],
                Client::Behind => vec![stub(format!("m{}", count / 2)), user],
                Client::Anchored | Client::WholeToModel => vec![stub(held.clone()), user],
            };
            let began = Instant::now();
            let events = run(&agent, &thread, &format!("bench-{client:?}"), sent).await;
            held = answer_id(&events);
            let record: serde_json::Value =
                serde_json::from_str(records.lock().unwrap().last().unwrap()).unwrap();
            let response: usize = events
                .iter()
                .map(|event| encode_event(event, now_ms()).len())
                .sum();
            let requests = model.requests.lock().unwrap();
            let (called, _, tokens) = &requests[0];
            println!(
                "  {count:>8} | {:<26} | {:>10} | {:>10} | {:>10} | {:>10.1} | {response:>14} | {:>18.1} ms | {tokens:>18}",
                client.label(),
                record["StoreReadCalls"].as_u64().unwrap(),
                record["StoreReadBytes"].as_u64().unwrap(),
                record["StoreReadItems"].as_u64().unwrap(),
                record["StoreReadCapacity"].as_f64().unwrap(),
                called.duration_since(began).as_secs_f64() * 1000.0,
            );
        }
    }
}

/// Who sends the run, and what the server sends the model.
#[derive(Debug, Clone, Copy)]
enum Client {
    /// Names the last message it holds, then its new one.
    Anchored,
    /// Sends only its new message.
    Incremental,
    /// Names a message from the middle of the thread: it gets the whole thread back.
    Behind,
    /// Anchored, with `CONTEXT_STRATEGY=off`: the whole thread read and sent to the model.
    WholeToModel,
}

impl Client {
    const ALL: [Client; 4] = [
        Client::Anchored,
        Client::Incremental,
        Client::Behind,
        Client::WholeToModel,
    ];

    fn strategy(self) -> ContextStrategy {
        match self {
            Client::WholeToModel => ContextStrategy::Off,
            _ => ContextStrategy::Summarize,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Client::Anchored => "names its last (summarize)",
            Client::Incremental => "incremental (summarize)",
            Client::Behind => "behind (summarize)",
            Client::WholeToModel => "names its last (off)",
        }
    }
}

/// A message the client holds, by id (the stored copy wins over what it says).
fn stub(id: String) -> Message {
    message(id, false, "reply".to_owned())
}

/// The id of the run's answer: the last message the thread holds after it.
fn answer_id(events: &[Event]) -> String {
    events
        .iter()
        .rev()
        .find_map(|event| match event {
            Event::TextMessageStart { message_id, .. } => Some(message_id.to_string()),
            _ => None,
        })
        .unwrap()
}

/// A thread of `count` ~200-character messages, user and assistant in turn, with a checkpoint
/// that covers all but the last 20 (as a compaction would leave it), none under 20.
async fn seed(store: &DynamoStore, count: usize) -> ThreadId {
    let owner = Principal::anonymous();
    let thread = ThreadId::new_uuid();
    let messages: Vec<Message> = (0..count)
        .map(|i| {
            message(
                format!("m{i}"),
                i % 2 == 0,
                format!("{i} {}", "y".repeat(200)),
            )
        })
        .collect();
    let lease = store
        .begin_run(RunStart {
            owner: &owner,
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
    let covers = count.saturating_sub(20) as u64;
    let context = ContextUpdate {
        checkpoint: (covers > 0).then(|| Checkpoint {
            covers,
            summary: Some(format!("Facts: {}", "a durable fact; ".repeat(60))),
            cleared_before: covers,
            at_ms: chrono::Utc::now().timestamp_millis(),
        }),
        mark: None,
    };
    store
        .finish_run(RunFinish {
            lease: &lease,
            new_messages: &[],
            state: None,
            interrupts: None,
            at_ms: chrono::Utc::now().timestamp_millis(),
            context: Some(&context),
        })
        .await
        .unwrap();
    thread
}
