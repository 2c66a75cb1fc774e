//! What goes on the wire for a surface: its v0.9 operations in the form the client's renderer
//! paints (the spec's for CopilotKit and other spec renderers, assistant-ui's own departures for
//! assistant-ui), the `a2ui-surface` activity content around them, the lifecycle states before
//! the paint, and the answers the model gets for its render calls.

use super::surface::Surface;
use super::validate::ValidationError;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// The A2UI version both renderers paint.
pub(crate) const VERSION: &str = "v0.9";
/// `ACTIVITY_SNAPSHOT.activityType` of a surface.
pub(crate) const ACTIVITY_TYPE: &str = "a2ui-surface";
/// The content key CopilotKit and assistant-ui read operations from.
pub(crate) const OPERATIONS_KEY: &str = "a2ui_operations";
/// The catalog id stamped on surfaces painted in assistant-ui's form, which is not the basic
/// catalog (assistant-ui ignores the id).
pub(crate) const ASSISTANT_UI_CATALOG_ID: &str = "assistant-ui.com:a2ui-v0.9";
/// The data key added to a surface whose bindings would otherwise find an empty data model
/// (CopilotKit hides such a surface for 8 s waiting for data).
pub(crate) const PAINT_KEY: &str = "_surface";

/// How the client paints A2UI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "renderer",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum Renderer {
    /// The v0.9 spec, surfaces created under `catalog_id` (CopilotKit, the dev page).
    Spec { catalog_id: String },
    /// `@assistant-ui/react-ag-ui`'s renderer: Button `label` and `action.name`, Card
    /// `children`, templates as `{"template"}`.
    AssistantUi,
}

fn op(name: &str, body: Value) -> Value {
    json!({"version": VERSION, name: body})
}

/// The operations that paint `surface` whole, as `renderer` reads them.
pub(crate) fn operations(surface: &Surface, renderer: &Renderer) -> Vec<Value> {
    let id = &surface.surface_id;
    let (catalog_id, components, data) = match renderer {
        Renderer::Spec { catalog_id } => (
            catalog_id.as_str(),
            surface.components.clone(),
            spec_data(surface),
        ),
        Renderer::AssistantUi => (
            ASSISTANT_UI_CATALOG_ID,
            assistant_ui_components(&surface.components),
            surface.data.clone(),
        ),
    };
    let mut operations = vec![
        op(
            "createSurface",
            json!({"surfaceId": id, "catalogId": catalog_id}),
        ),
        op(
            "updateComponents",
            json!({"surfaceId": id, "components": components}),
        ),
    ];
    if !data.is_empty() {
        operations.push(op(
            "updateDataModel",
            json!({"surfaceId": id, "path": "/", "value": data}),
        ));
    }
    operations
}

/// The data model as painted in spec form: with [`PAINT_KEY`] when the components bind paths
/// and no top-level value would count as data for CopilotKit's first paint.
fn spec_data(surface: &Surface) -> Map<String, Value> {
    let mut data = surface.data.clone();
    let binds = surface.components.iter().any(has_path_key);
    let filled = data.values().any(|value| match value {
        Value::Array(items) => !items.is_empty(),
        Value::Null => false,
        Value::String(text) => !text.is_empty(),
        _ => true,
    });
    if binds && !filled {
        data.insert(PAINT_KEY.to_owned(), json!(surface.surface_id));
    }
    data
}

fn has_path_key(value: &Value) -> bool {
    match value {
        Value::Object(fields) => fields.contains_key("path") || fields.values().any(has_path_key),
        Value::Array(items) => items.iter().any(has_path_key),
        _ => false,
    }
}

