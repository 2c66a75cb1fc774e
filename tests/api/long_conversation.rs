//! Conversations longer than the model's window, against a strict OpenAI-compatible server on
//! loopback with an 8,000-token window: every turn finishes, no request is over the window, the
//! thread keeps every message, a fact from the first turn reaches the last, a failing summariser
//! and an unconfigured window do not stop the thread, a message larger than the window is
//! refused with its own code, and a run's store reads do not grow with the thread.

use super::dynamo_local;
use super::helpers::*;
use super::window_model::WindowModel;
use agui_lambda::testing::store::{MemoryStore, ThreadStore};
use agui_lambda::testing::telemetry::emf::Emf;
use agui_lambda::tools::{ToolBuilder, ToolContext, ToolOutput, ToolRegistry};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

const WINDOW: u64 = 8_000;
const FACT: &str = "[fact] The launch code is 7-ALPHA-42.";

/// The built-in tools and `fetch_report`, whose result is about 1,600 characters.
pub(crate) fn tools() -> ToolRegistry {
    let mut tools = ToolRegistry::with_builtins().unwrap();
    tools
        .add(
            ToolBuilder::new("fetch_report", "Fetches a report on a topic").handler(
                |_: Value, _: ToolContext| async {
                    Ok(ToolOutput::text(
                        "The report says the weather is mild. ".repeat(43),
                    ))
                },
            ),
        )
        .unwrap();
    tools
}

/// The `n`th user message: about 500 characters; the first states the fact, every seventh asks
/// for the report.
fn message_text(n: usize) -> String {
    let filler = "The user keeps talking about the project plan and its details. ".repeat(7);
    match n {
        1 => format!("{FACT}\n{filler}"),
        n if n % 7 == 0 => format!("[tool] Turn {n}: fetch the weather report.\n{filler}"),
        n => format!("Turn {n}.\n{filler}"),
    }
}

/// A client that sends each turn's new message with the last message it holds (so the server
/// can tell it is up to date).
pub(crate) struct Client<'a> {
    app: &'a TestApp,
    thread: String,
    last: Option<Value>,
}

impl<'a> Client<'a> {
    pub(crate) fn new(app: &'a TestApp) -> Self {
        Self {
            app,
            thread: new_thread(),
            last: None,
        }
    }

    /// Turn `n`: its events, whatever the outcome.
    pub(crate) async fn turn_with(&mut self, n: usize, text: &str) -> Vec<Value> {
        let user = json!({"id": format!("u{n}"), "role": "user", "content": text});
        let messages: Vec<Value> = self.last.iter().cloned().chain([user]).collect();
        let reply = self
            .app
            .run(&run_input(&self.thread, &format!("r{n}"), json!(messages)))
            .await;
        let events = reply.events();
        if let Some(last) = last_text_message(&events) {
            self.last = Some(last);
        }
        events
    }

    /// Turn `n`, which must finish.
    async fn turn(&mut self, n: usize) -> Vec<Value> {
        let events = self.turn_with(n, &message_text(n)).await;
        let end = events.last().unwrap();
        assert_eq!(end["type"], "RUN_FINISHED", "turn {n}: {end}");
        events
    }

    /// Every message of the thread, read in pages.
    pub(crate) async fn history(&self) -> (Vec<Value>, Value) {
        let mut messages = Vec::new();
        let mut after = String::new();
        loop {
            let page = self
                .app
                .get(&format!("/threads/{}?limit=500{after}", self.thread))
                .await
                .json();
            messages.extend(page["messages"].as_array().unwrap().iter().cloned());
            match page["next"].as_str() {
                Some(next) => after = format!("&after={next}"),
                None => return (messages, page),
            }
        }
    }
}

/// The run's last assistant text message, as a client assembles it.
fn last_text_message(events: &[Value]) -> Option<Value> {
    let id = events
        .iter()
        .rev()
        .find(|event| event["type"] == "TEXT_MESSAGE_START")?["messageId"]
        .clone();
    let text: String = events
        .iter()
        .filter(|event| event["type"] == "TEXT_MESSAGE_CONTENT" && event["messageId"] == id)
        .map(|event| event["delta"].as_str().unwrap())
        .collect();
    Some(json!({"id": id, "role": "assistant", "content": text}))
}

pub(crate) fn compactions(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .filter(|event| {
            event["type"] == "ACTIVITY_SNAPSHOT" && event["activityType"] == "context-compaction"
        })
        .map(|event| event["content"].clone())
        .collect()
}

async fn app_on(model: &WindowModel, overrides: &[(&str, &str)]) -> TestApp {
    let store: Arc<dyn ThreadStore> = Arc::new(MemoryStore::default());
    let mut vars = vec![("AGENT_MODEL", "window-8k"), ("MAX_OUTPUT_TOKENS", "1000")];
    vars.extend_from_slice(overrides);
    spawn_app_on_model_url(&model.url, &vars, store, tools(), None).await
}

