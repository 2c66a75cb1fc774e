//! Validation of a flat v0.9 component list against a catalog and a data model, with the codes,
//! paths and messages of `@ag-ui/a2ui-toolkit`'s validator (so a model told about one reads the
//! other alike), plus `invalid_prop` for a value of the wrong type. Props a catalog does not know
//! are left out of what is painted and named, not refused.

use super::catalog::{COMMON_PROPS, Catalog, Component, Kind, Prop};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// What kind of mistake a [`ValidationError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Code {
    EmptyComponents,
    MissingId,
    MissingComponentType,
    DuplicateId,
    NoRoot,
    UnknownComponent,
    MissingRequiredProp,
    UnresolvedChild,
    ChildCycle,
    UnresolvedBinding,
    /// A prop's value is not of the type the catalog gives it (not one of the toolkit's codes).
    InvalidProp,
}

/// One mistake, located by a path such as `components[2].component`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidationError {
    pub(crate) code: Code,
    pub(crate) path: String,
    pub(crate) message: String,
}

impl ValidationError {
    fn new(code: Code, path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code,
            path: path.into(),
            message: message.into(),
        }
    }
}

/// A component list checked: the components as they may be painted (props the catalog does not
/// know left out), what was left out, and the mistakes. Paintable only when `errors` is empty.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    pub components: Vec<Value>,
    pub ignored: Vec<String>,
    pub errors: Vec<ValidationError>,
}

/// Checks `components` against `catalog`, their absolute bindings against `data`.
pub fn check(components: &[Value], data: &Value, catalog: &Catalog) -> Checked {
    if components.is_empty() {
        return Checked {
            components: Vec::new(),
            ignored: Vec::new(),
            errors: vec![ValidationError::new(
                Code::EmptyComponents,
                "components",
                "A2UI components must be a non-empty array",
            )],
        };
    }
    let mut errors = duplicate_ids(components);
    let ids: HashSet<&str> = components.iter().filter_map(id_of).collect();
    let mut cleaned = Vec::with_capacity(components.len());
    let mut ignored = Vec::new();
    for (index, component) in components.iter().enumerate() {
        let at = format!("components[{index}]");
        let known = check_one(index, component, catalog, &mut errors);
        for edge in ref_edges(component, known) {
            if !ids.contains(edge.target.as_str()) {
                errors.push(ValidationError::new(
                    Code::UnresolvedChild,
                    format!("{at}.{}", edge.path),
                    format!(
                        "Child reference '{}' does not match any component id",
                        edge.target
                    ),
                ));
            }
        }
        let mut paths = Vec::new();
        absolute_bindings(component, &mut paths);
        for path in paths {
            if !resolves(&path, data) {
                errors.push(ValidationError::new(
                    Code::UnresolvedBinding,
                    at.clone(),
                    format!("Binding path '{path}' does not resolve in the data model"),
                ));
            }
        }
        cleaned.push(clean(component, known, &at, &mut ignored));
    }
    for cycle in child_cycles(components, catalog) {
        let mut chain = cycle.clone();
        chain.push(cycle[0].clone());
        errors.push(ValidationError::new(
            Code::ChildCycle,
            format!("components[id={}]", cycle[0]),
            format!("Child reference cycle detected: {}", chain.join(" -> ")),
        ));
    }
    if !ids.contains("root") {
        errors.push(ValidationError::new(
            Code::NoRoot,
            "components",
            "No component has id 'root'",
        ));
    }
    Checked {
        components: cleaned,
        ignored,
        errors,
    }
}

fn id_of(component: &Value) -> Option<&str> {
    component.get("id").and_then(Value::as_str)
}

fn type_of(component: &Value) -> Option<&str> {
    component
        .get("component")
        .and_then(Value::as_str)
        .filter(|name| !name.is_empty())
}

fn duplicate_ids(components: &[Value]) -> Vec<ValidationError> {
    let mut seen = HashSet::new();
    components
        .iter()
        .filter_map(id_of)
        .filter(|id| !seen.insert(*id))
        .map(|id| {
            ValidationError::new(
                Code::DuplicateId,
                format!("components[id={id}]"),
                format!("Duplicate component id '{id}'"),
            )
        })
        .collect()
}

