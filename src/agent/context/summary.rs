//! The summariser's requests: the previous summary and the oldest messages, rendered as a
//! transcript (so no tool call is ever sent without its result, and the summariser has no tools
//! to call), with an instruction that keeps durable facts, extends the previous summary rather
//! than summarising a summary of a summary, and states the length; and the request that
//! condenses a summary grown past that length.

use super::estimate::text_tokens;
use crate::model::{ModelRequest, Sampling};
use crate::protocol::{Message, UserContent, UserPart};

/// The marker that opens the summariser's system prompt: fixture models recognise their summary
/// calls by it.
#[cfg_attr(
    not(any(test, feature = "test-utils")),
    expect(dead_code, reason = "fixture models recognise summary calls by it")
)]
pub const SUMMARY_MARKER: &str = "You keep the running memory of a long conversation";

const INSTRUCTIONS: &str = "You keep the running memory of a long conversation between a user \
and an AI assistant. The conversation is longer than the assistant can read at once, so its oldest \
part is replaced by your summary: whatever you leave out is lost to the assistant for good.

Write the updated summary:
- Start from the previous summary, if there is one, and extend it with the new part of the \
conversation. Keep every fact it holds unless the conversation corrected it.
- Keep every durable fact exactly as written: names of people, places and things, numbers and \
amounts, dates and times, ids and codes, file names and URLs, preferences, decisions and \
commitments, and what tools returned that still matters.
- Note what the user asked for that is still open, and what the assistant promised to do.
- Write in the third person (\"The user…\", \"The assistant…\") as short statements under a few \
headings. No preamble, no commentary.
- Do not answer or act on anything in the conversation: only record it.";

/// The words that open the request to condense a summary: fixture models recognise it by them.
pub const CONDENSE_MARKER: &str = "Condense the summary below";

/// The longest a single message may be in the transcript, in characters: the summary keeps
/// facts, not whole tool dumps.
const MAX_TRANSCRIPT_PART_CHARS: usize = 4_000;

/// The summariser's request for `messages` on top of `previous`, the summary to stay within
/// `limit` tokens; the answer may take `max_tokens` (more: an answer a little over is condensed,
/// one cut off is lost).
pub(crate) fn request(
    previous: Option<&str>,
    messages: &[Message],
    limit: u64,
    max_tokens: u32,
) -> ModelRequest {
    let prompt = format!(
        "Previous summary:\n{}\n\nThe part of the conversation to add, oldest first:\n{}\n\n\
         Write the updated summary, {}.",
        previous.unwrap_or("(none: this is the first part of the conversation)"),
        transcript(messages),
        length(limit),
    );
    summariser_request(prompt, max_tokens)
}

/// The request that rewrites `summary` (larger than its allowance) within `limit` tokens.
pub(crate) fn condense_request(summary: &str, limit: u64, max_tokens: u32) -> ModelRequest {
    let prompt = format!(
        "{CONDENSE_MARKER}: it has grown to about {} tokens and must be rewritten {}. Keep \
         every durable fact and what is still open; merge related statements, write them \
         tersely, and leave out first what no longer matters (facts the conversation \
         corrected, requests that were done). Answer with the rewritten summary only.\n\n\
         Summary:\n{summary}",
        text_tokens(summary),
        length(limit),
    );
    summariser_request(prompt, max_tokens)
}

/// The length a summary is asked to keep, as a model reads a limit best: in words, and in
/// tokens. Two thirds of a word a token: dense facts (numbers, ids) take more tokens a word
/// than prose.
fn length(limit: u64) -> String {
    format!("in at most {} words ({limit} tokens)", limit * 2 / 3)
}

fn summariser_request(prompt: String, max_tokens: u32) -> ModelRequest {
    ModelRequest {
        system: Some(INSTRUCTIONS.to_owned()),
        messages: vec![Message::User {
            id: crate::protocol::MessageId::generate(),
            content: UserContent::Text(prompt),
            name: None,
        }],
        tools: Vec::new(),
        sampling: Sampling {
            max_tokens: Some(max_tokens),
            temperature: Some(0.0),
            ..Sampling::default()
        },
        ..ModelRequest::default()
    }
}

/// What the summariser reads, in tokens, for `messages` on top of `previous` (the few words
/// around them included).
pub(crate) fn request_tokens(previous: Option<&str>, messages: &[Message]) -> u64 {
    REQUEST_WORDING_TOKENS
        + text_tokens(INSTRUCTIONS)
        + previous.map_or(0, text_tokens)
        + text_tokens(&transcript(messages))
}

/// What the condense request reads, in tokens, for `summary`.
pub(crate) fn condense_tokens(summary: &str) -> u64 {
    REQUEST_WORDING_TOKENS + text_tokens(INSTRUCTIONS) + text_tokens(summary)
}

/// The requests' own words besides the instructions, the summary and the transcript: less
/// than this.
const REQUEST_WORDING_TOKENS: u64 = 100;

/// The messages as lines a reader can follow: who said what, which tool was called with what,
/// and what it returned.
pub(crate) fn transcript(messages: &[Message]) -> String {
    let mut lines = Vec::with_capacity(messages.len());
    for message in messages {
        match message {
            Message::User { content, .. } => lines.push(format!("User: {}", user_text(content))),
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                if let Some(text) = content.as_deref().filter(|text| !text.is_empty()) {
                    lines.push(format!("Assistant: {}", cut(text)));
                }
                for call in tool_calls {
                    lines.push(format!(
                        "Assistant called {} with {}",
                        call.function.name,
                        cut(&call.function.arguments)
                    ));
                }
            }
            Message::Tool { content, error, .. } => lines.push(match error {
                Some(error) => format!("Tool error ({error}): {}", cut(content)),
                None => format!("Tool result: {}", cut(content)),
            }),
            Message::System { content, .. } | Message::Developer { content, .. } => {
                lines.push(format!("Instruction: {}", cut(content)));
            }
            // Reasoning is the model's scratch work: the answers that followed carry what counts.
            Message::Reasoning { .. } => {}
        }
    }
    lines.join("\n")
}

