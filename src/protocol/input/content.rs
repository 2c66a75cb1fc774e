//! A user message's content: text, or parts (text, and images, audio, video and documents by
//! URL, inline data or a provider's file handle, in AG-UI 1.x shape or as legacy `binary`
//! parts), each checked against the limits and named by its field when refused; and a tool
//! message's parts, of which the text is kept. A part of a kind AG-UI does not describe, or with
//! a source of such a kind, is skipped (AG-UI's processing model: unrecognised material never
//! fails a run), as is a media part in a tool result, and each skip is named.

use super::error::{InputError, strip_position};
use super::limits::Limits;
use crate::protocol::ids::MessageId;
use crate::protocol::message::{Attachment, PartMetadata, PartSource, UserContent, UserPart};
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A content part a run does without: where it was (`messages[2].content[1]`) and why, as
/// `RUN_STARTED.metadata["agui-lambda"].skippedParts` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedPart {
    pub field: String,
    pub reason: String,
    /// The message the part was in.
    #[serde(skip)]
    pub(crate) message_id: Option<MessageId>,
}

impl SkippedPart {
    pub(crate) fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            reason: reason.into(),
            message_id: None,
        }
    }

    /// The index in `messages` of the message the part was in.
    pub(crate) fn message_index(&self) -> Option<usize> {
        self.field
            .strip_prefix("messages[")?
            .split(']')
            .next()?
            .parse()
            .ok()
    }

    /// The index of the part in its message's `content`.
    pub(crate) fn part_index(&self) -> Option<usize> {
        self.field
            .rsplit_once("content[")?
            .1
            .strip_suffix(']')?
            .parse()
            .ok()
    }
}

/// The part kinds AG-UI describes (and the legacy `binary`); any other is skipped.
const PART_KINDS: &[&str] = &["text", "binary", "image", "audio", "video", "document"];
/// The media sources AG-UI describes; a part with any other is skipped whole.
const SOURCE_KINDS: &[&str] = &["url", "data", "file"];

/// A user message's `content`: a string, or an array of content parts.
pub(crate) fn parse_user_content(
    content: Value,
    field: &str,
    limits: &Limits,
    skipped: &mut Vec<SkippedPart>,
) -> Result<UserContent, InputError> {
    let text_limit_error =
        || InputError::invalid(field, "RunAgentInput user message text exceeds limit");
    match content {
        Value::String(text) => {
            if text.chars().count() > limits.max_user_text_chars {
                return Err(text_limit_error());
            }
            Ok(UserContent::Text(text))
        }
        Value::Array(items) => {
            let parts = parse_parts(items, field, limits, skipped)?;
            if parts.is_empty() {
                // Every part was skipped: the message stays, with no text.
                return Ok(UserContent::Text(String::new()));
            }
            let text_chars: usize = parts
                .iter()
                .map(|part| match part {
                    UserPart::Text { text } => text.chars().count(),
                    _ => 0,
                })
                .sum();
            if text_chars > limits.max_user_text_chars {
                return Err(text_limit_error());
            }
            Ok(UserContent::Parts(parts))
        }
        _ => Err(InputError::invalid(
            field,
            "must be a string or an array of content parts",
        )),
    }
}

/// The limits a new user message's content keeps, checked after a lenient parse (the AG-UI
/// routes parse every message, but only a message the thread does not hold yet is held to its
/// limits): the same refusals, on the same fields, as [`parse_user_content`] makes.
pub(crate) fn check_user_content(
    content: &UserContent,
    field: &str,
    limits: &Limits,
) -> Result<(), InputError> {
    let text_chars: usize = match content {
        UserContent::Text(text) => text.chars().count(),
        UserContent::Parts(parts) => parts
            .iter()
            .map(|part| match part {
                UserPart::Text { text } => text.chars().count(),
                _ => 0,
            })
            .sum(),
    };
    if text_chars > limits.max_user_text_chars {
        return Err(InputError::invalid(
            field,
            "RunAgentInput user message text exceeds limit",
        ));
    }
    let UserContent::Parts(parts) = content else {
        return Ok(());
    };
    let mut attachments = 0;
    for (index, part) in parts.iter().enumerate() {
        let Some(attachment) = part.attachment() else {
            continue;
        };
        attachments += 1;
        if attachments > limits.max_attachments_per_message {
            return Err(InputError::invalid(field, "Too many attachments"));
        }
        if let PartSource::Data { value, .. } = &attachment.source
            && base64_decoded_len(value) > limits.max_inline_attachment_bytes
        {
            return Err(InputError::invalid(
                format!("{field}[{index}].source.value"),
                format!(
                    "inline attachment data exceeds the limit of {} bytes",
                    limits.max_inline_attachment_bytes
                ),
            ));
        }
    }
    Ok(())
}