/// The checks of one component on its own; its catalog entry when it has one.
fn check_one<'c>(
    index: usize,
    component: &Value,
    catalog: &'c Catalog,
    errors: &mut Vec<ValidationError>,
) -> Option<&'c Component> {
    if id_of(component).is_none_or(str::is_empty) {
        errors.push(ValidationError::new(
            Code::MissingId,
            format!("components[{index}].id"),
            format!("Component at index {index} is missing a string 'id'"),
        ));
    }
    let Some(name) = type_of(component) else {
        errors.push(ValidationError::new(
            Code::MissingComponentType,
            format!("components[{index}].component"),
            format!("Component at index {index} is missing a string 'component' type"),
        ));
        return None;
    };
    let Some(known) = catalog.component(name) else {
        errors.push(ValidationError::new(
            Code::UnknownComponent,
            format!("components[{index}].component"),
            format!("Component type '{name}' is not in the catalog"),
        ));
        return None;
    };
    for prop in &known.props {
        match component.get(&prop.name) {
            None if prop.required => errors.push(ValidationError::new(
                Code::MissingRequiredProp,
                format!("components[{index}].{}", prop.name),
                format!(
                    "Component '{name}' (index {index}) is missing required prop '{}'",
                    prop.name
                ),
            )),
            None => {}
            Some(value) => {
                let at = || format!("components[{index}].{}", prop.name);
                check_value(&at, name, prop, value, errors);
            }
        }
    }
    check_common(index, name, component, errors);
    Some(known)
}

/// `accessibility` and `weight`, which every component may carry.
fn check_common(index: usize, name: &str, component: &Value, errors: &mut Vec<ValidationError>) {
    if let Some(weight) = component.get("weight")
        && !weight.is_number()
    {
        errors.push(invalid(
            &format!("components[{index}].weight"),
            name,
            "a number",
        ));
    }
    if let Some(accessibility) = component.get("accessibility") {
        let at = format!("components[{index}].accessibility");
        let fine = accessibility.as_object().is_some_and(|fields| {
            fields.iter().all(|(key, value)| {
                matches!(key.as_str(), "label" | "description")
                    && (value.is_string() || is_binding(value))
            })
        });
        if !fine {
            errors.push(invalid(
                &at,
                name,
                "{\"label\", \"description\"}, each a string or {\"path\"}",
            ));
        }
    }
}

fn invalid(at: &str, component: &str, expected: &str) -> ValidationError {
    ValidationError::new(
        Code::InvalidProp,
        at,
        format!("In component '{component}', {at} must be {expected}"),
    )
}

/// A data binding: `{"path": "…"}` and nothing else.
pub(crate) fn is_binding(value: &Value) -> bool {
    value
        .as_object()
        .is_some_and(|fields| fields.len() == 1 && fields.get("path").is_some_and(Value::is_string))
}

/// Where a value is, as a path such as `components[2].variant`: made only for a mistake.
type At<'a> = &'a dyn Fn() -> String;

