//! What traces cost: CPU per streamed event and time to first byte of the in-process pipeline
//! (scripted model → agent → memory store → SSE frames), with telemetry as production installs
//! it: logging at info and one EMF record per run in both modes; in `on` also the OTLP/HTTP
//! exporter sending every span over loopback to a sink that answers 200, and a flush after each
//! run (as Lambda flushes after each invocation).
//!
//! `cargo bench --bench telemetry_overhead` runs each mode in a child process of its own (the
//! tracing subscriber is global) and prints both with the ratio. `-- --runs N` sets the runs per
//! mode (default 200; `cargo test --bench telemetry_overhead` runs 3 as a smoke test).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use agui_lambda::testing::agent::Agent;
use agui_lambda::testing::auth::Principal;
use agui_lambda::testing::model::scripted::ScriptedModel;
use agui_lambda::testing::telemetry;
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod support;

const DELTAS: usize = 2_000;
const WARM_UP_RUNS: usize = 5;

/// One run: (events, time to the first SSE frame).
async fn one_run(agent: &Agent) -> (usize, Duration) {
    let began = Instant::now();
    let run = agent
        .start(
            Principal::anonymous(),
            support::run_input(),
            tokio::time::Instant::now() + Duration::from_secs(60),
        )
        .await
        .unwrap();
    let mut frames = Box::pin(agui_lambda::testing::api::frames(
        run.into_batches(),
        Duration::from_secs(15),
        agui_lambda::testing::dialects::AguiEncoder,
    ));
    let mut first = None;
    let mut events = 0;
    while let Some(chunk) = frames.next().await {
        first.get_or_insert_with(|| began.elapsed());
        events += chunk.windows(6).filter(|w| *w == b"data: ").count();
    }
    agent.live_runs().idle().await;
    (events, first.unwrap_or_default())
}

/// CPU time of the whole process (every thread, the exporter's included), from /proc.
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // The fields after the command's closing parenthesis; utime and stime are 14 and 15.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // USER_HZ is 100 on Linux.
    Duration::from_millis(ticks * 10)
}

/// A loopback OTLP endpoint that reads each request and answers 200 with an empty body.
async fn sink() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buffer = vec![0u8; 1 << 16];
                let mut pending = Vec::new();
                loop {
                    let Ok(read) = socket.read(&mut buffer).await else {
                        return;
                    };
                    if read == 0 {
                        return;
                    }
                    pending.extend_from_slice(&buffer[..read]);
                    // One request: headers, then content-length bytes.
                    while let Some(end) = find(&pending, b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&pending[..end]).to_ascii_lowercase();
                        let length: usize = head
                            .lines()
                            .find_map(|line| line.strip_prefix("content-length:"))
                            .map_or(0, |value| value.trim().parse().unwrap_or(0));
                        if pending.len() < end + 4 + length {
                            break;
                        }
                        pending.drain(..end + 4 + length);
                        let answer = b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                        if socket.write_all(answer).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    url
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn child(traces: bool, runs: usize) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let endpoint = if traces {
            Some(format!("{}/v1/traces", sink().await))
        } else {
            None
        };
        telemetry::init(&telemetry::Settings {
            traces_endpoint: endpoint,
            service_name: "bench".into(),
            capture_content: false,
        });
        let mut cpu = Duration::ZERO;
        let mut ttfb = Vec::with_capacity(runs);
        let mut events = 0;
        for index in 0..WARM_UP_RUNS + runs {
            // A fresh script per run: a scripted model plays each turn once.
            let agent = support::agent(Arc::new(ScriptedModel::new([support::text_turn(DELTAS)])))
                .with_metrics(Some(telemetry::emf::Emf::stdout("Bench", "bench")));
            let before = process_cpu();
            let (count, first) = one_run(&agent).await;
            telemetry::flush().await;
            // RUN_STARTED, STEP_STARTED, TEXT_MESSAGE_START, the deltas, TEXT_MESSAGE_END,
            // STEP_FINISHED, RUN_FINISHED.
            assert_eq!(count, DELTAS + 6);
            if index >= WARM_UP_RUNS {
                cpu += process_cpu() - before;
                ttfb.push(first);
                events += count;
            }
        }
        ttfb.sort_unstable();
        let median = ttfb[ttfb.len() / 2];
        let p90 = ttfb[ttfb.len() * 9 / 10];
        eprintln!(
            "RESULT {} {} {} {}",
            cpu.as_nanos() as f64 / events as f64,
            median.as_secs_f64() * 1e6,
            p90.as_secs_f64() * 1e6,
            events
        );
    });
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs = args
        .iter()
        .position(|arg| arg == "--runs")
        .and_then(|at| args.get(at + 1))
        .and_then(|runs| runs.parse().ok())
        // `cargo test --bench …` passes no `--bench`: a smoke run.
        .unwrap_or(if args.iter().any(|arg| arg == "--bench") {
            200
        } else {
            3
        });
    if let Some(mode) = args.iter().position(|arg| arg == "--child") {
        child(args[mode + 1] == "on", runs);
        return;
    }
    let measure = |mode: &str| -> [f64; 4] {
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--child", mode, "--runs", &runs.to_string()])
            .env("RUST_LOG", "info")
            .stdout(std::process::Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let line = stderr
            .lines()
            .find(|line| line.starts_with("RESULT "))
            .unwrap_or_else(|| panic!("the {mode} child failed: {stderr}"));
        let values: Vec<f64> = line[7..].split(' ').map(|v| v.parse().unwrap()).collect();
        [values[0], values[1], values[2], values[3]]
    };
    let off = measure("off");
    let on = measure("on");
    println!(
        "telemetry overhead, {runs} runs of {DELTAS} tokens per mode (current-thread runtime):"
    );
    println!("  mode  CPU/event   TTFB p50    TTFB p90   events");
    for (mode, [cpu, p50, p90, events]) in [("off", off), ("on", on)] {
        println!("  {mode:<4} {cpu:>7.0} ns {p50:>8.1} µs {p90:>8.1} µs  {events}");
    }
    println!(
        "  on/off: CPU per event {:+.1} %, TTFB p50 {:+.1} %",
        (on[0] / off[0] - 1.0) * 100.0,
        (on[1] / off[1] - 1.0) * 100.0
    );
}