/// The length of padded standard base64 once decoded (the parse checked that it decodes).
fn base64_decoded_len(value: &str) -> usize {
    let padding = value.bytes().rev().take_while(|byte| *byte == b'=').count();
    (value.len() / 4 * 3).saturating_sub(padding)
}

/// The parts in order; more attachments than a message may hold are refused at the first one
/// too many.
fn parse_parts(
    items: Vec<Value>,
    field: &str,
    limits: &Limits,
    skipped: &mut Vec<SkippedPart>,
) -> Result<Vec<UserPart>, InputError> {
    let mut parts = Vec::with_capacity(items.len());
    let mut attachments = 0;
    for (index, item) in items.into_iter().enumerate() {
        let at = format!("{field}[{index}]");
        if let Some(reason) = unrecognised_part(&item) {
            skipped.push(SkippedPart::new(at, reason));
            continue;
        }
        let part = parse_part(item, &at, limits)?;
        if part.attachment().is_some() {
            attachments += 1;
            if attachments > limits.max_attachments_per_message {
                return Err(InputError::invalid(field, "Too many attachments"));
            }
        }
        parts.push(part);
    }
    Ok(parts)
}

/// Why a part is skipped before it is parsed: its kind, or its source's, is not one AG-UI
/// describes. A part without a string `type` is malformed, and left to the parse to refuse.
fn unrecognised_part(item: &Value) -> Option<String> {
    let kind = item.get("type")?.as_str()?;
    if !PART_KINDS.contains(&kind) {
        return Some(format!(
            "a content part of a kind AG-UI does not describe ({kind:?})"
        ));
    }
    let source = item.get("source")?.get("type")?.as_str()?;
    (!SOURCE_KINDS.contains(&source)).then(|| {
        format!("a {kind} part whose source is of a kind AG-UI does not describe ({source:?})")
    })
}

/// A tool message's content: a string as it is, or AG-UI 1.x content parts, of which the text
/// parts are kept, concatenated in order (the models here take tool results as text); media
/// and unknown parts are skipped, and a result left with nothing is `""`, so the call is still
/// answered. Other JSON, which some clients send for structured results, is kept as JSON text.
pub(crate) fn tool_content(content: Value, field: &str, skipped: &mut Vec<SkippedPart>) -> String {
    let parts = match content {
        Value::Array(items) if !items.is_empty() && items.iter().all(is_part_like) => items,
        other => return value_to_text(other),
    };
    let mut text = String::new();
    for (index, part) in parts.iter().enumerate() {
        match (
            part["type"].as_str(),
            part.get("text").and_then(Value::as_str),
        ) {
            (Some("text"), Some(piece)) => text.push_str(piece),
            (kind, _) => {
                let reason = match unrecognised_part(part) {
                    Some(reason) => reason,
                    None => format!(
                        "a {} part in a tool result: the model is given tool results as text",
                        kind.unwrap_or("content")
                    ),
                };
                skipped.push(SkippedPart::new(format!("{field}[{index}]"), reason));
            }
        }
    }
    text
}

