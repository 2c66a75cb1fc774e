//! One render call from its first byte to its answer, as pure steps the run loop takes: the
//! activity it paints into and the `building` state when it starts, progress while its
//! arguments stream, and, once they are complete, the surface painted or the attempt refused
//! (`retrying`, or `failed` when it was the last). Every step reads the thread as it stands, so
//! a run taken over by another invocation continues where the records say it was.

use super::client::Offer;
use super::emit::{self, Attempt};
use super::history::{self, Record, Status};
use super::surface::{RenderCall, Surface};
use super::validate::{self, ValidationError};
use crate::protocol::Message;
use serde_json::Value;

/// The attempts a surface gets by default (the first and two retries), as the toolkit.
pub(crate) const DEFAULT_MAX_ATTEMPTS: u32 = 3;
/// `building` is sent again each time the arguments grew by this many tokens.
const PROGRESS_STEP_TOKENS: u64 = 20;

/// The activity a new call paints into, and what to show there now.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Start {
    pub(crate) activity_id: String,
    /// `building`, or `None` when the call retries a refused attempt (whose `retrying` state
    /// stays on screen).
    pub(crate) content: Option<Value>,
}

/// The activity id of a surface whose first attempt is `tool_call_id` (the middleware's form).
pub(crate) fn activity_id(tool_call_id: &str) -> String {
    format!("a2ui-surface-{tool_call_id}")
}

/// A call starts: `messages` is the thread as it stands (the current turn's earlier attempts
/// included).
pub(crate) fn start(messages: &[Message], tool_call_id: &str) -> Start {
    match history::open_chain(messages) {
        Some(chain) => Start {
            activity_id: chain.activity_id,
            content: None,
        },
        None => Start {
            activity_id: activity_id(tool_call_id),
            content: Some(emit::building(None)),
        },
    }
}

/// The progress to show after the arguments reached `chars` characters, when it grew by a step
/// since `shown` tokens were last shown.
pub(crate) fn progress(shown: u64, chars: usize) -> Option<u64> {
    let tokens = u64::try_from(chars.div_ceil(4)).unwrap_or(u64::MAX);
    (tokens >= shown + PROGRESS_STEP_TOKENS).then_some(tokens)
}

/// A call's end: what to paint, what the model is answered, and the record the answer keeps.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Outcome {
    pub(crate) activity_id: String,
    /// The activity content: the painted operations, `retrying` or `failed`.
    pub(crate) content: Value,
    /// The tool result the model reads.
    pub(crate) result: String,
    /// Set when the attempt was refused: the tool result is an error.
    pub(crate) error: Option<String>,
    /// The answer's metadata (the record).
    pub(crate) metadata: Value,
    pub(crate) status: Status,
}

/// A call's arguments are complete: validate them against the offer's catalog (on top of the
/// surface the same id already has), then paint, or refuse.
pub(crate) fn complete(
    arguments: &str,
    tool_call_id: &str,
    offer: &Offer,
    messages: &[Message],
    max_attempts: u32,
) -> Outcome {
    let chain = history::open_chain(messages);
    let attempt = chain.as_ref().map_or(1, history::OpenChain::next_attempt);
    let activity_id = chain.as_ref().map_or_else(
        || activity_id(tool_call_id),
        |chain| chain.activity_id.clone(),
    );
    let earlier = chain.map(|chain| chain.attempts).unwrap_or_default();
    let refuse = |errors: Vec<ValidationError>| {
        refused(
            activity_id.clone(),
            attempt,
            max_attempts,
            earlier.clone(),
            errors,
            offer,
        )
    };
    let call = match RenderCall::parse(arguments) {
        Ok(call) => call,
        Err(errors) => return refuse(errors),
    };
    let prior = history::latest_surface(messages, &call.surface_id);
    let components = Surface::merged(prior.as_ref(), &call);
    let data = Surface::merged_data(prior.as_ref(), &call);
    let checked = validate::check(&components, &Value::Object(data.clone()), &offer.catalog);
    if !checked.errors.is_empty() {
        return refuse(checked.errors);
    }
    let surface = Surface {
        surface_id: call.surface_id.clone(),
        components: Surface::reachable(checked.components, &offer.catalog),
        data,
    };
    let content = emit::painted(emit::operations(&surface, &offer.renderer));
    let record = Record {
        activity_id: activity_id.clone(),
        attempt,
        max_attempts,
        status: Status::Rendered,
        errors: Vec::new(),
        surface: Some(surface),
        renderer: offer.renderer.clone(),
    };
    Outcome {
        activity_id,
        metadata: record.metadata(&content),
        content,
        result: emit::rendered_result(&call.surface_id, &checked.ignored),
        error: None,
        status: Status::Rendered,
    }
}

/// An attempt refused: `retrying` with attempts left, else `failed` and the toolkit's
/// recovery-exhausted answer.
fn refused(
    activity_id: String,
    attempt: u32,
    max_attempts: u32,
    mut attempts: Vec<Attempt>,
    errors: Vec<ValidationError>,
    offer: &Offer,
) -> Outcome {
    let last = attempt >= max_attempts;
    let status = if last {
        Status::Failed
    } else {
        Status::Invalid
    };
    attempts.push(Attempt {
        attempt,
        ok: false,
        errors: errors.clone(),
    });
    let (content, result, error) = if last {
        (
            emit::failed(&attempts),
            emit::exhausted_result(&attempts),
            emit::failure_message(attempts.len()),
        )
    } else {
        (
            emit::retrying(attempt + 1, max_attempts, &errors),
            emit::invalid_result(attempt, max_attempts, &errors),
            format!("attempt {attempt} of {max_attempts} is invalid"),
        )
    };
    let record = Record {
        activity_id: activity_id.clone(),
        attempt,
        max_attempts,
        status,
        errors,
        surface: None,
        renderer: offer.renderer.clone(),
    };
    Outcome {
        activity_id,
        metadata: record.metadata(&content),
        content,
        result,
        error: Some(error),
        status,
    }
}

/// At a run's end, the surface still retrying (its model stopped calling): shown `failed` so
/// no client keeps a skeleton spinning.
pub(crate) fn abandoned(messages: &[Message]) -> Option<(String, Value)> {
    let chain = history::open_chain(messages)?;
    Some((chain.activity_id, emit::failed(&chain.attempts)))
}

#[cfg(test)]
#[path = "render_tests.rs"]
pub(crate) mod tests;
