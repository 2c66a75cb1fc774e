//! Where each part of the AG-UI input built from an `AgentRequest` came from, so that a refusal
//! of the AG-UI input names the `AgentRequest` field at fault.

use crate::protocol::input::InputError;

/// Where an AG-UI message of the translated request came from.
#[derive(Default)]
pub(super) struct Origin {
    pub(super) input: usize,
    /// For a tool message: the content part it came from.
    pub(super) part: Option<usize>,
    /// For an assistant message: the (input, part) of each tool call.
    pub(super) calls: Vec<(usize, usize)>,
}

impl Origin {
    /// A message made from the whole of `input[input]`.
    pub(super) fn of_input(input: usize) -> Self {
        Origin {
            input,
            ..Origin::default()
        }
    }
}

#[derive(Default)]
pub(super) struct Origins {
    pub(super) messages: Vec<Origin>,
    /// Whether `tools[i]` came in `{type, function: {…}}` form.
    pub(super) nested_tools: Vec<bool>,
}

impl Origins {
    /// Renames the AG-UI field of an error to the `AgentRequest` field it came from.
    pub(super) fn translate(&self, err: InputError) -> InputError {
        let InputError::Invalid { field, message } = err else {
            return err;
        };
        InputError::invalid(self.field(&field), message)
    }

    fn field(&self, field: &str) -> String {
        match field {
            "threadId" => return "session_id".to_owned(),
            "runId" => return "id".to_owned(),
            "messages" => return "input".to_owned(),
            _ => {}
        }
        // The request's own sampling fields travel as `forwardedProps`.
        if let Some(own) = field.strip_prefix("forwardedProps.") {
            return own.to_owned();
        }
        if let Some((index, rest)) = indexed(field, "messages[") {
            return self.message_field(index, rest);
        }
        if let Some((index, rest)) = indexed(field, "tools[")
            && self.nested_tools.get(index).copied().unwrap_or(false)
            && !rest.is_empty()
        {
            return format!("tools[{index}].function{rest}");
        }
        field.to_owned()
    }

    /// The field `rest` of AG-UI `messages[index]`, in the input item it came from.
    fn message_field(&self, index: usize, rest: &str) -> String {
        let Some(origin) = self.messages.get(index) else {
            return "input".to_owned();
        };
        let base = format!("input[{}]", origin.input);
        if let (".toolCallId", Some(part)) = (rest, origin.part) {
            return format!("{base}.content[{part}].data.call_id");
        }
        if let Some((call, call_rest)) = indexed(rest, ".toolCalls[")
            && let Some((input, part)) = origin.calls.get(call)
        {
            let suffix = match call_rest {
                ".id" => ".call_id",
                ".function.name" => ".name",
                _ => "",
            };
            return format!("input[{input}].content[{part}].data{suffix}");
        }
        // An image part's AG-UI source is the request's `image_url`.
        match rest.find(".source") {
            Some(at) if &rest[at..] == ".source.value" => {
                format!("{base}{}.image_url", &rest[..at])
            }
            Some(at) => format!("{base}{}", &rest[..at]),
            None => format!("{base}{rest}"),
        }
    }
}

/// Splits `prefix<N>]rest` into `(N, rest)`.
fn indexed<'a>(field: &'a str, prefix: &str) -> Option<(usize, &'a str)> {
    let after = field.strip_prefix(prefix)?;
    let close = after.find(']')?;
    let index = after[..close].parse().ok()?;
    Some((index, &after[close + 1..]))
}
