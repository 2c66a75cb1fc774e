//! A [`ModelRequest`] as Converse input: system blocks, strictly alternating user/assistant
//! messages starting with a user, tool uses and results as blocks, and a `toolConfig` whenever
//! the request offers tools or the history holds tool blocks (Bedrock rejects the latter
//! without one).
//!
//! Images: Bedrock takes image bytes or an S3 location and this function never fetches a URL
//! (no SSRF, no unbounded downloads). An `https` URL of an S3 object becomes an S3 location
//! (Bedrock reads it with the caller's permissions, on models that support S3 sources); any
//! other image is replaced by a short text note so the model can say it cannot see it, and the
//! thread stays usable.

use super::document::to_document;
use crate::model::{ModelError, ModelRequest, ToolSpec};
use crate::protocol::message::ImageSource as WireImage;
use crate::protocol::{Message, UserContent, UserPart};
use aws_sdk_bedrockruntime::types::{
    ContentBlock, ConversationRole, ImageBlock, ImageFormat, ImageSource, S3Location,
    SystemContentBlock, Tool, ToolConfiguration, ToolInputSchema, ToolResultBlock,
    ToolResultContentBlock, ToolSpecification, ToolUseBlock,
};
use serde_json::{Value, json};

/// The parts of a `ConverseStream` call that come from the request.
#[derive(Debug, Clone)]
pub struct ConverseInput {
    pub system: Vec<SystemContentBlock>,
    pub messages: Vec<aws_sdk_bedrockruntime::types::Message>,
    pub tool_config: Option<ToolConfiguration>,
}

/// Stands in for the user when a history starts with the assistant (Bedrock requires a user
/// message first).
const OPENING: &str = "(The conversation continues.)";

pub fn converse_input(request: &ModelRequest) -> Result<ConverseInput, ModelError> {
    let mut system = Vec::new();
    if let Some(text) = request.system.as_deref().filter(|t| !t.trim().is_empty()) {
        system.push(SystemContentBlock::Text(text.to_owned()));
    }
    let mut turns: Vec<(ConversationRole, Vec<ContentBlock>)> = Vec::new();
    let mut history_tools: Vec<String> = Vec::new();
    for message in &request.messages {
        match message {
            Message::System { content, .. } | Message::Developer { content, .. } => {
                if !content.trim().is_empty() {
                    system.push(SystemContentBlock::Text(content.clone()));
                }
            }
            Message::User { content, .. } => {
                let blocks = match content {
                    UserContent::Text(text) => text_block(text).into_iter().collect(),
                    UserContent::Parts(parts) => parts
                        .iter()
                        .filter_map(|part| match part {
                            UserPart::Text { text } => text_block(text),
                            UserPart::Image { source } => Some(image_block(source)),
                        })
                        .collect(),
                };
                push(&mut turns, ConversationRole::User, blocks);
            }
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                let mut blocks: Vec<ContentBlock> = content
                    .as_deref()
                    .and_then(text_block)
                    .into_iter()
                    .collect();
                for call in tool_calls {
                    let input = serde_json::from_str::<Value>(&call.function.arguments)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({}));
                    if !history_tools.contains(&call.function.name) {
                        history_tools.push(call.function.name.clone());
                    }
                    blocks.push(ContentBlock::ToolUse(
                        ToolUseBlock::builder()
                            .tool_use_id(call.id.as_str())
                            .name(&call.function.name)
                            .input(to_document(&input))
                            .build()
                            .map_err(build_error)?,
                    ));
                }
                push(&mut turns, ConversationRole::Assistant, blocks);
            }
            Message::Tool {
                tool_call_id,
                content,
                error,
                ..
            } => {
                let text = match error {
                    Some(error) if content.is_empty() => format!("Error: {error}"),
                    _ if content.trim().is_empty() => "(no output)".to_owned(),
                    _ => content.clone(),
                };
                // `status` is left out: only some models accept it; the text says "Error: …".
                let block = ToolResultBlock::builder()
                    .tool_use_id(tool_call_id.as_str())
                    .content(ToolResultContentBlock::Text(text))
                    .build()
                    .map_err(build_error)?;
                push(
                    &mut turns,
                    ConversationRole::User,
                    vec![ContentBlock::ToolResult(block)],
                );
            }
        }
    }
    if turns
        .first()
        .is_some_and(|(role, _)| *role == ConversationRole::Assistant)
    {
        turns.insert(
            0,
            (
                ConversationRole::User,
                vec![ContentBlock::Text(OPENING.to_owned())],
            ),
        );
    }
    let messages = turns
        .into_iter()
        .map(|(role, content)| {
            aws_sdk_bedrockruntime::types::Message::builder()
                .role(role)
                .set_content(Some(content))
                .build()
                .map_err(build_error)
        })
        .collect::<Result<Vec<_>, _>>()?;

    // Calls in the history to tools no longer offered still need a spec, or Bedrock refuses the
    // history's toolUse blocks.
    let mut specs: Vec<ToolSpec> = request.tools.clone();
    for name in history_tools {
        if !specs.iter().any(|spec| spec.name == name) {
            specs.push(ToolSpec {
                name,
                description: "A tool used earlier in this conversation; no longer available."
                    .to_owned(),
                parameters: json!({"type": "object", "properties": {}}),
            });
        }
    }
    let tool_config = if specs.is_empty() {
        None
    } else {
        let tools = specs.iter().map(tool).collect::<Result<Vec<_>, _>>()?;
        Some(
            ToolConfiguration::builder()
                .set_tools(Some(tools))
                .build()
                .map_err(build_error)?,
        )
    };
    Ok(ConverseInput {
        system,
        messages,
        tool_config,
    })
}

