//! What a delegation costs before its child's first event: store round trips and time. A
//! coordinator profile delegates to a researcher profile; the same researcher also serves a run
//! directly. Both are apps over HTTP on one scripted model that sends each text delta 5 ms after
//! the one before (the first 5 ms after the request), the same for both, on the in-memory store and, with
//! `AGUI_BENCH_DYNAMODB_ENDPOINT` (scripts/bench.sh starts DynamoDB Local), on DynamoDB. Prints:
//! - store calls from the coordinator's call of the researcher to the researcher's first event;
//! - time to the child's first text, from the coordinator's call (its `TOOL_CALL_END`: the
//!   writes a delegation waits for come after it) and from `SUBAGENT_STARTED`, against the
//!   researcher run directly (from the request to its first text, and from `RUN_STARTED`);
//! - the gaps between the child's text events as they reach the parent's client, its model
//!   sending one every 5 ms, against the same agent run directly (not held back).
//!
//! Asserts nothing. `AGUI_BENCH_DYNAMODB_ENDPOINT=http://127.0.0.1:8000 cargo bench --bench subagents`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/dynamo_local.rs"]
mod dynamo_local;
use agui_lambda::testing::config::Config;
use agui_lambda::testing::model::scripted::{ScriptedModel, ScriptedTurn};
use agui_lambda::testing::model::{FinishReason, ModelDelta, ModelProvider};
use agui_lambda::testing::protocol::verify::parse_sse;
use agui_lambda::testing::startup;
use agui_lambda::testing::store::{DynamoStore, MemoryStore, ThreadStore};
use futures_util::StreamExt;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

const RUNS: usize = 30;
const PROFILES: &str = r#"{"coordinator": {"subagents": ["researcher"]}, "researcher": {"systemPrompt": "Research."}}"#;

/// The scripted model with its text deltas 5 ms apart, as a model streams them: what reaches
/// the client shows whether a child's stream is held back on its way through the parent.
#[derive(Clone)]
struct Paced(ScriptedModel);

#[async_trait::async_trait]
impl ModelProvider for Paced {
    async fn stream(
        &self,
        request: &agui_lambda::testing::model::ModelRequest,
    ) -> Result<agui_lambda::testing::model::DeltaStream, agui_lambda::testing::model::ModelError>
    {
        let inner = self.0.stream(request).await?;
        Ok(Box::pin(inner.then(|delta| async move {
            match delta {
                Ok(ModelDelta::Text(_)) => tokio::time::sleep(PACE).await,
                // A turn that calls tools ends a moment after its calls streamed: the store
                // counters are read in between (`round_trips`).
                Ok(ModelDelta::Finish(FinishReason::ToolCalls)) => {
                    tokio::time::sleep(CALL_PAUSE).await;
                }
                _ => {}
            }
            delta
        })))
    }
    fn describe(&self) -> String {
        "paced scripted model".to_owned()
    }
    fn identity(&self) -> agui_lambda::testing::model::ModelIdentity {
        self.0.identity()
    }
}

const PACE: Duration = Duration::from_millis(5);
const CALL_PAUSE: Duration = Duration::from_millis(50);

/// The researcher's answer: ten chunks.
fn researcher_turn() -> ScriptedTurn {
    let mut deltas: Vec<ModelDelta> = (0..10)
        .map(|n| ModelDelta::Text(format!("fact {n}. ")))
        .collect();
    deltas.push(ModelDelta::Finish(FinishReason::Stop));
    ScriptedTurn::Stream(deltas)
}

