//! Criterion benches for the per-token hot paths: OpenAI chunk parsing, AG-UI event encoding,
//! and the whole in-process pipeline (scripted model → agent → memory store → SSE frames).
//!
//! `cargo bench --bench hot_paths` (about a minute on 2 cores). Per-event figures are the
//! `thrpt` lines of the groups with `Throughput::Elements`: criterion prints elements per
//! second, so 1 / thrpt is the time per chunk or per streamed event.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agui_lambda::testing::agent::Agent;
use agui_lambda::testing::auth::Principal;
use agui_lambda::testing::model::ModelDelta;
use agui_lambda::testing::model::openai::{ChunkParser, delta_stream};
use agui_lambda::testing::model::scripted::ScriptedModel;
use agui_lambda::testing::protocol::events::Event;
use agui_lambda::testing::protocol::{MessageId, ToolCallId, sse};
use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures_util::StreamExt;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod support;

/// What OpenAI sends for one text token with `stream_options.include_usage` on.
const TEXT_CHUNK: &str = r#"{"id":"chatcmpl-BZ3k9vQmR2xYt7LpW4nH8sJd1fGa","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_34a54ae93c","choices":[{"index":0,"delta":{"content":" streaming"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"xT3q"}"#;

/// The first fragment of a tool call: id and name, empty arguments.
const TOOL_START_CHUNK: &str = r#"{"id":"chatcmpl-BZ3k9vQmR2xYt7LpW4nH8sJd1fGa","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_34a54ae93c","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_Qw8rT2mZk1VbN5xLp3Hs7Yd","type":"function","function":{"name":"get_current_time","arguments":""}}],"refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}"#;

/// A later fragment: a few characters of the arguments' JSON.
const TOOL_ARGS_CHUNK: &str = r#"{"id":"chatcmpl-BZ3k9vQmR2xYt7LpW4nH8sJd1fGa","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_34a54ae93c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"zone\":\"Eu"}}]},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"k9"}"#;

const STREAM_CHUNKS: usize = 200;
const PIPELINE_DELTAS: usize = 2_000;

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
}

fn chunk_parsing(c: &mut Criterion) {
    let mut group = c.benchmark_group("chunk_parser_push");
    group.throughput(Throughput::Elements(1));
    group.bench_function("text_delta", |b| {
        let mut parser = ChunkParser::new();
        let mut out = Vec::with_capacity(4);
        b.iter(|| {
            parser.push(black_box(TEXT_CHUNK), &mut out).unwrap();
            black_box(&out);
            out.clear();
        });
    });
    group.bench_function("tool_call_args", |b| {
        let mut parser = ChunkParser::new();
        let mut out = Vec::with_capacity(4);
        parser.push(TOOL_START_CHUNK, &mut out).unwrap();
        // The stream's first chunk also carries the response id.
        assert!(
            out.iter()
                .any(|delta| matches!(delta, ModelDelta::ToolCallStart { .. }))
        );
        out.clear();
        b.iter(|| {
            parser.push(black_box(TOOL_ARGS_CHUNK), &mut out).unwrap();
            black_box(&out);
            out.clear();
        });
    });
    group.finish();
}

/// A recorded completion as it comes off the socket: one SSE event per network read.
fn recorded_stream() -> Vec<Bytes> {
    let mut frames: Vec<Bytes> = (0..STREAM_CHUNKS - 2)
        .map(|i| {
            let chunk = TEXT_CHUNK.replace(" streaming", support::WORDS[i % support::WORDS.len()]);
            Bytes::from(format!("data: {chunk}\n\n"))
        })
        .collect();
    frames.push(Bytes::from_static(
        br#"data: {"id":"chatcmpl-BZ3k9vQmR2xYt7LpW4nH8sJd1fGa","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}

"#,
    ));
    frames.push(Bytes::from_static(
        br#"data: {"id":"chatcmpl-BZ3k9vQmR2xYt7LpW4nH8sJd1fGa","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-mini-2024-07-18","choices":[],"usage":{"prompt_tokens":25,"completion_tokens":198,"total_tokens":223}}

data: [DONE]

"#,
    ));
    frames
}