fn check_value(
    at: At<'_>,
    component: &str,
    prop: &Prop,
    value: &Value,
    errors: &mut Vec<ValidationError>,
) {
    let expected: Option<String> = match &prop.kind {
        Kind::Text if !(value.is_string() || is_binding(value)) => {
            Some("a string or {\"path\"}".to_owned())
        }
        Kind::Moment if !(value.as_str().is_some_and(is_moment) || is_binding(value)) => {
            Some("an ISO 8601 date, time or date-time, or {\"path\"}".to_owned())
        }
        Kind::Number if !(value.is_number() || is_binding(value)) => {
            Some("a number or {\"path\"}".to_owned())
        }
        Kind::Bool if !(value.is_boolean() || is_binding(value)) => {
            Some("true, false or {\"path\"}".to_owned())
        }
        Kind::Strings if !(is_binding(value) || is_strings(value)) => {
            Some("an array of strings or {\"path\"}".to_owned())
        }
        Kind::Choice { values, bindable } => {
            let fine = value
                .as_str()
                .is_some_and(|text| values.iter().any(|allowed| allowed == text))
                || (*bindable && is_binding(value));
            (!fine).then(|| format!("one of {}", values.join(", ")))
        }
        Kind::Literal(kind) if !kind.holds(value) => Some(format!("a {}", kind.name())),
        Kind::Child if value.as_str().is_none_or(str::is_empty) => {
            Some("a component id".to_owned())
        }
        Kind::Children if !(is_strings(value) || is_template(value)) => {
            Some("an array of component ids or {\"componentId\", \"path\"}".to_owned())
        }
        Kind::Action if !is_event_action(value) => Some(
            "{\"event\": {\"name\": string, \"context\": {key: value or {\"path\"}}}}".to_owned(),
        ),
        Kind::Items(props) => return check_items(at, component, props, value, errors),
        _ => None,
    };
    if let Some(expected) = expected {
        errors.push(invalid(&at(), component, &expected));
    }
}

fn check_items(
    at: At<'_>,
    component: &str,
    props: &[Prop],
    value: &Value,
    errors: &mut Vec<ValidationError>,
) {
    let Some(items) = value.as_array().filter(|items| !items.is_empty()) else {
        errors.push(invalid(&at(), component, "a non-empty array of objects"));
        return;
    };
    for (index, item) in items.iter().enumerate() {
        let item_at = || format!("{}[{index}]", at());
        let Some(fields) = item.as_object() else {
            errors.push(invalid(&item_at(), component, "an object"));
            continue;
        };
        for prop in props {
            match fields.get(&prop.name) {
                None if prop.required => errors.push(ValidationError::new(
                    Code::MissingRequiredProp,
                    format!("{}.{}", item_at(), prop.name),
                    format!(
                        "In component '{component}', {} is missing required prop '{}'",
                        item_at(),
                        prop.name
                    ),
                )),
                None => {}
                Some(value) => check_value(
                    &|| format!("{}.{}", item_at(), prop.name),
                    component,
                    prop,
                    value,
                    errors,
                ),
            }
        }
    }
}

/// An RFC 3339 date (`2026-11-28`), time (`10:00:00Z`) or date-time, as the spec's formats.
fn is_moment(text: &str) -> bool {
    chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").is_ok()
        || chrono::DateTime::parse_from_rfc3339(text).is_ok()
        || chrono::DateTime::parse_from_rfc3339(&format!("2000-01-01T{text}")).is_ok()
}

fn is_strings(value: &Value) -> bool {
    value
        .as_array()
        .is_some_and(|items| items.iter().all(Value::is_string))
}

/// `{"componentId", "path"}`: children repeated per item of a list in the data model.
fn is_template(value: &Value) -> bool {
    value.as_object().is_some_and(|fields| {
        fields.len() == 2
            && fields.get("componentId").is_some_and(Value::is_string)
            && fields.get("path").is_some_and(Value::is_string)
    })
}

/// `{"event": {"name", "context"?}}`, each context value a literal or a binding.
fn is_event_action(value: &Value) -> bool {
    let Some(event) = value
        .as_object()
        .filter(|fields| fields.len() == 1)
        .and_then(|fields| fields.get("event"))
        .and_then(Value::as_object)
    else {
        return false;
    };
    let name = event
        .get("name")
        .and_then(Value::as_str)
        .is_some_and(|name| !name.is_empty());
    let context = match event.get("context") {
        None => true,
        Some(context) => context.as_object().is_some_and(|entries| {
            entries.values().all(|value| {
                value.is_string()
                    || value.is_number()
                    || value.is_boolean()
                    || value.is_array()
                    || is_binding(value)
            })
        }),
    };
    name && context && event.keys().all(|key| key == "name" || key == "context")
}

/// The ids `component` names as children, by its catalog entry (see [`ref_edges`]).
pub(crate) fn child_ids(component: &Value, catalog: &Catalog) -> Vec<String> {
    let known = type_of(component).and_then(|name| catalog.component(name));
    ref_edges(component, known)
        .into_iter()
        .map(|edge| edge.target)
        .collect()
}

