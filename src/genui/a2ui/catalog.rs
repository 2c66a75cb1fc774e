//! Catalogs: which components a renderer paints and what each takes. The basic catalog of A2UI
//! v0.9 is built in; a client that sends its own (CopilotKit's schema context entry) is read from
//! that entry, its basic components keeping what the built-in table knows of them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::{Arc, LazyLock};

/// The basic catalog's id as CopilotKit 1.74 (`@a2ui/web_core` 0.10.4) registers it; the spec's
/// own id makes that renderer throw "Catalog not found".
pub(crate) const BASIC_CATALOG_ID: &str = "https://a2ui.org/specification/v0_9/basic_catalog.json";

/// What a prop takes, as far as validation and the model's description need to know.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Kind {
    /// A string, or `{"path"}` bound to the data model.
    Text,
    /// A string in ISO 8601 (a date, a time or a date-time), or a binding.
    Moment,
    /// A number, or a binding.
    Number,
    /// A boolean, or a binding.
    Bool,
    /// An array of strings, or a binding.
    Strings,
    /// One of these strings; `bindable` when a binding is allowed too.
    Choice { values: Vec<String>, bindable: bool },
    /// A literal of this JSON type, never bound.
    Literal(Scalar),
    /// One component's id.
    Child,
    /// Component ids, or a template `{"componentId", "path"}` repeated per item of a list.
    Children,
    /// `{"event": {"name", "context"}}`.
    Action,
    /// An array of objects with these props.
    Items(Vec<Prop>),
    /// Anything: a custom component's prop this server cannot read the type of.
    Any,
}

/// A JSON scalar type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Scalar {
    String,
    Number,
    Boolean,
}

impl Scalar {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Scalar::String => "string",
            Scalar::Number => "number",
            Scalar::Boolean => "boolean",
        }
    }

    pub(crate) fn holds(self, value: &Value) -> bool {
        match self {
            Scalar::String => value.is_string(),
            Scalar::Number => value.is_number(),
            Scalar::Boolean => value.is_boolean(),
        }
    }
}

/// One prop of a component.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Prop {
    pub(crate) name: String,
    pub(crate) required: bool,
    pub(crate) kind: Kind,
}

/// One component type of a catalog.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Component {
    pub(crate) name: String,
    pub(crate) props: Vec<Prop>,
}

impl Component {
    pub(crate) fn prop(&self, name: &str) -> Option<&Prop> {
        self.props.iter().find(|prop| prop.name == name)
    }
}

/// The components a renderer paints, under the id its surfaces are created with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Catalog {
    pub(crate) id: String,
    pub(crate) components: Vec<Component>,
}

/// Props every component may carry besides its own: passed on, never required.
pub(crate) const COMMON_PROPS: [&str; 2] = ["accessibility", "weight"];

impl Catalog {
    pub(crate) fn component(&self, name: &str) -> Option<&Component> {
        self.components
            .iter()
            .find(|component| component.name == name)
    }

    /// The built-in basic catalog (v0.9: 18 components), under CopilotKit's id.
    pub fn basic() -> Arc<Catalog> {
        BASIC.clone()
    }

    /// The same components restricted to `names`, under `id`.
    pub(crate) fn subset(&self, id: &str, names: &[&str]) -> Catalog {
        Catalog {
            id: id.to_owned(),
            components: self
                .components
                .iter()
                .filter(|component| names.contains(&component.name.as_str()))
                .cloned()
                .collect(),
        }
    }

    /// A catalog as a client describes it: `{"catalogId", "components": {name: schema}}`, each
    /// schema `{"allOf": [common, {"properties", "required"}]}` (CopilotKit, the toolkit's
    /// inline catalogs) or `{"properties", "required"}`. A basic component keeps the built-in
    /// kinds of the props it shares with the basic catalog. `None` when it holds no component.
    pub fn from_client_schema(schema: &Value) -> Option<Catalog> {
        let id = schema
            .get("catalogId")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .unwrap_or(BASIC_CATALOG_ID);
        let components: Vec<Component> = schema
            .get("components")?
            .as_object()?
            .iter()
            .filter(|(name, _)| is_component_name(name))
            .map(|(name, schema)| client_component(name, schema))
            .collect();
        if components.is_empty() {
            return None;
        }
        Some(Catalog {
            id: id.to_owned(),
            components,
        })
    }
}

