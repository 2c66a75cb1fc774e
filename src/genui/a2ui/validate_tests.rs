use super::*;
use crate::genui::a2ui::catalog::Scalar;
use crate::genui::a2ui::emit::{self, Renderer};
use crate::genui::a2ui::spec_schema::operation_validator;
use crate::genui::a2ui::surface::Surface;
use proptest::prelude::*;
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

// ---- Nothing invalid is painted: whatever passes the checks passes the spec's schema. ----

const IDS: [&str; 6] = ["root", "a", "b", "c", "d", "e"];

/// An id a component at `index` of `count` refers to: mostly a later one (a tree), else any.
fn ref_id(index: usize, count: usize) -> BoxedStrategy<String> {
    let later: Vec<String> = IDS[(index + 1).min(count)..count]
        .iter()
        .map(|id| (*id).to_owned())
        .collect();
    let any: Vec<String> = IDS.iter().map(|id| (*id).to_owned()).collect();
    if later.is_empty() {
        prop::sample::select(any).boxed()
    } else {
        prop_oneof![19 => prop::sample::select(later), 1 => prop::sample::select(any)].boxed()
    }
}

fn binding() -> impl Strategy<Value = Value> {
    prop::sample::select(&["/name", "/items", "/flag", "/missing", "name"][..])
        .prop_map(|path| json!({"path": path}))
}

fn junk() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!(null)),
        Just(json!(7)),
        Just(json!("text")),
        Just(json!({"call": "now"})),
        Just(json!([1, 2])),
        Just(json!({"path": 3})),
        Just(json!({"event": {"name": ""}})),
    ]
}

/// A plausible value for a prop of `kind`.
fn value_of(kind: &Kind, refs: &BoxedStrategy<String>) -> BoxedStrategy<Value> {
    match kind {
        Kind::Text => prop_oneof![Just(json!("hello")), binding()].boxed(),
        Kind::Moment => prop_oneof![
            Just(json!("2026-11-28")),
            Just(json!("10:30:00Z")),
            Just(json!("2026-11-28T10:30:00+01:00")),
            Just(json!("tomorrow")),
            binding()
        ]
        .boxed(),
        Kind::Number => prop_oneof![Just(json!(3)), binding()].boxed(),
        Kind::Bool => prop_oneof![Just(json!(true)), binding()].boxed(),
        Kind::Strings => prop_oneof![Just(json!(["x"])), binding()].boxed(),
        Kind::Choice { values, bindable } => {
            let pick = prop::sample::select(values.clone()).prop_map(Value::String);
            if *bindable {
                prop_oneof![pick, binding()].boxed()
            } else {
                pick.boxed()
            }
        }
        Kind::Literal(Scalar::Number) => Just(json!(10)).boxed(),
        Kind::Literal(Scalar::Boolean) => Just(json!(false)).boxed(),
        Kind::Literal(_) => Just(json!("^a+$")).boxed(),
        Kind::Child => refs.clone().prop_map(Value::String).boxed(),
        Kind::Children => prop_oneof![
            prop::collection::vec(refs.clone(), 0..3).prop_map(|ids| json!(ids)),
            refs.clone()
                .prop_map(|id| json!({"componentId": id, "path": "/items"})),
        ]
        .boxed(),
        Kind::Action => prop_oneof![
            Just(json!({"event": {"name": "submit"}})),
            binding()
                .prop_map(|b| json!({"event": {"name": "submit", "context": {"who": b, "n": 1}}})),
        ]
        .boxed(),
        Kind::Items(props) => {
            let fields: Vec<BoxedStrategy<(String, Value)>> = props
                .iter()
                .map(|prop| {
                    let name = prop.name.clone();
                    value_of(&prop.kind, refs)
                        .prop_map(move |value| (name.clone(), value))
                        .boxed()
                })
                .collect();
            prop::collection::vec(
                fields.prop_map(|fields| Value::Object(fields.into_iter().collect())),
                1..3,
            )
            .prop_map(Value::Array)
            .boxed()
        }
        Kind::Any => junk().boxed(),
    }
}