#[tokio::test]
async fn three_hundred_turns_fit_an_8k_window_and_the_thread_keeps_every_message() {
    let model = WindowModel::start(WINDOW).await;
    let app = app_on(&model, &[("MODEL_CONTEXT_TOKENS", "8000")]).await;
    let mut client = Client::new(&app);
    let mut compacted = Vec::new();
    let mut tool_turns = 0;
    let mut billed_input = 0;
    for n in 1..=300 {
        let events = client.turn(n).await;
        billed_input += events.last().unwrap()["usage"][0]["inputTokens"]
            .as_u64()
            .unwrap();
        compacted.extend(compactions(&events));
        if events
            .iter()
            .any(|event| event["type"] == "TOOL_CALL_RESULT")
        {
            tool_turns += 1;
        }
    }
    let seen = model.seen();
    let refused: Vec<_> = seen.iter().filter(|seen| seen.outcome != "ok").collect();
    assert!(
        refused.is_empty(),
        "no request over the window or out of order: {:?}",
        refused
            .iter()
            .map(|seen| (seen.outcome, seen.tokens))
            .collect::<Vec<_>>()
    );
    let largest = seen.iter().map(|seen| seen.tokens).max().unwrap();
    assert!(largest <= WINDOW, "{largest}");
    assert_eq!(tool_turns, 300 / 7);
    assert!(!compacted.is_empty(), "the thread was compacted");
    for content in &compacted {
        assert!(
            content["tokensAfter"].as_u64().unwrap() < content["tokensBefore"].as_u64().unwrap(),
            "{content}"
        );
    }
    // Compaction in chunks: far fewer compactions than turns.
    assert!(compacted.len() < 60, "{} compactions", compacted.len());
    let summaries = seen.iter().filter(|seen| seen.is_summary()).count();
    assert!(summaries > 0);
    // The runs' usage counts every token the model read, the summary calls' included.
    let read: u64 = seen.iter().map(|seen| seen.tokens).sum();
    assert_eq!(billed_input, read);

    // The fact of turn 1 is in what the model read at turn 300.
    let last = seen.iter().rev().find(|seen| !seen.is_summary()).unwrap();
    assert!(
        last.text().contains("Turn 300."),
        "the last request is turn 300's"
    );
    assert!(last.text().contains("7-ALPHA-42"), "{}", last.text());

    // The thread still holds every message: each turn's user message and final answer, and
    // each tool turn's call and result.
    let (messages, last_page) = client.history().await;
    assert_eq!(messages.len(), 300 * 2 + tool_turns * 2);
    assert_eq!(
        messages[0]["content"].as_str().unwrap(),
        message_text(1),
        "the first message as sent"
    );
    let checkpoint = &last_page["checkpoint"];
    let covers = checkpoint["coversMessages"].as_u64().unwrap();
    assert!(covers > 0 && covers < messages.len() as u64, "{checkpoint}");
    assert!(
        checkpoint["summary"]
            .as_str()
            .unwrap()
            .contains("7-ALPHA-42"),
        "{checkpoint}"
    );
}

#[tokio::test]
async fn without_a_configured_window_every_turn_finishes_through_the_overflow_error() {
    let model = WindowModel::start(WINDOW).await;
    // `window-8k` is no model the table knows: the default, 32,000 tokens, is too large.
    let app = app_on(&model, &[]).await;
    let mut client = Client::new(&app);
    for n in 1..=150 {
        client.turn(n).await;
    }
    let seen = model.seen();
    let overflows = seen
        .iter()
        .filter(|seen| seen.outcome == "overflow")
        .count();
    assert!(overflows > 0, "the provider's overflow error was met");
    assert!(
        seen.iter().all(|seen| seen.outcome != "invalid"),
        "never a tool message without its call"
    );
    let (messages, _) = client.history().await;
    assert_eq!(messages.len(), 150 * 2 + (150 / 7) * 2);
}

#[tokio::test]
async fn when_the_summariser_fails_the_oldest_turns_are_dropped_and_runs_finish() {
    let model = WindowModel::start(WINDOW).await;
    model.fail_summaries();
    let app = app_on(&model, &[("MODEL_CONTEXT_TOKENS", "8000")]).await;
    let mut client = Client::new(&app);
    let mut compacted = Vec::new();
    for n in 1..=60 {
        compacted.extend(compactions(&client.turn(n).await));
    }
    assert!(
        model.seen().iter().any(|seen| seen.outcome == "failed"),
        "a summary was asked for and failed"
    );
    assert!(
        compacted
            .iter()
            .any(|content| content["strategy"] == "dropped"),
        "{compacted:?}"
    );
    assert!(
        model
            .seen()
            .iter()
            .all(|seen| seen.outcome != "overflow" && seen.outcome != "invalid")
    );
}