/// The spec components in the shape `@assistant-ui/react-generative-ui` 0.0.16 converts: a
/// Button labelled by its child Text's text and acting by `action.name`, a Card's `child` as
/// `children`, a template as `{"template": {componentId, path}}`, an Image's description as `alt`.
fn assistant_ui_components(components: &[Value]) -> Vec<Value> {
    let text_of = |id: &str| {
        components
            .iter()
            .find(|component| component.get("id").and_then(Value::as_str) == Some(id))
            .filter(|component| component.get("component").and_then(Value::as_str) == Some("Text"))
            .and_then(|component| component.get("text"))
            .cloned()
    };
    components
        .iter()
        .map(|component| {
            let Some(fields) = component.as_object() else {
                return component.clone();
            };
            let mut fields = fields.clone();
            match fields.get("component").and_then(Value::as_str) {
                Some("Button") => {
                    if let Some(label) = fields
                        .remove("child")
                        .and_then(|child| child.as_str().and_then(text_of))
                    {
                        fields.insert("label".to_owned(), label);
                    }
                    if let Some(event) = fields.get("action").and_then(|action| action.get("event"))
                    {
                        let action = event.clone();
                        fields.insert("action".to_owned(), action);
                    }
                }
                Some("Card") => {
                    if let Some(child) = fields.remove("child") {
                        fields.insert("children".to_owned(), json!([child]));
                    }
                }
                Some("Image") => {
                    if let Some(description) = fields.get("description").cloned() {
                        fields.insert("alt".to_owned(), description);
                    }
                }
                _ => {}
            }
            if let Some(Value::Object(template)) = fields.get("children").cloned() {
                fields.insert("children".to_owned(), json!({"template": template}));
            }
            Value::Object(fields)
        })
        .collect()
}

/// The activity content of a painted surface.
pub(crate) fn painted(operations: Vec<Value>) -> Value {
    json!({OPERATIONS_KEY: operations})
}

/// `building`, with the arguments' size so far in tokens (about four characters each).
pub(crate) fn building(progress_tokens: Option<u64>) -> Value {
    match progress_tokens {
        Some(tokens) => json!({"status": "building", "progressTokens": tokens}),
        None => json!({"status": "building"}),
    }
}

/// `retrying`: attempt `attempt` of `max_attempts` is next, after these mistakes.
pub(crate) fn retrying(attempt: u32, max_attempts: u32, errors: &[ValidationError]) -> Value {
    json!({"status": "retrying", "attempt": attempt, "maxAttempts": max_attempts, "errors": errors})
}

/// One attempt at a surface, as the failure reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Attempt {
    pub(crate) attempt: u32,
    pub(crate) ok: bool,
    pub(crate) errors: Vec<ValidationError>,
}

/// The failure's message, as the toolkit words it.
pub(crate) fn failure_message(attempts: usize) -> String {
    format!("Failed to generate valid A2UI after {attempts} attempt(s)")
}

/// `failed`: every attempt was invalid.
pub(crate) fn failed(attempts: &[Attempt]) -> Value {
    json!({
        "status": "failed",
        "error": failure_message(attempts.len()),
        "attempts": attempts,
        "maxAttempts": attempts.len(),
    })
}

/// The model's answer for a painted surface; `ignored` names props that were left out.
pub(crate) fn rendered_result(surface_id: &str, ignored: &[String]) -> String {
    let mut result = json!({"status": "rendered", "surfaceId": surface_id});
    if !ignored.is_empty() {
        result["ignored"] = json!(ignored);
        result["note"] = json!("these props are not in the catalog and were not painted");
    }
    result.to_string()
}

/// The model's answer for an invalid attempt that may be tried again.
pub(crate) fn invalid_result(
    attempt: u32,
    max_attempts: u32,
    errors: &[ValidationError],
) -> String {
    format!(
        "The surface was not shown: attempt {attempt} of {max_attempts} is invalid. Fix these and call render_a2ui again with the whole corrected surface:\n{}",
        super::validate::format_errors(errors)
    )
}

/// The model's answer once every attempt failed: the toolkit's recovery-exhausted envelope.
pub(crate) fn exhausted_result(attempts: &[Attempt]) -> String {
    json!({
        "error": failure_message(attempts.len()),
        "code": "a2ui_recovery_exhausted",
        "attempts": attempts,
    })
    .to_string()
}

#[cfg(test)]
#[path = "emit_tests.rs"]
mod tests;
