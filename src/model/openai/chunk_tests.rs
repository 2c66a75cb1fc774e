use super::*;

fn parse_all(payloads: &[&str]) -> Result<Vec<ModelDelta>, ModelError> {
    let mut parser = ChunkParser::new();
    let mut out = Vec::new();
    for payload in payloads {
        parser.push(payload, &mut out)?;
    }
    parser.end(&mut out)?;
    Ok(out)
}

fn start(index: usize, id: &str, name: &str) -> ModelDelta {
    ModelDelta::ToolCallStart {
        index,
        id: Some(id.into()),
        name: name.into(),
    }
}

fn args(index: usize, delta: &str) -> ModelDelta {
    ModelDelta::ToolCallArgs {
        index,
        delta: delta.into(),
    }
}

#[test]
fn text_reasoning_usage_and_finish() {
    let out = parse_all(&[
        r#"{"choices":[{"index":0,"delta":{"reasoning_content":"hmm"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}"#,
        "[DONE]",
    ])
    .unwrap();
    assert_eq!(
        out,
        vec![
            ModelDelta::Reasoning("hmm".into()),
            ModelDelta::Text("Hi".into()),
            ModelDelta::Finish(FinishReason::Stop),
            ModelDelta::Usage(Usage {
                input_tokens: 3,
                output_tokens: 2,
                ..Default::default()
            }),
        ]
    );
}

#[test]
fn openai_style_fragments_with_id_only_on_the_first() {
    let out = parse_all(&[
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":""}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\""}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}}]}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        "[DONE]",
    ])
    .unwrap();
    assert_eq!(
        out,
        vec![
            start(0, "c1", "f"),
            args(0, "{\"a\""),
            args(0, ":1}"),
            ModelDelta::Finish(FinishReason::ToolCalls)
        ]
    );
}

#[test]
fn ollama_reuses_index_zero_for_parallel_calls() {
    let out = parse_all(&[
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"g","arguments":"{\"x\":1}"}}]}}]}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
    ])
    .unwrap();
    assert_eq!(
        out,
        vec![
            start(0, "a", "f"),
            args(0, "{}"),
            start(1, "b", "g"),
            args(1, "{\"x\":1}"),
            ModelDelta::Finish(FinishReason::ToolCalls)
        ]
    );
}

#[test]
fn missing_index_and_repeated_or_empty_ids_continue_the_same_call() {
    let out = parse_all(&[
        r#"{"choices":[{"delta":{"tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{\"a\""}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"id":"c1","function":{"arguments":":"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"id":"","function":{"arguments":"1}"}}]}}]}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
    ])
    .unwrap();
    assert_eq!(
        out,
        vec![
            start(0, "c1", "f"),
            args(0, "{\"a\""),
            args(0, ":"),
            args(0, "1}"),
            ModelDelta::Finish(FinishReason::ToolCalls)
        ]
    );
}

#[test]
fn null_delta_unknown_finish_reason_and_missing_done_are_tolerated() {
    let out = parse_all(&[
        r#"{"choices":[{"index":0,"delta":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"x"}}]}"#,
        r#"{"choices":[{"index":0,"delta":null,"finish_reason":"eos"}]}"#,
    ])
    .unwrap();
    assert_eq!(
        out,
        vec![
            ModelDelta::Text("x".into()),
            ModelDelta::Finish(FinishReason::Other("eos".into()))
        ]
    );
}

#[test]
fn done_without_finish_reason_counts_as_finished() {
    let out = parse_all(&[r#"{"choices":[{"delta":{"content":"x"}}]}"#, "[DONE]"]).unwrap();
    assert_eq!(
        out,
        vec![
            ModelDelta::Text("x".into()),
            ModelDelta::Finish(FinishReason::Stop)
        ]
    );
}

#[test]
fn a_stream_cut_off_before_done_or_finish_is_a_failure() {
    let err = parse_all(&[r#"{"choices":[{"delta":{"content":"partial"}}]}"#]).unwrap_err();
    assert_eq!(err, ModelError::Incomplete);
}

#[test]
fn a_mid_stream_error_event_fails_with_the_providers_message() {
    let err = parse_all(&[
        r#"{"choices":[{"delta":{"content":"x"}}]}"#,
        r#"{"error":{"message":"overloaded","type":"server_error"}}"#,
    ])
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the model API answered HTTP 500 (server_error: overloaded)"
    );
    assert!(err.is_retryable());
}

#[test]
fn garbage_is_malformed_not_a_panic() {
    assert_eq!(parse_all(&["{nope"]).unwrap_err(), ModelError::Malformed);
    assert_eq!(
        parse_all(&[r#"{"choices":"x"}"#]).unwrap_err(),
        ModelError::Malformed
    );
}

#[test]
fn arguments_before_the_name_wait_for_it() {
    let out = parse_all(&[
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"arguments":"{}"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f"}}]}}]}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
    ])
    .unwrap();
    assert_eq!(
        out,
        vec![
            start(0, "c1", "f"),
            args(0, "{}"),
            ModelDelta::Finish(FinishReason::ToolCalls)
        ]
    );
}

#[test]
fn cached_and_reasoning_token_details_are_parts_of_the_totals() {
    let out = parse_all(&[
        r#"{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":300,"total_tokens":1500,"prompt_tokens_details":{"cached_tokens":1024,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":256,"audio_tokens":0}}}"#,
        "[DONE]",
    ])
    .unwrap();
    assert_eq!(
        out.last(),
        Some(&ModelDelta::Usage(Usage {
            input_tokens: 1200,
            output_tokens: 300,
            reasoning_tokens: Some(256),
            cached_input_tokens: Some(1024),
            cache_write_input_tokens: None,
        }))
    );
    // Servers that send the details as null, or without the counts, report none.
    let out = parse_all(&[
        r#"{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"prompt_tokens_details":null,"completion_tokens_details":{}}}"#,
    ])
    .unwrap();
    assert_eq!(
        out.last(),
        Some(&ModelDelta::Usage(Usage {
            input_tokens: 3,
            output_tokens: 2,
            ..Default::default()
        }))
    );
}