/// One child reference of a component: where it is and which id it names.
struct Edge {
    path: String,
    target: String,
}

/// Every child reference of `component`: `child` and `children` always (as the toolkit reads
/// them), and the props its catalog entry types as children.
fn ref_edges(component: &Value, known: Option<&Component>) -> Vec<Edge> {
    let mut edges = Vec::new();
    let single = |path: String, value: &Value, edges: &mut Vec<Edge>| match value {
        Value::String(target) => edges.push(Edge {
            path,
            target: target.clone(),
        }),
        Value::Object(fields) => {
            if let Some(Value::String(target)) = fields.get("componentId") {
                edges.push(Edge {
                    path,
                    target: target.clone(),
                });
            }
        }
        _ => {}
    };
    let mut refs: Vec<(&str, bool)> = vec![("child", false), ("children", true)];
    if let Some(known) = known {
        for prop in &known.props {
            match prop.kind {
                Kind::Child if prop.name != "child" => refs.push((&prop.name, false)),
                Kind::Children if prop.name != "children" => refs.push((&prop.name, true)),
                _ => {}
            }
        }
    }
    for (field, list) in refs {
        match component.get(field) {
            Some(Value::Array(items)) if list => {
                for (index, item) in items.iter().enumerate() {
                    single(format!("{field}[{index}]"), item, &mut edges);
                }
            }
            Some(value) => single(field.to_owned(), value, &mut edges),
            None => {}
        }
    }
    for prop in known.map_or(&[][..], |known| known.props.as_slice()) {
        let Kind::Items(item_props) = &prop.kind else {
            continue;
        };
        let Some(items) = component.get(&prop.name).and_then(Value::as_array) else {
            continue;
        };
        for (index, item) in items.iter().enumerate() {
            for item_prop in item_props.iter().filter(|p| p.kind == Kind::Child) {
                if let Some(value) = item.get(&item_prop.name) {
                    single(
                        format!("{}[{index}].{}", prop.name, item_prop.name),
                        value,
                        &mut edges,
                    );
                }
            }
        }
    }
    edges
}

/// Absolute binding paths (`{"path": "/…"}` anywhere in the component), as the toolkit collects
/// them; relative ones resolve per item of a template and are left alone.
fn absolute_bindings(value: &Value, paths: &mut Vec<String>) {
    match value {
        Value::Array(items) => items.iter().for_each(|item| absolute_bindings(item, paths)),
        Value::Object(fields) => {
            if let Some(Value::String(path)) = fields.get("path")
                && path.starts_with('/')
            {
                paths.push(path.clone());
            }
            for (key, value) in fields {
                if key != "path" {
                    absolute_bindings(value, paths);
                }
            }
        }
        _ => {}
    }
}

/// Whether a JSON Pointer resolves in `data` (`/` is the whole model).
pub(crate) fn resolves(path: &str, data: &Value) -> bool {
    let mut cursor = data;
    for segment in path.split('/').filter(|segment| !segment.is_empty()) {
        let segment: std::borrow::Cow<'_, str> = if segment.contains('~') {
            segment.replace("~1", "/").replace("~0", "~").into()
        } else {
            segment.into()
        };
        cursor = match cursor {
            Value::Object(fields) => match fields.get(segment.as_ref()) {
                Some(next) => next,
                None => return false,
            },
            Value::Array(items) => match segment.parse::<usize>().ok().and_then(|i| items.get(i)) {
                Some(next) => next,
                None => return false,
            },
            _ => return false,
        };
    }
    true
}

/// The component without the props its catalog entry does not know (recorded in `ignored`);
/// a component of no known type is kept whole (it is refused anyway).
fn clean(
    component: &Value,
    known: Option<&Component>,
    at: &str,
    ignored: &mut Vec<String>,
) -> Value {
    let (Some(known), Some(fields)) = (known, component.as_object()) else {
        return component.clone();
    };
    let mut kept = Map::with_capacity(fields.len());
    for (key, value) in fields {
        let allowed = matches!(key.as_str(), "id" | "component")
            || COMMON_PROPS.contains(&key.as_str())
            || known.prop(key).is_some();
        if allowed {
            kept.insert(
                key.clone(),
                clean_items(known.prop(key), value, &|| format!("{at}.{key}"), ignored),
            );
        } else {
            ignored.push(format!("{at}.{key}"));
        }
    }
    Value::Object(kept)
}

