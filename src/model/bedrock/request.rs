//! A [`ModelRequest`] as Converse input: system blocks, strictly alternating user/assistant
//! messages starting with a user, tool uses and results as blocks, and a `toolConfig` whenever
//! the request offers tools or the history holds tool blocks (Bedrock rejects the latter
//! without one).
//!
//! Attachments: see [`super::media`]. Reasoning: a reasoning message's signed text or redacted
//! bytes open the next assistant message (Claude's extended thinking requires them back with
//! the tool results of that turn); reasoning without an artefact this server made is dropped,
//! as a model cannot check it.

use super::document::to_document;
use super::media;
use crate::model::reasoning::ReasoningArtefact;
use crate::model::{ModelError, ModelRequest, Sampling, ToolSpec};
use crate::protocol::{Message, ToolCall, UserContent, UserPart};
use aws_sdk_bedrockruntime::types::{
    CachePointBlock, CachePointType, ContentBlock, ConversationRole, InferenceConfiguration,
    ReasoningContentBlock, ReasoningTextBlock, SpecificToolChoice, SystemContentBlock, Tool,
    ToolChoice, ToolConfiguration, ToolInputSchema, ToolResultBlock, ToolResultContentBlock,
    ToolSpecification, ToolUseBlock,
};
use serde_json::{Value, json};
use std::collections::HashSet;

/// What a Bedrock model is asked with.
#[derive(Debug, Clone)]
pub struct BedrockSettings {
    /// A model id (`anthropic.claude-…`) or an inference profile id or ARN (`us.anthropic.…`).
    pub model_id: String,
    /// `inferenceConfig.maxTokens` when the request sets none; `None` leaves the model's default.
    pub max_tokens: Option<u32>,
    /// Claude's extended thinking with this many tokens to think in; `None` is off.
    pub reasoning_budget_tokens: Option<u32>,
    /// Where requests mark their prefix for Bedrock's prompt cache.
    pub cache_points: CachePoints,
}

/// Which `cachePoint` blocks a request carries. A model without prompt caching refuses them
/// (`AccessDeniedException`), so they go only where the model is known to take them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CachePoints {
    Off,
    /// After the system prompt, after the summary and on the last user turn (Amazon Nova,
    /// which caches no tools).
    SystemAndMessages,
    /// The same, and after the tools (Claude).
    All,
}

impl CachePoints {
    /// What `model_id` (a model id or an inference profile id) takes: Claude from 3.5 Haiku
    /// and 3.7 Sonnet on, and Amazon Nova. An application inference profile's ARN names no
    /// model: `PROMPT_CACHE=off` there, or a profile that names the model.
    pub fn for_model(model_id: &str) -> Self {
        let id = model_id.to_ascii_lowercase();
        let older_claude = id.contains("claude-3-")
            && !id.contains("claude-3-5-haiku")
            && !id.contains("claude-3-7");
        if id.contains("anthropic.claude-") && !older_claude {
            CachePoints::All
        } else if id.contains("amazon.nova-") {
            CachePoints::SystemAndMessages
        } else {
            CachePoints::Off
        }
    }
}

/// The parts of a `ConverseStream` call that come from the request.
#[derive(Debug, Clone)]
pub(crate) struct ConverseInput {
    pub system: Vec<SystemContentBlock>,
    pub messages: Vec<aws_sdk_bedrockruntime::types::Message>,
    pub tool_config: Option<ToolConfiguration>,
}

/// Stands in for the user when a history starts with the assistant (Bedrock requires a user
/// message first).
const OPENING: &str = "(The conversation continues.)";

