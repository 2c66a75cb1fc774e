use super::*;
use crate::model::{AssembledCall, ToolCallAccumulator};
use aws_sdk_bedrockruntime::types::{
    ContentBlockDeltaEvent, ContentBlockStartEvent, ContentBlockStopEvent, ConversationRole,
    ConverseStreamMetadataEvent, MessageStartEvent, MessageStopEvent, TokenUsage,
    ToolUseBlockDelta, ToolUseBlockStart,
};

fn text(index: i32, piece: &str) -> ConverseStreamOutput {
    ConverseStreamOutput::ContentBlockDelta(
        ContentBlockDeltaEvent::builder()
            .content_block_index(index)
            .delta(ContentBlockDelta::Text(piece.to_owned()))
            .build()
            .unwrap(),
    )
}

fn tool_start(index: i32, id: &str, name: &str) -> ConverseStreamOutput {
    ConverseStreamOutput::ContentBlockStart(
        ContentBlockStartEvent::builder()
            .content_block_index(index)
            .start(ContentBlockStart::ToolUse(
                ToolUseBlockStart::builder()
                    .tool_use_id(id)
                    .name(name)
                    .build()
                    .unwrap(),
            ))
            .build()
            .unwrap(),
    )
}

fn tool_input(index: i32, piece: &str) -> ConverseStreamOutput {
    ConverseStreamOutput::ContentBlockDelta(
        ContentBlockDeltaEvent::builder()
            .content_block_index(index)
            .delta(ContentBlockDelta::ToolUse(
                ToolUseBlockDelta::builder().input(piece).build().unwrap(),
            ))
            .build()
            .unwrap(),
    )
}

fn stop_block(index: i32) -> ConverseStreamOutput {
    ConverseStreamOutput::ContentBlockStop(
        ContentBlockStopEvent::builder()
            .content_block_index(index)
            .build()
            .unwrap(),
    )
}

fn stop(reason: StopReason) -> ConverseStreamOutput {
    ConverseStreamOutput::MessageStop(
        MessageStopEvent::builder()
            .stop_reason(reason)
            .build()
            .unwrap(),
    )
}

fn run(events: Vec<ConverseStreamOutput>) -> (Vec<ModelDelta>, Result<(), ModelError>) {
    let mut mapper = EventMapper::new();
    let mut out = Vec::new();
    for event in events {
        if let Err(err) = mapper.push(event, &mut out) {
            return (out, Err(err));
        }
    }
    let end = mapper.end();
    (out, end)
}

