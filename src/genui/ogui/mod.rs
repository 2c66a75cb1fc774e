//! Open Generative UI (CopilotKit's `generateSandboxedUi` frontend tool): the activity a client
//! paints while the model is still writing the call. The call's streamed arguments are read
//! incrementally and become JSON Patch `add`s in the order their fields arrive, the HTML in
//! pieces as it is written, so the page can preview it before the call ends.

mod reader;

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation};
use reader::{Found, Reader};
use serde_json::{Value, json};

/// The frontend tool CopilotKit registers when Open Generative UI is on.
pub(crate) const TOOL_NAME: &str = "generateSandboxedUi";
/// `activityType` of the activity its renderer paints.
pub(crate) const ACTIVITY_TYPE: &str = "open-generative-ui";

/// The activity's message id for tool call `tool_call_id` (the renderer does not read it; the
/// client keys the activity by it).
pub(crate) fn message_id(tool_call_id: &str) -> String {
    format!("{tool_call_id}-activity")
}

/// The activity's first content, sent before the call's `TOOL_CALL_START`.
pub(crate) fn opening_content() -> Value {
    json!({"generating": true})
}

/// The fields of the tool's arguments the renderer reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    InitialHeight,
    PlaceholderMessages,
    Css,
    Html,
    JsFunctions,
    JsExpressions,
    /// Any other member: read past, never shown.
    Other,
}

impl Field {
    fn name(self) -> &'static str {
        match self {
            Self::InitialHeight => "initialHeight",
            Self::PlaceholderMessages => "placeholderMessages",
            Self::Css => "css",
            Self::Html => "html",
            Self::JsFunctions => "jsFunctions",
            Self::JsExpressions => "jsExpressions",
            Self::Other => "",
        }
    }

    /// A member whose value is a list of strings, each added as it completes.
    fn is_list(self) -> bool {
        matches!(self, Self::PlaceholderMessages | Self::JsExpressions)
    }

    fn named(key: &str) -> Self {
        match key {
            "initialHeight" => Self::InitialHeight,
            "placeholderMessages" => Self::PlaceholderMessages,
            "css" => Self::Css,
            "html" => Self::Html,
            "jsFunctions" => Self::JsFunctions,
            "jsExpressions" => Self::JsExpressions,
            _ => Self::Other,
        }
    }
}

/// One `generateSandboxedUi` call's argument stream as activity patches.
#[derive(Debug, Default)]
pub(crate) struct OguiStream {
    reader: Reader,
    /// Containers open around what is being read: 1 inside the arguments object.
    depth: usize,
    /// The member of the arguments object being read.
    field: Option<Field>,
    /// Inside the list of a list member (`placeholderMessages`, `jsExpressions`).
    in_list: bool,
    /// The text of a string read whole (`css`, `jsFunctions`, an array's item).
    whole: String,
    /// `/html` exists in the content (its first piece was sent).
    html_open: bool,
    found: Vec<Found>,
}

impl OguiStream {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Reads one piece of the call's arguments; the patch operations it completes, in order
    /// (none when the piece finished nothing the renderer reads). Every operation is an `add`
    /// with a value, never `null`.
    pub(crate) fn push(&mut self, piece: &str) -> Vec<PatchOperation> {
        let mut found = std::mem::take(&mut self.found);
        found.clear();
        self.reader.feed(piece, &mut found);
        let mut ops = Vec::new();
        for item in found.drain(..) {
            self.take(item, &mut ops);
        }
        self.found = found;
        ops
    }

    /// The call's end: generation is over.
    pub(crate) fn finish(&self) -> Vec<PatchOperation> {
        vec![add(&["generating"], Value::Bool(false))]
    }

    fn take(&mut self, item: Found, ops: &mut Vec<PatchOperation>) {
        match item {
            Found::BeginObject => self.depth += 1,
            Found::BeginArray => {
                self.depth += 1;
                self.in_list = self.depth == 2 && self.field.is_some_and(Field::is_list);
                if self.in_list
                    && let Some(field) = self.field
                {
                    ops.push(add(&[field.name()], json!([])));
                }
            }
            Found::EndObject => self.depth = self.depth.saturating_sub(1),
            Found::EndArray => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth == 1
                    && std::mem::take(&mut self.in_list)
                    && self.field == Some(Field::JsExpressions)
                {
                    ops.push(add(&["jsExpressionsComplete"], Value::Bool(true)));
                }
            }
            Found::Key(key) if self.depth == 1 => self.field = Some(Field::named(&key)),
            Found::BeginString if self.member_is(Field::Html) => self.html_open = false,
            Found::Text(text) if self.member_is(Field::Html) => {
                if !self.html_open {
                    self.html_open = true;
                    ops.push(add(&["html"], json!([])));
                }
                ops.push(add(&["html", "-"], Value::String(text)));
            }
            Found::EndString if self.member_is(Field::Html) => {
                ops.push(add(&["htmlComplete"], Value::Bool(true)));
            }
            Found::Text(text) if self.reads_whole() => self.whole.push_str(&text),
            Found::EndString if self.reads_whole() => self.end_whole(ops),
            Found::Scalar(Value::Number(height)) if self.member_is(Field::InitialHeight) => {
                ops.push(add(&["initialHeight"], Value::Number(height)));
            }
            _ => {}
        }
    }

    /// Whether what is being read is the value of member `field` itself.
    fn member_is(&self, field: Field) -> bool {
        self.depth == 1 && self.field == Some(field)
    }

    /// Whether the string being read is one read whole: `css` and `jsFunctions`, or an item of
    /// `placeholderMessages` or `jsExpressions`.
    fn reads_whole(&self) -> bool {
        self.member_is(Field::Css)
            || self.member_is(Field::JsFunctions)
            || (self.depth == 2 && self.in_list)
    }

    fn end_whole(&mut self, ops: &mut Vec<PatchOperation>) {
        let text = Value::String(std::mem::take(&mut self.whole));
        match self.field {
            Some(Field::Css) if self.depth == 1 => {
                ops.push(add(&["css"], text));
                ops.push(add(&["cssComplete"], Value::Bool(true)));
            }
            Some(Field::JsFunctions) if self.depth == 1 => {
                ops.push(add(&["jsFunctions"], text));
                ops.push(add(&["jsFunctionsComplete"], Value::Bool(true)));
            }
            Some(field) if self.depth == 2 => ops.push(add(&[field.name(), "-"], text)),
            _ => {}
        }
    }
}

fn add(path: &[&str], value: Value) -> PatchOperation {
    PatchOperation::Add(AddOperation {
        path: PointerBuf::from_tokens(path.iter().copied()),
        value,
    })
}

#[cfg(test)]
mod tests;
