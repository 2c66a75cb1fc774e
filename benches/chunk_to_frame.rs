//! Delay from a model chunk received to its SSE frame written, measured in-process.
//!
//! A model provider whose byte stream is a channel stands in for reqwest's `bytes_stream()`: the
//! bench timestamps each OpenAI chunk (one SSE event of `chat.completion.chunk`, as one network
//! read) when it hands it over, and timestamps the `TEXT_MESSAGE_CONTENT` frame when
//! `api::stream::frames` yields it to the response body (the exact stream the HTTP handler writes out).
//! The path in between is the production one: `delta_stream` (eventsource parsing +
//! `ChunkParser`) → the agent's run loop → its event channel → `into_batches` → `api::stream::frames` →
//! `encode_event`. Runs on a 2-worker multi-thread tokio runtime, like the server.
//!
//! Two regimes: back-to-back (the next chunk is sent as soon as the previous frame is out: pure
//! pipeline latency with hot threads) and paced (one chunk every 5 ms, like a fast model: the
//! runtime's threads park between chunks, so wake-up costs count, as they do in production).
//!
//! `cargo bench --bench chunk_to_frame` (about 10 s). Without `--bench` (as under
//! `cargo test --all-targets`) it runs a short smoke pass instead.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agui_lambda::testing::auth::Principal;
use agui_lambda::testing::model::openai::delta_stream;
use agui_lambda::testing::model::{DeltaStream, ModelError, ModelProvider, ModelRequest};
use async_trait::async_trait;
use bytes::Bytes;
use futures_util::StreamExt;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

mod support;

/// A model whose wire bytes come from a channel, parsed by the real OpenAI receive path.
struct ChannelModel {
    bytes: Mutex<Option<mpsc::Receiver<Bytes>>>,
}

#[async_trait]
impl ModelProvider for ChannelModel {
    async fn stream(&self, _request: &ModelRequest) -> Result<DeltaStream, ModelError> {
        let mut receiver = self
            .bytes
            .lock()
            .unwrap()
            .take()
            .ok_or(ModelError::ScriptExhausted)?;
        let source = async_stream::stream! {
            while let Some(bytes) = receiver.recv().await {
                yield Ok::<_, Infallible>(bytes);
            }
        };
        Ok(delta_stream(source))
    }

    fn describe(&self) -> String {
        "channel-fed OpenAI byte stream".to_owned()
    }

    fn identity(&self) -> agui_lambda::testing::model::ModelIdentity {
        agui_lambda::testing::model::ModelIdentity {
            provider: "openai".to_owned(),
            model: "bench".to_owned(),
        }
    }
}

fn text_chunk(i: usize) -> Bytes {
    const WORDS: [&str; 8] = [
        " the", " server", " streams", " every", " token", " to", " the", " browser",
    ];
    Bytes::from(format!(
        "data: {{\"id\":\"chatcmpl-BZ3k9vQmR2xYt7LpW4nH8sJd1fGa\",\"object\":\"chat.completion.chunk\",\"created\":1767225600,\"model\":\"gpt-4o-mini-2024-07-18\",\"system_fingerprint\":\"fp_34a54ae93c\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{}\"}},\"logprobs\":null,\"finish_reason\":null}}],\"usage\":null}}\n\n",
        WORDS[i % WORDS.len()]
    ))
}

const END: &[u8] = b"data: {\"id\":\"chatcmpl-BZ3k9vQmR2xYt7LpW4nH8sJd1fGa\",\"object\":\"chat.completion.chunk\",\"created\":1767225600,\"model\":\"gpt-4o-mini-2024-07-18\",\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\"}],\"usage\":null}\n\ndata: [DONE]\n\n";

/// Streams `chunks` text chunks through one run; returns each chunk's delay in microseconds.
async fn measure(chunks: usize, pace: Option<Duration>) -> Vec<f64> {
    let (bytes_tx, bytes_rx) = mpsc::channel::<Bytes>(16);
    let agent = support::agent(Arc::new(ChannelModel {
        bytes: Mutex::new(Some(bytes_rx)),
    }));
    let run = agent
        .start(
            Principal::anonymous(),
            support::run_input(),
            tokio::time::Instant::now() + Duration::from_secs(120),
        )
        .await
        .unwrap();

    // The response-body side, on its own task as under hyper: reports when each content frame
    // is out.
    let (written_tx, mut written_rx) = mpsc::unbounded_channel::<Instant>();
    let writer = tokio::spawn(async move {
        let mut frames = Box::pin(agui_lambda::testing::api::frames(
            run.into_batches(),
            Duration::from_secs(15),
            agui_lambda::testing::dialects::AguiEncoder,
        ));
        let mut last = None;
        while let Some(frame) = frames.next().await {
            // Ready events share a body chunk: count the content frames inside it.
            let now = Instant::now();
            let needle = b"data: {\"type\":\"TEXT_MESSAGE_CONTENT\"";
            for _ in frame
                .windows(needle.len())
                .filter(|window| window == needle)
            {
                let _ = written_tx.send(now);
            }
            last = Some(frame);
        }
        last
    });

    let mut delays = Vec::with_capacity(chunks);
    for i in 0..chunks {
        if let Some(pace) = pace {
            tokio::time::sleep(pace).await;
        }
        let chunk = text_chunk(i);
        let received = Instant::now();
        bytes_tx.send(chunk).await.unwrap();
        let written = written_rx.recv().await.unwrap();
        delays.push(written.duration_since(received).as_secs_f64() * 1e6);
    }
    bytes_tx.send(Bytes::from_static(END)).await.unwrap();
    drop(bytes_tx);
    let last = writer.await.unwrap().unwrap();
    let finished = b"data: {\"type\":\"RUN_FINISHED\"";
    assert!(
        last.windows(finished.len())
            .any(|window| window == finished)
    );
    delays
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn report(name: &str, mut delays: Vec<f64>) {
    delays.sort_by(f64::total_cmp);
    let mean = delays.iter().sum::<f64>() / delays.len() as f64;
    println!(
        "chunk_to_frame/{name:<14} n={:<5} p50 {:>7.1} µs  p90 {:>7.1} µs  p99 {:>7.1} µs  max {:>8.1} µs  mean {:>7.1} µs",
        delays.len(),
        percentile(&delays, 50.0),
        percentile(&delays, 90.0),
        percentile(&delays, 99.0),
        delays[delays.len() - 1],
        mean,
    );
}

fn main() {
    let full = std::env::args().any(|arg| arg == "--bench");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (warm_up, back_to_back, paced) = if full {
        (200, 2_000, 1_000)
    } else {
        (5, 20, 5)
    };
    runtime.block_on(async {
        // Warm-up run: first-touch allocations, lazy statics, thread wake-up paths.
        let _ = measure(warm_up, None).await;
        report("back_to_back", measure(back_to_back, None).await);
        report(
            "paced_5ms",
            measure(paced, Some(Duration::from_millis(5))).await,
        );
    });
}
