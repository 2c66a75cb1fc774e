use super::*;
use serde_json::json;

/// A form: a text field bound to `/name` and a button that sends it.
pub(crate) fn form() -> Vec<Value> {
    json!([
        {"id": "root", "component": "Card", "child": "body"},
        {"id": "body", "component": "Column", "children": ["title", "name", "send"]},
        {"id": "title", "component": "Text", "text": "Who are you?", "variant": "h2"},
        {"id": "name", "component": "TextField", "label": "Your name", "value": {"path": "/name"}},
        {"id": "send", "component": "Button", "child": "send-label", "variant": "primary",
         "action": {"event": {"name": "submit", "context": {"name": {"path": "/name"}}}}},
        {"id": "send-label", "component": "Text", "text": "Send"},
    ])
    .as_array()
    .unwrap()
    .clone()
}

fn codes(checked: &Checked) -> Vec<(Code, &str)> {
    checked
        .errors
        .iter()
        .map(|error| (error.code, error.path.as_str()))
        .collect()
}

fn with(mut components: Vec<Value>, index: usize, key: &str, value: Value) -> Vec<Value> {
    components[index][key] = value;
    components
}

#[test]
fn a_form_with_its_data_is_valid_and_painted_as_sent() {
    let checked = check(&form(), &json!({"name": ""}), &Catalog::basic());
    assert_eq!(checked.errors, vec![]);
    assert_eq!(checked.components, form());
    assert!(checked.ignored.is_empty());
}

#[test]
fn each_structural_mistake_has_the_toolkits_code_path_and_message() {
    let basic = Catalog::basic();
    let data = json!({"name": ""});
    let empty = check(&[], &data, &basic);
    assert_eq!(
        empty.errors[0].message,
        "A2UI components must be a non-empty array"
    );
    assert_eq!(codes(&empty), vec![(Code::EmptyComponents, "components")]);

    let mut components = form();
    components[5] = json!({"id": "send", "component": "Text", "text": "again"});
    let checked = check(&components, &data, &basic);
    assert_eq!(checked.errors[0].code, Code::DuplicateId);
    assert_eq!(checked.errors[0].path, "components[id=send]");
    assert_eq!(checked.errors[0].message, "Duplicate component id 'send'");

    let missing = check(&with(form(), 2, "id", json!(7)), &data, &basic);
    assert!(codes(&missing).contains(&(Code::MissingId, "components[2].id")));
    let untyped = check(&with(form(), 2, "component", json!("")), &data, &basic);
    assert!(codes(&untyped).contains(&(Code::MissingComponentType, "components[2].component")));

    let unknown = check(&with(form(), 2, "component", json!("Fancy")), &data, &basic);
    assert_eq!(
        unknown.errors[0].message,
        "Component type 'Fancy' is not in the catalog"
    );
    assert_eq!(
        codes(&unknown),
        vec![(Code::UnknownComponent, "components[2].component")]
    );

    let mut no_label = form();
    no_label[3].as_object_mut().unwrap().remove("label");
    let checked = check(&no_label, &data, &basic);
    assert_eq!(
        codes(&checked),
        vec![(Code::MissingRequiredProp, "components[3].label")]
    );
    assert_eq!(
        checked.errors[0].message,
        "Component 'TextField' (index 3) is missing required prop 'label'"
    );

    let dangling = check(
        &with(form(), 1, "children", json!(["title", "ghost"])),
        &data,
        &basic,
    );
    assert_eq!(
        codes(&dangling),
        vec![(Code::UnresolvedChild, "components[1].children[1]")]
    );
    assert_eq!(
        dangling.errors[0].message,
        "Child reference 'ghost' does not match any component id"
    );

    let rootless = check(&with(form(), 0, "id", json!("card")), &data, &basic);
    assert!(codes(&rootless).contains(&(Code::NoRoot, "components")));
    assert_eq!(
        rootless.errors.last().unwrap().message,
        "No component has id 'root'"
    );

    let unbound = check(&form(), &json!({}), &basic);
    assert_eq!(
        codes(&unbound),
        vec![
            (Code::UnresolvedBinding, "components[3]"),
            (Code::UnresolvedBinding, "components[4]")
        ]
    );
    assert_eq!(
        unbound.errors[0].message,
        "Binding path '/name' does not resolve in the data model"
    );
}