fn stream_parsing(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let frames = recorded_stream();
    let parse_all = |frames: Vec<Bytes>| {
        runtime.block_on(async {
            let source =
                futures_util::stream::iter(frames.into_iter().map(Ok::<_, std::io::Error>));
            let mut deltas = delta_stream(source);
            let mut count = 0usize;
            while let Some(delta) = deltas.next().await {
                black_box(delta.unwrap());
                count += 1;
            }
            count
        })
    };
    // The response id, 198 text deltas, the finish and the usage.
    assert_eq!(parse_all(frames.clone()), STREAM_CHUNKS + 1);

    let mut group = c.benchmark_group("delta_stream");
    group.throughput(Throughput::Elements(STREAM_CHUNKS as u64));
    group.bench_function("recorded_200_chunks", |b| {
        b.iter_batched(
            || frames.clone(),
            &parse_all,
            criterion::BatchSize::SmallInput,
        );
    });
    group.finish();
}

fn event_encoding(c: &mut Criterion) {
    let text = Event::TextMessageContent {
        message_id: MessageId::generate(),
        delta: " the browser as an".to_owned(),
    };
    let args = Event::ToolCallArgs {
        tool_call_id: ToolCallId::parse("call_Qw8rT2mZk1VbN5xLp3Hs7Yd", 128).unwrap(),
        delta: "zone\":\"Europe/Pa".to_owned(),
    };
    let timestamp = sse::now_ms();
    let mut group = c.benchmark_group("encode_event");
    group.throughput(Throughput::Elements(1));
    group.bench_function("text_message_content", |b| {
        b.iter(|| sse::encode_event(black_box(&text), black_box(timestamp)));
    });
    group.bench_function("tool_call_args", |b| {
        b.iter(|| sse::encode_event(black_box(&args), black_box(timestamp)));
    });
    group.finish();
}

/// One whole run through the same path as the HTTP handler: `Agent::start`, `into_batches`,
/// `api::stream::frames` (which calls `encode_event` with a fresh timestamp per event). Returns the
/// number of SSE events (body chunks hold a batch of them) and their total size.
async fn one_run(agent: &Agent) -> (usize, usize) {
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
    let (mut count, mut bytes) = (0, 0);
    while let Some(chunk) = frames.next().await {
        count += chunk
            .windows(6)
            .filter(|window| *window == b"data: ")
            .count();
        bytes += chunk.len();
        black_box(chunk);
    }
    (count, bytes)
}

fn new_agent(model: &ScriptedModel) -> Agent {
    support::agent(Arc::new(model.clone()))
}

fn pipeline(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let turn = support::text_turn(PIPELINE_DELTAS);
    let model = ScriptedModel::new([turn.clone()]);
    let (events, bytes) = runtime.block_on(one_run(&new_agent(&model)));
    // RUN_STARTED, STEP_STARTED, TEXT_MESSAGE_START, 2,000 × CONTENT, TEXT_MESSAGE_END,
    // STEP_FINISHED, RUN_FINISHED.
    assert_eq!(events, PIPELINE_DELTAS + 6);
    eprintln!(
        "pipeline: {events} events, {bytes} bytes of SSE per run ({} B/event)",
        bytes / events
    );

    let mut group = c.benchmark_group("pipeline");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(4));
    group.throughput(Throughput::Elements(events as u64));
    group.bench_function("scripted_2000_token_run_per_event", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                // A fresh store and script per run, outside the timing.
                let model = ScriptedModel::new([turn.clone()]);
                let agent = new_agent(&model);
                let began = Instant::now();
                let (count, _) = runtime.block_on(one_run(&agent));
                total += began.elapsed();
                assert_eq!(count, events);
                drop(agent);
            }
            total
        });
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = config();
    targets = chunk_parsing, stream_parsing, event_encoding, pipeline
}
criterion_main!(benches);
