//! Nothing invalid is painted: whatever passes the checks makes operations the spec's schema
//! takes (surfaces generated from the basic catalog, their props mostly right).

use super::catalog::{Catalog, Kind, Prop, Scalar};
use super::emit::{self, Renderer};
use super::spec_schema::operation_validator;
use super::surface::Surface;
use super::validate::check;
use proptest::prelude::*;
use serde_json::{Value, json};

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