#[test]
fn a_cycle_is_reported_once_from_its_smallest_id() {
    let components = json!([
        {"id": "root", "component": "Column", "children": ["b"]},
        {"id": "b", "component": "Column", "children": ["c"]},
        {"id": "c", "component": "Card", "child": "b"},
        {"id": "self", "component": "Card", "child": "self"},
    ]);
    let checked = check(
        components.as_array().unwrap(),
        &json!({}),
        &Catalog::basic(),
    );
    let cycles: Vec<&str> = checked
        .errors
        .iter()
        .filter(|error| error.code == Code::ChildCycle)
        .map(|error| error.message.as_str())
        .collect();
    assert_eq!(
        cycles,
        vec![
            "Child reference cycle detected: b -> c -> b",
            "Child reference cycle detected: self -> self"
        ]
    );
}

#[test]
fn a_deep_chain_does_not_exhaust_the_stack() {
    let mut components = vec![json!({"id": "root", "component": "Card", "child": "c0"})];
    for index in 0..50_000 {
        components.push(json!({"id": format!("c{index}"), "component": "Card", "child": format!("c{}", index + 1)}));
    }
    components.push(json!({"id": "c50000", "component": "Card", "child": "root"}));
    let checked = check(&components, &json!({}), &Catalog::basic());
    assert_eq!(checked.errors.len(), 1);
    assert_eq!(checked.errors[0].code, Code::ChildCycle);
}

#[test]
fn refs_the_catalog_types_as_children_are_checked_too() {
    let components = json!([
        {"id": "root", "component": "Column", "children": ["tabs", "modal"]},
        {"id": "tabs", "component": "Tabs", "tabs": [{"title": "One", "child": "nowhere"}]},
        {"id": "modal", "component": "Modal", "trigger": "open", "content": "missing"},
        {"id": "open", "component": "Text", "text": "Open"},
    ]);
    let checked = check(
        components.as_array().unwrap(),
        &json!({}),
        &Catalog::basic(),
    );
    assert_eq!(
        codes(&checked),
        vec![
            (Code::UnresolvedChild, "components[1].tabs[0].child"),
            (Code::UnresolvedChild, "components[2].content"),
        ]
    );
}

#[test]
fn a_template_needs_its_list_but_its_items_bind_relative_paths() {
    let components = json!([
        {"id": "root", "component": "List", "children": {"componentId": "row", "path": "/people"}},
        {"id": "row", "component": "Text", "text": {"path": "name"}},
    ]);
    let components = components.as_array().unwrap();
    assert_eq!(
        check(
            components,
            &json!({"people": [{"name": "Ada"}]}),
            &Catalog::basic()
        )
        .errors,
        vec![]
    );
    let missing = check(components, &json!({}), &Catalog::basic());
    assert_eq!(
        codes(&missing),
        vec![(Code::UnresolvedBinding, "components[0]")]
    );
}

#[test]
fn a_value_of_the_wrong_type_is_an_invalid_prop() {
    let basic = Catalog::basic();
    let data = json!({"name": ""});
    let cases = [
        (2, "variant", json!("huge"), "components[2].variant"),
        (2, "text", json!(42), "components[2].text"),
        (
            4,
            "action",
            json!({"functionCall": {"call": "openUrl"}}),
            "components[4].action",
        ),
        (
            4,
            "action",
            json!({"event": {"name": "go", "context": {"x": {"nested": true}}}}),
            "components[4].action",
        ),
        (1, "children", json!("title"), "components[1].children"),
        (
            3,
            "value",
            json!({"path": "/name", "extra": 1}),
            "components[3].value",
        ),
        (2, "weight", json!("heavy"), "components[2].weight"),
    ];
    for (index, key, value, path) in cases {
        let checked = check(&with(form(), index, key, value.clone()), &data, &basic);
        assert!(
            codes(&checked).contains(&(Code::InvalidProp, path)),
            "{key} = {value}: {:?}",
            checked.errors
        );
    }
}

#[test]
fn props_the_catalog_does_not_know_are_left_out_and_named() {
    let components = with(form(), 4, "label", json!("Send"));
    let checked = check(&components, &json!({"name": ""}), &Catalog::basic());
    assert_eq!(checked.errors, vec![]);
    assert_eq!(checked.ignored, vec!["components[4].label".to_owned()]);
    assert_eq!(checked.components, form());
}

#[test]
fn the_errors_read_as_the_toolkits_list() {
    let checked = check(
        &with(form(), 2, "component", json!("Fancy")),
        &json!({"name": ""}),
        &Catalog::basic(),
    );
    assert_eq!(
        format_errors(&checked.errors),
        "- [unknown_component] components[2].component: Component type 'Fancy' is not in the catalog"
    );
}
