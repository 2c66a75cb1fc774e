//! A JSON reader fed in pieces of any size: it names what it finds as soon as it is complete,
//! and hands out a string value's text as it arrives (escapes decoded, a surrogate pair or an
//! escape split between pieces held until whole), so a caller can show a string still being
//! written. Keys and other scalars come whole. After a syntax error it says so once and stops.

use serde_json::{Number, Value};

/// What the reader found, in document order.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Found {
    BeginObject,
    EndObject,
    BeginArray,
    EndArray,
    /// An object member's name (always followed by its value).
    Key(String),
    /// A string value opens; its text follows as [`Found::Text`] pieces.
    BeginString,
    /// Decoded text of the open string value: at most one piece per string per feed.
    Text(String),
    EndString,
    /// A number, `true`, `false` or `null`.
    Scalar(Value),
    /// Not JSON from here on; nothing follows.
    Broken,
}

/// Where the grammar is between tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// A value (the document's, an array item after `,`, a member's after `:`).
    Value,
    /// A value, or `]` right after `[`.
    ValueOrEndArray,
    /// A key, or `}` right after `{`.
    KeyOrEndObject,
    /// A key after `,`.
    Key,
    Colon,
    /// `,` or the end of the open container, after a value.
    CommaOrEnd,
    /// The document's value is complete: only whitespace may follow.
    Done,
}

/// Inside a string: the escape being read, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    None,
    Backslash,
    /// `\u` and the hex digits read so far (value, count).
    Unicode(u32, u8),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Lexeme {
    /// Between tokens.
    Between,
    /// In a string; `key` for a member's name.
    String {
        key: bool,
        escape: Escape,
    },
    /// In a number or a `true`/`false`/`null` word; its text so far is in `word`.
    Word,
    Failed,
}

#[derive(Debug)]
pub(super) struct Reader {
    /// The open containers, `true` for an object.
    open: Vec<bool>,
    expect: Expect,
    lexeme: Lexeme,
    /// A key's text, or the open string value's text not handed out yet.
    text: String,
    word: String,
    /// A high surrogate waiting for its low half.
    high_surrogate: Option<u32>,
}

impl Default for Reader {
    fn default() -> Self {
        Self {
            open: Vec::new(),
            expect: Expect::Value,
            lexeme: Lexeme::Between,
            text: String::new(),
            word: String::new(),
            high_surrogate: None,
        }
    }
}

impl Reader {
    /// Reads `piece`, appending what it completes to `out`; the open string value's text so
    /// far is handed out at the end of the piece.
    pub(super) fn feed(&mut self, piece: &str, out: &mut Vec<Found>) {
        for c in piece.chars() {
            if self.lexeme == Lexeme::Failed {
                return;
            }
            self.step(c, out);
        }
        if let Lexeme::String { key: false, .. } = self.lexeme
            && !self.text.is_empty()
        {
            out.push(Found::Text(std::mem::take(&mut self.text)));
        }
    }

    fn step(&mut self, c: char, out: &mut Vec<Found>) {
        match self.lexeme {
            Lexeme::String { key, escape } => self.in_string(c, key, escape, out),
            Lexeme::Word => {
                if matches!(c, '0'..='9' | '-' | '+' | '.' | 'e' | 'E' | 'a'..='z') {
                    self.word.push(c);
                } else {
                    self.end_word(out);
                    if self.lexeme != Lexeme::Failed {
                        self.between(c, out);
                    }
                }
            }
            Lexeme::Between => self.between(c, out),
            Lexeme::Failed => {}
        }
    }

