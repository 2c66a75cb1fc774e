use super::*;
use serde_json::json;

pub(crate) fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/a2ui-v0.9/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{path}: {err}"));
    serde_json::from_str(&text).unwrap()
}

/// The catalog schema entry CopilotKit 1.74's page sends, as JSON.
pub(crate) fn copilotkit_schema() -> Value {
    let context = fixture("copilotkit-1.74-a2ui-context.json");
    let entry = context
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| {
            entry["description"]
                .as_str()
                .unwrap()
                .starts_with("A2UI Component Schema")
        })
        .unwrap();
    serde_json::from_str(entry["value"].as_str().unwrap()).unwrap()
}

/// A spec component's own props (its last `allOf` part) and their required names.
fn spec_props(component: &Value) -> (Vec<(String, Value)>, Vec<String>) {
    let own = component["allOf"].as_array().unwrap().last().unwrap();
    let props = own["properties"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(name, _)| name.as_str() != "component")
        .map(|(name, schema)| (name.clone(), schema.clone()))
        .collect();
    let required = own["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|name| name.as_str().unwrap().to_owned())
        .filter(|name| name != "component")
        .collect();
    (props, required)
}

#[test]
fn the_built_in_basic_catalog_is_the_specs_component_for_component() {
    let spec = fixture("catalogs/basic/catalog.json");
    let spec_components = spec["components"].as_object().unwrap();
    let basic = Catalog::basic();
    let names: Vec<&str> = basic.components.iter().map(|c| c.name.as_str()).collect();
    let spec_names: Vec<&str> = spec_components.keys().map(String::as_str).collect();
    assert_eq!(names, spec_names);
    for component in &basic.components {
        let (props, required) = spec_props(&spec_components[&component.name]);
        let ours: Vec<&str> = component.props.iter().map(|p| p.name.as_str()).collect();
        let theirs: Vec<&str> = props.iter().map(|(name, _)| name.as_str()).collect();
        let mut ours_sorted = ours.clone();
        ours_sorted.sort_unstable();
        let mut theirs_sorted = theirs.clone();
        theirs_sorted.sort_unstable();
        assert_eq!(ours_sorted, theirs_sorted, "{}'s props", component.name);
        let ours_required: Vec<&str> = component
            .props
            .iter()
            .filter(|p| p.required)
            .map(|p| p.name.as_str())
            .collect();
        let mut ours_required = ours_required;
        ours_required.sort_unstable();
        let mut required = required;
        required.sort_unstable();
        assert_eq!(
            ours_required, required,
            "{}'s required props",
            component.name
        );
        for (name, schema) in props {
            let prop = component.prop(&name).unwrap();
            check_kind_against_spec(&component.name, &prop.kind, &schema);
        }
    }
}

/// A prop's kind says what the spec's schema for it allows.
fn check_kind_against_spec(component: &str, kind: &Kind, schema: &Value) {
    let reference = schema["$ref"].as_str().unwrap_or_default();
    let at = format!("{component}: {schema}");
    match kind {
        Kind::Text => assert!(reference.ends_with("DynamicString"), "{at}"),
        Kind::Moment => {
            assert!(
                schema["allOf"][0]["$ref"]
                    .as_str()
                    .unwrap()
                    .ends_with("DynamicString"),
                "{at}"
            );
            assert_eq!(
                schema["allOf"][1]["then"]["oneOf"][0]["format"], "date",
                "{at}"
            );
        }
        Kind::Number => assert!(reference.ends_with("DynamicNumber"), "{at}"),
        Kind::Bool => assert!(reference.ends_with("DynamicBoolean"), "{at}"),
        Kind::Strings => assert!(reference.ends_with("DynamicStringList"), "{at}"),
        Kind::Child => assert!(reference.ends_with("ComponentId"), "{at}"),
        Kind::Children => assert!(reference.ends_with("ChildList"), "{at}"),
        Kind::Action => assert!(reference.ends_with("Action"), "{at}"),
        Kind::Literal(kind) => assert_eq!(schema["type"], json!(kind.name()), "{at}"),
        Kind::Choice { values, bindable } => {
            let listed = if *bindable {
                &schema["oneOf"][0]["enum"]
            } else {
                &schema["enum"]
            };
            let mut listed: Vec<&str> = listed
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            listed.sort_unstable();
            let mut values: Vec<&str> = values.iter().map(String::as_str).collect();
            values.sort_unstable();
            assert_eq!(listed, values, "{at}");
        }
        Kind::Items(props) => {
            let items = &schema["items"];
            for prop in props {
                check_kind_against_spec(component, &prop.kind, &items["properties"][&prop.name]);
                let required = items["required"]
                    .as_array()
                    .unwrap()
                    .contains(&json!(prop.name));
                assert_eq!(prop.required, required, "{at}");
            }
        }
        Kind::Any => panic!("the basic catalog types every prop: {at}"),
    }
}

#[test]
fn copilotkits_catalog_is_read_from_the_schema_its_page_sends() {
    let catalog = Catalog::from_client_schema(&copilotkit_schema()).unwrap();
    assert_eq!(catalog.id, BASIC_CATALOG_ID);
    assert_eq!(catalog.components.len(), 18);
    let slider = catalog.component("Slider").unwrap();
    // CopilotKit's Slider has a `step` the spec's lacks; read from its own schema.
    assert_eq!(
        slider.prop("step").unwrap().kind,
        Kind::Literal(Scalar::Number)
    );
    assert!(slider.prop("max").unwrap().required);
    let list = catalog.component("List").unwrap();
    assert!(
        matches!(&list.prop("listStyle").unwrap().kind, Kind::Choice { values, .. } if values.contains(&"ordered".to_owned()))
    );
    let button = catalog.component("Button").unwrap();
    assert_eq!(button.prop("child").unwrap().kind, Kind::Child);
    assert_eq!(button.prop("action").unwrap().kind, Kind::Action);
    // `checks` is CopilotKit's client-side validation, passed through untyped.
    assert!(button.prop("checks").is_some());
}

#[test]
fn a_custom_components_props_are_typed_from_their_shape() {
    let schema = json!({
        "catalogId": "https://example.com/catalog.json",
        "components": {
            "Metric": {"allOf": [
                {"$ref": "common_types.json#/$defs/ComponentCommon"},
                {"properties": {
                    "component": {"const": "Metric"},
                    "label": {"anyOf": [{"type": "string"}, {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}]},
                    "value": {"type": "number"},
                    "trend": {"type": "string", "enum": ["up", "down"]},
                    "detail": {"type": "string", "description": "REF:common_types.json#/$defs/ComponentId|The id of a detail view."},
                    "points": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}},
                },
                "required": ["component", "label"]},
            ]},
            "bad name!": {"properties": {}},
        },
    });
    let catalog = Catalog::from_client_schema(&schema).unwrap();
    assert_eq!(catalog.id, "https://example.com/catalog.json");
    assert_eq!(
        catalog.components.len(),
        1,
        "a name no model could write is left out"
    );
    let metric = catalog.component("Metric").unwrap();
    assert_eq!(metric.prop("label").unwrap().kind, Kind::Text);
    assert!(metric.prop("label").unwrap().required);
    assert_eq!(
        metric.prop("value").unwrap().kind,
        Kind::Literal(Scalar::Number)
    );
    assert_eq!(
        metric.prop("trend").unwrap().kind,
        Kind::Choice {
            values: vec!["up".to_owned(), "down".to_owned()],
            bindable: false
        }
    );
    assert_eq!(metric.prop("detail").unwrap().kind, Kind::Child);
    assert_eq!(
        metric.prop("points").unwrap().kind,
        Kind::Items(vec![Prop {
            name: "x".to_owned(),
            required: true,
            kind: Kind::Literal(Scalar::Number)
        }])
    );
}

#[test]
fn a_schema_without_components_declares_no_catalog() {
    assert_eq!(
        Catalog::from_client_schema(&json!({"catalogId": "x"})),
        None
    );
    assert_eq!(
        Catalog::from_client_schema(&json!({"components": {}})),
        None
    );
    assert_eq!(Catalog::from_client_schema(&json!("text")), None);
}
