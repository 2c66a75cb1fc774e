//! `forwardedProps.a2uiAction`: a click on an A2UI surface, as CopilotKit and assistant-ui send
//! it (`{userAction: {name, surfaceId, sourceComponentId, context, timestamp}}`) in a run that
//! carries no new user message.

use super::error::InputError;
use serde_json::{Map, Value};

/// The longest action or component name.
const MAX_NAME_CHARS: usize = 200;
/// The most bytes an action's context may take as JSON.
pub(crate) const MAX_CONTEXT_BYTES: usize = 16 * 1024;

/// A user's action on a surface.
#[derive(Debug, Clone, PartialEq)]
pub struct UiAction {
    /// The action's name (`action.event.name` of the component).
    pub name: String,
    pub surface_id: String,
    pub source_component_id: Option<String>,
    /// The component's action context, its bindings resolved by the client.
    pub context: Map<String, Value>,
    pub timestamp: Option<String>,
}

const FIELD: &str = "forwardedProps.a2uiAction.userAction";

fn text(
    action: &Map<String, Value>,
    key: &str,
    required: bool,
) -> Result<Option<String>, InputError> {
    match action.get(key) {
        None | Some(Value::Null) if !required => Ok(None),
        Some(Value::String(text))
            if !text.is_empty()
                && text.chars().count() <= MAX_NAME_CHARS
                && !text.chars().any(char::is_control) =>
        {
            Ok(Some(text.clone()))
        }
        _ => Err(InputError::invalid(
            format!("{FIELD}.{key}"),
            format!("must be a string of 1 to {MAX_NAME_CHARS} characters"),
        )),
    }
}

/// The action in `forwardedProps`, if any.
pub(crate) fn parse(props: Option<&Value>) -> Result<Option<UiAction>, InputError> {
    let Some(envelope) = props.and_then(|props| props.get("a2uiAction")) else {
        return Ok(None);
    };
    if envelope.is_null() {
        return Ok(None);
    }
    let Some(action) = envelope.get("userAction").and_then(Value::as_object) else {
        return Err(InputError::invalid(
            "forwardedProps.a2uiAction",
            "must be {\"userAction\": {\"name\", \"surfaceId\", ...}}",
        ));
    };
    let context = match action.get("context") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(context)) => context.clone(),
        Some(_) => {
            return Err(InputError::invalid(
                format!("{FIELD}.context"),
                "must be an object",
            ));
        }
    };
    if serde_json::to_string(&context).map_or(0, |json| json.len()) > MAX_CONTEXT_BYTES {
        return Err(InputError::invalid(
            format!("{FIELD}.context"),
            format!("must be at most {MAX_CONTEXT_BYTES} bytes as JSON"),
        ));
    }
    Ok(Some(UiAction {
        name: text(action, "name", true)?.unwrap_or_default(),
        surface_id: text(action, "surfaceId", true)?.unwrap_or_default(),
        source_component_id: text(action, "sourceComponentId", false)?,
        context,
        timestamp: text(action, "timestamp", false)?,
    }))
}
