//! CPU per streamed answer of each provider's receive path: the same 500-token answer (500 text
//! deltas, then usage and the end) as OpenAI Chat Completions, the OpenAI Responses API,
//! Gemini's OpenAI-compatible endpoint and Anthropic's Messages API send it, from raw bytes
//! through SSE parsing to `ModelDelta`s, on one thread. A 500-token answer a second is a fast model: the figures say
//! what share of a core its parsing takes.
//!
//! `cargo bench --bench provider_parsers` (about 10 s). Without `--bench` (as under
//! `cargo test --all-targets`) it runs each stream once as a smoke test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agui_lambda::testing::model::anthropic;
use agui_lambda::testing::model::openai::{delta_stream, responses_delta_stream};
use agui_lambda::testing::model::{DeltaStream, ModelDelta};
use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures_util::StreamExt;
use std::convert::Infallible;
use std::hint::black_box;
use std::time::Duration;

mod support;

const TOKENS: usize = 500;

fn word(i: usize) -> &'static str {
    support::WORDS[i % support::WORDS.len()]
}

/// Chat Completions as api.openai.com streams it, one token a chunk.
fn chat_completions() -> Vec<Bytes> {
    let mut chunks: Vec<Bytes> = (0..TOKENS)
        .map(|i| {
            Bytes::from(format!(
                "data: {{\"id\":\"chatcmpl-BZ3k9vQmR2xYt7LpW4nH8sJd1fGa\",\"object\":\"chat.completion.chunk\",\"created\":1767225600,\"model\":\"gpt-4o-mini-2024-07-18\",\"service_tier\":\"default\",\"system_fingerprint\":\"fp_34a54ae93c\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{}\"}},\"logprobs\":null,\"finish_reason\":null}}],\"usage\":null,\"obfuscation\":\"xT3q\"}}\n\n",
                word(i)
            ))
        })
        .collect();
    chunks.push(Bytes::from_static(b"data: {\"id\":\"chatcmpl-BZ3k9vQmR2xYt7LpW4nH8sJd1fGa\",\"object\":\"chat.completion.chunk\",\"created\":1767225600,\"model\":\"gpt-4o-mini-2024-07-18\",\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\"}],\"usage\":null}\n\ndata: {\"id\":\"chatcmpl-BZ3k9vQmR2xYt7LpW4nH8sJd1fGa\",\"object\":\"chat.completion.chunk\",\"created\":1767225600,\"model\":\"gpt-4o-mini-2024-07-18\",\"choices\":[],\"usage\":{\"prompt_tokens\":25,\"completion_tokens\":500,\"total_tokens\":525}}\n\ndata: [DONE]\n\n"));
    chunks
}

/// The Responses API as api.openai.com streams it: named events with sequence numbers, a
/// message item around the text deltas.
fn responses() -> Vec<Bytes> {
    let mut chunks = vec![Bytes::from_static(b"event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_68c1f0a2b3d4e5f6a7b8c9d0e1f2a3b4\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"gpt-5-mini-2025-08-07\",\"output\":[]}}\n\nevent: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":1,\"output_index\":0,\"item\":{\"id\":\"msg_68c1f0a2b3d4e5f6a7b8c9d0e1f2a3b4\",\"type\":\"message\",\"status\":\"in_progress\",\"content\":[],\"role\":\"assistant\"}}\n\n")];
    chunks.extend((0..TOKENS).map(|i| {
        Bytes::from(format!(
            "event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"sequence_number\":{},\"item_id\":\"msg_68c1f0a2b3d4e5f6a7b8c9d0e1f2a3b4\",\"output_index\":0,\"content_index\":0,\"delta\":\"{}\",\"logprobs\":[],\"obfuscation\":\"xT3q\"}}\n\n",
            i + 2,
            word(i)
        ))
    }));
    chunks.push(Bytes::from_static(b"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":503,\"response\":{\"id\":\"resp_68c1f0a2b3d4e5f6a7b8c9d0e1f2a3b4\",\"status\":\"completed\",\"usage\":{\"input_tokens\":25,\"input_tokens_details\":{\"cached_tokens\":0},\"output_tokens\":500,\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":525}}}\n\n"));
    chunks
}