#[test]
fn text_then_two_tool_calls_keyed_by_block_index() {
    let (deltas, end) = run(vec![
        ConverseStreamOutput::MessageStart(
            MessageStartEvent::builder()
                .role(ConversationRole::Assistant)
                .build()
                .unwrap(),
        ),
        text(0, "Let me "),
        text(0, "check."),
        stop_block(0),
        tool_start(1, "tooluse_a", "get_current_time"),
        tool_input(1, "{\"timez"),
        tool_input(1, "one\":\"UTC\"}"),
        stop_block(1),
        tool_start(2, "tooluse_b", "search_local_files"),
        tool_input(2, ""),
        stop_block(2),
        stop(StopReason::ToolUse),
        ConverseStreamOutput::Metadata(
            ConverseStreamMetadataEvent::builder()
                .usage(
                    TokenUsage::builder()
                        .input_tokens(30)
                        .output_tokens(12)
                        .total_tokens(42)
                        .build()
                        .unwrap(),
                )
                .build(),
        ),
    ]);
    assert_eq!(end, Ok(()));
    let text: String = deltas
        .iter()
        .filter_map(|d| match d {
            ModelDelta::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Let me check.");
    let mut calls = ToolCallAccumulator::default();
    deltas.iter().for_each(|d| calls.apply(d));
    assert_eq!(
        calls.into_calls(),
        [
            AssembledCall {
                index: 1,
                id: Some("tooluse_a".into()),
                name: "get_current_time".into(),
                arguments: "{\"timezone\":\"UTC\"}".into()
            },
            AssembledCall {
                index: 2,
                id: Some("tooluse_b".into()),
                name: "search_local_files".into(),
                arguments: String::new()
            }
        ]
    );
    assert!(deltas.contains(&ModelDelta::Finish(FinishReason::ToolCalls)));
    assert_eq!(
        deltas.last(),
        Some(&ModelDelta::Usage(Usage {
            input_tokens: 30,
            output_tokens: 12,
            ..Default::default()
        }))
    );
}

#[test]
fn stop_reasons_map_to_finishes_or_clear_errors() {
    let finish = |reason| run(vec![text(0, "x"), stop(reason)]);
    assert!(
        finish(StopReason::EndTurn)
            .0
            .contains(&ModelDelta::Finish(FinishReason::Stop))
    );
    assert!(
        finish(StopReason::StopSequence)
            .0
            .contains(&ModelDelta::Finish(FinishReason::Stop))
    );
    assert!(
        finish(StopReason::MaxTokens)
            .0
            .contains(&ModelDelta::Finish(FinishReason::Length))
    );
    assert!(
        finish(StopReason::ContentFiltered)
            .0
            .contains(&ModelDelta::Finish(FinishReason::ContentFilter))
    );
    let (_, guardrail) = finish(StopReason::GuardrailIntervened);
    assert!(guardrail.unwrap_err().to_string().contains("guardrail"));
    let (_, window) = finish(StopReason::ModelContextWindowExceeded);
    assert!(window.unwrap_err().to_string().contains("context window"));
    let (_, malformed) = finish(StopReason::MalformedToolUse);
    assert!(malformed.unwrap_err().to_string().contains("malformed"));
    assert!(
        finish(StopReason::from("something_new"))
            .0
            .contains(&ModelDelta::Finish(FinishReason::Other(
                "something_new".into()
            )))
    );
}

#[test]
fn a_stream_without_message_stop_is_incomplete() {
    let (deltas, end) = run(vec![text(0, "Hel")]);
    assert_eq!(deltas, [ModelDelta::Text("Hel".into())]);
    assert_eq!(end, Err(ModelError::Incomplete));
}

#[test]
fn tool_input_without_a_start_is_still_reported() {
    let (deltas, _) = run(vec![tool_input(3, "{}"), stop(StopReason::ToolUse)]);
    assert_eq!(
        deltas[0],
        ModelDelta::ToolCallStart {
            index: 3,
            id: None,
            name: String::new()
        }
    );
}

fn reasoning(index: i32, delta: ReasoningContentBlockDelta) -> ConverseStreamOutput {
    ConverseStreamOutput::ContentBlockDelta(
        ContentBlockDeltaEvent::builder()
            .content_block_index(index)
            .delta(ContentBlockDelta::ReasoningContent(delta))
            .build()
            .unwrap(),
    )
}

#[test]
fn reasoning_signatures_and_redacted_reasoning_are_kept() {
    let (deltas, end) = run(vec![
        reasoning(0, ReasoningContentBlockDelta::Text("Let me think.".into())),
        reasoning(0, ReasoningContentBlockDelta::Signature("sig-1".into())),
        stop_block(0),
        reasoning(
            1,
            ReasoningContentBlockDelta::RedactedContent(aws_smithy_types::Blob::new(vec![1, 2, 3])),
        ),
        stop_block(1),
        text(2, "Done."),
        stop(StopReason::EndTurn),
    ]);
    assert_eq!(end, Ok(()));
    assert_eq!(
        deltas,
        [
            ModelDelta::Reasoning("Let me think.".into()),
            ModelDelta::ReasoningSignature("sig-1".into()),
            ModelDelta::RedactedReasoning(vec![1, 2, 3]),
            ModelDelta::Text("Done.".into()),
            ModelDelta::Finish(FinishReason::Stop),
        ]
    );
}

#[test]
fn cache_reads_and_writes_are_added_to_the_input_total() {
    let (deltas, _) = run(vec![
        stop(StopReason::EndTurn),
        ConverseStreamOutput::Metadata(
            ConverseStreamMetadataEvent::builder()
                .usage(
                    TokenUsage::builder()
                        .input_tokens(20)
                        .output_tokens(12)
                        .total_tokens(1532)
                        .cache_read_input_tokens(1000)
                        .cache_write_input_tokens(500)
                        .build()
                        .unwrap(),
                )
                .build(),
        ),
    ]);
    assert_eq!(
        deltas.last(),
        Some(&ModelDelta::Usage(Usage {
            input_tokens: 1520,
            output_tokens: 12,
            reasoning_tokens: None,
            cached_input_tokens: Some(1000),
            cache_write_input_tokens: Some(500),
        }))
    );
}
