//! What the benches share: the run input they start, the scripted answer they stream, and the
//! agent on the in-memory store they run it through.
#![allow(dead_code, clippy::unwrap_used)]

use agui_lambda::testing::agent::{Agent, AgentSettings, ToolRegistry};
use agui_lambda::testing::model::scripted::ScriptedTurn;
use agui_lambda::testing::model::{FinishReason, ModelDelta, ModelProvider, Usage};
use agui_lambda::testing::protocol::input::{ForwardedProps, RunInput};
use agui_lambda::testing::protocol::{Message, MessageId, RunId, UserContent};
use agui_lambda::testing::store::MemoryStore;
use std::sync::Arc;

pub(crate) const WORDS: [&str; 12] = [
    " the", " server", " streams", " every", " token", " to", " the", " browser", " as", " an",
    " event", ".",
];

/// A new thread's first run: one user message.
pub(crate) fn run_input() -> RunInput {
    RunInput {
        thread_id: None,
        run_id: RunId::generate(),
        parent_run_id: None,
        state: None,
        messages: vec![Message::User {
            id: MessageId::generate(),
            content: UserContent::Text("benchmark long answer".to_owned()),
            name: None,
        }],
        tools: vec![],
        context: vec![],
        forwarded_props: ForwardedProps::default(),
        protocol_version: None,
        resume: Vec::new(),
        new_message_limits: None,
        skipped_parts: Vec::new(),
        skips_unusable_parts: false,
    }
}

/// A `tokens`-token text answer, one delta per token, as the OpenAI provider would yield it.
pub(crate) fn text_turn(tokens: usize) -> ScriptedTurn {
    let mut deltas: Vec<ModelDelta> = (0..tokens)
        .map(|i| ModelDelta::Text(WORDS[i % WORDS.len()].to_owned()))
        .collect();
    deltas.push(ModelDelta::Finish(FinishReason::Stop));
    deltas.push(ModelDelta::Usage(Usage {
        input_tokens: 25,
        output_tokens: tokens as u64,
        ..Default::default()
    }));
    ScriptedTurn::Stream(deltas)
}

/// An agent on `model`, the built-in tools and a fresh in-memory store.
pub(crate) fn agent(model: Arc<dyn ModelProvider>) -> Agent {
    Agent::new(
        model,
        Arc::new(ToolRegistry::with_builtins().unwrap()),
        Arc::new(MemoryStore::new()),
        AgentSettings::default(),
    )
}
