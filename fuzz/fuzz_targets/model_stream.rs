//! Arbitrary bytes as an OpenAI-style SSE response body, received in fuzzer-chosen pieces.
//!
//! Input layout: byte 0 = number of cut points `k` (low 4 bits), then `k` little-endian u16
//! cut offsets, then the stream bytes. Offsets are taken modulo the stream length + 1.
//!
//! Properties:
//! - `delta_stream` never panics;
//! - it yields the same deltas (and the same error, at the same place) whether the bytes arrive
//!   in one piece or cut at the chosen points: split points never matter;
//! - it yields the same as feeding the stream's `data:` payloads to `ChunkParser::push` one event
//!   at a time (a reference SSE line splitter below mirrors the event-stream framing);
//! - provider invariants the agent relies on: each tool call index is started at most once, its
//!   arguments never precede its start, and a stream that ends without error carries exactly one
//!   `Finish`.
#![no_main]

use agui_lambda::testing::model::openai::{ChunkParser, delta_stream};
use agui_lambda::testing::model::{ModelDelta, ModelError, ToolCallAccumulator};
use bytes::Bytes;
use futures_util::StreamExt;
use libfuzzer_sys::fuzz_target;
use std::collections::HashSet;
use std::sync::OnceLock;

type Outcome = Vec<Result<ModelDelta, ModelError>>;

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a current-thread runtime")
    })
}

fn through_delta_stream(chunks: Vec<Bytes>) -> Outcome {
    runtime().block_on(async {
        let source = futures_util::stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>));
        delta_stream(source).collect().await
    })
}

