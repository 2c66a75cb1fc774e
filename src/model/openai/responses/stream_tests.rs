use super::*;
use crate::model::openai::responses::delta_stream;
use bytes::Bytes;
use futures_util::StreamExt;
use proptest::prelude::*;

/// A reasoning model's answer as api.openai.com streams it: a reasoning item with a summary and
/// encrypted content, then two parallel function calls.
const STREAM: &str = concat!(
    "event: response.created\n",
    "data: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"output\":[]}}\n\n",
    "data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"sequence_number\":1,\"item\":{\"id\":\"rs_1\",\"type\":\"reasoning\",\"summary\":[]}}\n\n",
    "data: {\"type\":\"response.reasoning_summary_text.delta\",\"item_id\":\"rs_1\",\"output_index\":0,\"summary_index\":0,\"delta\":\"Checking the \",\"sequence_number\":2}\n\n",
    "data: {\"type\":\"response.reasoning_summary_text.delta\",\"item_id\":\"rs_1\",\"output_index\":0,\"summary_index\":0,\"delta\":\"clock.\",\"sequence_number\":3}\n\n",
    "data: {\"type\":\"response.reasoning_summary_text.delta\",\"item_id\":\"rs_1\",\"output_index\":0,\"summary_index\":1,\"delta\":\"And files.\",\"sequence_number\":4}\n\n",
    "data: {\"type\":\"response.output_item.done\",\"output_index\":0,\"sequence_number\":5,\"item\":{\"id\":\"rs_1\",\"type\":\"reasoning\",\"summary\":[{\"type\":\"summary_text\",\"text\":\"Checking the clock.\"},{\"type\":\"summary_text\",\"text\":\"And files.\"}],\"encrypted_content\":\"gAAAAB\\u00e9cipher==\"}}\n\n",
    "data: {\"type\":\"response.output_item.added\",\"output_index\":1,\"sequence_number\":6,\"item\":{\"id\":\"fc_1\",\"type\":\"function_call\",\"call_id\":\"call_a\",\"name\":\"get_current_time\",\"arguments\":\"\",\"status\":\"in_progress\"}}\n\n",
    "data: {\"type\":\"response.function_call_arguments.delta\",\"item_id\":\"fc_1\",\"output_index\":1,\"delta\":\"{\\\"timezone\\\":\",\"sequence_number\":7}\n\n",
    "data: {\"type\":\"response.function_call_arguments.delta\",\"item_id\":\"fc_1\",\"output_index\":1,\"delta\":\"\\\"UTC\\\"}\",\"sequence_number\":8}\n\n",
    "data: {\"type\":\"response.output_item.done\",\"output_index\":1,\"sequence_number\":9,\"item\":{\"id\":\"fc_1\",\"type\":\"function_call\",\"call_id\":\"call_a\",\"name\":\"get_current_time\",\"arguments\":\"{\\\"timezone\\\":\\\"UTC\\\"}\",\"status\":\"completed\"}}\n\n",
    "data: {\"type\":\"response.output_item.added\",\"output_index\":2,\"sequence_number\":10,\"item\":{\"id\":\"fc_2\",\"type\":\"function_call\",\"call_id\":\"call_b\",\"name\":\"search\",\"arguments\":\"\"}}\n\n",
    "data: {\"type\":\"response.output_item.done\",\"output_index\":2,\"sequence_number\":11,\"item\":{\"id\":\"fc_2\",\"type\":\"function_call\",\"call_id\":\"call_b\",\"name\":\"search\",\"arguments\":\"{}\"}}\n\n",
    "data: {\"type\":\"response.completed\",\"sequence_number\":12,\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"usage\":{\"input_tokens\":120,\"input_tokens_details\":{\"cached_tokens\":100,\"cache_write_tokens\":0},\"output_tokens\":50,\"output_tokens_details\":{\"reasoning_tokens\":30},\"total_tokens\":170}}}\n\n",
);

fn run(chunks: Vec<Bytes>) -> Vec<Result<ModelDelta, ModelError>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let source = futures_util::stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>));
        delta_stream(source, "gpt-5").collect().await
    })
}

