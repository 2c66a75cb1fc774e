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

/// The tokens of `text`, overestimated. Never more than half its bytes, rounded up (the densest
/// rate: a two-byte character a token), which lets a caller skip the count under a limit.
pub(crate) fn text_tokens(text: &str) -> u64 {
    // One pass over the bytes: this runs over every message of a thread on every model call.
    let mut tenths: u64 = 0;
    let mut spaces: u64 = 0;
    let mut word = Word::default();
    for &byte in text.as_bytes() {
        if byte.is_ascii_whitespace() {
            tenths += word.tenths();
            word = Word::default();
            spaces += 1;
        } else {
            word.push(byte);
        }
    }
    tenths += word.tenths() + spaces * 10 / 4;
    tenths.div_ceil(10)
}

/// A word's bytes as they are counted: ASCII ones, and the characters beyond ASCII.
#[derive(Default)]
struct Word {
    bytes: usize,
    ascii: u64,
    other: u64,
}

impl Word {
    fn push(&mut self, byte: u8) {
        self.bytes += 1;
        if byte.is_ascii() {
            self.ascii += 1;
        } else if byte & 0xC0 != 0x80 {
            // A character's first byte (continuation bytes are 10xxxxxx).
            self.other += 1;
        }
    }

    /// The word's tokens, in tenths: ASCII at 4 characters a token (2.5 in a dense run),
    /// anything else a token a character.
    fn tenths(&self) -> u64 {
        let dense = self.bytes >= DENSE_RUN && self.other == 0;
        let ascii_tenths = if dense {
            self.ascii * 4
        } else {
            (self.ascii * 10).div_ceil(4)
        };
        ascii_tenths + self.other * 10
    }
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

    /// The estimate as first written, word by word: the one-pass count must agree with it.
    fn reference_tokens(text: &str) -> u64 {
        let mut tenths: u64 = 0;
        for word in text.split_ascii_whitespace() {
            let ascii = word.bytes().filter(u8::is_ascii).count() as u64;
            let other = word.chars().filter(|c| !c.is_ascii()).count() as u64;
            let dense = word.len() >= DENSE_RUN && other == 0;
            tenths += if dense {
                ascii * 4
            } else {
                (ascii * 10).div_ceil(4)
            } + other * 10;
        }
        let spaces = text.len() - text.split_ascii_whitespace().map(str::len).sum::<usize>();
        (tenths + spaces as u64 * 10 / 4).div_ceil(10)
    }

    #[test]
    fn the_one_pass_count_agrees_with_the_word_by_word_one_and_stays_under_half_the_bytes() {
        let pieces = [
            "word",
            " ",
            "\t",
            "\n\r",
            "é",
            "日本",
            "😀",
            "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY",
            "a",
            "{\"k\":1}",
            "  ",
            "Привет",
            "\u{0B}",
            "x",
        ];
        let mut seed: u64 = 7;
        for _ in 0..2_000 {
            let mut text = String::new();
            for _ in 0..(seed % 40) {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                text.push_str(pieces[(seed >> 33) as usize % pieces.len()]);
            }
            assert_eq!(text_tokens(&text), reference_tokens(&text), "{text:?}");
            assert!(
                text_tokens(&text) <= text.len().div_ceil(2) as u64,
                "{text:?}"
            );
        }
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