/// The component at `index` of `count` (id `IDS[index]`): of the basic catalog (or an unknown
/// type), its props mostly right.
fn component(index: usize, count: usize) -> impl Strategy<Value = Value> {
    let names: Vec<String> = Catalog::basic()
        .components
        .iter()
        .map(|c| c.name.clone())
        .chain(["Fancy".to_owned()])
        .collect();
    let id = prop_oneof![39 => Just(IDS[index].to_owned()), 1 => prop::sample::select(&IDS[..]).prop_map(str::to_owned)];
    (prop::sample::select(names), id).prop_flat_map(move |(name, id)| {
        let refs = ref_id(index, count);
        let props: Vec<Prop> = Catalog::basic()
            .component(&name)
            .map(|c| c.props.clone())
            .unwrap_or_default();
        let fields: Vec<BoxedStrategy<Option<(String, Value)>>> = props
            .into_iter()
            .map(|prop| {
                let skip = if prop.required { 0.03 } else { 0.5 };
                let name = prop.name.clone();
                let value = prop_oneof![19 => value_of(&prop.kind, &refs), 1 => junk()];
                prop::option::weighted(
                    1.0 - skip,
                    value.prop_map(move |value| (name.clone(), value)),
                )
                .boxed()
            })
            .collect();
        let extra = prop::option::weighted(
            0.1,
            prop_oneof![
                Just(("label".to_owned(), json!("x"))),
                Just(("weight".to_owned(), json!(1))),
                Just(("accessibility".to_owned(), json!({"label": "x"}))),
                Just(("checks".to_owned(), json!([]))),
            ],
        );
        (fields, extra).prop_map(move |(fields, extra)| {
            let mut object = serde_json::Map::new();
            object.insert("id".to_owned(), json!(id));
            object.insert("component".to_owned(), json!(name));
            object.extend(fields.into_iter().flatten());
            object.extend(extra);
            Value::Object(object)
        })
    })
}

/// One to six components, `root` first.
fn components() -> impl Strategy<Value = Vec<Value>> {
    (1..=IDS.len()).prop_flat_map(|count| {
        (0..count)
            .map(|index| component(index, count))
            .collect::<Vec<_>>()
    })
}

thread_local! {
    static VALIDATOR: std::sync::Arc<jsonschema::Validator> = std::sync::Arc::new(operation_validator());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn whatever_passes_the_checks_is_a_valid_v0_9_surface(
        components in components(),
        name in prop::option::of(Just(json!("Ada"))),
        items in prop::option::of(Just(json!([{"name": "x"}]))),
    ) {
        let mut data = serde_json::Map::new();
        data.extend(name.map(|name| ("name".to_owned(), name)));
        data.extend(items.map(|items| ("items".to_owned(), items)));
        data.insert("flag".to_owned(), json!(true));
        let checked = check(&components, &Value::Object(data.clone()), &Catalog::basic());
        if checked.errors.is_empty() {
            let surface = Surface { surface_id: "s".to_owned(), components: checked.components, data };
            let renderer = Renderer::Spec { catalog_id: "https://a2ui.org/specification/v0_9/basic_catalog.json".to_owned() };
            let validator = VALIDATOR.with(|validator| validator.clone());
            for operation in emit::operations(&surface, &renderer) {
                prop_assert!(validator.is_valid(&operation), "{operation:#}");
            }
        }
    }
}

#[test]
fn the_generated_surfaces_hold_enough_valid_ones_for_the_property_to_bite() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = components();
    let data = json!({"name": "Ada", "items": [{"name": "x"}], "flag": true});
    let valid = (0..1000)
        .filter(|_| {
            let components = strategy.new_tree(&mut runner).unwrap().current();
            check(&components, &data, &Catalog::basic())
                .errors
                .is_empty()
        })
        .count();
    assert!(
        valid >= 100,
        "only {valid} of 1000 generated surfaces were valid"
    );
}