fn is_component_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// One component of a client's catalog; see [`Catalog::from_client_schema`].
fn client_component(name: &str, schema: &Value) -> Component {
    let own = schema
        .get("allOf")
        .and_then(Value::as_array)
        .and_then(|parts| parts.iter().find(|part| part.get("properties").is_some()))
        .unwrap_or(schema);
    let empty = Map::new();
    let properties = own
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = own
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let known = BASIC.component(name);
    let props = properties
        .iter()
        .filter(|(prop, _)| {
            !matches!(prop.as_str(), "component" | "id") && !COMMON_PROPS.contains(&prop.as_str())
        })
        .map(|(prop, schema)| Prop {
            name: prop.clone(),
            required: required.contains(&prop.as_str()),
            kind: known
                .and_then(|component| component.prop(prop))
                .map(|known| known.kind.clone())
                .unwrap_or_else(|| kind_of(schema, own, 0)),
        })
        .collect();
    Component {
        name: name.to_owned(),
        props,
    }
}

/// The kind of a client's prop schema, read from its shape: a `$ref` into the component's own
/// schema is followed (zod-to-json-schema writes shared parts so), and a `REF:` description
/// names the A2UI type it came from.
fn kind_of(schema: &Value, root: &Value, depth: usize) -> Kind {
    if depth > 8 {
        return Kind::Any;
    }
    if let Some(target) = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|reference| reference.strip_prefix('#'))
        .and_then(|pointer| root.pointer(pointer))
    {
        return kind_of(target, root, depth + 1);
    }
    if let Some(kind) = schema
        .get("description")
        .and_then(Value::as_str)
        .and_then(kind_of_ref_marker)
    {
        return kind;
    }
    if schema.get("format").and_then(Value::as_str) == Some("componentRef") {
        return Kind::Child;
    }
    if let Some(variants) = schema.get("anyOf").or(schema.get("oneOf")) {
        return kind_of_variants(
            variants.as_array().map_or(&[][..], Vec::as_slice),
            root,
            depth,
        );
    }
    if let Some(values) = string_enum(schema) {
        return Kind::Choice {
            values,
            bindable: false,
        };
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => Kind::Literal(Scalar::String),
        Some("number" | "integer") => Kind::Literal(Scalar::Number),
        Some("boolean") => Kind::Literal(Scalar::Boolean),
        Some("array") => match schema.get("items") {
            Some(items) if items.get("properties").is_some() => {
                Kind::Items(item_props(items, root, depth + 1))
            }
            _ => Kind::Any,
        },
        _ => Kind::Any,
    }
}

/// `REF:common_types.json#/$defs/DynamicString|…`, as `@a2ui/web_core`'s zod schemas mark the
/// spec's shared types.
fn kind_of_ref_marker(description: &str) -> Option<Kind> {
    let name = description
        .strip_prefix("REF:")?
        .split('|')
        .next()?
        .rsplit('/')
        .next()?;
    Some(match name {
        "DynamicString" => Kind::Text,
        "DynamicNumber" => Kind::Number,
        "DynamicBoolean" => Kind::Bool,
        "DynamicStringList" => Kind::Strings,
        "ComponentId" => Kind::Child,
        "ChildList" => Kind::Children,
        "Action" => Kind::Action,
        _ => return None,
    })
}

