//! The offline demo model: no API key, no network. `cargo run` answers with it when no model
//! is configured, and it says so in every reply.

use super::{
    DeltaStream, FinishReason, ModelDelta, ModelError, ModelProvider, ModelRequest, Usage,
};
use crate::protocol::{Message, UserContent, UserPart};
use async_trait::async_trait;
use serde_json::{Map, Value, json};
use std::time::Duration;

/// The offline demo: no API key, no network. Its rules, in order (docs/dev-page.md documents them):
/// 1. after a tool result, it says (as the demo) what the tool answered;
/// 2. when the user's last message names one of the request's tools (a frontend tool, a
///    sub-agent, an MCP server's or a memory tool: any but `get_current_time`), it calls that
///    tool. Names are compared on letters and digits only, ignoring case, so `confirmAction` is
///    named by "confirm action" and `change-background-color` by "Change background color".
///    Its arguments fill each string parameter that has a closed set of values (an `enum`, or a
///    parameter named `color`/`colour`: the basic colour names) with the value the message
///    names, else the first; each other required string parameter (a sub-agent's `task`,
///    `save_memory`'s `text`) with the user's words after the tool's name (all of them when
///    nothing follows it); other parameters are left out;
/// 3. when the message contains "time", it calls the server tool `get_current_time`;
/// 4. otherwise it says what it is and repeats the message.
///
/// Before rule 2, when the client paints A2UI surfaces (the request offers `render_a2ui`): a
/// click on a surface (the user message the run makes of `forwardedProps.a2uiAction`) is
/// answered with the values the user entered, and a message naming the render tool or a "form"
/// gets a small form (a text field bound to `/name`, a button whose `submit` event carries it).
#[derive(Clone, Default)]
pub struct DemoModel {
    pub word_delay: Duration,
}

impl DemoModel {
    fn answer(request: &ModelRequest) -> Vec<ModelDelta> {
        let last = request.messages.last();
        if let Some(Message::Tool { content, .. }) = last {
            return Self::speak(&format!(
                "This is agui-lambda's scripted demo model (no OPENAI_API_KEY is set). The tool answered: {content}"
            ));
        }
        let text = match last {
            Some(Message::User { content, .. }) => written(content),
            _ => String::new(),
        };
        let lower = text.to_lowercase();
        if request.tools.iter().any(|tool| tool.name == RENDER_TOOL) {
            if let Some(click) = surface_click(&text) {
                return Self::speak(&click);
            }
            if words_after(&text, RENDER_TOOL).is_some()
                || lower
                    .split(|c: char| !c.is_alphanumeric())
                    .any(|word| word == "form")
            {
                return Self::call(RENDER_TOOL, &demo_form().to_string());
            }
        }
        let named = request
            .tools
            .iter()
            .filter(|tool| tool.name != "get_current_time")
            .find_map(|tool| words_after(&text, &tool.name).map(|rest| (tool, rest)));
        if let Some((tool, rest)) = named {
            let words = if rest.is_empty() { text.trim() } else { rest };
            return Self::call(
                &tool.name,
                &arguments(&tool.parameters, &lower, words).to_string(),
            );
        }
        let has_clock = request
            .tools
            .iter()
            .any(|tool| tool.name == "get_current_time");
        if has_clock && lower.contains("time") {
            return Self::call("get_current_time", &json!({}).to_string());
        }
        Self::speak(&format!(
            "This is agui-lambda's scripted demo model (no OPENAI_API_KEY is set). You said: {text}"
        ))
    }

    fn speak(text: &str) -> Vec<ModelDelta> {
        let mut deltas: Vec<ModelDelta> = text
            .split_inclusive(' ')
            .map(|word| ModelDelta::Text(word.to_owned()))
            .collect();
        deltas.push(ModelDelta::Finish(FinishReason::Stop));
        deltas.push(ModelDelta::Usage(Usage::default()));
        deltas
    }

    fn call(name: &str, arguments: &str) -> Vec<ModelDelta> {
        vec![
            ModelDelta::ToolCallStart {
                index: 0,
                id: None,
                name: name.to_owned(),
            },
            ModelDelta::ToolCallArgs {
                index: 0,
                delta: arguments.to_owned(),
            },
            ModelDelta::Finish(FinishReason::ToolCalls),
        ]
    }
}