/// Some clients send structured values where AG-UI expects text; keep them as JSON text.
pub(crate) fn value_to_text(value: Value) -> String {
    match value {
        Value::String(text) => text,
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn is_part_like(item: &Value) -> bool {
    item.get("type").is_some_and(Value::is_string)
}

fn parse_part(item: Value, field: &str, limits: &Limits) -> Result<UserPart, InputError> {
    let wire: WirePart = serde_json::from_value(item)
        .map_err(|err| InputError::invalid(field, strip_position(&err.to_string())))?;
    match wire {
        WirePart::Text { text } => Ok(UserPart::Text { text }),
        WirePart::Binary {
            mime_type,
            url,
            data,
            filename,
        } => binary_part(mime_type, url, data, filename, field, limits),
        WirePart::Image(media) => media.into_part(MediaKind::Image, field, limits),
        WirePart::Audio(media) => media.into_part(MediaKind::Audio, field, limits),
        WirePart::Video(media) => media.into_part(MediaKind::Video, field, limits),
        WirePart::Document(media) => media.into_part(MediaKind::Document, field, limits),
    }
}

/// A legacy `binary` part as the 1.0 part its media type says it is.
fn binary_part(
    mime_type: String,
    url: Option<String>,
    data: Option<String>,
    filename: Option<String>,
    field: &str,
    limits: &Limits,
) -> Result<UserPart, InputError> {
    let kind = MediaKind::of_media_type(&mime_type);
    let source = match (data, url) {
        (Some(data), _) => WireSource {
            kind: "data".to_owned(),
            value: data,
            mime_type: Some(mime_type),
            provider: None,
        },
        (None, Some(url)) => WireSource {
            kind: "url".to_owned(),
            value: url,
            mime_type: Some(mime_type),
            provider: None,
        },
        (None, None) => {
            return Err(InputError::invalid(
                field,
                "binary content requires url or data",
            ));
        }
    };
    let filename = check_filename(filename, &format!("{field}.filename"))?;
    media_part(kind, source, filename, field, limits)
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum WirePart {
    Text {
        text: String,
    },
    /// Before AG-UI 1.0 every attachment was a `binary` part.
    Binary {
        #[serde(alias = "mime_type", rename = "mimeType")]
        mime_type: String,
        #[serde(default)]
        url: Option<String>,
        #[serde(default)]
        data: Option<String>,
        #[serde(default)]
        filename: Option<String>,
    },
    Image(WireMedia),
    Audio(WireMedia),
    Video(WireMedia),
    Document(WireMedia),
}

#[derive(Deserialize)]
struct WireMedia {
    source: WireSource,
    #[serde(default)]
    metadata: Option<Value>,
}

#[derive(Deserialize)]
struct WireSource {
    #[serde(rename = "type")]
    kind: String,
    value: String,
    #[serde(default, alias = "mime_type", rename = "mimeType")]
    mime_type: Option<String>,
    /// A `file` source's issuer.
    #[serde(default)]
    provider: Option<String>,
}

/// What a media part is, which its media type must agree with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MediaKind {
    Image,
    Audio,
    Video,
    Document,
}

impl MediaKind {
    /// A legacy `binary` part's kind, by its media type.
    fn of_media_type(mime_type: &str) -> Self {
        let lower = mime_type.trim().to_ascii_lowercase();
        if lower.starts_with("image/") {
            MediaKind::Image
        } else if lower.starts_with("audio/") {
            MediaKind::Audio
        } else if lower.starts_with("video/") {
            MediaKind::Video
        } else {
            MediaKind::Document
        }
    }

    fn part(self, attachment: Attachment) -> UserPart {
        match self {
            MediaKind::Image => UserPart::Image(attachment),
            MediaKind::Audio => UserPart::Audio(attachment),
            MediaKind::Video => UserPart::Video(attachment),
            MediaKind::Document => UserPart::Document(attachment),
        }
    }

    /// The top-level media type a part of this kind must have, if any.
    fn required_top_level(self) -> Option<&'static str> {
        match self {
            MediaKind::Image => Some("image"),
            MediaKind::Audio => Some("audio"),
            MediaKind::Video => Some("video"),
            MediaKind::Document => None,
        }
    }
}

impl WireMedia {
    fn into_part(
        self,
        kind: MediaKind,
        field: &str,
        limits: &Limits,
    ) -> Result<UserPart, InputError> {
        let filename = match self.metadata.as_ref().and_then(|m| m.get("filename")) {
            None | Some(Value::Null) => None,
            Some(Value::String(name)) => {
                check_filename(Some(name.clone()), &format!("{field}.metadata.filename"))?
            }
            Some(_) => {
                return Err(InputError::invalid(
                    format!("{field}.metadata.filename"),
                    "must be a string",
                ));
            }
        };
        media_part(kind, self.source, filename, field, limits)
    }
}

/// The longest file name kept.
const MAX_FILENAME_CHARS: usize = 255;

fn check_filename(filename: Option<String>, field: &str) -> Result<Option<String>, InputError> {
    match filename.filter(|name| !name.is_empty()) {
        Some(name)
            if name.chars().count() > MAX_FILENAME_CHARS || name.chars().any(char::is_control) =>
        {
            Err(InputError::invalid(
                field,
                format!(
                    "a file name has at most {MAX_FILENAME_CHARS} characters and no control characters"
                ),
            ))
        }
        other => Ok(other),
    }
}

/// A media part from its source: an http(s) URL (never fetched), inline base64 data, or a
/// `data:` URL, which becomes inline data.
fn media_part(
    kind: MediaKind,
    source: WireSource,
    filename: Option<String>,
    field: &str,
    limits: &Limits,
) -> Result<UserPart, InputError> {
    let source_field = format!("{field}.source");
    let source = match source.kind.as_str() {
        "url" if source.value.starts_with("data:") => {
            let (mime_type, data) = split_data_url(&source.value).ok_or_else(|| {
                InputError::invalid(
                    format!("{source_field}.value"),
                    "a data: URL must be base64: data:<mimeType>;base64,<data>",
                )
            })?;
            inline_data(data.to_owned(), mime_type.to_owned(), &source_field, limits)?
        }
        "url" => {
            let url = source.value;
            let is_web_url = url.starts_with("https://") || url.starts_with("http://");
            if !is_web_url || url.len() > 4096 || url.chars().any(char::is_whitespace) {
                return Err(InputError::invalid(
                    field,
                    "attachment url must be an http(s) URL",
                ));
            }
            if let Some(mime_type) = &source.mime_type {
                check_media_type(mime_type, &format!("{source_field}.mimeType"))?;
            }
            PartSource::Url {
                value: url,
                mime_type: source.mime_type,
            }
        }
        "data" => {
            let mime_type = source.mime_type.ok_or_else(|| {
                InputError::invalid(
                    format!("{source_field}.mimeType"),
                    "a data source needs its mimeType",
                )
            })?;
            inline_data(source.value, mime_type, &source_field, limits)?
        }
        "file" => file_source(source, &source_field)?,
        other => {
            return Err(InputError::invalid(
                format!("{source_field}.type"),
                format!("unknown source type {other:?}: expected url, data or file"),
            ));
        }
    };
    let attachment = Attachment {
        source,
        metadata: filename.map(|filename| PartMetadata {
            filename: Some(filename),
        }),
    };
    if let (Some(top), Some(media_type)) = (kind.required_top_level(), attachment.media_type())
        && media_type.split('/').next() != Some(top)
    {
        return Err(InputError::invalid(
            format!("{source_field}.mimeType"),
            format!("a {top} part needs a {top}/* mimeType, not {media_type}"),
        ));
    }
    Ok(kind.part(attachment))
}

/// A provider's file handle, kept as the client sent it: opaque, never fetched or read.
fn file_source(source: WireSource, field: &str) -> Result<PartSource, InputError> {
    if source.value.is_empty() || source.value.len() > 4096 {
        return Err(InputError::invalid(
            format!("{field}.value"),
            "a file handle is 1 to 4,096 bytes",
        ));
    }
    if let Some(mime_type) = &source.mime_type {
        check_media_type(mime_type, &format!("{field}.mimeType"))?;
    }
    Ok(PartSource::File {
        value: source.value,
        mime_type: source.mime_type,
        provider: source.provider,
    })
}

/// `data:<mimeType>;base64,<data>` into its media type and data.
fn split_data_url(url: &str) -> Option<(&str, &str)> {
    let (head, data) = url.strip_prefix("data:")?.split_once(',')?;
    let mime_type = head.strip_suffix(";base64")?;
    Some((mime_type, data))
}

fn inline_data(
    value: String,
    mime_type: String,
    field: &str,
    limits: &Limits,
) -> Result<PartSource, InputError> {
    check_media_type(&mime_type, &format!("{field}.mimeType"))?;
    let limit = limits.max_inline_attachment_bytes;
    let too_large = || {
        InputError::invalid(
            format!("{field}.value"),
            format!("inline attachment data exceeds the limit of {limit} bytes"),
        )
    };
    // Checked before decoding, so an oversized value costs no allocation.
    if value.len() > limit.div_ceil(3).saturating_mul(4) {
        return Err(too_large());
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&value)
        .map_err(|_| InputError::invalid(format!("{field}.value"), "must be standard base64"))?;
    if bytes.is_empty() {
        return Err(InputError::invalid(
            format!("{field}.value"),
            "inline data is empty",
        ));
    }
    if bytes.len() > limit {
        return Err(too_large());
    }
    Ok(PartSource::Data { value, mime_type })
}

/// A media type as RFC 6838 names them (`type/subtype`, parameters allowed after `;`): what
/// providers are told the bytes are, so nothing else passes.
fn check_media_type(mime_type: &str, field: &str) -> Result<(), InputError> {
    let token = |text: &str| {
        !text.is_empty()
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "!#$&^_.+-".contains(c))
    };
    let (essence, parameters) = mime_type.split_once(';').unwrap_or((mime_type, ""));
    let valid = mime_type.len() <= 255
        && essence
            .trim()
            .split_once('/')
            .is_some_and(|(top, sub)| token(top) && token(sub))
        && parameters
            .chars()
            .all(|c| c.is_ascii() && !c.is_ascii_control());
    if valid {
        Ok(())
    } else {
        Err(InputError::invalid(
            field,
            "must be a media type such as image/png",
        ))
    }
}
