//! A2UI surfaces in the run loop (`genui::a2ui` builds them): `building` as soon as a render
//! call starts and its progress while the arguments stream; the call checked and painted, or
//! refused, once they are complete; what its answer shows just before it; and a surface left
//! retrying when the run ends shown `failed`.

use super::tool_calls::ToolResult;
use super::{Emitter, PreparedRun};
use crate::agent::turn::TurnCall;
use crate::genui::a2ui::{ACTIVITY_TYPE, describe, history, render};
use crate::protocol::events::TextRole;
use crate::protocol::{Event, Message, MessageId, ToolCallId};
use std::collections::HashMap;

/// The render calls of one model turn as they stream.
pub(super) struct SurfaceWatch {
    on: bool,
    calls: HashMap<ToolCallId, Streaming>,
}

struct Streaming {
    activity_id: String,
    /// The arguments' length so far, in characters.
    chars: usize,
    /// The progress last shown, in tokens; `None` when the call retries a refused attempt
    /// (its `retrying` state stays on screen).
    shown: Option<u64>,
}

fn snapshot(message_id: String, content: serde_json::Value) -> Event {
    Event::ActivitySnapshot {
        message_id: MessageId::parse(message_id.clone(), usize::MAX)
            .unwrap_or_else(|_| MessageId::generate()),
        activity_type: ACTIVITY_TYPE,
        content,
    }
}

impl SurfaceWatch {
    pub(super) fn new(on: bool) -> Self {
        Self {
            on,
            calls: HashMap::new(),
        }
    }

    /// Adds the lifecycle to a turn's new events: `building` right after a render call's
    /// `TOOL_CALL_START`, its progress after the arguments that grew it by a step. `history` is
    /// the thread as it stands (the turn's earlier attempts included).
    pub(super) fn watch(&mut self, events: &mut Vec<Event>, history: &[Message]) {
        if !self.on || events.is_empty() {
            return;
        }
        let mut watched = Vec::with_capacity(events.len() + 1);
        for event in events.drain(..) {
            let shown = match &event {
                Event::ToolCallStart {
                    tool_call_id,
                    tool_call_name,
                    ..
                } if tool_call_name == describe::TOOL_NAME => {
                    let start = render::start(history, tool_call_id.as_str());
                    let content = start.content.clone();
                    self.calls.insert(
                        tool_call_id.clone(),
                        Streaming {
                            activity_id: start.activity_id.clone(),
                            chars: 0,
                            shown: content.as_ref().map(|_| 0),
                        },
                    );
                    content.map(|content| snapshot(start.activity_id, content))
                }
                Event::ToolCallArgs {
                    tool_call_id,
                    delta,
                } => self.calls.get_mut(tool_call_id).and_then(|call| {
                    call.chars += delta.chars().count();
                    let tokens = render::progress(call.shown?, call.chars)?;
                    call.shown = Some(tokens);
                    Some(snapshot(
                        call.activity_id.clone(),
                        crate::genui::a2ui::emit::building(Some(tokens)),
                    ))
                }),
                _ => None,
            };
            watched.push(event);
            watched.extend(shown);
        }
        *events = watched;
    }
}

/// Shows a user message the server added (a click on a surface) as the user's own.
pub(super) fn say(out: &Emitter<'_>, message: &Message) {
    let Message::User { id, content, .. } = message else {
        return;
    };
    out.emit(Event::TextMessageStart {
        message_id: id.clone(),
        role: TextRole::User,
    });
    out.emit(Event::TextMessageContent {
        message_id: id.clone(),
        delta: content.text(),
    });
    out.emit(Event::TextMessageEnd {
        message_id: id.clone(),
    });
}

impl PreparedRun {
    /// Whether `name` is the render tool this run offers.
    pub(super) fn renders(&self, name: &str) -> bool {
        self.request.a2ui.is_some() && name == describe::TOOL_NAME
    }

    /// A render call's answer: the surface checked against the offered catalog (on top of the
    /// one the same id has in the thread), with the record that paints it or says why not.
    pub(super) fn render_result(&self, call: &TurnCall) -> Option<ToolResult> {
        let offer = self.request.a2ui.as_ref()?;
        let outcome = render::complete(
            &call.arguments,
            call.id.as_str(),
            offer,
            &self.progress.history,
            self.agent.settings.a2ui.max_attempts,
        );
        Some(ToolResult {
            id: MessageId::generate(),
            tool_call_id: call.id.clone(),
            content: outcome.result,
            error: outcome.error,
            metadata: Some(outcome.metadata),
        })
    }

    /// What an answer shows just before it: the painted surface, `retrying` or `failed`.
    pub(super) fn shown_with(message: &Message) -> Option<Event> {
        let (activity_id, content) = history::shown_with(message)?;
        Some(snapshot(activity_id, content))
    }

    /// The surface left retrying at the run's end (its model stopped calling), shown `failed`.
    pub(super) fn abandoned_surface(&self) -> Option<Event> {
        self.request.a2ui.as_ref()?;
        let (activity_id, content) = render::abandoned(&self.progress.history)?;
        Some(snapshot(activity_id, content))
    }
}