/// The render tool the run offers a client that paints A2UI (`genui::a2ui::describe::TOOL_NAME`).
const RENDER_TOOL: &str = "render_a2ui";

/// How the run words a click on a surface for the model (`genui::a2ui::action`).
const CLICK_OPENING: &str = "User performed action \"";

/// The demo's form, as the render tool takes it: the components and the data as JSON text.
fn demo_form() -> Value {
    let components = json!([
        {"id": "root", "component": "Card", "child": "body"},
        {"id": "body", "component": "Column", "children": ["title", "name", "send"]},
        {"id": "title", "component": "Text", "text": "A form from the demo model", "variant": "h3"},
        {"id": "name", "component": "TextField", "label": "Your name", "value": {"path": "/name"}},
        {"id": "send", "component": "Button", "child": "send-label", "variant": "primary",
         "action": {"event": {"name": "submit", "context": {"name": {"path": "/name"}}}}},
        {"id": "send-label", "component": "Text", "text": "Send"}
    ]);
    json!({
        "surfaceId": "demo-form",
        "components": components.to_string(),
        "data": json!({"name": ""}).to_string(),
    })
}

/// The demo's answer to a click on a surface, `None` when `text` is not one: the event, the
/// surface and each value the user entered (`User performed action "submit" on surface
/// "demo-form" (component: send). Context: {"name":"Ada"}`).
fn surface_click(text: &str) -> Option<String> {
    let rest = text.strip_prefix(CLICK_OPENING)?;
    let (event, rest) = rest.split_once('"')?;
    let surface = rest
        .strip_prefix(" on surface \"")
        .and_then(|rest| rest.split_once('"'))
        .map_or("", |(surface, _)| surface);
    let context = text
        .split_once(". Context: ")
        .and_then(|(_, context)| serde_json::from_str::<Map<String, Value>>(context).ok())
        .unwrap_or_default();
    let values: Vec<String> = context
        .iter()
        .map(|(key, value)| match value {
            Value::String(text) => format!("{key}: {text}"),
            other => format!("{key}: {other}"),
        })
        .collect();
    let entered = if values.is_empty() {
        "nothing entered".to_owned()
    } else {
        values.join(", ")
    };
    Some(format!(
        "This is agui-lambda's scripted demo model (no OPENAI_API_KEY is set). You pressed \"{event}\" on the surface \"{surface}\" with {entered}."
    ))
}

/// The colours a `color` parameter takes when its schema names none: the AG-Kit send-message
/// protocol's `change-background-color` list, which the dev page and CopilotKit example declare.
const COLOURS: &[&str] = &[
    "blue",
    "red",
    "green",
    "transparent",
    "yellow",
    "purple",
    "orange",
    "pink",
    "brown",
    "gray",
    "black",
    "white",
];

/// The demo's arguments for a tool: each string parameter with a closed set of values gets the
/// one `message` names as a word (else the first), each other required string parameter gets
/// `free_text`, so the call is one the tool accepts.
fn arguments(parameters: &Value, message: &str, free_text: &str) -> Value {
    // Clients may send the schema as a JSON string (the AG-Kit protocol does).
    let parsed;
    let schema = match parameters {
        Value::String(text) => {
            parsed = serde_json::from_str::<Value>(text).unwrap_or(Value::Null);
            &parsed
        }
        other => other,
    };
    let words: Vec<&str> = message
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .collect();
    let mut arguments = Map::new();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Value::Object(arguments);
    };
    let required = |name: &str| {
        schema
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|names| names.iter().any(|required| required == name))
    };
    for (name, property) in properties {
        if property.get("type").and_then(Value::as_str) != Some("string") {
            continue;
        }
        let choices: Vec<&str> = match property.get("enum").and_then(Value::as_array) {
            Some(values) => values.iter().filter_map(Value::as_str).collect(),
            None if matches!(name.as_str(), "color" | "colour") => COLOURS.to_vec(),
            None if required(name) && !free_text.is_empty() => {
                arguments.insert(name.clone(), Value::String(free_text.to_owned()));
                continue;
            }
            None => continue,
        };
        let named = choices
            .iter()
            .find(|choice| words.iter().any(|word| word.eq_ignore_ascii_case(choice)));
        if let Some(choice) = named.or(choices.first()) {
            arguments.insert(name.clone(), Value::String((*choice).to_owned()));
        }
    }
    Value::Object(arguments)
}