fn deltas(stream: &str) -> Vec<ModelDelta> {
    run(vec![Bytes::from(stream.to_owned())])
        .into_iter()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn reasoning_summary_item_and_parallel_calls_become_deltas_in_order() {
    let deltas = deltas(STREAM);
    let ModelDelta::ReasoningItem(held) = &deltas[5] else {
        panic!("no reasoning item at 5: {deltas:#?}")
    };
    let held = ReasoningItem::parse(held).unwrap();
    assert_eq!(held.model, "gpt-5");
    // It goes back right before the call it produced, exactly as received.
    assert_eq!(held.next.as_deref(), Some("fc_1"));
    assert_eq!(held.item["encrypted_content"], "gAAAAB\u{e9}cipher==");
    assert_eq!(held.item["summary"][1]["text"], "And files.");
    assert_eq!(
        deltas,
        vec![
            ModelDelta::ResponseId("resp_1".into()),
            ModelDelta::Reasoning("Checking the ".into()),
            ModelDelta::Reasoning("clock.".into()),
            ModelDelta::Reasoning("\n\n".into()),
            ModelDelta::Reasoning("And files.".into()),
            deltas[5].clone(),
            ModelDelta::ToolCallStart {
                index: 1,
                id: Some("call_a".into()),
                name: "get_current_time".into()
            },
            ModelDelta::ToolCallArtefact {
                index: 1,
                value: "openai-item:fc_1".into()
            },
            ModelDelta::ToolCallArgs {
                index: 1,
                delta: "{\"timezone\":".into()
            },
            ModelDelta::ToolCallArgs {
                index: 1,
                delta: "\"UTC\"}".into()
            },
            ModelDelta::ToolCallStart {
                index: 2,
                id: Some("call_b".into()),
                name: "search".into()
            },
            ModelDelta::ToolCallArtefact {
                index: 2,
                value: "openai-item:fc_2".into()
            },
            // Arguments that only came with the finished item.
            ModelDelta::ToolCallArgs {
                index: 2,
                delta: "{}".into()
            },
            ModelDelta::Usage(Usage {
                input_tokens: 120,
                output_tokens: 50,
                reasoning_tokens: Some(30),
                cached_input_tokens: Some(100),
                cache_write_input_tokens: None,
            }),
            ModelDelta::Finish(FinishReason::ToolCalls),
        ]
    );
}

#[test]
fn a_text_answer_names_its_message_item_and_stops() {
    let stream = concat!(
        "data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[]}}\n\n",
        "data: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hel\"}\n\n",
        "data: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"lo\"}\n\n",
        "data: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"usage\":{\"input_tokens\":5,\"output_tokens\":2}}}\n\n",
    );
    assert_eq!(
        deltas(stream),
        vec![
            ModelDelta::MessageArtefact("openai-item:msg_1".into()),
            ModelDelta::Text("Hel".into()),
            ModelDelta::Text("lo".into()),
            ModelDelta::Usage(Usage {
                input_tokens: 5,
                output_tokens: 2,
                ..Usage::default()
            }),
            ModelDelta::Finish(FinishReason::Stop),
        ]
    );
}

#[test]
fn an_incomplete_answer_finishes_with_its_reason() {
    let stream = "data: {\"type\":\"response.incomplete\",\"response\":{\"incomplete_details\":{\"reason\":\"max_output_tokens\"}}}\n\n";
    assert_eq!(
        deltas(stream),
        vec![ModelDelta::Finish(FinishReason::Length)]
    );
}

#[test]
fn errors_in_the_stream_are_classified_and_an_overflow_is_recognised() {
    let results = run(vec![Bytes::from_static(
        b"data: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"The server had an error\"}\n\n",
    )]);
    let error = results.last().unwrap().clone().unwrap_err();
    assert!(error.is_retryable(), "{error:?}");
    assert_eq!(
        error.to_string(),
        "the model API answered HTTP 500 (server_error: The server had an error)"
    );
    let results = run(vec![Bytes::from_static(
        b"data: {\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":\"context_length_exceeded\",\"message\":\"Your input exceeds the context window of this model.\"}}}\n\n",
    )]);
    assert!(matches!(
        results.last().unwrap(),
        Err(ModelError::ContextOverflow(_))
    ));
}

#[test]
fn a_stream_cut_before_its_end_is_incomplete_and_garbage_is_malformed() {
    let cut = run(vec![Bytes::from_static(
        b"data: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"delta\":\"x\"}\n\n",
    )]);
    assert_eq!(cut.last().unwrap(), &Err(ModelError::Incomplete));
    let garbage = run(vec![Bytes::from_static(b"data: {nope\n\n")]);
    assert_eq!(garbage.last().unwrap(), &Err(ModelError::Malformed));
}

proptest! {
    /// However the bytes are split, the deltas are the same.
    #[test]
    fn split_points_never_matter(cuts in proptest::collection::vec(0..STREAM.len(), 0..6)) {
        let mut cuts = cuts;
        cuts.sort_unstable();
        cuts.dedup();
        let bytes = STREAM.as_bytes();
        let mut chunks = Vec::new();
        let mut from = 0;
        for cut in cuts {
            chunks.push(Bytes::copy_from_slice(&bytes[from..cut]));
            from = cut;
        }
        chunks.push(Bytes::copy_from_slice(&bytes[from..]));
        let split: Vec<ModelDelta> = run(chunks).into_iter().map(Result::unwrap).collect();
        prop_assert_eq!(split, deltas(STREAM));
    }
}
