//! A fact in every turn of a conversation far longer than the model's window (8,000 tokens, the
//! default 4,096 of them reserved for the answer): the summariser keeps every fact it is shown,
//! so a fact reaches the last prompt, and a final recall names it, unless the server dropped it.
//! A summary that outgrows its allowance is condensed by the summariser, never dropped. Told the
//! window (`MODEL_CONTEXT_TOKENS`) or not: untold, the server learns it from the model's first
//! refusal (its words, or the refused size when it names none), for every later run.

use super::dynamo_local;
use super::helpers::*;
use super::long_conversation::{Client, compactions, tools};
use super::window_model::{Seen, WindowModel, Wording};
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

/// Whether the server is told the window, and where it keeps its threads.
struct Setup {
    told: bool,
    store: Arc<dyn ThreadStore>,
}

impl Setup {
    fn told() -> Self {
        Self {
            told: true,
            store: Arc::new(MemoryStore::default()),
        }
    }

    fn untold() -> Self {
        Self {
            told: false,
            ..Self::told()
        }
    }
}

struct Conversation {
    /// The facts found in the last prompt, by turn.
    kept: Vec<usize>,
    /// The facts the final recall named, by turn.
    recalled: Vec<usize>,
    seen: Vec<Seen>,
    compactions: Vec<Value>,
}

/// An app on `model` as `setup` says, the answer's reserve left at its default.
async fn app_on(model: &WindowModel, setup: Setup) -> TestApp {
    let mut vars = vec![("AGENT_MODEL", "window-8k")];
    if setup.told {
        vars.push(("MODEL_CONTEXT_TOKENS", "8000"));
    }
    spawn_app_on_model_url(&model.url, &vars, setup.store, tools(), None).await
}