/// The Converse input for `request`. `send_reasoning`: reasoning blocks go back to the model
/// (only with extended thinking on: other models, and Claude without it, need none).
pub(crate) fn converse_input(
    request: &ModelRequest,
    send_reasoning: bool,
    cache: CachePoints,
) -> Result<ConverseInput, ModelError> {
    let mut conversation = Conversation::default();
    conversation.add_system(request.system.as_deref().unwrap_or_default());
    let summary = request.summary.as_deref().unwrap_or_default();
    if cache != CachePoints::Off && !conversation.system.is_empty() && !summary.trim().is_empty() {
        // Tools and system prompt stay cached when a compaction changes the summary.
        conversation
            .system
            .push(SystemContentBlock::CachePoint(cache_point()?));
    }
    conversation.add_system(summary);
    if cache != CachePoints::Off && !conversation.system.is_empty() {
        conversation
            .system
            .push(SystemContentBlock::CachePoint(cache_point()?));
    }
    for message in &request.messages {
        conversation.add(message, send_reasoning)?;
    }
    if cache != CachePoints::Off {
        conversation.mark_last_user_turn()?;
    }
    let system = std::mem::take(&mut conversation.system);
    let history_tools = std::mem::take(&mut conversation.history_tools);
    let messages = conversation.into_messages()?;
    Ok(ConverseInput {
        system,
        messages,
        tool_config: tool_config(
            &request.tools,
            history_tools,
            cache == CachePoints::All,
            request.tool_choice.as_deref(),
        )?,
    })
}

fn cache_point() -> Result<CachePointBlock, ModelError> {
    CachePointBlock::builder()
        .r#type(CachePointType::Default)
        .build()
        .map_err(build_error)
}

/// The Converse input as it is built, one history message at a time.
#[derive(Default)]
struct Conversation {
    system: Vec<SystemContentBlock>,
    turns: Vec<(ConversationRole, Vec<ContentBlock>)>,
    /// The tools the history calls, in the order first called.
    history_tools: Vec<String>,
    document_names: HashSet<String>,
    /// Reasoning blocks waiting for the assistant message they open.
    reasoning: Vec<ContentBlock>,
}