/// Appends blocks to the last turn when it has the same role: Bedrock requires roles to
/// alternate (several user messages in a row, or a turn's tool results, become one message).
fn push(
    turns: &mut Vec<(ConversationRole, Vec<ContentBlock>)>,
    role: ConversationRole,
    blocks: Vec<ContentBlock>,
) {
    if blocks.is_empty() {
        return;
    }
    match turns.last_mut() {
        Some((last, content)) if *last == role => content.extend(blocks),
        _ => turns.push((role, blocks)),
    }
}

/// Bedrock rejects blank text blocks.
fn text_block(text: &str) -> Option<ContentBlock> {
    (!text.trim().is_empty()).then(|| ContentBlock::Text(text.to_owned()))
}

fn tool(spec: &ToolSpec) -> Result<Tool, ModelError> {
    let mut schema = match &spec.parameters {
        Value::Object(map) => Value::Object(map.clone()),
        _ => json!({"type": "object", "properties": {}}),
    };
    if schema.get("type").is_none() {
        schema["type"] = json!("object");
    }
    let mut builder = ToolSpecification::builder()
        .name(&spec.name)
        .input_schema(ToolInputSchema::Json(to_document(&schema)));
    if !spec.description.trim().is_empty() {
        builder = builder.description(&spec.description);
    }
    Ok(Tool::ToolSpec(builder.build().map_err(build_error)?))
}

fn image_block(source: &WireImage) -> ContentBlock {
    let WireImage::Url { value, mime_type } = source;
    let format = image_format(mime_type.as_deref(), value);
    match (s3_uri_for(value), format) {
        (Some(uri), Some(format)) => {
            let image = S3Location::builder()
                .uri(uri)
                .build()
                .ok()
                .and_then(|location| {
                    ImageBlock::builder()
                        .format(format)
                        .source(ImageSource::S3Location(location))
                        .build()
                        .ok()
                });
            match image {
                Some(image) => ContentBlock::Image(image),
                None => image_note(value),
            }
        }
        _ => image_note(value),
    }
}

fn image_note(url: &str) -> ContentBlock {
    ContentBlock::Text(format!(
        "[The user attached an image the model cannot see ({url}): only images stored in Amazon S3 are passed to this model.]"
    ))
}

fn image_format(mime_type: Option<&str>, url: &str) -> Option<ImageFormat> {
    let from_mime = match mime_type.map(str::to_ascii_lowercase).as_deref() {
        Some("image/png") => Some(ImageFormat::Png),
        Some("image/jpeg" | "image/jpg") => Some(ImageFormat::Jpeg),
        Some("image/gif") => Some(ImageFormat::Gif),
        Some("image/webp") => Some(ImageFormat::Webp),
        _ => None,
    };
    from_mime.or_else(|| {
        let path = url.split(['?', '#']).next().unwrap_or(url);
        let extension = path.rsplit_once('.')?.1.to_ascii_lowercase();
        match extension.as_str() {
            "png" => Some(ImageFormat::Png),
            "jpg" | "jpeg" => Some(ImageFormat::Jpeg),
            "gif" => Some(ImageFormat::Gif),
            "webp" => Some(ImageFormat::Webp),
            _ => None,
        }
    })
}

/// `s3://bucket/key` for an `https` URL of an S3 object, virtual-hosted
/// (`https://bucket.s3.region.amazonaws.com/key`) or path-style
/// (`https://s3.region.amazonaws.com/bucket/key`); `None` for any other URL. A query (a
/// presigned URL's signature) is dropped: Bedrock reads the object with the caller's permissions.
pub fn s3_uri_for(url: &str) -> Option<String> {
    let rest = url.strip_prefix("https://")?;
    let rest = rest.split(['?', '#']).next()?;
    let (host, path) = rest.split_once('/')?;
    let host = host.to_ascii_lowercase();
    let host = host.strip_suffix(".amazonaws.com")?;
    let is_s3_endpoint = |name: &str| {
        name == "s3"
            || name
                .strip_prefix("s3.")
                .is_some_and(|region| !region.is_empty() && !region.contains('.'))
            || name
                .strip_prefix("s3-")
                .is_some_and(|region| !region.is_empty() && !region.contains('.'))
    };
    let (bucket, key) = if is_s3_endpoint(host) {
        let (bucket, key) = path.split_once('/')?;
        (bucket.to_owned(), key)
    } else {
        let (bucket, endpoint) = host.split_once('.')?;
        if !is_s3_endpoint(endpoint) {
            return None;
        }
        (bucket.to_owned(), path)
    };
    let key = percent_decode(key)?;
    let valid_bucket = !bucket.is_empty()
        && bucket
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
    (valid_bucket && !key.is_empty()).then(|| format!("s3://{bucket}/{key}"))
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        if byte == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(byte);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn build_error(error: aws_sdk_bedrockruntime::error::BuildError) -> ModelError {
    tracing::error!(%error, "could not build the Bedrock request");
    ModelError::Api("the Bedrock request could not be built".to_owned())
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