/// `"Confirm action!"` → `"confirmaction"`: how the demo compares a message with tool names.
fn letters_and_digits(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// When `text` names `tool` (compared on letters and digits, ignoring case): the words after the
/// name, without the punctuation and spaces that lead them (`"Ask the researcher: why?"` names
/// `researcher`, followed by `"why?"`).
fn words_after<'a>(text: &'a str, tool: &str) -> Option<&'a str> {
    let name = letters_and_digits(tool);
    if name.is_empty() {
        return None;
    }
    // Each letter or digit of `text`, lowercased, with the byte offset just after it.
    let mut said = String::new();
    let mut ends = Vec::new();
    for (offset, c) in text.char_indices().filter(|(_, c)| c.is_alphanumeric()) {
        for lower in c.to_lowercase() {
            said.push(lower);
            ends.push((said.len(), offset + c.len_utf8()));
        }
    }
    let start = said.find(&name)?;
    let end = ends
        .iter()
        .find(|(said_end, _)| *said_end == start + name.len())
        .map_or(text.len(), |(_, text_end)| *text_end);
    let rest = text.get(end..).unwrap_or_default();
    Some(
        rest.trim_start_matches(|c: char| !c.is_alphanumeric() && c != '"' && c != '\'')
            .trim_end(),
    )
}

#[async_trait]
impl ModelProvider for DemoModel {
    async fn stream(&self, request: &ModelRequest) -> Result<DeltaStream, ModelError> {
        let deltas = Self::answer(request);
        let delay = self.word_delay;
        Ok(Box::pin(async_stream::stream! {
            for delta in deltas {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                yield Ok(delta);
            }
        }))
    }

    fn describe(&self) -> String {
        "scripted demo model (offline; set OPENAI_API_KEY or OPENAI_BASE_URL for a real model)"
            .to_owned()
    }

    fn identity(&self) -> crate::model::ModelIdentity {
        crate::model::ModelIdentity {
            provider: "demo".to_owned(),
            model: "demo".to_owned(),
        }
    }
}

