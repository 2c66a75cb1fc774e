use super::*;
use crate::genui::a2ui::client::tests::copilotkit_context;
use crate::genui::a2ui::client::{Mode, offer};

#[test]
fn each_component_is_one_line_with_its_props() {
    let text = description(&Catalog::basic());
    assert!(text.starts_with("Show the user an interactive UI surface (A2UI v0.9)"));
    let lines: Vec<&str> = text.lines().skip(2).collect();
    assert_eq!(lines.len(), 18);
    assert!(lines.contains(&"Text{text*, variant:h1|h2|h3|h4|h5|caption|body}"));
    assert!(
        lines.contains(&"Button{child*:id, action*:event, variant:default|primary|borderless}")
    );
    assert!(lines.contains(&"Tabs{tabs*:[{title*, child*:id}]}"));
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("Icon{name*:accountCircle|add|")
                && line.ends_with("|volumeUp|warning}"))
    );
}

#[test]
fn what_the_model_is_told_stays_small_whatever_catalog_the_client_sends() {
    let basic = estimated_tokens(&description(&Catalog::basic()));
    let copilotkit = offer(Mode::Auto, &copilotkit_context(), true).unwrap();
    let theirs = estimated_tokens(&description(&copilotkit.catalog));
    let sent: u64 = copilotkit_context()
        .iter()
        .map(|entry| estimated_tokens(&entry.value))
        .sum();
    assert!(basic < 1_000, "basic catalog: {basic} tokens");
    assert!(theirs < 1_000, "CopilotKit's catalog: {theirs} tokens");
    assert!(sent > 13_000, "what CopilotKit sends: {sent} tokens");
}

/// What the providers' function-calling schemas refuse: a property without a type, an object
/// without declared properties (Gemini), a composition keyword or `additionalProperties`
/// (Gemini's OpenAPI subset).
fn assert_portable(schema: &Value, at: &str) {
    let object = schema.as_object().unwrap();
    assert!(object.contains_key("type"), "{at} has no type");
    for keyword in [
        "anyOf",
        "oneOf",
        "allOf",
        "$ref",
        "additionalProperties",
        "not",
    ] {
        assert!(!object.contains_key(keyword), "{at} uses {keyword}");
    }
    if schema["type"] == "object" {
        let properties = object["properties"].as_object().unwrap();
        assert!(
            !properties.is_empty(),
            "{at} is an object without properties"
        );
        for (name, property) in properties {
            assert_portable(property, &format!("{at}.{name}"));
        }
    }
    if schema["type"] == "array" {
        assert_portable(&schema["items"], &format!("{at}[]"));
    }
}

#[test]
fn the_parameters_are_a_schema_every_provider_takes() {
    let (name, _, parameters) = tool(&Catalog::basic());
    assert_eq!(name, "render_a2ui");
    assert!(jsonschema::meta::validate(&parameters).is_ok());
    assert_portable(&parameters, "parameters");
    assert_eq!(parameters["required"], json!(["surfaceId", "components"]));
}
