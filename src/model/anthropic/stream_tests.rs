use super::*;
use crate::model::anthropic::delta_stream;
use crate::model::{AssembledCall, ToolCallAccumulator};
use bytes::Bytes;
use futures_util::StreamExt;
use proptest::prelude::*;

/// An answer with interleaved thinking as api.anthropic.com streams it: a `ping`, a thinking
/// block and its signature, a redacted block, text (with multi-byte characters), two parallel
/// tool uses, usage with cache reads and writes.
const STREAM: &str = concat!(
    "event: message_start\n",
    "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01XFDUDYJgAACzvnptvVoYEL\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":25,\"cache_creation_input_tokens\":1000,\"cache_read_input_tokens\":2000,\"output_tokens\":1}}}\n\n",
    "event: ping\n",
    "data: {\"type\": \"ping\"}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"The user wants \"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"the time.\\n\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds+/9QIk==\"}}\n\n",
    "event: content_block_stop\n",
    "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"redacted_thinking\",\"data\":\"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP\"}}\n\n",
    "event: content_block_stop\n",
    "data: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"text_delta\",\"text\":\"Checking \\u00e9t\u{e9} \"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"text_delta\",\"text\":\"北京.\"}}\n\n",
    "event: content_block_stop\n",
    "data: {\"type\":\"content_block_stop\",\"index\":2}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_01T1x1fJ34qAmk2tNTrN7Up6\",\"name\":\"get_current_time\",\"input\":{}}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"timezone\\\": \\\"Eu\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"rope/Paris\\\"}\"}}\n\n",
    "event: content_block_stop\n",
    "data: {\"type\":\"content_block_stop\",\"index\":3}\n\n",
    "event: ping\n",
    "data: {\"type\": \"ping\"}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":4,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_02\",\"name\":\"search_local_files\",\"input\":{}}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":4,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"keyword\\\":\\\"report\\\"}\"}}\n\n",
    "event: content_block_stop\n",
    "data: {\"type\":\"content_block_stop\",\"index\":4}\n\n",
    "event: message_delta\n",
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":89,\"output_tokens_details\":{\"thinking_tokens\":40}}}\n\n",
    "event: message_stop\n",
    "data: {\"type\":\"message_stop\"}\n\n",
);

fn run(chunks: Vec<Bytes>) -> Vec<Result<ModelDelta, ModelError>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let source = futures_util::stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>));
        delta_stream(source).collect().await
    })
}

fn deltas(stream: &str) -> Vec<ModelDelta> {
    run(vec![Bytes::from(stream.to_owned())])
        .into_iter()
        .map(Result::unwrap)
        .collect()
}

/// What a turn assembles from the deltas: text, reasoning, signatures, redacted data, calls.
fn assembled(
    deltas: &[ModelDelta],
) -> (
    String,
    String,
    Vec<String>,
    Vec<Vec<u8>>,
    Vec<AssembledCall>,
) {
    let (mut text, mut reasoning, mut signatures, mut redacted) =
        (String::new(), String::new(), Vec::new(), Vec::new());
    let mut calls = ToolCallAccumulator::default();
    for delta in deltas {
        match delta {
            ModelDelta::Text(piece) => text.push_str(piece),
            ModelDelta::Reasoning(piece) => reasoning.push_str(piece),
            ModelDelta::ReasoningSignature(signature) => signatures.push(signature.clone()),
            ModelDelta::RedactedReasoning(bytes) => redacted.push(bytes.clone()),
            _ => {}
        }
        calls.apply(delta);
    }
    (text, reasoning, signatures, redacted, calls.into_calls())
}