/// An app serving `profile`, on `store` and `model`; its base URL.
async fn app(profile: &str, store: Arc<dyn ThreadStore>, model: &ScriptedModel) -> String {
    let vars: HashMap<String, String> = [
        ("AGENT_PROFILES", PROFILES),
        ("AGENT_DEFAULT_PROFILE", profile),
        ("SUBAGENT_VISIBILITY", "attributed"),
        ("RUST_LOG", "off"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let config = Config::from_map(&vars).unwrap();
    let model: Arc<dyn ModelProvider> = Arc::new(Paced(model.clone()));
    let app = startup::AppBuilder::new(&config)
        .model(model)
        .store(store)
        .build()
        .await
        .unwrap();
    let (addr, _server) =
        agui_lambda::testing::api::bind(Arc::new(app), "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
    format!("http://{addr}")
}

/// One run of `text`, its events each with when it arrived, from the request.
async fn timed_run(http: &reqwest::Client, base: &str, text: &str) -> Vec<(Duration, Value)> {
    let body = json!({
        "threadId": uuid::Uuid::new_v4().to_string(), "runId": uuid::Uuid::new_v4().to_string(),
        "protocolVersion": "1.0", "state": {}, "tools": [], "context": [], "forwardedProps": {},
        "messages": [{"id": "u1", "role": "user", "content": text}],
    });
    let sent = Instant::now();
    let response = http
        .post(format!("{base}/agent"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let mut chunks = response.bytes_stream();
    let (mut buffer, mut events) = (String::new(), Vec::new());
    while let Some(chunk) = chunks.next().await {
        buffer.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        while let Some(end) = buffer.find("\n\n") {
            let frame: String = buffer.drain(..end + 2).collect();
            let at = sent.elapsed();
            events.extend(
                parse_sse(&frame)
                    .unwrap()
                    .into_iter()
                    .map(|event| (at, event)),
            );
        }
    }
    events
}

fn at(events: &[(Duration, Value)], found: impl Fn(&Value) -> bool) -> Duration {
    events.iter().find(|(_, event)| found(event)).unwrap().0
}

fn percentile(values: &mut [Duration], p: usize) -> Duration {
    values.sort();
    values[(values.len() - 1) * p / 100]
}

fn ms(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1000.0)
}

/// The times on `store`.
async fn measure(name: &str, store: Arc<dyn ThreadStore>) {
    let model = ScriptedModel::default();
    let coordinator = app("coordinator", store.clone(), &model).await;
    let researcher = app("researcher", store, &model).await;
    let http = reqwest::Client::new();
    let (mut direct, mut direct_from_start, mut delegated) = (vec![], vec![], vec![]);
    let mut from_call = vec![];
    let (mut direct_gaps, mut gaps) = (vec![], vec![]);
    for _ in 0..RUNS {
        model.push(researcher_turn());
        let events = timed_run(&http, &researcher, "find a fact").await;
        let first = at(&events, |e| e["type"] == "TEXT_MESSAGE_CONTENT");
        direct.push(first);
        direct_from_start.push(first - at(&events, |e| e["type"] == "RUN_STARTED"));
        let texts: Vec<Duration> = events
            .iter()
            .filter(|(_, e)| e["type"] == "TEXT_MESSAGE_CONTENT")
            .map(|(t, _)| *t)
            .collect();
        direct_gaps.extend(texts.windows(2).map(|pair| pair[1] - pair[0]));

        model.push(ScriptedTurn::tool_calls(
            None,
            &[("c1", "researcher", r#"{"task": "find a fact"}"#)],
        ));
        model.push(researcher_turn());
        model.push(ScriptedTurn::text("Done."));
        let events = timed_run(&http, &coordinator, "delegate").await;
        let child =
            |e: &Value| e["type"] == "TEXT_MESSAGE_CONTENT" && e.get("subagentRunId").is_some();
        let started = at(&events, |e| e["type"] == "SUBAGENT_STARTED");
        let call_ended = at(&events, |e| {
            e["type"] == "TOOL_CALL_END"
                && e["toolCallId"] == "c1"
                && e.get("subagentRunId").is_none()
        });
        delegated.push(at(&events, child) - started);
        from_call.push(at(&events, child) - call_ended);
        let texts: Vec<Duration> = events
            .iter()
            .filter(|(_, e)| child(e))
            .map(|(t, _)| *t)
            .collect();
        gaps.extend(texts.windows(2).map(|pair| pair[1] - pair[0]));
    }
    println!("{name}: {RUNS} runs each");
    println!(
        "  researcher run directly: first text {} after the request (p90 {}), {} after RUN_STARTED (p90 {})",
        ms(percentile(&mut direct.clone(), 50)),
        ms(percentile(&mut direct, 90)),
        ms(percentile(&mut direct_from_start.clone(), 50)),
        ms(percentile(&mut direct_from_start, 90)),
    );
    println!(
        "  researcher as a sub-agent: its first text {} after the coordinator's call ended (TOOL_CALL_END; p90 {}), {} after SUBAGENT_STARTED (p90 {})",
        ms(percentile(&mut from_call.clone(), 50)),
        ms(percentile(&mut from_call, 90)),
        ms(percentile(&mut delegated.clone(), 50)),
        ms(percentile(&mut delegated, 90)),
    );
    println!(
        "  gap between text events at the client, the model sending one every {}: run directly median {} (p90 {}), as a sub-agent through its parent median {} (p90 {})",
        ms(PACE),
        ms(percentile(&mut direct_gaps.clone(), 50)),
        ms(percentile(&mut direct_gaps, 90)),
        ms(percentile(&mut gaps.clone(), 50)),
        ms(percentile(&mut gaps, 90)),
    );
}

/// Store calls from the coordinator's call of the researcher to the researcher's first event,
/// run by run. The counters are read when the call's arguments arrive (the coordinator's model
/// then pauses 50 ms before its turn ends, so no delegation work has begun) and when the
/// child's first event arrives. The parent's own heartbeat (a read every 500 ms) and event-log
/// batches (a write per 250 ms) can land in the window; they are counted with the rest.
async fn round_trips(store: Arc<DynamoStore>) {
    let model = ScriptedModel::default();
    let coordinator = app("coordinator", store.clone(), &model).await;
    let http = reqwest::Client::new();
    let mut windows = Vec::new();
    for _ in 0..RUNS {
        model.push(ScriptedTurn::tool_calls(
            None,
            &[("c1", "researcher", r#"{"task": "find a fact"}"#)],
        ));
        model.push(researcher_turn());
        model.push(ScriptedTurn::text("Done."));
        let body = json!({
            "threadId": uuid::Uuid::new_v4().to_string(), "runId": uuid::Uuid::new_v4().to_string(),
            "protocolVersion": "1.0", "state": {}, "tools": [], "context": [], "forwardedProps": {},
            "messages": [{"id": "u1", "role": "user", "content": "delegate"}],
        });
        let response = http
            .post(format!("{coordinator}/agent"))
            .json(&body)
            .send()
            .await
            .unwrap();
        let mut chunks = response.bytes_stream();
        let (mut buffer, mut called, mut started, mut window) = (String::new(), None, false, None);
        while let Some(chunk) = chunks.next().await {
            buffer.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
            while let Some(end) = buffer.find("\n\n") {
                let frame: String = buffer.drain(..end + 2).collect();
                for event in parse_sse(&frame).unwrap() {
                    if event["type"] == "TOOL_CALL_ARGS" && called.is_none() {
                        called = Some(store.usage());
                    } else if event["type"] == "SUBAGENT_STARTED" {
                        started = true;
                    } else if started && window.is_none() && event.get("subagentRunId").is_some() {
                        let (before, after) = (called.unwrap(), store.usage());
                        window = Some((
                            after.read_calls - before.read_calls,
                            after.write_calls - before.write_calls,
                        ));
                    }
                }
            }
        }
        windows.push(window.unwrap());
    }
    let mut tally: HashMap<(u64, u64), usize> = HashMap::new();
    for window in windows {
        *tally.entry(window).or_default() += 1;
    }
    let mut tally: Vec<_> = tally.into_iter().collect();
    tally.sort();
    println!(
        "DynamoDB store calls from the coordinator's call to the child's first event, {RUNS} runs:"
    );
    for ((reads, writes), runs) in tally {
        println!("  {reads} read(s), {writes} write(s): {runs} run(s)");
    }
}

#[tokio::main]
async fn main() {
    measure("in-memory store", Arc::new(MemoryStore::new())).await;
    let Ok(endpoint) = std::env::var("AGUI_BENCH_DYNAMODB_ENDPOINT") else {
        eprintln!(
            "subagents: set AGUI_BENCH_DYNAMODB_ENDPOINT for the DynamoDB figures (scripts/bench.sh starts DynamoDB Local)"
        );
        return;
    };
    let (client, table) = dynamo_local::fresh_table(&endpoint).await;
    let store = Arc::new(DynamoStore::new(client, table, 0));
    round_trips(store.clone()).await;
    measure("DynamoDB Local", store).await;
}