/// The kind of an `anyOf`: a literal or a binding is that literal's dynamic kind; ids or a
/// template are children; an `event` object is an action.
fn kind_of_variants(variants: &[Value], root: &Value, depth: usize) -> Kind {
    let resolved: Vec<&Value> = variants
        .iter()
        .map(|variant| {
            variant
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|reference| reference.strip_prefix('#'))
                .and_then(|pointer| root.pointer(pointer))
                .unwrap_or(variant)
        })
        .collect();
    let has = |key: &str| {
        resolved.iter().any(|variant| {
            variant
                .get("properties")
                .and_then(Value::as_object)
                .is_some_and(|props| props.contains_key(key))
        })
    };
    if has("componentId") {
        return Kind::Children;
    }
    if has("event") {
        return Kind::Action;
    }
    let bindable = has("path");
    let literal = resolved.iter().find_map(|variant| {
        if let Some(values) = string_enum(variant) {
            return Some(Kind::Choice { values, bindable });
        }
        match variant.get("type").and_then(Value::as_str) {
            Some("string") => Some(Kind::Text),
            Some("number" | "integer") => Some(Kind::Number),
            Some("boolean") => Some(Kind::Bool),
            Some("array") => Some(Kind::Strings),
            _ => None,
        }
    });
    match (literal, bindable) {
        (Some(Kind::Text), false) => Kind::Literal(Scalar::String),
        (Some(Kind::Number), false) => Kind::Literal(Scalar::Number),
        (Some(Kind::Bool), false) => Kind::Literal(Scalar::Boolean),
        (Some(kind), _) => kind,
        (None, _) => match resolved.first() {
            Some(first) if resolved.len() == 1 => kind_of(first, root, depth + 1),
            _ => Kind::Any,
        },
    }
}

fn string_enum(schema: &Value) -> Option<Vec<String>> {
    let values = schema.get("enum")?.as_array()?;
    let strings: Vec<String> = values
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    (strings.len() == values.len() && !strings.is_empty()).then_some(strings)
}

fn item_props(items: &Value, root: &Value, depth: usize) -> Vec<Prop> {
    let required: Vec<&str> = items
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    items
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .map(|(name, schema)| Prop {
                    name: name.clone(),
                    required: required.contains(&name.as_str()),
                    kind: kind_of(schema, root, depth),
                })
                .collect()
        })
        .unwrap_or_default()
}

static BASIC: LazyLock<Arc<Catalog>> = LazyLock::new(|| Arc::new(basic_catalog()));

fn prop(name: &str, required: bool, kind: Kind) -> Prop {
    Prop {
        name: name.to_owned(),
        required,
        kind,
    }
}

fn choice(values: &[&str]) -> Kind {
    Kind::Choice {
        values: values.iter().map(|value| (*value).to_owned()).collect(),
        bindable: false,
    }
}

fn component(name: &str, props: Vec<Prop>) -> Component {
    Component {
        name: name.to_owned(),
        props,
    }
}

const ICONS: [&str; 59] = [
    "accountCircle",
    "add",
    "arrowBack",
    "arrowForward",
    "attachFile",
    "calendarToday",
    "call",
    "camera",
    "check",
    "close",
    "delete",
    "download",
    "edit",
    "event",
    "error",
    "fastForward",
    "favorite",
    "favoriteOff",
    "folder",
    "help",
    "home",
    "info",
    "locationOn",
    "lock",
    "lockOpen",
    "mail",
    "menu",
    "moreVert",
    "moreHoriz",
    "notificationsOff",
    "notifications",
    "pause",
    "payment",
    "person",
    "phone",
    "photo",
    "play",
    "print",
    "refresh",
    "rewind",
    "search",
    "send",
    "settings",
    "share",
    "shoppingCart",
    "skipNext",
    "skipPrevious",
    "star",
    "starHalf",
    "starOff",
    "stop",
    "upload",
    "visibility",
    "visibilityOff",
    "volumeDown",
    "volumeMute",
    "volumeOff",
    "volumeUp",
    "warning",
];

