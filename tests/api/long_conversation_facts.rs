//! A fact in every turn of a conversation far longer than the model's window (8,000 tokens, the
//! default 4,096 of them reserved for the answer): the summariser keeps every fact it is shown,
//! so a fact reaches the last prompt unless the server dropped it. A summary that outgrows its
//! allowance is condensed by the summariser, never dropped.

use super::helpers::*;
use super::long_conversation::{Client, compactions, tools};
use super::window_model::{Seen, WindowModel};
use agui_lambda::testing::store::{MemoryStore, ThreadStore};
use serde_json::Value;
use std::sync::Arc;

const WINDOW: u64 = 8_000;

/// The fact turn `n` states: a key and a four-digit value.
fn fact(n: usize) -> String {
    format!("k{n}={:04}", (n * 7_919) % 10_000)
}

/// The `n`th user message: about 500 characters with its fact on a line of its own; every
/// seventh asks for the report.
fn message_text(n: usize) -> String {
    let filler = "The user keeps talking about the project plan and its details. ".repeat(7);
    let opening = if n.is_multiple_of(7) {
        format!("[tool] Turn {n}: fetch the weather report.")
    } else {
        format!("Turn {n}.")
    };
    format!("{opening}\n[fact] {}\n{filler}", fact(n))
}

struct Conversation {
    /// The facts found in the last prompt, by turn.
    kept: Vec<usize>,
    seen: Vec<Seen>,
    compactions: Vec<Value>,
}

/// `turns` turns with the model's window told and the answer's reserve left at its default.
async fn converse(turns: usize) -> Conversation {
    let model = WindowModel::start(WINDOW).await;
    let store: Arc<dyn ThreadStore> = Arc::new(MemoryStore::default());
    let app = spawn_app_on_model_url(
        &model.url,
        &[
            ("AGENT_MODEL", "window-8k"),
            ("MODEL_CONTEXT_TOKENS", "8000"),
        ],
        store,
        tools(),
        None,
    )
    .await;
    let mut client = Client::new(&app);
    let mut compacted = Vec::new();
    for n in 1..=turns {
        let events = client.turn_with(n, &message_text(n)).await;
        let end = events.last().unwrap();
        assert_eq!(end["type"], "RUN_FINISHED", "turn {n}: {end}");
        compacted.extend(compactions(&events));
    }
    let seen = model.seen();
    let last = seen.iter().rev().find(|seen| !seen.is_summary()).unwrap();
    let text = last.text();
    assert!(
        text.contains(&format!("Turn {turns}")),
        "the last request is the last turn's"
    );
    Conversation {
        kept: (1..=turns).filter(|&n| text.contains(&fact(n))).collect(),
        seen,
        compactions: compacted,
    }
}

impl Conversation {
    fn assert_every_request_fit(&self) {
        let refused: Vec<_> = self
            .seen
            .iter()
            .filter(|seen| seen.outcome != "ok")
            .map(|seen| (seen.outcome, seen.tokens))
            .collect();
        assert!(
            refused.is_empty(),
            "no request over the window: {refused:?}"
        );
        let largest = self.seen.iter().map(|seen| seen.tokens).max().unwrap();
        assert!(largest <= WINDOW, "{largest}");
    }

    fn count(&self, strategy: &str) -> usize {
        self.compactions
            .iter()
            .filter(|content| content["strategy"] == strategy)
            .count()
    }

    fn report(&self, turns: usize) {
        println!(
            "{turns} turns: {} of {turns} facts in the last prompt; {} compactions ({} dropped), \
             {} summariser calls ({} to condense)",
            self.kept.len(),
            self.compactions.len(),
            self.count("dropped"),
            self.seen.iter().filter(|seen| seen.is_summary()).count(),
            self.seen.iter().filter(|seen| seen.is_condense()).count(),
        );
    }
}

#[tokio::test]
async fn three_hundred_turns_keep_all_300_facts_in_the_last_prompt() {
    let conversation = converse(300).await;
    conversation.report(300);
    conversation.assert_every_request_fit();
    assert_eq!(conversation.kept.len(), 300, "{:?}", conversation.kept);
    assert_eq!(conversation.count("dropped"), 0);
    assert!(
        conversation.seen.iter().any(Seen::is_condense),
        "the summary outgrew its allowance and was condensed"
    );
}

#[tokio::test]
async fn a_thousand_turns_keep_what_the_window_can_hold_and_never_overflow() {
    let conversation = converse(1_000).await;
    conversation.report(1_000);
    conversation.assert_every_request_fit();
    // The facts outgrow what the window affords (about 2,750 tokens even written tersely, past
    // the 2,733-token trigger): the summary keeps the oldest 400 at least, the turns shown the
    // newest, and what had to go is turns, never the summary.
    for n in (1..=400).chain([1_000]) {
        assert!(conversation.kept.contains(&n), "fact {n} is lost");
    }
}