#[test]
fn every_event_becomes_its_delta_in_order() {
    assert_eq!(
        deltas(STREAM),
        vec![
            ModelDelta::ResponseId("msg_01XFDUDYJgAACzvnptvVoYEL".into()),
            ModelDelta::Reasoning("The user wants ".into()),
            ModelDelta::Reasoning("the time.\n".into()),
            ModelDelta::ReasoningSignature(
                "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds+/9QIk==".into()
            ),
            ModelDelta::RedactedReasoning(
                b"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP".to_vec()
            ),
            ModelDelta::Text("Checking été ".into()),
            ModelDelta::Text("北京.".into()),
            ModelDelta::ToolCallStart {
                index: 3,
                id: Some("toolu_01T1x1fJ34qAmk2tNTrN7Up6".into()),
                name: "get_current_time".into(),
            },
            ModelDelta::ToolCallArgs {
                index: 3,
                delta: "{\"timezone\": \"Eu".into(),
            },
            ModelDelta::ToolCallArgs {
                index: 3,
                delta: "rope/Paris\"}".into(),
            },
            ModelDelta::ToolCallStart {
                index: 4,
                id: Some("toolu_02".into()),
                name: "search_local_files".into(),
            },
            ModelDelta::ToolCallArgs {
                index: 4,
                delta: "{\"keyword\":\"report\"}".into(),
            },
            // Input 25 + cache reads 2000 + cache writes 1000: every prompt token.
            ModelDelta::Usage(Usage {
                input_tokens: 3_025,
                output_tokens: 89,
                reasoning_tokens: Some(40),
                cached_input_tokens: Some(2_000),
                cache_write_input_tokens: Some(1_000),
            }),
            ModelDelta::Finish(FinishReason::ToolCalls),
        ]
    );
}

proptest! {
    #[test]
    fn any_split_of_the_bytes_gives_the_same_answer(
        cuts in proptest::collection::vec(0usize..STREAM.len() + 3, 0..40),
        bom in proptest::bool::ANY,
    ) {
        let owned = if bom { [b"\xEF\xBB\xBF".as_slice(), STREAM.as_bytes()].concat() } else { STREAM.as_bytes().to_vec() };
        let bytes = owned.as_slice();
        let mut cuts: Vec<usize> = cuts.into_iter().filter(|cut| *cut <= bytes.len()).collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut chunks = Vec::new();
        let mut last = 0;
        for cut in cuts.into_iter().chain(std::iter::once(bytes.len())) {
            chunks.push(Bytes::copy_from_slice(&bytes[last..cut]));
            last = cut;
        }
        let split: Vec<ModelDelta> = run(chunks).into_iter().map(Result::unwrap).collect();
        prop_assert_eq!(assembled(&split), assembled(&deltas(STREAM)));
        prop_assert_eq!(split.last(), Some(&ModelDelta::Finish(FinishReason::ToolCalls)));
    }
}

fn message(events: &[&str]) -> String {
    let mut stream = String::from(
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n",
    );
    for event in events {
        stream.push_str("data: ");
        stream.push_str(event);
        stream.push_str("\n\n");
    }
    stream
}

#[test]
fn stop_reasons_map_to_finish_reasons() {
    for (reason, finish) in [
        ("end_turn", FinishReason::Stop),
        ("stop_sequence", FinishReason::Stop),
        ("tool_use", FinishReason::ToolCalls),
        ("max_tokens", FinishReason::Length),
        ("model_context_window_exceeded", FinishReason::Length),
        ("refusal", FinishReason::ContentFilter),
        ("pause_turn", FinishReason::Other("pause_turn".into())),
    ] {
        let stream = message(&[
            &format!(
                "{{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"{reason}\"}},\"usage\":{{\"output_tokens\":3}}}}"
            ),
            "{\"type\":\"message_stop\"}",
        ]);
        let deltas = deltas(&stream);
        assert_eq!(deltas.last(), Some(&ModelDelta::Finish(finish)), "{reason}");
        // Counts absent from the stream stay absent: no cache parts without caching.
        assert_eq!(
            deltas[deltas.len() - 2],
            ModelDelta::Usage(Usage {
                input_tokens: 10,
                output_tokens: 3,
                ..Usage::default()
            })
        );
    }
}