/// Item props of an array-of-objects prop the catalog does not know, left out likewise.
fn clean_items(prop: Option<&Prop>, value: &Value, at: At<'_>, ignored: &mut Vec<String>) -> Value {
    let (
        Some(Prop {
            kind: Kind::Items(props),
            ..
        }),
        Some(items),
    ) = (prop, value.as_array())
    else {
        return value.clone();
    };
    let items = items
        .iter()
        .enumerate()
        .map(|(index, item)| match item.as_object() {
            Some(fields) => Value::Object(
                fields
                    .iter()
                    .filter(|(key, _)| {
                        let known = props.iter().any(|p| &p.name == *key);
                        if !known {
                            ignored.push(format!("{}[{index}].{key}", at()));
                        }
                        known
                    })
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect(),
            ),
            None => item.clone(),
        })
        .collect();
    Value::Array(items)
}

/// Each cycle of child references once, rotated to start at its smallest id (the toolkit's
/// canonical form). Iterative: a model's output may chain deeper than the stack allows.
fn child_cycles(components: &[Value], catalog: &Catalog) -> Vec<Vec<String>> {
    let mut adjacency: Vec<(&str, Vec<String>)> = Vec::new();
    for component in components {
        if let Some(id) = id_of(component) {
            adjacency.push((id, child_ids(component, catalog)));
        }
    }
    let index: HashMap<&str, usize> = adjacency
        .iter()
        .enumerate()
        .map(|(position, (id, _))| (*id, position))
        .collect();
    // 0 unvisited, 1 on the stack, 2 done.
    let mut color = vec![0u8; adjacency.len()];
    let mut cycles: Vec<Vec<String>> = Vec::new();
    let mut found = HashSet::new();
    for start in 0..adjacency.len() {
        if color[start] != 0 {
            continue;
        }
        let mut frames: Vec<(usize, usize)> = vec![(start, 0)];
        let mut path: Vec<usize> = vec![start];
        color[start] = 1;
        while let Some(frame) = frames.last_mut() {
            let (node, next) = *frame;
            let Some(target) = adjacency[node].1.get(next) else {
                color[node] = 2;
                frames.pop();
                path.pop();
                continue;
            };
            frame.1 += 1;
            let Some(&target) = index.get(target.as_str()) else {
                continue;
            };
            match color[target] {
                0 => {
                    color[target] = 1;
                    path.push(target);
                    frames.push((target, 0));
                }
                1 => {
                    let from = path.iter().position(|&n| n == target).unwrap_or(0);
                    let cycle = canonical(
                        path[from..]
                            .iter()
                            .map(|&n| adjacency[n].0.to_owned())
                            .collect(),
                    );
                    if found.insert(cycle.join(" ")) {
                        cycles.push(cycle);
                    }
                }
                _ => {}
            }
        }
    }
    cycles
}

fn canonical(mut nodes: Vec<String>) -> Vec<String> {
    let smallest = nodes
        .iter()
        .enumerate()
        .min_by(|a, b| a.1.cmp(b.1))
        .map_or(0, |(position, _)| position);
    nodes.rotate_left(smallest);
    nodes
}

/// The errors as the toolkit lists them for a model: `- [code] path: message` lines.
pub(crate) fn format_errors(errors: &[ValidationError]) -> String {
    let code = |error: &ValidationError| {
        serde_json::to_value(error.code)
            .ok()
            .and_then(|value| value.as_str().map(str::to_owned))
            .unwrap_or_default()
    };
    errors
        .iter()
        .map(|error| format!("- [{}] {}: {}", code(error), error.path, error.message))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
#[path = "validate_tests.rs"]
pub(crate) mod tests;