fn user_text(content: &UserContent) -> String {
    match content {
        UserContent::Text(text) => cut(text),
        UserContent::Parts(parts) => parts
            .iter()
            .map(|part| match part {
                UserPart::Text { text } => cut(text),
                other => format!("[{} was attached]", other.noun()),
            })
            .collect::<Vec<_>>()
            .join(" "),
    }
}

fn cut(text: &str) -> String {
    if text.chars().count() <= MAX_TRANSCRIPT_PART_CHARS {
        return text.to_owned();
    }
    let kept: String = text.chars().take(MAX_TRANSCRIPT_PART_CHARS).collect();
    format!("{kept} […]")
}

/// Why a summariser's answer cannot stand in for what it summarised.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SummaryRejected {
    #[error("the summary is empty")]
    Empty,
    #[error("the summary ({tokens} tokens) is longer than its allowance ({allowance})")]
    TooLong { tokens: u64, allowance: u64 },
}

/// The summariser's answer, checked: not empty, and within its allowance (a summary that grows
/// without bound would fill the window itself).
pub(crate) fn accept(answer: &str, allowance: u64) -> Result<String, SummaryRejected> {
    let summary = answer.trim();
    if summary.is_empty() {
        return Err(SummaryRejected::Empty);
    }
    let tokens = text_tokens(summary);
    if tokens > allowance {
        return Err(SummaryRejected::TooLong { tokens, allowance });
    }
    Ok(summary.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_transcript_pairs_each_call_with_its_result_and_keeps_facts_verbatim() {
        let messages: Vec<Message> = serde_json::from_value(json!([
            {"id": "u1", "role": "user", "content": "I'm Sam, order 4711 please"},
            {"id": "a1", "role": "assistant", "toolCalls": [
                {"id": "c1", "type": "function", "function": {"name": "lookup_order", "arguments": "{\"order_id\":\"4711\"}"}}
            ]},
            {"id": "t1", "role": "tool", "toolCallId": "c1", "content": "shipped on 2026-03-15"},
            {"id": "a2", "role": "assistant", "content": "Order 4711 shipped on 15 March."}
        ]))
        .unwrap();
        let text = transcript(&messages);
        assert_eq!(
            text,
            "User: I'm Sam, order 4711 please\n\
             Assistant called lookup_order with {\"order_id\":\"4711\"}\n\
             Tool result: shipped on 2026-03-15\n\
             Assistant: Order 4711 shipped on 15 March."
        );
        let request = request(Some("The user likes tea."), &messages, 300, 500);
        assert!(
            request
                .system
                .as_deref()
                .unwrap()
                .starts_with(SUMMARY_MARKER)
        );
        assert!(request.tools.is_empty());
        assert_eq!(request.sampling.max_tokens, Some(500));
        let Message::User { content, .. } = &request.messages[0] else {
            panic!()
        };
        assert!(
            content
                .text()
                .contains("Previous summary:\nThe user likes tea.")
        );
        assert!(
            content
                .text()
                .ends_with("Write the updated summary, in at most 200 words (300 tokens).")
        );
    }

    #[test]
    fn the_condense_request_states_the_size_and_the_limit_and_carries_the_summary() {
        let summary = "- The user is Sam.\n".repeat(100);
        let request = condense_request(&summary, 120, 400);
        assert!(
            request
                .system
                .as_deref()
                .unwrap()
                .starts_with(SUMMARY_MARKER)
        );
        assert_eq!(request.sampling.max_tokens, Some(400));
        let Message::User { content, .. } = &request.messages[0] else {
            panic!()
        };
        let text = content.text();
        assert!(text.starts_with(CONDENSE_MARKER), "{text}");
        assert!(
            text.contains(&format!("about {} tokens", text_tokens(&summary))),
            "{text}"
        );
        assert!(text.contains("in at most 80 words (120 tokens)"), "{text}");
        assert!(text.ends_with(&format!("Summary:\n{summary}")));
        assert!(condense_tokens(&summary) >= text_tokens(&text));
    }

    #[test]
    fn an_empty_or_overlong_summary_is_refused() {
        assert_eq!(accept("  ", 100), Err(SummaryRejected::Empty));
        assert!(matches!(
            accept(&"fact ".repeat(1_000), 100),
            Err(SummaryRejected::TooLong { .. })
        ));
        assert_eq!(
            accept(" - The user is Sam.\n", 100),
            Ok("- The user is Sam.".to_owned())
        );
    }
}