    fn between(&mut self, c: char, out: &mut Vec<Found>) {
        if matches!(c, ' ' | '\t' | '\n' | '\r') {
            return;
        }
        match (self.expect, c) {
            (Expect::Value | Expect::ValueOrEndArray, _) if c != ']' => self.begin_value(c, out),
            (Expect::ValueOrEndArray | Expect::CommaOrEnd, ']')
                if self.open.last() == Some(&false) =>
            {
                self.close(Found::EndArray, out);
            }
            (Expect::KeyOrEndObject | Expect::CommaOrEnd, '}')
                if self.open.last() == Some(&true) =>
            {
                self.close(Found::EndObject, out);
            }
            (Expect::KeyOrEndObject | Expect::Key, '"') => {
                self.lexeme = Lexeme::String {
                    key: true,
                    escape: Escape::None,
                };
            }
            (Expect::Colon, ':') => self.expect = Expect::Value,
            (Expect::CommaOrEnd, ',') => {
                self.expect = if self.open.last() == Some(&true) {
                    Expect::Key
                } else {
                    Expect::Value
                };
            }
            _ => self.fail(out),
        }
    }

    fn begin_value(&mut self, c: char, out: &mut Vec<Found>) {
        match c {
            '{' => {
                self.open.push(true);
                self.expect = Expect::KeyOrEndObject;
                out.push(Found::BeginObject);
            }
            '[' => {
                self.open.push(false);
                self.expect = Expect::ValueOrEndArray;
                out.push(Found::BeginArray);
            }
            '"' => {
                self.lexeme = Lexeme::String {
                    key: false,
                    escape: Escape::None,
                };
                out.push(Found::BeginString);
            }
            '-' | '0'..='9' | 't' | 'f' | 'n' => {
                self.lexeme = Lexeme::Word;
                self.word.push(c);
            }
            _ => self.fail(out),
        }
    }

    fn close(&mut self, found: Found, out: &mut Vec<Found>) {
        self.open.pop();
        out.push(found);
        self.after_value();
    }

    fn after_value(&mut self) {
        self.expect = if self.open.is_empty() {
            Expect::Done
        } else {
            Expect::CommaOrEnd
        };
    }