/// What the user wrote: the message's text parts, less the block of remembered facts a run
/// with memory attaches as a part of its own (it names the memory tools and earlier facts,
/// which the rules above must not take for the user's words).
fn written(content: &UserContent) -> String {
    match content {
        UserContent::Text(text) => text.clone(),
        UserContent::Parts(parts) => parts
            .iter()
            .filter_map(|part| match part {
                UserPart::Text { text } if !text.starts_with("<memories>") => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolSpec;

    fn request(messages: serde_json::Value, tools: &[&str]) -> ModelRequest {
        ModelRequest {
            system: None,
            messages: serde_json::from_value(messages).unwrap(),
            tools: tools
                .iter()
                .map(|name| ToolSpec {
                    name: (*name).to_owned(),
                    description: String::new(),
                    parameters: json!({"type": "object"}),
                })
                .collect(),
            sampling: Default::default(),
            ..ModelRequest::default()
        }
    }

    fn user(text: &str) -> serde_json::Value {
        json!([{"id": "m1", "role": "user", "content": text}])
    }

    fn called(deltas: &[ModelDelta]) -> Option<&str> {
        deltas.iter().find_map(|delta| match delta {
            ModelDelta::ToolCallStart { name, .. } => Some(name.as_str()),
            _ => None,
        })
    }

    fn text(deltas: &[ModelDelta]) -> String {
        deltas
            .iter()
            .filter_map(|delta| match delta {
                ModelDelta::Text(text) => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_demo_reads_the_users_words_not_the_memory_block_beside_them() {
        let with_block = json!([{"id": "m1", "role": "user", "content": [
            {"type": "text", "text": "Change background color to green"},
            {"type": "text", "text": "<memories>\nWhat you remember (search_memories finds more):\n- Sam is vegetarian\n</memories>"}
        ]}]);
        let deltas = DemoModel::answer(&request(
            with_block,
            &["search_memories", "change-background-color"],
        ));
        assert_eq!(called(&deltas), Some("change-background-color"));
    }

    #[test]
    fn the_demo_calls_a_frontend_tool_the_message_names_in_any_spelling() {
        let tools = [
            "get_current_time",
            "confirmAction",
            "change-background-color",
        ];
        for (message, tool) in [
            ("please confirmAction", Some("confirmAction")),
            (
                "Please confirm action: delete the draft",
                Some("confirmAction"),
            ),
            (
                "Change background color to blue.",
                Some("change-background-color"),
            ),
            ("what time is it?", Some("get_current_time")),
            ("hello", None),
        ] {
            let deltas = DemoModel::answer(&request(user(message), &tools));
            assert_eq!(called(&deltas), tool, "{message}");
        }
    }

    #[test]
    fn the_demo_labels_every_reply_as_the_demo() {
        let hello = DemoModel::answer(&request(user("hello"), &[]));
        assert!(text(&hello).starts_with("This is agui-lambda's scripted demo model"));
        assert!(text(&hello).ends_with("You said: hello"));

        let after_tool = DemoModel::answer(&request(
            json!([
                {"id": "m1", "role": "user", "content": "confirm action"},
                {"id": "m2", "role": "assistant", "toolCalls": [{"id": "c1", "type": "function",
                  "function": {"name": "confirmAction", "arguments": "{}"}}]},
                {"id": "m3", "role": "tool", "toolCallId": "c1", "content": "confirmed"}
            ]),
            &["confirmAction"],
        ));
        assert_eq!(called(&after_tool), None);
        assert!(text(&after_tool).starts_with("This is agui-lambda's scripted demo model"));
        assert!(text(&after_tool).ends_with("The tool answered: confirmed"));
    }

    fn arguments_of(deltas: &[ModelDelta]) -> Option<Value> {
        deltas.iter().find_map(|delta| match delta {
            ModelDelta::ToolCallArgs { delta, .. } => serde_json::from_str(delta).ok(),
            _ => None,
        })
    }

    /// The dev page's `change-background-color`, its schema a JSON string as the page sends it.
    fn background_request(message: &str) -> ModelRequest {
        let mut request = request(user(message), &[]);
        request.tools.push(ToolSpec {
            name: "change-background-color".to_owned(),
            description: "Change the background color.".to_owned(),
            parameters: Value::String(
                r#"{"type":"object","properties":{"color":{"type":"string"}},"required":["color"]}"#
                    .to_owned(),
            ),
        });
        request
    }

    #[test]
    fn the_demo_changes_the_background_to_the_colour_the_message_names() {
        let deltas = DemoModel::answer(&background_request("Change background color to green."));
        assert_eq!(called(&deltas), Some("change-background-color"));
        assert_eq!(arguments_of(&deltas), Some(json!({"color": "green"})));
    }

    #[test]
    fn the_demo_picks_a_colour_the_page_accepts_when_the_message_names_none() {
        let deltas = DemoModel::answer(&background_request("Change background color"));
        assert_eq!(arguments_of(&deltas), Some(json!({"color": "blue"})));
    }

    /// A tool whose one required parameter is free text, as a sub-agent's or `save_memory` is.
    fn words_tool(name: &str, parameter: &str) -> ToolSpec {
        ToolSpec {
            name: name.to_owned(),
            description: String::new(),
            parameters: json!({"type": "object",
                "properties": {parameter: {"type": "string"}, "note": {"type": "string"}},
                "required": [parameter]}),
        }
    }

    #[test]
    fn the_demo_delegates_with_the_users_words_after_the_name_as_the_task() {
        for (message, task) in [
            ("Ask the researcher: what is AG-UI?", "what is AG-UI?"),
            (
                "researcher, find three facts about Lyon",
                "find three facts about Lyon",
            ),
            ("Please ask the researcher", "Please ask the researcher"),
        ] {
            let mut request = request(user(message), &[]);
            request.tools.push(words_tool("researcher", "task"));
            let deltas = DemoModel::answer(&request);
            assert_eq!(called(&deltas), Some("researcher"), "{message}");
            assert_eq!(
                arguments_of(&deltas),
                Some(json!({"task": task})),
                "{message}"
            );
        }
    }

    #[test]
    fn the_demo_fills_a_server_tools_required_text_from_the_message() {
        let mut request = request(
            user("Save memory: Sam is vegetarian"),
            &["get_current_time"],
        );
        request.tools.push(words_tool("save_memory", "text"));
        request
            .tools
            .push(words_tool("everything__echo", "message"));
        let deltas = DemoModel::answer(&request);
        assert_eq!(called(&deltas), Some("save_memory"));
        assert_eq!(
            arguments_of(&deltas),
            Some(json!({"text": "Sam is vegetarian"}))
        );
        let mut echo = request.clone();
        echo.messages =
            serde_json::from_value(user("everything echo: hello from the demo")).unwrap();
        let deltas = DemoModel::answer(&echo);
        assert_eq!(called(&deltas), Some("everything__echo"));
        assert_eq!(
            arguments_of(&deltas),
            Some(json!({"message": "hello from the demo"}))
        );
    }

    #[test]
    fn the_demo_fills_an_enum_parameter_and_leaves_free_text_out() {
        let mut request = request(user("set mode to Dark, please"), &[]);
        request.tools.push(ToolSpec {
            name: "set-mode".to_owned(),
            description: String::new(),
            parameters: json!({"type": "object", "properties": {
                "mode": {"type": "string", "enum": ["light", "dark"]},
                "note": {"type": "string"}}}),
        });
        let deltas = DemoModel::answer(&request);
        assert_eq!(arguments_of(&deltas), Some(json!({"mode": "dark"})));
    }

    #[test]
    fn the_demo_builds_a_form_through_the_render_tool_when_asked() {
        for message in ["Show me a form", "render a2ui please", "A FORM, please"] {
            let deltas = DemoModel::answer(&request(
                user(message),
                &["render_a2ui", "get_current_time"],
            ));
            assert_eq!(called(&deltas), Some("render_a2ui"), "{message}");
            let arguments = arguments_of(&deltas).unwrap();
            assert_eq!(arguments["surfaceId"], "demo-form");
            let components: Vec<Value> =
                serde_json::from_str(arguments["components"].as_str().unwrap()).unwrap();
            let field = components
                .iter()
                .find(|c| c["component"] == "TextField")
                .unwrap();
            assert_eq!(field["value"], json!({"path": "/name"}));
            let button = components
                .iter()
                .find(|c| c["component"] == "Button")
                .unwrap();
            assert_eq!(
                button["action"]["event"],
                json!({"name": "submit", "context": {"name": {"path": "/name"}}})
            );
            let data: Value = serde_json::from_str(arguments["data"].as_str().unwrap()).unwrap();
            assert_eq!(data, json!({"name": ""}));
        }
        // A client that cannot paint is not offered the tool: the demo describes nothing.
        let deltas = DemoModel::answer(&request(user("Show me a form"), &["get_current_time"]));
        assert_eq!(called(&deltas), None);
        assert!(text(&deltas).ends_with("You said: Show me a form"));
    }

    #[test]
    fn the_demo_answers_a_click_on_its_form_with_the_values_entered() {
        let click = "User performed action \"submit\" on surface \"demo-form\" (component: send). Context: {\"name\":\"Ada Lovelace\"}";
        let deltas = DemoModel::answer(&request(user(click), &["render_a2ui"]));
        assert_eq!(
            called(&deltas),
            None,
            "a click on the form is not a new request for one"
        );
        assert_eq!(
            text(&deltas),
            "This is agui-lambda's scripted demo model (no OPENAI_API_KEY is set). You pressed \"submit\" on the surface \"demo-form\" with name: Ada Lovelace."
        );
        let empty = "User performed action \"cancel\" on surface \"s\". Context: {}";
        let deltas = DemoModel::answer(&request(user(empty), &["render_a2ui"]));
        assert!(
            text(&deltas)
                .ends_with("You pressed \"cancel\" on the surface \"s\" with nothing entered.")
        );
    }
}