impl Conversation {
    fn add(&mut self, message: &Message, send_reasoning: bool) -> Result<(), ModelError> {
        if !matches!(
            message,
            Message::Assistant { .. } | Message::Reasoning { .. }
        ) {
            self.reasoning.clear();
        }
        match message {
            Message::Reasoning {
                content,
                encrypted_value,
                ..
            } => {
                if send_reasoning {
                    self.add_reasoning(content, encrypted_value.as_deref())?;
                }
            }
            Message::System { content, .. } | Message::Developer { content, .. } => {
                self.add_system(content);
            }
            Message::User { content, .. } => {
                let blocks = self.user_blocks(content);
                self.push(ConversationRole::User, blocks);
            }
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                let blocks = self.assistant_blocks(content.as_deref(), tool_calls)?;
                self.push(ConversationRole::Assistant, blocks);
            }
            Message::Tool {
                tool_call_id,
                content,
                error,
                ..
            } => {
                let block = tool_result_block(tool_call_id.as_str(), content, error.as_deref())?;
                self.push(ConversationRole::User, vec![block]);
            }
        }
        Ok(())
    }

    fn add_system(&mut self, text: &str) {
        if !text.trim().is_empty() {
            self.system.push(SystemContentBlock::Text(text.to_owned()));
        }
    }

    /// Only reasoning this server signed or redacted goes back: a model cannot check the rest.
    fn add_reasoning(
        &mut self,
        text: &str,
        encrypted_value: Option<&str>,
    ) -> Result<(), ModelError> {
        if let Some(artefact) = encrypted_value.and_then(ReasoningArtefact::decode) {
            self.reasoning.extend(reasoning_block(text, artefact)?);
        }
        Ok(())
    }

    fn user_blocks(&mut self, content: &UserContent) -> Vec<ContentBlock> {
        match content {
            UserContent::Text(text) => text_block(text).into_iter().collect(),
            UserContent::Parts(parts) => parts
                .iter()
                .filter_map(|part| match part {
                    UserPart::Text { text } => text_block(text),
                    media => Some(media::part_block(media, &mut self.document_names)),
                })
                .collect(),
        }
    }

    /// The pending reasoning, the text, then one tool use per call.
    fn assistant_blocks(
        &mut self,
        content: Option<&str>,
        tool_calls: &[ToolCall],
    ) -> Result<Vec<ContentBlock>, ModelError> {
        let mut blocks: Vec<ContentBlock> = std::mem::take(&mut self.reasoning);
        blocks.extend(content.and_then(text_block));
        for call in tool_calls {
            if !self.history_tools.contains(&call.function.name) {
                self.history_tools.push(call.function.name.clone());
            }
            blocks.push(tool_use_block(call)?);
        }
        Ok(blocks)
    }

    /// Appends blocks to the last turn when it has the same role: Bedrock requires roles to
    /// alternate (several user messages in a row, or a turn's tool results, become one message).
    fn push(&mut self, role: ConversationRole, blocks: Vec<ContentBlock>) {
        if blocks.is_empty() {
            return;
        }
        match self.turns.last_mut() {
            Some((last, content)) if *last == role => content.extend(blocks),
            _ => self.turns.push((role, blocks)),
        }
    }

    /// Ends the last user turn with a cache point: the next request, which repeats this one
    /// and adds to it, reads everything before it from the cache.
    fn mark_last_user_turn(&mut self) -> Result<(), ModelError> {
        if let Some((_, content)) = self
            .turns
            .iter_mut()
            .rev()
            .find(|(role, content)| *role == ConversationRole::User && !content.is_empty())
        {
            content.push(ContentBlock::CachePoint(cache_point()?));
        }
        Ok(())
    }

    /// The turns as Converse messages, opened by a user turn as Bedrock requires.
    fn into_messages(self) -> Result<Vec<aws_sdk_bedrockruntime::types::Message>, ModelError> {
        let opens_with_assistant = self
            .turns
            .first()
            .is_some_and(|(role, _)| *role == ConversationRole::Assistant);
        let opening = opens_with_assistant.then(|| {
            (
                ConversationRole::User,
                vec![ContentBlock::Text(OPENING.to_owned())],
            )
        });
        opening
            .into_iter()
            .chain(self.turns)
            .map(|(role, content)| {
                aws_sdk_bedrockruntime::types::Message::builder()
                    .role(role)
                    .set_content(Some(content))
                    .build()
                    .map_err(build_error)
            })
            .collect()
    }
}

/// A call's arguments as the tool use's input: an object, or `{}` when they are not one.
fn tool_use_block(call: &ToolCall) -> Result<ContentBlock, ModelError> {
    let input = serde_json::from_str::<Value>(&call.function.arguments)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    let block = ToolUseBlock::builder()
        .tool_use_id(call.id.as_str())
        .name(&call.function.name)
        .input(to_document(&input))
        .build()
        .map_err(build_error)?;
    Ok(ContentBlock::ToolUse(block))
}

fn tool_result_block(
    tool_call_id: &str,
    content: &str,
    error: Option<&str>,
) -> Result<ContentBlock, ModelError> {
    let text = match error {
        Some(error) if content.is_empty() => format!("Error: {error}"),
        _ if content.trim().is_empty() => "(no output)".to_owned(),
        _ => content.to_owned(),
    };
    // `status` is left out: only some models accept it; the text says "Error: …".
    let block = ToolResultBlock::builder()
        .tool_use_id(tool_call_id)
        .content(ToolResultContentBlock::Text(text))
        .build()
        .map_err(build_error)?;
    Ok(ContentBlock::ToolResult(block))
}

