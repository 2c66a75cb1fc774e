//! A click on a surface as the model reads it: a user message in the words the A2UI
//! middleware uses for its synthetic tool result, which every provider takes (a call to a tool
//! the request does not declare is refused by the strict ones) and the thread keeps.

use crate::protocol::input::UiAction;
use serde_json::Value;

/// The message text for `action`: what was clicked, where, and the context the client resolved.
pub(crate) fn message_text(action: &UiAction) -> String {
    let mut text = format!(
        "User performed action \"{}\" on surface \"{}\"",
        action.name, action.surface_id
    );
    if let Some(component) = &action.source_component_id {
        text.push_str(&format!(" (component: {component})"));
    }
    text.push_str(". Context: ");
    text.push_str(&Value::Object(action.context.clone()).to_string());
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_the_action_the_surface_the_component_and_the_values_entered() {
        let action = UiAction {
            name: "submit".to_owned(),
            surface_id: "signup".to_owned(),
            source_component_id: Some("send".to_owned()),
            context: json!({"email": "ada@example.com"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            timestamp: Some("2026-11-28T10:00:00Z".to_owned()),
        };
        assert_eq!(
            message_text(&action),
            "User performed action \"submit\" on surface \"signup\" (component: send). Context: {\"email\":\"ada@example.com\"}"
        );
    }
}