/// `turns` turns on a new thread of `app`, each of which must finish, then a recall.
async fn converse_on(app: &TestApp, model: &WindowModel, turns: usize) -> Conversation {
    let before = model.seen().len();
    let mut client = Client::new(app);
    let mut compacted = Vec::new();
    for n in 1..=turns {
        let events = client.turn_with(n, &message_text(n)).await;
        let end = events.last().unwrap();
        assert_eq!(end["type"], "RUN_FINISHED", "turn {n}: {end}");
        compacted.extend(compactions(&events));
    }
    let seen = model.seen().split_off(before);
    let last = seen.iter().rev().find(|seen| !seen.is_summary()).unwrap();
    let text = last.text();
    assert!(
        text.contains(&format!("Turn {turns}")),
        "the last request is the last turn's"
    );
    let recall = client
        .turn_with(turns + 1, "[recall] Which facts did I tell you?")
        .await;
    assert_eq!(recall.last().unwrap()["type"], "RUN_FINISHED");
    let answer: String = recall
        .iter()
        .filter(|event| event["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|event| event["delta"].as_str().unwrap())
        .collect();
    let named = |text: &str| (1..=turns).filter(|&n| text.contains(&fact(n))).collect();
    Conversation {
        kept: named(&text),
        recalled: named(&answer),
        seen,
        compactions: compacted,
    }
}

/// `turns` turns with the window told or not, as `setup` says.
async fn converse(turns: usize, setup: Setup) -> Conversation {
    let model = WindowModel::start(WINDOW).await;
    let app = app_on(&model, setup).await;
    converse_on(&app, &model, turns).await
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

    /// The server learned the window from the first refusal: after it no request is refused,
    /// and no summary request is sent more than the window, ever.
    fn assert_refused_once(&self) {
        let refused: Vec<_> = self
            .seen
            .iter()
            .enumerate()
            .filter(|(_, seen)| seen.outcome != "ok")
            .map(|(index, seen)| (index, seen.outcome, seen.is_summary(), seen.tokens))
            .collect();
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert_eq!(refused[0].1, "overflow");
        assert!(
            !refused[0].2,
            "the summariser is never refused: {refused:?}"
        );
        let summaries = self.seen.iter().filter(|seen| seen.is_summary());
        let largest = summaries.map(|seen| seen.tokens).max().unwrap_or(0);
        assert!(largest <= WINDOW, "a summary request of {largest} tokens");
    }

    fn assert_every_fact_kept(&self, turns: usize) {
        assert_eq!(self.count("dropped"), 0, "{:?}", self.compactions);
        assert_eq!(
            self.kept.len(),
            turns,
            "in the last prompt: {:?}",
            self.kept
        );
        assert_eq!(self.recalled.len(), turns, "recalled: {:?}", self.recalled);
    }

    fn count(&self, strategy: &str) -> usize {
        self.compactions
            .iter()
            .filter(|content| content["strategy"] == strategy)
            .count()
    }

    /// What the model read, by kind: (summary calls, their prompt tokens, main calls, theirs).
    fn read(&self) -> (usize, u64, usize, u64) {
        let (summaries, main): (Vec<&Seen>, Vec<&Seen>) =
            self.seen.iter().partition(|seen| seen.is_summary());
        let tokens = |seen: &[&Seen]| seen.iter().map(|seen| seen.tokens).sum::<u64>();
        (
            summaries.len(),
            tokens(&summaries),
            main.len(),
            tokens(&main),
        )
    }

    fn report(&self, turns: usize, how: &str) {
        let (summaries, summary_tokens, main, main_tokens) = self.read();
        println!(
            "{turns} turns, {how}: {} of {turns} facts in the last prompt, {} recalled; {} \
             compactions ({} dropped); {summaries} summariser calls ({} to condense, {summary_tokens} \
             prompt tokens); {main} model calls ({main_tokens} prompt tokens); {} refused",
            self.kept.len(),
            self.recalled.len(),
            self.compactions.len(),
            self.count("dropped"),
            self.seen.iter().filter(|seen| seen.is_condense()).count(),
            self.seen.iter().filter(|seen| seen.outcome != "ok").count(),
        );
    }
}

#[tokio::test]
async fn three_hundred_turns_keep_all_300_facts_in_the_last_prompt() {
    let conversation = converse(300, Setup::told()).await;
    conversation.report(300, "window told");
    conversation.assert_every_request_fit();
    conversation.assert_every_fact_kept(300);
    assert!(
        conversation.seen.iter().any(Seen::is_condense),
        "the summary outgrew its allowance and was condensed"
    );
}

#[tokio::test]
async fn an_untold_window_is_learned_from_the_refusals_words_and_120_turns_keep_every_fact() {
    let model = WindowModel::start(WINDOW).await;
    let app = app_on(&model, Setup::untold()).await;
    let conversation = converse_on(&app, &model, 120).await;
    conversation.report(120, "window untold");
    conversation.assert_refused_once();
    conversation.assert_every_fact_kept(120);
    // Kept for the warm instance: another thread never meets the refusal.
    let other = converse_on(&app, &model, 40).await;
    assert!(
        other.seen.iter().all(|seen| seen.outcome == "ok"),
        "a second thread is never refused"
    );
    other.assert_every_fact_kept(40);
}

#[tokio::test]
async fn a_refusal_that_names_no_window_bounds_it_by_the_refused_size_and_no_fact_is_lost() {
    let model = WindowModel::start_with(WINDOW, Wording::Unnamed).await;
    let app = app_on(&model, Setup::untold()).await;
    let conversation = converse_on(&app, &model, 120).await;
    conversation.report(120, "window untold, refusals naming none");
    conversation.assert_every_fact_kept(120);
    // Each refusal teaches a smaller bound; a few are enough.
    let refused = conversation
        .seen
        .iter()
        .filter(|seen| seen.outcome != "ok")
        .count();
    assert!((1..=4).contains(&refused), "{refused} refusals");
}

#[tokio::test]
async fn three_hundred_turns_on_dynamodb_in_an_untold_window_keep_every_fact() {
    let model = WindowModel::start(WINDOW).await;
    let setup = Setup {
        told: false,
        store: dynamo_local::new_store().await,
    };
    let app = app_on(&model, setup).await;
    let conversation = converse_on(&app, &model, 300).await;
    conversation.report(300, "window untold, DynamoDB Local");
    conversation.assert_refused_once();
    conversation.assert_every_fact_kept(300);
}

#[tokio::test]
async fn a_thousand_turns_keep_what_the_window_can_hold_and_never_overflow() {
    let conversation = converse(1_000, Setup::told()).await;
    conversation.report(1_000, "window told");
    conversation.assert_every_request_fit();
    // The facts outgrow what the window affords (about 2,750 tokens even written tersely, past
    // the 2,733-token trigger): the summary keeps the oldest 400 at least, the turns shown the
    // newest, and what had to go is turns, never the summary.
    for n in (1..=400).chain([1_000]) {
        assert!(conversation.kept.contains(&n), "fact {n} is lost");
    }
}
