//! What a hand-off costs: a run of 24 tool-calling steps under the Lambda emulator of the test
//! suite (5 s invocations, the release-like defaults otherwise: a 30 s lease), on DynamoDB Local
//! at `AGUI_BENCH_DYNAMODB_ENDPOINT`, followed as our resumable client follows it. Prints, per
//! hand-off: the invocations it started, the store calls the next runner made to take the run
//! over (from its `run taken over` log line) and their time, and the gap the client saw between
//! the run's last event before the notice and its first after. Asserts nothing
//! (tests/api/long_runs.rs asserts what a hand-off must do).
//!
//! `AGUI_BENCH_DYNAMODB_ENDPOINT=http://127.0.0.1:8000 cargo bench --bench handoff`
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    dead_code
)]

#[path = "../tests/api/lambda_emulator.rs"]
mod lambda_emulator;
#[path = "../tests/api/loopback.rs"]
mod loopback;
#[path = "../tests/api/slow_tools.rs"]
mod slow_tools;
#[path = "../tests/api/sse_follow.rs"]
mod sse_follow;
#[path = "../tests/api/step_model.rs"]
mod step_model;

#[path = "support/dynamo_local.rs"]
mod dynamo_local;
use lambda_emulator::{Delivery, Emulator, Settings};
use serde_json::{Value, json};
use std::time::Duration;
use step_model::{Answer, StepModel};

const STEPS: usize = 24;

#[tokio::main]
async fn main() {
    let Ok(endpoint) = std::env::var("AGUI_BENCH_DYNAMODB_ENDPOINT") else {
        eprintln!(
            "handoff: set AGUI_BENCH_DYNAMODB_ENDPOINT (scripts/bench.sh starts DynamoDB Local); skipped"
        );
        return;
    };
    let (_, table) = dynamo_local::fresh_table(&endpoint).await;
    let tools = slow_tools::SlowTools::start(300).await;
    let model = StepModel::start(Duration::from_millis(40), |asked| {
        if asked.step < STEPS {
            Answer::Call {
                name: "slow__step".into(),
                arguments: json!({"key": format!("s{}", asked.step)}),
            }
        } else {
            Answer::Text {
                words: vec!["Done.".into()],
                every: Duration::ZERO,
            }
        }
    })
    .await;
    let env: Vec<(String, String)> = [
        ("THREADS_TABLE", table.as_str()),
        ("AWS_ENDPOINT_URL_DYNAMODB", endpoint.as_str()),
        ("OPENAI_BASE_URL", model.url.as_str()),
        ("OPENAI_API_KEY", "bench-key"),
        ("AGENT_MODEL", "step-model"),
        ("AGENT_MAX_STEPS", "40"),
        ("DEADLINE_MARGIN_MS", "1000"),
        ("HANDOFF_STEP_SECS", "1"),
        ("RUST_LOG", "info"),
        ("MCP_SERVERS", tools.servers(2_000).as_str()),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value.to_owned()))
    .collect();
    let emulator = Emulator::start(Settings {
        timeout: Duration::from_secs(5),
        delivery: Delivery::default(),
        env,
        max_environments: 4,
    })
    .await;
    let input = json!({
        "threadId": "bench-handoff",
        "runId": "r1",
        "protocolVersion": "1.0",
        "messages": [{"id": "u1", "role": "user", "content": "work through the steps"}],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    });
    let began = std::time::Instant::now();
    let seen = std::sync::Mutex::new(Vec::new());
    let followed = sse_follow::follow(&emulator.url, &input, |frame| {
        seen.lock()
            .unwrap()
            .push((began.elapsed(), frame.id, frame.kind().to_owned()));
    })
    .await;
    let seen = seen.into_inner().unwrap();
    if std::env::var_os("HANDOFF_LOG").is_some() {
        for (at, id, kind) in &seen {
            eprintln!("client {:.3} {id:?} {kind}", at.as_secs_f64());
        }
    }
    let took = began.elapsed();
    if std::env::var_os("HANDOFF_LOG").is_some() {
        for line in emulator.log() {
            if line.starts_with("[emulator")
                || line.contains("handed off")
                || line.contains("taken over")
                || line.contains("run ended")
            {
                eprintln!("{}", line.chars().take(220).collect::<String>());
            }
        }
    }
    report(&emulator, &followed, took);
    gaps(&seen);
}

/// The gap at each notice (the run's last event before it to its first after) beside the
/// usual wait between the same two kinds of event: what following the run on cost the client.
fn gaps(seen: &[(std::time::Duration, Option<u64>, String)]) {
    let numbered: Vec<(f64, &str, bool)> = {
        let mut out = Vec::new();
        let mut notice = false;
        for (at, id, kind) in seen {
            match id {
                Some(_) => out.push((
                    at.as_secs_f64() * 1000.0,
                    kind.as_str(),
                    std::mem::take(&mut notice),
                )),
                None => notice = true,
            }
        }
        out
    };
    let mut usual: std::collections::HashMap<(&str, &str), Vec<f64>> = Default::default();
    let mut at_notices = Vec::new();
    for pair in numbered.windows(2) {
        let (before, after) = (pair[0], pair[1]);
        let gap = after.0 - before.0;
        if after.2 {
            at_notices.push((before.1, after.1, gap));
        } else {
            usual.entry((before.1, after.1)).or_default().push(gap);
        }
    }
    for (before, after, gap) in at_notices {
        let mut same = usual.get(&(before, after)).cloned().unwrap_or_default();
        same.sort_by(f64::total_cmp);
        let median = same.get(same.len() / 2).copied().unwrap_or(0.0);
        println!(
            "handoff: client gap at a notice, {before} -> {after}: {gap:.0} ms (without a notice: median {median:.0} ms over {} such gaps); added {:.0} ms",
            same.len(),
            gap - median
        );
    }
}

/// The figures, per hand-off and overall.
fn report(emulator: &Emulator, followed: &sse_follow::Followed, took: Duration) {
    let takeovers: Vec<Value> = emulator
        .log()
        .iter()
        .filter_map(|line| line.split_once("] ").map(|(_, json)| json))
        .filter_map(|json| serde_json::from_str::<Value>(json).ok())
        .filter(|line| line["message"] == "run taken over")
        .collect();
    let continuations = emulator
        .records()
        .into_iter()
        .filter(|record| record.kind == "aguiContinuedRun")
        .count();
    println!(
        "handoff: {STEPS} steps in {:.1} s under 5 s invocations; {} events, {} notices on the client's streams",
        took.as_secs_f64(),
        followed.events().len(),
        followed.notices,
    );
    println!("  runner  take-over: store reads  read units  read ms  store writes  write ms");
    for line in &takeovers {
        println!(
            "  {:>6}  {:>21}  {:>10}  {:>7.1}  {:>12}  {:>8.1}",
            line["runner"].as_u64().unwrap_or_default(),
            line["store_read_calls"].as_u64().unwrap_or_default(),
            line["store_read_capacity"].as_f64().unwrap_or_default(),
            line["store_read_ms"].as_f64().unwrap_or_default(),
            line["store_write_calls"].as_u64().unwrap_or_default(),
            line["store_write_ms"].as_f64().unwrap_or_default(),
        );
    }
    println!(
        "handoff: {} take-overs by {continuations} continuation invocations; longest gap between two events a client saw: {:.0} ms",
        takeovers.len(),
        followed.longest_gap.as_secs_f64() * 1000.0
    );
}