#[test]
fn an_overload_inside_the_stream_is_a_529_the_retry_layer_retries() {
    let stream = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n",
        "event: ping\ndata: {\"type\":\"ping\"}\n\n",
        "event: error\n",
        "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
    );
    let results = run(vec![Bytes::from_static(stream.as_bytes())]);
    assert_eq!(results[0], Ok(ModelDelta::ResponseId("msg_1".into())));
    let error = results[1].clone().unwrap_err();
    assert_eq!(
        error,
        ModelError::Status {
            status: 529,
            refusal: Some(Refusal::new(Some("overloaded_error".into()), "Overloaded")),
            retry: RetryHint::default(),
        }
    );
    assert!(error.is_retryable());
    assert_eq!(results.len(), 2, "nothing after the error");
    // An error whose message says the prompt is too long is the overflow signal.
    let overflow = run(vec![Bytes::from_static(
        b"data: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: 210000 tokens > 200000 maximum\"}}\n\n",
    )]);
    let Err(ModelError::ContextOverflow(refusal)) = &overflow[0] else {
        panic!("{overflow:?}")
    };
    assert_eq!(refusal.window(), Some(200_000));
}

#[test]
fn a_stream_without_message_stop_is_incomplete_and_a_broken_one_a_stream_error() {
    let cut = message(&[
        "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}",
        "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}",
    ]);
    let results = run(vec![Bytes::from(cut.clone())]);
    assert_eq!(results.last(), Some(&Err(ModelError::Incomplete)));
    assert!(results.contains(&Ok(ModelDelta::Text("Hel".into()))));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let broken: Vec<Result<ModelDelta, ModelError>> = runtime.block_on(async {
        let source = futures_util::stream::iter(vec![
            Ok(Bytes::from(cut)),
            Err(std::io::Error::other("reset")),
        ]);
        delta_stream(source).collect().await
    });
    assert_eq!(broken.last(), Some(&Err(ModelError::Stream)));
    let garbage = run(vec![Bytes::from_static(b"data: {not json\n\n")]);
    assert_eq!(garbage, vec![Err(ModelError::Malformed)]);
}

#[test]
fn a_tool_input_given_whole_on_the_start_and_unknown_blocks_are_handled() {
    let stream = message(&[
        // A server tool's blocks: not calls of ours.
        "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_1\",\"name\":\"web_search\",\"input\":{}}}",
        "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"query\\\":\\\"x\\\"}\"}}",
        "{\"type\":\"content_block_stop\",\"index\":0}",
        "{\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}",
        "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"citations_delta\",\"citation\":{\"type\":\"char_location\"}}}",
        "{\"type\":\"content_block_stop\",\"index\":1}",
        "{\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_9\",\"name\":\"calculate\",\"input\":{\"a\":6,\"b\":7}}}",
        "{\"type\":\"content_block_stop\",\"index\":2}",
        "{\"type\":\"some_future_event\",\"anything\":true}",
        "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":null},\"usage\":{\"output_tokens\":5}}",
        "{\"type\":\"message_stop\"}",
        // Nothing after the end is read.
        "{\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"text\",\"text\":\"late\"}}",
    ]);
    let deltas = deltas(&stream);
    let (text, _, _, _, calls) = assembled(&deltas);
    assert!(text.is_empty());
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].name, "calculate");
    assert_eq!(calls[0].arguments, "{\"a\":6,\"b\":7}");
    assert_eq!(
        deltas.last(),
        Some(&ModelDelta::Finish(FinishReason::ToolCalls))
    );
}

#[test]
fn cumulative_usage_in_message_delta_replaces_the_start_s() {
    let stream = message(&[
        "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"input_tokens\":12,\"cache_read_input_tokens\":0,\"cache_creation_input_tokens\":0,\"output_tokens\":7}}",
        "{\"type\":\"message_stop\"}",
    ]);
    let deltas = deltas(&stream);
    assert_eq!(
        deltas[deltas.len() - 2],
        ModelDelta::Usage(Usage {
            input_tokens: 12,
            output_tokens: 7,
            reasoning_tokens: None,
            cached_input_tokens: Some(0),
            cache_write_input_tokens: Some(0),
        })
    );
}
