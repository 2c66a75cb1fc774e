//! Token counts without a tokenizer: a deliberate overestimate, so that a thread is compacted a
//! little early rather than sent over the window. Prose in Latin script is about four characters
//! a token; runs without spaces (base64, JSON, ids, code) are denser, and other scripts (CJK,
//! Cyrillic, Arabic) take about a token a character.

use crate::protocol::{Message, UserContent, UserPart};

/// What a message costs besides its text (role, separators), as chat templates add it.
const PER_MESSAGE: u64 = 4;
/// What an attachment costs the model: a mid-sized image on the providers' pricing pages.
const PER_ATTACHMENT: u64 = 1_200;
/// A run of ASCII this long without whitespace counts as dense (base64, a JSON blob, an id).
const DENSE_RUN: usize = 24;

/// The tokens of `text`, overestimated.
pub(crate) fn text_tokens(text: &str) -> u64 {
    let mut tenths: u64 = 0;
    for word in text.split_ascii_whitespace() {
        tenths += word_tenths(word);
    }
    let spaces = text.len() - text.split_ascii_whitespace().map(str::len).sum::<usize>();
    tenths += spaces as u64 * 10 / 4;
    tenths.div_ceil(10)
}

/// One word's tokens, in tenths: ASCII at 4 characters a token (2.5 in a dense run), anything
/// else a token a character.
fn word_tenths(word: &str) -> u64 {
    let ascii = word.bytes().filter(u8::is_ascii).count() as u64;
    let other = word.chars().filter(|c| !c.is_ascii()).count() as u64;
    let dense = word.len() >= DENSE_RUN && other == 0;
    let ascii_tenths = if dense {
        ascii * 4
    } else {
        (ascii * 10).div_ceil(4)
    };
    ascii_tenths + other * 10
}

/// The tokens `message` costs in a model request.
pub(crate) fn message_tokens(message: &Message) -> u64 {
    PER_MESSAGE
        + match message {
            Message::User { content, .. } => user_tokens(content),
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                content.as_deref().map_or(0, text_tokens)
                    + tool_calls
                        .iter()
                        .map(|call| {
                            text_tokens(&call.function.name)
                                + text_tokens(&call.function.arguments)
                                + PER_MESSAGE
                        })
                        .sum::<u64>()
            }
            Message::System { content, .. }
            | Message::Developer { content, .. }
            | Message::Tool { content, .. }
            | Message::Reasoning { content, .. } => text_tokens(content),
        }
}

fn user_tokens(content: &UserContent) -> u64 {
    match content {
        UserContent::Text(text) => text_tokens(text),
        UserContent::Parts(parts) => parts
            .iter()
            .map(|part| match part {
                UserPart::Text { text } => text_tokens(text),
                _ => PER_ATTACHMENT,
            })
            .sum(),
    }
}

/// The tokens of a list of messages.
pub(crate) fn messages_tokens<'a>(messages: impl IntoIterator<Item = &'a Message>) -> u64 {
    messages.into_iter().map(message_tokens).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_is_about_four_characters_a_token() {
        let prose = "The quick brown fox jumps over the lazy dog near the river bank today.";
        let tokens = text_tokens(prose);
        // 70 characters: a tokenizer says 15; the estimate is a little above, never below.
        assert!((15..=22).contains(&tokens), "{tokens}");
    }

    #[test]
    fn dense_runs_and_other_scripts_count_denser() {
        let base64 = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3ODkwYWJjZGVmZ2hpams=";
        assert!(
            text_tokens(base64) >= base64.len() as u64 / 3,
            "{}",
            text_tokens(base64)
        );
        let japanese = "今日は東京で会議があります";
        assert!(text_tokens(japanese) >= japanese.chars().count() as u64);
        let latin = "a".repeat(20);
        assert_eq!(text_tokens(&latin), 5);
    }

    #[test]
    fn an_empty_text_costs_nothing_and_a_message_costs_its_overhead() {
        assert_eq!(text_tokens(""), 0);
        let message: Message = serde_json::from_value(serde_json::json!({
            "id": "m1", "role": "assistant", "content": ""
        }))
        .unwrap();
        assert_eq!(message_tokens(&message), PER_MESSAGE);
    }
}