/// The `data` of each SSE event, framed as the `eventsource-stream` crate frames them: lines end
/// at CRLF, CR or LF; a CR at the very end may still become CRLF so the line is not complete; a
/// trailing line without terminator is never complete; a leading BOM is dropped; an empty line
/// dispatches the event when its data is not empty. Returns the events and whether the bytes were
/// not valid UTF-8 (the byte stream then ends in an error after the valid prefix's events).
fn sse_events(bytes: &[u8]) -> (Vec<String>, bool) {
    let (text, bad_utf8) = match std::str::from_utf8(bytes) {
        Ok(text) => (text, false),
        Err(err) => (
            std::str::from_utf8(&bytes[..err.valid_up_to()]).unwrap_or_default(),
            true,
        ),
    };
    // The main crate drops every leading byte-order mark before framing (see
    // `model::openai::without_leading_bom`).
    let mut rest = text.trim_start_matches('\u{feff}');
    let mut events = Vec::new();
    let mut data = String::new();
    loop {
        let Some(end) = rest.find(['\r', '\n']) else {
            break;
        };
        let line = &rest[..end];
        let after = &rest[end..];
        let eol_len = if after.starts_with("\r\n") {
            2
        } else if after == "\r" {
            break; // may still become CRLF
        } else {
            1
        };
        rest = &after[eol_len..];
        if line.is_empty() {
            if !data.is_empty() {
                if data.ends_with('\n') {
                    data.pop();
                }
                events.push(std::mem::take(&mut data));
            }
            continue;
        }
        if line.starts_with(':') {
            continue; // comment
        }
        let (name, value) = match line.split_once(':') {
            Some((name, value)) => (name, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        if name == "data" {
            data.push_str(value);
            data.push('\n');
        }
    }
    (events, bad_utf8)
}

/// `ChunkParser` fed one event payload at a time, ending as `delta_stream` ends.
fn through_chunk_parser(bytes: &[u8]) -> Outcome {
    let (events, bad_utf8) = sse_events(bytes);
    let mut parser = ChunkParser::new();
    let mut out = Vec::new();
    let mut results = Outcome::new();
    for data in &events {
        let pushed = parser.push(data, &mut out);
        results.extend(out.drain(..).map(Ok));
        if let Err(err) = pushed {
            results.push(Err(err));
            return results;
        }
        if parser.is_done() {
            break;
        }
    }
    if bad_utf8 && !parser.is_done() {
        results.push(Err(ModelError::Stream));
        return results;
    }
    let ended = parser.end(&mut out);
    results.extend(out.drain(..).map(Ok));
    if let Err(err) = ended {
        results.push(Err(err));
    }
    results
}

fn check_invariants(outcome: &Outcome) {
    let mut started = HashSet::new();
    let mut finishes = 0;
    let mut identified = false;
    let mut accumulator = ToolCallAccumulator::default();
    for (position, item) in outcome.iter().enumerate() {
        match item {
            Ok(delta) => {
                match delta {
                    ModelDelta::ToolCallStart { index, .. } => {
                        assert!(started.insert(*index), "tool call {index} started twice");
                    }
                    ModelDelta::ToolCallArgs { index, delta } => {
                        assert!(started.contains(index), "arguments before start of {index}");
                        assert!(!delta.is_empty(), "empty argument delta");
                    }
                    ModelDelta::Text(text) | ModelDelta::Reasoning(text) => {
                        assert!(!text.is_empty(), "empty text delta");
                    }
                    ModelDelta::Finish(_) => finishes += 1,
                    ModelDelta::ResponseId(id) => {
                        assert!(!id.is_empty(), "empty response id");
                        assert!(!identified, "the response id is passed on once");
                        identified = true;
                    }
                    ModelDelta::Usage(_) => {}
                    ModelDelta::ToolCallArtefact { index, value } => {
                        assert!(started.contains(index), "artefact before start of {index}");
                        assert!(!value.is_empty(), "empty tool call artefact");
                    }
                    ModelDelta::ReasoningSignature(_) | ModelDelta::RedactedReasoning(_) => {
                        panic!("Chat Completions carries no signed or redacted reasoning")
                    }
                    ModelDelta::ReasoningItem(_) | ModelDelta::MessageArtefact(_) => {
                        panic!("Chat Completions carries no Responses API items")
                    }
                    ModelDelta::Served(_) => {
                        panic!("the parser never says which model served: the resilience layer does")
                    }
                }
                accumulator.apply(delta);
            }
            Err(_) => assert_eq!(position, outcome.len() - 1, "an error is always last"),
        }
    }
    assert!(finishes <= 1, "{finishes} finish deltas");
    let ended_cleanly = !matches!(outcome.last(), Some(Err(_)));
    if ended_cleanly {
        assert_eq!(finishes, 1, "a stream that ends cleanly has exactly one finish");
    }
    assert_eq!(accumulator.into_calls().len(), started.len());
}

fuzz_target!(|data: &[u8]| {
    let Some((&count, rest)) = data.split_first() else {
        return;
    };
    let count = usize::from(count & 0x0f);
    if rest.len() < count * 2 {
        return;
    }
    let (header, stream) = rest.split_at(count * 2);
    let mut cuts: Vec<usize> = header
        .chunks_exact(2)
        .map(|pair| usize::from(u16::from_le_bytes([pair[0], pair[1]])) % (stream.len() + 1))
        .collect();
    cuts.sort_unstable();

    let whole = through_delta_stream(vec![Bytes::copy_from_slice(stream)]);
    check_invariants(&whole);

    let mut chunks = Vec::with_capacity(cuts.len() + 1);
    let mut last = 0;
    for cut in cuts.into_iter().chain(std::iter::once(stream.len())) {
        // Empty pieces too: a transport may deliver them.
        chunks.push(Bytes::copy_from_slice(&stream[last..cut]));
        last = cut;
    }
    let split = through_delta_stream(chunks);
    assert_eq!(whole, split, "the deltas depend on where the bytes were split");

    // Byte by byte, the hardest split, for short streams.
    if stream.len() <= 512 {
        let bytewise = through_delta_stream(
            stream
                .iter()
                .map(|byte| Bytes::copy_from_slice(std::slice::from_ref(byte)))
                .collect(),
        );
        assert_eq!(whole, bytewise, "the deltas differ when the bytes arrive one at a time");
    }

    let reference = through_chunk_parser(stream);
    assert_eq!(whole, reference, "delta_stream and event-by-event ChunkParser disagree");
});