/// The basic catalog of A2UI v0.9 (`catalogs/basic/catalog.json`), checked against that file in
/// this module's tests.
#[expect(
    clippy::too_many_lines,
    reason = "a table of the 18 components, one entry each, as the spec lists them"
)]
fn basic_catalog() -> Catalog {
    use Kind::{Action, Bool, Child, Children, Literal, Number, Strings, Text};
    let justify = [
        "start",
        "center",
        "end",
        "spaceBetween",
        "spaceAround",
        "spaceEvenly",
        "stretch",
    ];
    let align = ["start", "center", "end", "stretch"];
    let layout = |name: &str, extra: Prop| {
        component(
            name,
            vec![
                prop("children", true, Children),
                extra,
                prop("align", false, choice(&align)),
            ],
        )
    };
    let icon = Kind::Choice {
        values: ICONS.iter().map(|name| (*name).to_owned()).collect(),
        bindable: true,
    };
    let components = vec![
        component(
            "Text",
            vec![
                prop("text", true, Text),
                prop(
                    "variant",
                    false,
                    choice(&["h1", "h2", "h3", "h4", "h5", "caption", "body"]),
                ),
            ],
        ),
        component(
            "Image",
            vec![
                prop("url", true, Text),
                prop("description", false, Text),
                prop(
                    "fit",
                    false,
                    choice(&["contain", "cover", "fill", "none", "scaleDown"]),
                ),
                prop(
                    "variant",
                    false,
                    choice(&[
                        "icon",
                        "avatar",
                        "smallFeature",
                        "mediumFeature",
                        "largeFeature",
                        "header",
                    ]),
                ),
            ],
        ),
        component("Icon", vec![prop("name", true, icon)]),
        component("Video", vec![prop("url", true, Text)]),
        component(
            "AudioPlayer",
            vec![prop("url", true, Text), prop("description", false, Text)],
        ),
        layout("Row", prop("justify", false, choice(&justify))),
        layout("Column", prop("justify", false, choice(&justify))),
        layout(
            "List",
            prop("direction", false, choice(&["vertical", "horizontal"])),
        ),
        component("Card", vec![prop("child", true, Child)]),
        component(
            "Tabs",
            vec![prop(
                "tabs",
                true,
                Kind::Items(vec![prop("title", true, Text), prop("child", true, Child)]),
            )],
        ),
        component(
            "Modal",
            vec![prop("trigger", true, Child), prop("content", true, Child)],
        ),
        component(
            "Divider",
            vec![prop("axis", false, choice(&["horizontal", "vertical"]))],
        ),
        component(
            "Button",
            vec![
                prop("child", true, Child),
                prop("action", true, Action),
                prop(
                    "variant",
                    false,
                    choice(&["default", "primary", "borderless"]),
                ),
            ],
        ),
        component(
            "TextField",
            vec![
                prop("label", true, Text),
                prop("value", false, Text),
                prop(
                    "variant",
                    false,
                    choice(&["longText", "number", "shortText", "obscured"]),
                ),
                prop("validationRegexp", false, Literal(Scalar::String)),
            ],
        ),
        component(
            "CheckBox",
            vec![prop("label", true, Text), prop("value", true, Bool)],
        ),
        component(
            "ChoicePicker",
            vec![
                prop("label", false, Text),
                prop(
                    "variant",
                    false,
                    choice(&["multipleSelection", "mutuallyExclusive"]),
                ),
                prop(
                    "options",
                    true,
                    Kind::Items(vec![
                        prop("label", true, Text),
                        prop("value", true, Literal(Scalar::String)),
                    ]),
                ),
                prop("value", true, Strings),
                prop("displayStyle", false, choice(&["checkbox", "chips"])),
                prop("filterable", false, Literal(Scalar::Boolean)),
            ],
        ),
        component(
            "Slider",
            vec![
                prop("label", false, Text),
                prop("min", false, Literal(Scalar::Number)),
                prop("max", true, Literal(Scalar::Number)),
                prop("value", true, Number),
            ],
        ),
        component(
            "DateTimeInput",
            vec![
                prop("value", true, Text),
                prop("enableDate", false, Literal(Scalar::Boolean)),
                prop("enableTime", false, Literal(Scalar::Boolean)),
                prop("min", false, Kind::Moment),
                prop("max", false, Kind::Moment),
                prop("label", false, Text),
            ],
        ),
    ];
    Catalog {
        id: BASIC_CATALOG_ID.to_owned(),
        components,
    }
}

#[cfg(test)]
#[path = "catalog_tests.rs"]
pub(crate) mod tests;