/// `toolConfig` for the offered tools and those the history calls; `None` when there are none.
/// Calls in the history to tools no longer offered still need a spec, or Bedrock refuses the
/// history's toolUse blocks.
fn tool_config(
    offered: &[ToolSpec],
    history_tools: Vec<String>,
    cache: bool,
    forced: Option<&str>,
) -> Result<Option<ToolConfiguration>, ModelError> {
    let mut specs: Vec<ToolSpec> = offered.to_vec();
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
    if specs.is_empty() {
        return Ok(None);
    }
    let mut tools = specs.iter().map(tool).collect::<Result<Vec<_>, _>>()?;
    if cache {
        tools.push(Tool::CachePoint(cache_point()?));
    }
    let choice = forced
        .map(|name| {
            SpecificToolChoice::builder()
                .name(name)
                .build()
                .map(ToolChoice::Tool)
                .map_err(build_error)
        })
        .transpose()?;
    let config = ToolConfiguration::builder()
        .set_tools(Some(tools))
        .set_tool_choice(choice)
        .build()
        .map_err(build_error)?;
    Ok(Some(config))
}

/// `inferenceConfig` from the request's sampling options; `None` when nothing is set.
/// Bedrock's Converse API has no seed: a requested one is not sent.
pub(crate) fn inference_config(
    settings: &BedrockSettings,
    sampling: &Sampling,
) -> Option<InferenceConfiguration> {
    let thinking = settings.reasoning_budget_tokens;
    let answer = sampling.max_tokens.or(settings.max_tokens);
    // The budget is part of maxTokens, which must exceed it: the answer gets its own
    // allowance on top.
    let max_tokens = match thinking {
        Some(budget) => Some(budget.saturating_add(answer.unwrap_or(THINKING_ANSWER_TOKENS))),
        None => answer,
    };
    // Claude refuses a temperature, and a top_p below 0.95, with extended thinking.
    let temperature = sampling.temperature.filter(|_| thinking.is_none());
    let top_p = sampling
        .top_p
        .filter(|top_p| thinking.is_none() || *top_p >= 0.95);
    let stop = (!sampling.stop.is_empty()).then(|| sampling.stop.clone());
    if max_tokens.is_none() && temperature.is_none() && top_p.is_none() && stop.is_none() {
        return None;
    }
    Some(
        InferenceConfiguration::builder()
            .set_max_tokens(max_tokens.map(|max| i32::try_from(max).unwrap_or(i32::MAX)))
            .set_temperature(temperature.map(narrow))
            .set_top_p(top_p.map(narrow))
            .set_stop_sequences(stop)
            .build(),
    )
}

/// `additionalModelRequestFields`: Claude's extended thinking, when configured.
pub(crate) fn additional_fields(settings: &BedrockSettings) -> Option<aws_smithy_types::Document> {
    settings.reasoning_budget_tokens.map(|budget| {
        to_document(&json!({"thinking": {"type": "enabled", "budget_tokens": budget}}))
    })
}

/// The answer's allowance on top of the thinking budget when neither the request nor
/// `BEDROCK_MAX_TOKENS` sets one.
pub(crate) const THINKING_ANSWER_TOKENS: u32 = 4_096;

/// A sampling value as the SDK's `f32`: checked to 0–2 on input, so the precision lost does
/// not matter.
#[allow(clippy::cast_possible_truncation)]
fn narrow(value: f64) -> f32 {
    value as f32
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

fn reasoning_block(
    text: &str,
    artefact: ReasoningArtefact,
) -> Result<Option<ContentBlock>, ModelError> {
    let block = match artefact {
        ReasoningArtefact::Signature(signature) => ReasoningContentBlock::ReasoningText(
            ReasoningTextBlock::builder()
                .text(text)
                .signature(signature)
                .build()
                .map_err(build_error)?,
        ),
        ReasoningArtefact::Redacted(bytes) => {
            ReasoningContentBlock::RedactedContent(aws_smithy_types::Blob::new(bytes))
        }
        // Another provider's reasoning: Converse has no block for it.
        ReasoningArtefact::Item(_) => return Ok(None),
    };
    Ok(Some(ContentBlock::ReasoningContent(block)))
}

fn build_error(error: aws_sdk_bedrockruntime::error::BuildError) -> ModelError {
    tracing::error!(%error, "could not build the Bedrock request");
    ModelError::Api("the Bedrock request could not be built".to_owned())
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
