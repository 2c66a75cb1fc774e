//! What a run's start settles about A2UI: whether the client can paint surfaces (and so is
//! offered the render tool), the context the model is given without the client's own A2UI
//! entries, and a click on a surface made the user message the model answers.

use crate::agent::Agent;
use crate::genui::a2ui::{Offer, action, client, describe};
use crate::protocol::{ContextEntry, Message, MessageId, RunInput, UserContent};

impl Agent {
    /// The render tool and catalog offered to this input's client; `None` when it cannot paint
    /// surfaces, or declares a frontend tool of that name itself.
    pub(super) fn a2ui_offer(&self, input: &RunInput) -> Option<Offer> {
        if input
            .tools
            .iter()
            .any(|tool| tool.name == describe::TOOL_NAME)
        {
            return None;
        }
        client::offer(
            self.settings.a2ui.mode,
            &input.context,
            input.forwarded_props.a2ui_catalog_available,
        )
    }
}

/// The client's context without its A2UI entries (CopilotKit's catalog schema and guidelines,
/// about 56 KB a run): the render tool's description tells the model what it needs.
pub(super) fn model_context(context: &[ContextEntry]) -> Vec<ContextEntry> {
    client::model_context(context)
}

/// The input with its click on a surface (`forwardedProps.a2uiAction`) added as the newest user
/// message, and that message, to show the client.
pub(super) fn with_action(mut input: RunInput) -> (RunInput, Option<Message>) {
    let Some(clicked) = input.forwarded_props.a2ui_action.take() else {
        return (input, None);
    };
    let said = Message::User {
        id: MessageId::generate(),
        content: UserContent::Text(action::message_text(&clicked)),
        name: None,
    };
    input.messages.push(said.clone());
    (input, Some(said))
}
