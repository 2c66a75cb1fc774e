//! A render call's arguments and the surface they describe: `{surfaceId, components, data}`,
//! each of `components` and `data` given as JSON or as a JSON text (the tool's schema asks for
//! text, which every provider's function-calling schema accepts), merged into the surface the
//! same id already had when the call updates one.

use super::catalog::Catalog;
use super::validate::{Code, ValidationError, child_ids};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The most components one surface may have.
pub(crate) const MAX_COMPONENTS: usize = 200;
/// The longest a render call's arguments may be, in bytes.
pub(crate) const MAX_ARGUMENT_BYTES: usize = 256 * 1024;
/// The longest surface id.
pub(crate) const MAX_SURFACE_ID_CHARS: usize = 128;

/// A render call's arguments, parsed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RenderCall {
    pub(crate) surface_id: String,
    pub(crate) components: Vec<Value>,
    pub(crate) data: Map<String, Value>,
}

impl RenderCall {
    /// The arguments as the model streamed them. A mistake comes back as the errors the model
    /// is shown (under the validator's codes: arguments that hold no component list are
    /// `empty_components`).
    pub(crate) fn parse(arguments: &str) -> Result<Self, Vec<ValidationError>> {
        if arguments.len() > MAX_ARGUMENT_BYTES {
            return Err(vec![too_large(format!(
                "The arguments are {} bytes; at most {MAX_ARGUMENT_BYTES}",
                arguments.len()
            ))]);
        }
        let value: Value = serde_json::from_str(arguments).map_err(|err| {
            vec![ValidationError {
                code: Code::EmptyComponents,
                path: "arguments".to_owned(),
                message: format!("The arguments are not a JSON object: {err}"),
            }]
        })?;
        let mut errors = Vec::new();
        let surface_id = match value.get("surfaceId").and_then(Value::as_str) {
            Some(id) if valid_surface_id(id) => id.to_owned(),
            _ => {
                errors.push(ValidationError {
                    code: Code::InvalidProp,
                    path: "surfaceId".to_owned(),
                    message: format!(
                        "surfaceId must be a string of 1 to {MAX_SURFACE_ID_CHARS} characters without control characters"
                    ),
                });
                String::new()
            }
        };
        let components = match json_or_text(value.get("components")) {
            Some(Value::Array(components)) => components,
            _ => {
                errors.push(ValidationError {
                    code: Code::EmptyComponents,
                    path: "components".to_owned(),
                    message: "components must be a JSON array of components (or its JSON text)"
                        .to_owned(),
                });
                Vec::new()
            }
        };
        if components.len() > MAX_COMPONENTS {
            errors.push(too_large(format!(
                "{} components; a surface has at most {MAX_COMPONENTS}",
                components.len()
            )));
        }
        let data = match json_or_text(value.get("data")) {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(data)) => data,
            Some(_) => {
                errors.push(ValidationError {
                    code: Code::InvalidProp,
                    path: "data".to_owned(),
                    message: "data must be a JSON object (or its JSON text)".to_owned(),
                });
                Map::new()
            }
        };
        if errors.is_empty() {
            Ok(Self {
                surface_id,
                components,
                data,
            })
        } else {
            Err(errors)
        }
    }
}

fn too_large(message: String) -> ValidationError {
    ValidationError {
        code: Code::InvalidProp,
        path: "components".to_owned(),
        message,
    }
}

fn valid_surface_id(id: &str) -> bool {
    !id.is_empty()
        && id.chars().count() <= MAX_SURFACE_ID_CHARS
        && !id.chars().any(char::is_control)
}

/// A value given as JSON, or as a string holding its JSON text.
fn json_or_text(value: Option<&Value>) -> Option<Value> {
    match value? {
        Value::String(text) => serde_json::from_str(text).ok(),
        other => Some(other.clone()),
    }
}

/// A surface as the model built it (v0.9 spec form): what is kept in the thread, and what each
/// renderer's operations are made from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Surface {
    pub(crate) surface_id: String,
    pub(crate) components: Vec<Value>,
    #[serde(default)]
    pub(crate) data: Map<String, Value>,
}

impl Surface {
    /// The surface a call asks for: on top of `prior` (the same surface as last painted), its
    /// components replace those with the same id and the others stay, its data's top-level keys
    /// replace the prior's; a component no longer reachable from `root` is dropped.
    pub(crate) fn merged(prior: Option<&Surface>, call: &RenderCall) -> Vec<Value> {
        let Some(prior) = prior else {
            return call.components.clone();
        };
        let mut components = prior.components.clone();
        for component in &call.components {
            let id = component.get("id").and_then(Value::as_str);
            match components
                .iter_mut()
                .find(|existing| id.is_some() && existing.get("id").and_then(Value::as_str) == id)
            {
                Some(existing) => *existing = component.clone(),
                None => components.push(component.clone()),
            }
        }
        components
    }

    /// `prior`'s data with the call's top-level keys set.
    pub(crate) fn merged_data(prior: Option<&Surface>, call: &RenderCall) -> Map<String, Value> {
        let mut data = prior.map(|prior| prior.data.clone()).unwrap_or_default();
        data.extend(
            call.data
                .iter()
                .map(|(key, value)| (key.clone(), value.clone())),
        );
        data
    }

    /// The components reachable from `root` through child references, in their order.
    pub(crate) fn reachable(components: Vec<Value>, catalog: &Catalog) -> Vec<Value> {
        let ids: Vec<Option<String>> = components
            .iter()
            .map(|component| {
                component
                    .get("id")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .collect();
        let mut seen = vec![false; components.len()];
        let mut stack = vec!["root".to_owned()];
        while let Some(id) = stack.pop() {
            let Some(position) = ids
                .iter()
                .position(|candidate| candidate.as_deref() == Some(&id))
            else {
                continue;
            };
            if std::mem::replace(&mut seen[position], true) {
                continue;
            }
            stack.extend(child_ids(&components[position], catalog));
        }
        components
            .into_iter()
            .zip(seen)
            .filter_map(|(component, seen)| seen.then_some(component))
            .collect()
    }
}