#[tokio::test]
async fn a_message_larger_than_the_window_is_refused_and_the_thread_goes_on() {
    let model = WindowModel::start(WINDOW).await;
    // A deployment that takes long pasted documents, on a model whose window is smaller.
    let app = app_on(
        &model,
        &[
            ("MODEL_CONTEXT_TOKENS", "8000"),
            ("MAX_USER_TEXT_CHARS", "100000"),
            ("MAX_PAYLOAD_BYTES", "1000000"),
        ],
    )
    .await;
    let mut client = Client::new(&app);
    client.turn(1).await;
    let huge = "A pasted document that never ends. ".repeat(1_200);
    let events = client.turn_with(2, &huge).await;
    let end = events.last().unwrap();
    assert_eq!(end["type"], "RUN_ERROR", "{end}");
    assert_eq!(end["code"], "CONTEXT_TOO_LONG");
    let message = end["message"].as_str().unwrap();
    assert!(
        message.contains("too large for the model's context window")
            && message.contains("shorten it or split it"),
        "{message}"
    );
    let events = client.turn(3).await;
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
    let (messages, _) = client.history().await;
    assert!(
        messages
            .iter()
            .any(|message| message["content"].as_str() == Some(huge.as_str())),
        "the refused message is kept in the thread"
    );
}

#[tokio::test]
async fn a_runs_store_reads_do_not_grow_with_the_thread_on_dynamodb() {
    let model = WindowModel::start(WINDOW).await;
    let (emf, lines) = Emf::in_memory("AguiTests", "long-conversation");
    let store = dynamo_local::new_store().await;
    let app = spawn_app_on_model_url(
        &model.url,
        &[
            ("AGENT_MODEL", "window-8k"),
            ("MAX_OUTPUT_TOKENS", "1000"),
            ("MODEL_CONTEXT_TOKENS", "8000"),
        ],
        store,
        tools(),
        Some(emf),
    )
    .await;
    let mut client = Client::new(&app);
    let mut figures = Vec::new();
    for n in 1..=300 {
        client.turn(n).await;
        figures.push(run_figures(&lines, n).await);
    }
    let at = |turn: usize| figures[turn - 1];
    println!(
        "store reads per run (calls, read units): turn 10 {:?}, turn 30 {:?}, turn 100 {:?}, turn 300 {:?}",
        at(10),
        at(30),
        at(100),
        at(300)
    );
    // Turns that are not the seventh (a tool turn makes more writes, not more reads).
    let (calls_30, _) = at(30);
    let (calls_300, units_300) = at(299);
    assert_eq!(
        calls_300, calls_30,
        "as many store reads at turn 299 as at 30"
    );
    // The loaded part of the thread cycles between compactions: turn 299 reads no more than
    // the largest read of the cycle around turn 30.
    let cycle_max = (20..=40).map(|turn| at(turn).1).fold(0.0, f64::max);
    assert!(
        units_300 <= cycle_max,
        "turn 299 read {units_300} units; turns 20-40 at most {cycle_max}"
    );
}

/// The store reads of run `n` from its EMF record: (calls, read capacity units).
async fn run_figures(lines: &Arc<Mutex<Vec<String>>>, n: usize) -> (u64, f64) {
    for _ in 0..200 {
        let record = lines.lock().unwrap().get(n - 1).cloned();
        if let Some(record) = record {
            let record: Value = serde_json::from_str(&record).unwrap();
            return (
                record["StoreReadCalls"].as_u64().unwrap(),
                record["StoreReadCapacity"].as_f64().unwrap(),
            );
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("no metrics record for run {n}");
}

#[tokio::test]
async fn with_compaction_off_the_providers_overflow_is_a_model_error_sent_once() {
    let model = WindowModel::start(WINDOW).await;
    let app = app_on(&model, &[("CONTEXT_STRATEGY", "off")]).await;
    let mut client = Client::new(&app);
    for n in 1..=80 {
        let events = client.turn_with(n, &message_text(n)).await;
        let end = events.last().unwrap();
        if end["type"] == "RUN_FINISHED" {
            continue;
        }
        assert_eq!(end["code"], "MODEL_ERROR", "{end}");
        let message = end["message"].as_str().unwrap();
        assert!(
            message.contains("context window") && message.contains("context_length_exceeded"),
            "{message}"
        );
        let overflows = model
            .seen()
            .iter()
            .filter(|seen| seen.outcome == "overflow")
            .count();
        assert_eq!(overflows, 1, "refused once, not retried");
        return;
    }
    panic!("80 turns without compaction should overflow an 8,000-token window");
}