    fn end_word(&mut self, out: &mut Vec<Found>) {
        let word = std::mem::take(&mut self.word);
        self.lexeme = Lexeme::Between;
        let value = match word.as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            "null" => Value::Null,
            number => match number.parse::<Number>() {
                Ok(number) => Value::Number(number),
                Err(_) => return self.fail(out),
            },
        };
        out.push(Found::Scalar(value));
        self.after_value();
    }

    fn in_string(&mut self, c: char, key: bool, escape: Escape, out: &mut Vec<Found>) {
        match escape {
            Escape::None => match c {
                '"' => self.end_string(key, out),
                '\\' => self.set_escape(key, Escape::Backslash),
                c if u32::from(c) < 0x20 => self.fail(out),
                c => self.push_char(c),
            },
            Escape::Backslash => {
                let decoded = match c {
                    '"' => '"',
                    '\\' => '\\',
                    '/' => '/',
                    'b' => '\u{8}',
                    'f' => '\u{c}',
                    'n' => '\n',
                    'r' => '\r',
                    't' => '\t',
                    'u' => return self.set_escape(key, Escape::Unicode(0, 0)),
                    _ => return self.fail(out),
                };
                self.set_escape(key, Escape::None);
                self.push_char(decoded);
            }
            Escape::Unicode(value, count) => {
                let Some(digit) = c.to_digit(16) else {
                    return self.fail(out);
                };
                let value = value * 16 + digit;
                if count < 3 {
                    return self.set_escape(key, Escape::Unicode(value, count + 1));
                }
                self.set_escape(key, Escape::None);
                self.push_code_unit(value);
            }
        }
    }

    fn set_escape(&mut self, key: bool, escape: Escape) {
        self.lexeme = Lexeme::String { key, escape };
    }

    /// A UTF-16 code unit from a `\u` escape: a high surrogate waits for its low half; a half
    /// without its partner is U+FFFD.
    fn push_code_unit(&mut self, unit: u32) {
        match (self.high_surrogate.take(), unit) {
            (Some(high), 0xDC00..=0xDFFF) => {
                let scalar = 0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00);
                self.text
                    .push(char::from_u32(scalar).unwrap_or(char::REPLACEMENT_CHARACTER));
            }
            (held, 0xD800..=0xDBFF) => {
                if held.is_some() {
                    self.text.push(char::REPLACEMENT_CHARACTER);
                }
                self.high_surrogate = Some(unit);
            }
            (held, unit) => {
                if held.is_some() {
                    self.text.push(char::REPLACEMENT_CHARACTER);
                }
                self.text
                    .push(char::from_u32(unit).unwrap_or(char::REPLACEMENT_CHARACTER));
            }
        }
    }

    fn push_char(&mut self, c: char) {
        if self.high_surrogate.take().is_some() {
            self.text.push(char::REPLACEMENT_CHARACTER);
        }
        self.text.push(c);
    }

    fn end_string(&mut self, key: bool, out: &mut Vec<Found>) {
        if self.high_surrogate.take().is_some() {
            self.text.push(char::REPLACEMENT_CHARACTER);
        }
        self.lexeme = Lexeme::Between;
        let text = std::mem::take(&mut self.text);
        if key {
            out.push(Found::Key(text));
            self.expect = Expect::Colon;
            return;
        }
        if !text.is_empty() {
            out.push(Found::Text(text));
        }
        out.push(Found::EndString);
        self.after_value();
    }

    fn fail(&mut self, out: &mut Vec<Found>) {
        self.lexeme = Lexeme::Failed;
        self.text.clear();
        self.word.clear();
        out.push(Found::Broken);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pieces: &[&str]) -> Vec<Found> {
        let mut reader = Reader::default();
        let mut out = Vec::new();
        for piece in pieces {
            reader.feed(piece, &mut out);
        }
        out
    }

    #[test]
    fn an_object_reads_in_order_with_string_text_as_it_arrives() {
        let found = read(&[r#"{"a": [1, true, null], "s": "he"#, r#"llo\n"}"#]);
        assert_eq!(
            found,
            [
                Found::BeginObject,
                Found::Key("a".into()),
                Found::BeginArray,
                Found::Scalar(1.into()),
                Found::Scalar(true.into()),
                Found::Scalar(Value::Null),
                Found::EndArray,
                Found::Key("s".into()),
                Found::BeginString,
                Found::Text("he".into()),
                Found::Text("llo\n".into()),
                Found::EndString,
                Found::EndObject,
            ]
        );
    }

    #[test]
    fn escapes_split_between_pieces_are_held_until_whole() {
        // "é😀" written as \u00e9 and a surrogate pair, cut inside each escape.
        let found = read(&[
            r#"{"k":"\u00"#,
            r#"e9\ud8"#,
            r#"3d\u"#,
            r#"de00\"#,
            r#"/"}"#,
        ]);
        let text: String = found
            .iter()
            .filter_map(|found| match found {
                Found::Text(text) => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "é😀/");
    }

    #[test]
    fn a_lone_surrogate_is_the_replacement_character() {
        let found = read(&[r#"["\ud800x", "\udc00"]"#]);
        assert!(found.contains(&Found::Text("\u{FFFD}x".into())));
        assert!(found.contains(&Found::Text("\u{FFFD}".into())));
    }

    #[test]
    fn a_number_is_complete_only_at_its_delimiter() {
        let mut reader = Reader::default();
        let mut out = Vec::new();
        reader.feed(r#"{"h": 12"#, &mut out);
        assert!(!out.iter().any(|found| matches!(found, Found::Scalar(_))));
        reader.feed("0.5}", &mut out);
        assert!(out.contains(&Found::Scalar(serde_json::json!(120.5))));
        assert_eq!(out.last(), Some(&Found::EndObject));
    }

    #[test]
    fn broken_json_says_so_once_and_stops() {
        for bad in [
            r#"{"a" 1}"#,
            r#"{"a": tru}"#,
            r#"{"a": "x\q"}"#,
            "{]",
            r#"{"a":1,}"#,
        ] {
            let found = read(&[bad]);
            assert_eq!(
                found
                    .iter()
                    .filter(|found| **found == Found::Broken)
                    .count(),
                1,
                "{bad}: {found:?}"
            );
            assert_eq!(found.last(), Some(&Found::Broken), "{bad}");
        }
    }
}
