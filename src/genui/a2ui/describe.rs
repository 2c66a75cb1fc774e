//! The render tool as the model sees it: its name, a compact description of the rules and of
//! each component of the offered catalog (a line per component, not the catalog's JSON Schema),
//! and a parameter schema every provider accepts (strings for the component list and the data,
//! which Gemini's function schemas, refusing objects without declared properties, allow too).

use super::catalog::{Catalog, Component, Kind, Prop};
use serde_json::{Value, json};
use std::fmt::Write;

/// The render tool's name, the one CopilotKit's page already hides the raw calls of.
pub(crate) const TOOL_NAME: &str = "render_a2ui";

/// The most values of one choice the description lists.
const MAX_LISTED_VALUES: usize = 64;

const RULES: &str = "Show the user an interactive UI surface (A2UI v0.9): a form, a card, a list, \
choices, buttons. Prefer it to describing a UI in words. Arguments: surfaceId names the surface; \
call again with the same surfaceId to change it (components with the same id are replaced, the \
others kept; data keys are replaced). components: a JSON array of flat components \
{\"id\",\"component\",...props}; one has id \"root\" (a Column, Row or Card); children are named \
by id, never nested; a Button shows its child (a Text with its label). data: a JSON object, the surface's data model: a prop bound with \
{\"path\":\"/key\"} shows it and an input writes to it; give every bound path an initial value. \
A Button's action event comes back to you as a user message naming the event, with its context's \
bindings resolved to what the user entered. If the call answers with errors, fix them all and call \
again with the whole surface.";

const LEGEND: &str = "Components (* required; a prop with no type takes a string or \
{\"path\":\"/key\"}; bool, number and strings props take that or a path; id: another component's \
id; ids: [\"id\",...] or {\"componentId\":\"item\",\"path\":\"/list\"}, the item repeated per \
entry, its paths relative to the entry; event: {\"event\":{\"name\":\"submit\",\"context\":\
{\"key\":\"literal\" or {\"path\":\"/key\"}}}}):";

/// The render tool: name, description and parameter schema, for `catalog`.
pub(crate) fn tool(catalog: &Catalog) -> (&'static str, String, Value) {
    (TOOL_NAME, description(catalog), parameters())
}

/// The rules, then a line per component.
pub fn description(catalog: &Catalog) -> String {
    let mut text = String::with_capacity(2048);
    text.push_str(RULES);
    text.push('\n');
    text.push_str(LEGEND);
    for component in &catalog.components {
        text.push('\n');
        describe_component(&mut text, component);
    }
    text
}

fn describe_component(text: &mut String, component: &Component) {
    text.push_str(&component.name);
    text.push('{');
    for (position, prop) in component.props.iter().enumerate() {
        if position > 0 {
            text.push_str(", ");
        }
        describe_prop(text, prop);
    }
    text.push('}');
}

fn describe_prop(text: &mut String, prop: &Prop) {
    text.push_str(&prop.name);
    if prop.required {
        text.push('*');
    }
    let kind = match &prop.kind {
        Kind::Text | Kind::Any => return,
        Kind::Moment => "ISO date/time".to_owned(),
        Kind::Number => "number".to_owned(),
        Kind::Bool => "bool".to_owned(),
        Kind::Strings => "strings".to_owned(),
        Kind::Literal(kind) => kind.name().to_owned(),
        Kind::Child => "id".to_owned(),
        Kind::Children => "ids".to_owned(),
        Kind::Action => "event".to_owned(),
        Kind::Choice { values, .. } => {
            let mut listed = values
                .iter()
                .take(MAX_LISTED_VALUES)
                .cloned()
                .collect::<Vec<_>>()
                .join("|");
            if values.len() > MAX_LISTED_VALUES {
                let _ = write!(listed, "|... ({} names)", values.len());
            }
            listed
        }
        Kind::Items(props) => {
            let mut inner = String::new();
            for (position, prop) in props.iter().enumerate() {
                if position > 0 {
                    inner.push_str(", ");
                }
                describe_prop(&mut inner, prop);
            }
            format!("[{{{inner}}}]")
        }
    };
    text.push(':');
    text.push_str(&kind);
}

/// `{surfaceId, components, data}`: strings, so no provider's schema rules can refuse them; the
/// call is read whether the model sends text or JSON.
pub(crate) fn parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "surfaceId": {
                "type": "string",
                "description": "The surface's name, e.g. \"signup-form\"; the same name again updates it.",
            },
            "components": {
                "type": "string",
                "description": "JSON array of the components, e.g. [{\"id\":\"root\",\"component\":\"Column\",\"children\":[\"title\"]},{\"id\":\"title\",\"component\":\"Text\",\"text\":\"Hello\"}]",
            },
            "data": {
                "type": "string",
                "description": "JSON object: the data model the bound props read and the inputs write, e.g. {\"email\":\"\"}",
            },
        },
        "required": ["surfaceId", "components"],
    })
}

/// About four characters a token, the estimate the run loop's window planning uses too. For
/// the tests and the bench, which print the render tool's prompt sizes.
#[cfg(any(test, feature = "test-utils"))]
pub fn estimated_tokens(text: &str) -> u64 {
    u64::try_from(text.chars().count().div_ceil(4)).unwrap_or(u64::MAX)
}

#[cfg(test)]
#[path = "describe_tests.rs"]
mod tests;