/// Gemini's OpenAI-compatible endpoint: chat completion chunks of its own shape.
fn gemini() -> Vec<Bytes> {
    let mut chunks: Vec<Bytes> = (0..TOKENS)
        .map(|i| {
            Bytes::from(format!(
                "data: {{\"choices\":[{{\"delta\":{{\"content\":\"{}\",\"role\":\"assistant\"}},\"index\":0}}],\"created\":1767225600,\"id\":\"x1jTaN6PGZWmz7IP8uvR4Qo\",\"model\":\"gemini-3-flash-preview\",\"object\":\"chat.completion.chunk\"}}\n\n",
                word(i)
            ))
        })
        .collect();
    chunks.push(Bytes::from_static(b"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"},\"finish_reason\":\"stop\",\"index\":0}],\"created\":1767225600,\"id\":\"x1jTaN6PGZWmz7IP8uvR4Qo\",\"model\":\"gemini-3-flash-preview\",\"object\":\"chat.completion.chunk\",\"usage\":{\"completion_tokens\":500,\"prompt_tokens\":25,\"total_tokens\":525}}\n\ndata: [DONE]\n\n"));
    chunks
}

/// Anthropic's Messages API as api.anthropic.com streams it: named events, a text block of
/// `text_delta`s after a `ping`, usage with the cache's parts.
fn anthropic_messages() -> Vec<Bytes> {
    let mut chunks = vec![Bytes::from_static(b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01XFDUDYJgAACzvnptvVoYEL\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5-20250929\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":25,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"cache_creation\":{\"ephemeral_5m_input_tokens\":0,\"ephemeral_1h_input_tokens\":0},\"output_tokens\":1,\"service_tier\":\"standard\"}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: ping\ndata: {\"type\": \"ping\"}\n\n")];
    chunks.extend((0..TOKENS).map(|i| {
        Bytes::from(format!(
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{}\"}}}}\n\n",
            word(i)
        ))
    }));
    chunks.push(Bytes::from_static(b"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":500}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
    chunks
}

/// Every delta of one answer, counted; the stream must end cleanly with all its text.
fn drain(runtime: &tokio::runtime::Runtime, stream: DeltaStream) -> usize {
    runtime.block_on(async {
        let mut texts = 0;
        let mut stream = stream;
        while let Some(delta) = stream.next().await {
            if let ModelDelta::Text(text) = delta.unwrap() {
                texts += 1;
                black_box(text);
            }
        }
        texts
    })
}

fn source(
    chunks: &[Bytes],
) -> impl futures_util::Stream<Item = Result<Bytes, Infallible>> + Send + 'static {
    futures_util::stream::iter(chunks.iter().cloned().map(Ok).collect::<Vec<_>>())
}

fn parsers(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let streams = [
        ("openai_chat_completions", chat_completions()),
        ("openai_responses", responses()),
        ("gemini_openai_compatible", gemini()),
        ("anthropic_messages", anthropic_messages()),
    ];
    let mut group = c.benchmark_group("parse_500_token_answer");
    group.throughput(Throughput::Elements(1));
    for (name, chunks) in &streams {
        let parse = |chunks: &[Bytes]| match *name {
            "openai_responses" => responses_delta_stream(source(chunks), "gpt-5-mini"),
            "anthropic_messages" => anthropic::delta_stream(source(chunks)),
            _ => delta_stream(source(chunks)),
        };
        assert_eq!(drain(&runtime, parse(chunks)), TOKENS, "{name}");
        group.bench_function(*name, |b| b.iter(|| drain(&runtime, parse(chunks))));
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
}

criterion_group! {
    name = benches;
    config = config();
    targets = parsers
}
criterion_main!(benches);
