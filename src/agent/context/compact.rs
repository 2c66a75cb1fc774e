//! Carrying out a decision: the summariser called on the oldest whole turns (in chunks when they
//! are more than it can read at once, smaller again when it refuses one as too long), a summary
//! grown past its allowance condensed by the summariser, and, only when that fails too, the
//! turns it could not summarise dropped with a note, the summary kept, so a thread is never
//! stuck.

use super::estimate::{messages_tokens, text_tokens};
use super::learned::{LearnedWindows, Limit};
use super::plan::Decision;
use super::summary::{self, SummaryRejected};
use super::view::ThreadView;
use crate::model::{FinishReason, ModelDelta, ModelError, ModelProvider, Usage};
use crate::protocol::Message;
use futures_util::StreamExt;

/// What a compaction left the model's view with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Compacted {
    /// Messages before this sequence number are replaced by `summary`.
    pub(crate) covers: u64,
    pub(crate) summary: Option<String>,
    /// Tool results before this sequence number are shown as placeholders.
    pub(crate) cleared_before: u64,
    pub(crate) how: How,
    /// The summariser's tokens, counted in the run's usage.
    pub(crate) usage: Usage,
}

/// Which tier brought the thread under its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum How {
    Cleared,
    Summarized,
    /// Summarising (and condensing) failed: the turns not summarised were dropped, the summary
    /// kept.
    Dropped,
}

impl How {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            How::Cleared => "cleared-tool-results",
            How::Summarized => "summarized",
            How::Dropped => "dropped",
        }
    }
}

/// Why a summary could not be made; the thread is compacted by dropping instead.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SummaryFailed {
    #[error("the summariser failed: {0}")]
    Model(#[from] ModelError),
    #[error("{0}")]
    Rejected(#[from] SummaryRejected),
    #[error("the summariser stopped before it finished")]
    Unfinished,
    #[error("a message is too large for the summariser to read")]
    TooLarge,
    #[error("the context strategy is `window`: no summaries")]
    NotAsked,
    /// The summariser refused a request as longer than its window; the limit it leaves.
    #[error("the summariser refused a request as longer than its window")]
    Overflow(Limit),
}

/// The model that summarises, and where what its refusals teach is kept.
#[derive(Clone, Copy)]
pub(crate) struct Summariser<'a> {
    pub(crate) model: &'a dyn ModelProvider,
    pub(crate) windows: &'a LearnedWindows,
}

/// How much the summariser may read and write.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SummaryBudget {
    /// Its request and answer together, in tokens (the model's window).
    pub(crate) read: u64,
    /// What the summary may take, in tokens: its allowance.
    pub(crate) write: u64,
    /// What the summariser's refusals showed: no request is as large as one it refused.
    pub(crate) limit: Limit,
}

impl SummaryBudget {
    /// The answer's output limit: twice the allowance (an answer a little over is condensed;
    /// one cut off mid-sentence is lost), within half the window.
    fn answer_cap(self) -> u64 {
        (self.write * 2).min(self.read / 2).max(self.write)
    }

    /// What a request may take beside its answer: within the window, and less than any request
    /// the summariser refused.
    fn room(self) -> u64 {
        let cap = self.answer_cap();
        let room = self.read.saturating_sub(cap);
        self.limit
            .input_limit(cap)
            .map_or(room, |limit| room.min(limit))
    }

    /// The length a condensed summary is asked for: three quarters of the allowance, so the
    /// turns summarised next have room before the summary needs condensing again.
    fn condensed(self) -> u64 {
        self.write * 3 / 4
    }

    fn max_tokens(self) -> u32 {
        u32::try_from(self.answer_cap()).unwrap_or(u32::MAX)
    }
}

/// Carries out `decision` on `view`. Only `Summarize` calls the model, and only when there is
/// one: without, the oldest turns are dropped.
pub(crate) async fn compact(
    summariser: Option<Summariser<'_>>,
    decision: &Decision,
    view: &ThreadView<'_>,
    budget: SummaryBudget,
) -> Option<Compacted> {
    match *decision {
        Decision::Keep => None,
        Decision::Clear { cleared_before } => Some(Compacted {
            covers: view.first_seq,
            summary: view.summary.map(str::to_owned),
            cleared_before,
            how: How::Cleared,
            usage: Usage::default(),
        }),
        Decision::Summarize {
            cut,
            cleared_before,
        } => {
            let mut usage = Usage::default();
            let older = &view.messages[..cut];
            let summarized = match summariser {
                Some(summariser) => {
                    summarize(summariser, view.summary, older, budget, &mut usage).await
                }
                None => Summarized {
                    summary: view.summary.map(str::to_owned),
                    covered: 0,
                    failed: Some(SummaryFailed::NotAsked),
                },
            };
            let (summary, how) = match summarized.failed {
                None => (summarized.summary, How::Summarized),
                Some(error) => {
                    let dropped = cut - summarized.covered;
                    if !matches!(error, SummaryFailed::NotAsked) {
                        tracing::warn!(%error, dropped, summarized = summarized.covered, "summarising failed: dropping the turns it could not summarise, keeping the summary");
                    }
                    let note = dropped_note(summarized.summary.as_deref(), dropped);
                    (Some(note), How::Dropped)
                }
            };
            Some(Compacted {
                covers: view.first_seq + cut as u64,
                summary,
                cleared_before,
                how,
                usage,
            })
        }
    }
}

/// The end of the line that says how many messages were dropped without a summary.
const DROPPED_NOTE_END: &str = " earlier messages of this conversation were removed without a \
summary to keep it within the model's context window.]";

/// The summary (if any) with a line that says how many messages were dropped without one: the
/// line a previous drop left at its end is replaced by one with the sum, so notes never pile up.
fn dropped_note(summary: Option<&str>, dropped: usize) -> String {
    let summary = summary.unwrap_or_default();
    let (kept, last) = summary.rsplit_once('\n').unwrap_or(("", summary));
    let earlier = last
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(DROPPED_NOTE_END))
        .and_then(|count| count.parse::<usize>().ok());
    let (kept, dropped) = match earlier {
        Some(earlier) => (kept, earlier + dropped),
        None => (summary, dropped),
    };
    let note = format!("[{dropped}{DROPPED_NOTE_END}");
    if kept.is_empty() {
        note
    } else {
        format!("{kept}\n{note}")
    }
}

/// What summarising left: the summary of `older`'s first `covered` messages on top of the
/// previous one (condensed, if it had to be), and the error that stopped it before the rest.
struct Summarized {
    summary: Option<String>,
    covered: usize,
    failed: Option<SummaryFailed>,
}

/// The running summary extended with `older`, in as many calls as it takes for each request to
/// fit what the summariser may read; a summary over its allowance is condensed first. A request
/// the summariser refuses as too long is made again smaller, within what the refusal taught.
async fn summarize(
    summariser: Summariser<'_>,
    previous: Option<&str>,
    older: &[Message],
    mut budget: SummaryBudget,
    usage: &mut Usage,
) -> Summarized {
    let mut summarized = Summarized {
        summary: previous.map(str::to_owned),
        covered: 0,
        failed: None,
    };
    // A summary made for a larger allowance (the window shrank, the prompt grew) is condensed
    // before it is extended.
    if let Some(over) = previous.filter(|previous| text_tokens(previous) > budget.write) {
        let condensed = loop {
            match condense(summariser, over, budget, usage).await {
                // Each refusal leaves less room: the next attempt fits or is `TooLarge`.
                Err(SummaryFailed::Overflow(limit)) => budget.limit = limit,
                other => break other,
            }
        };
        match condensed {
            Ok(condensed) => summarized.summary = Some(condensed),
            Err(error) => {
                summarized.failed = Some(error);
                return summarized;
            }
        }
    }
    while summarized.covered < older.len() {
        let rest = &older[summarized.covered..];
        let chunk = chunk_len(summarized.summary.as_deref(), rest, budget);
        match extend(
            summariser,
            summarized.summary.as_deref(),
            &rest[..chunk],
            budget,
            usage,
        )
        .await
        {
            Ok(summary) => {
                summarized.summary = Some(summary);
                summarized.covered += chunk;
            }
            // The same messages again, in smaller chunks.
            Err(SummaryFailed::Overflow(limit)) => budget.limit = limit,
            Err(error) => {
                summarized.failed = Some(error);
                break;
            }
        }
    }
    summarized
}

/// `previous` extended with `messages`; an answer over the allowance is condensed.
async fn extend(
    summariser: Summariser<'_>,
    previous: Option<&str>,
    messages: &[Message],
    budget: SummaryBudget,
    usage: &mut Usage,
) -> Result<String, SummaryFailed> {
    if summary::request_tokens(previous, messages) > budget.room() {
        return Err(SummaryFailed::TooLarge);
    }
    let request = summary::request(previous, messages, budget.write, budget.max_tokens());
    let answer = ask(summariser, &request, usage).await?;
    match summary::accept(&answer, budget.write) {
        Err(SummaryRejected::TooLong { .. }) => {
            condense(summariser, answer.trim(), budget, usage).await
        }
        accepted => Ok(accepted?),
    }
}

/// `summary`, over its allowance, rewritten by the summariser within it.
async fn condense(
    summariser: Summariser<'_>,
    summary: &str,
    budget: SummaryBudget,
    usage: &mut Usage,
) -> Result<String, SummaryFailed> {
    if summary::condense_tokens(summary) > budget.room() {
        return Err(SummaryFailed::TooLarge);
    }
    let request = summary::condense_request(summary, budget.condensed(), budget.max_tokens());
    let answer = ask(summariser, &request, usage).await?;
    Ok(summary::accept(&answer, budget.write)?)
}

/// How many of `rest`'s messages the next summariser request can take: as many as fit what it
/// may read beside the previous summary and its own answer, and at least one.
fn chunk_len(previous: Option<&str>, rest: &[Message], budget: SummaryBudget) -> usize {
    let room = budget.room();
    let mut take = rest.len();
    while take > 1 && summary::request_tokens(previous, &rest[..take]) > room {
        take = take.div_ceil(2);
    }
    take
}

/// The summariser's whole answer to `request`; its usage is added to `usage` even when it fails.
/// A refusal as too long teaches the summariser's limit (`Overflow`).
async fn ask(
    summariser: Summariser<'_>,
    request: &crate::model::ModelRequest,
    usage: &mut Usage,
) -> Result<String, SummaryFailed> {
    match answer(summariser.model, request, usage).await {
        Err(SummaryFailed::Model(ModelError::ContextOverflow(refusal))) => {
            let input = request.system.as_deref().map_or(0, text_tokens)
                + messages_tokens(&request.messages);
            let reserve = request.sampling.max_tokens.map_or(0, u64::from);
            let limit =
                summariser
                    .windows
                    .learn(&summariser.model.identity(), &refusal, input, reserve);
            Err(SummaryFailed::Overflow(limit))
        }
        other => other,
    }
}

/// The model's whole answer to `request`, its usage added to `usage`.
async fn answer(
    model: &dyn ModelProvider,
    request: &crate::model::ModelRequest,
    usage: &mut Usage,
) -> Result<String, SummaryFailed> {
    let mut stream = model.stream(request).await?;
    let mut text = String::new();
    let mut finished = false;
    while let Some(delta) = stream.next().await {
        match delta? {
            ModelDelta::Text(piece) => text.push_str(&piece),
            ModelDelta::Usage(reported) => *usage += reported,
            // Cut at its output limit, the summary would end mid-sentence: not accepted.
            ModelDelta::Finish(FinishReason::Length) => return Err(SummaryFailed::Unfinished),
            ModelDelta::Finish(_) => finished = true,
            _ => {}
        }
    }
    if !finished {
        return Err(SummaryFailed::Unfinished);
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::scripted::{ScriptedModel, ScriptedTurn};
    use crate::protocol::UserContent;
    use serde_json::json;

    fn turns(count: usize) -> Vec<Message> {
        (0..count)
            .flat_map(|turn| {
                [
                    json!({"id": format!("u{turn}"), "role": "user", "content": format!("Fact {turn}: the code is {turn}.")}),
                    json!({"id": format!("a{turn}"), "role": "assistant", "content": "Noted."}),
                ]
            })
            .map(|value| serde_json::from_value(value).unwrap())
            .collect()
    }

    fn view<'a>(messages: &'a [Message], summary: Option<&'a str>) -> ThreadView<'a> {
        ThreadView {
            first_seq: 10,
            messages,
            summary,
            cleared_before: 0,
        }
    }

    const BUDGET: SummaryBudget = SummaryBudget {
        read: 8_000,
        write: 100,
        limit: Limit::NONE,
    };

    /// The summariser on `model`, knowing nothing of its window yet.
    fn summariser(model: &ScriptedModel) -> Option<Summariser<'_>> {
        Some(Summariser {
            model,
            windows: Box::leak(Box::default()),
        })
    }

    fn prompt_of(request: &crate::model::ModelRequest) -> String {
        match &request.messages[0] {
            Message::User {
                content: UserContent::Text(text),
                ..
            } => text.clone(),
            other => panic!("{other:?}"),
        }
    }

    async fn summarize_with(
        answers: &[&str],
        previous: Option<&str>,
        messages: &[Message],
    ) -> (Compacted, Vec<String>) {
        let model = ScriptedModel::new(answers.iter().map(|answer| ScriptedTurn::text(answer)));
        let decision = Decision::Summarize {
            cut: 4,
            cleared_before: 0,
        };
        let compacted = compact(
            summariser(&model),
            &decision,
            &view(messages, previous),
            BUDGET,
        )
        .await
        .unwrap();
        let prompts = model.requests().iter().map(prompt_of).collect();
        (compacted, prompts)
    }

    #[tokio::test]
    async fn a_summary_over_its_allowance_is_condensed_by_the_summariser_told_the_limit() {
        let messages = turns(3);
        let long = "The user said something worth keeping. ".repeat(60);
        let (compacted, prompts) =
            summarize_with(&[&long, "The codes are 0 and 1."], None, &messages).await;
        assert_eq!(compacted.how, How::Summarized);
        assert_eq!(compacted.summary.as_deref(), Some("The codes are 0 and 1."));
        assert_eq!(compacted.covers, 14);
        assert_eq!(prompts.len(), 2);
        assert!(
            prompts[0].ends_with("in at most 66 words (100 tokens)."),
            "{}",
            prompts[0]
        );
        assert!(prompts[1].starts_with(summary::CONDENSE_MARKER));
        assert!(prompts[1].contains("in at most 50 words (75 tokens)"));
        assert!(prompts[1].ends_with(long.trim()));
    }

    #[tokio::test]
    async fn when_condensing_fails_the_turns_are_dropped_and_the_summary_kept() {
        let messages = turns(3);
        let long = "The user said something worth keeping. ".repeat(60);
        let (compacted, _) =
            summarize_with(&[&long, &long], Some("The user is Sam."), &messages).await;
        assert_eq!(compacted.how, How::Dropped);
        assert_eq!(
            compacted.summary.as_deref(),
            Some(format!("The user is Sam.\n[4{DROPPED_NOTE_END}").as_str())
        );
    }

    #[tokio::test]
    async fn a_previous_summary_over_the_allowance_is_condensed_before_it_is_extended() {
        let messages = turns(3);
        let previous = "The user is Sam and likes long stories. ".repeat(30);
        let (compacted, prompts) = summarize_with(
            &["The user is Sam.", "The user is Sam; codes 0 and 1."],
            Some(&previous),
            &messages,
        )
        .await;
        assert!(prompts[0].starts_with(summary::CONDENSE_MARKER));
        assert!(prompts[1].contains("Previous summary:\nThe user is Sam.\n"));
        assert_eq!(
            compacted.summary.as_deref(),
            Some("The user is Sam; codes 0 and 1.")
        );
    }

    #[tokio::test]
    async fn turns_summarised_before_a_failure_stay_in_the_summary() {
        let messages = turns(40);
        let model = ScriptedModel::new([
            ScriptedTurn::text("Codes 0 to 19."),
            ScriptedTurn::Refuse(ModelError::ScriptExhausted),
        ]);
        let decision = Decision::Summarize {
            cut: 80,
            cleared_before: 0,
        };
        // Room for about half the turns in one request.
        let room = summary::request_tokens(None, &messages[..40]) + 50;
        let budget = SummaryBudget {
            read: room + 200,
            write: 100,
            limit: Limit::NONE,
        };
        let compacted = compact(
            summariser(&model),
            &decision,
            &view(&messages, None),
            budget,
        )
        .await
        .unwrap();
        assert_eq!(model.requests().len(), 2);
        assert_eq!(compacted.how, How::Dropped);
        assert_eq!(compacted.covers, 90);
        assert_eq!(
            compacted.summary.as_deref(),
            Some(format!("Codes 0 to 19.\n[40{DROPPED_NOTE_END}").as_str())
        );
    }

    #[tokio::test]
    async fn a_request_refused_as_too_long_is_summarised_again_in_smaller_parts_and_nothing_dropped()
     {
        let messages = turns(40);
        let too_long = crate::model::Refusal::new(
            Some("context_length_exceeded".to_owned()),
            "Your input exceeds the context window of this model.",
        );
        let model = ScriptedModel::new([
            ScriptedTurn::Refuse(ModelError::ContextOverflow(too_long)),
            ScriptedTurn::text("Codes 0 to 19."),
            ScriptedTurn::text("Codes 0 to 39."),
        ]);
        let decision = Decision::Summarize {
            cut: 80,
            cleared_before: 0,
        };
        // The window is not known: the first request takes every turn, and is refused.
        let windows = LearnedWindows::default();
        let budget = SummaryBudget {
            read: 32_000,
            write: 100,
            limit: Limit::NONE,
        };
        let summariser = Summariser {
            model: &model,
            windows: &windows,
        };
        let compacted = compact(Some(summariser), &decision, &view(&messages, None), budget)
            .await
            .unwrap();
        assert_eq!(compacted.how, How::Summarized);
        assert_eq!(compacted.covers, 90, "every turn summarised");
        assert_eq!(compacted.summary.as_deref(), Some("Codes 0 to 39."));
        let sizes: Vec<u64> = model
            .requests()
            .iter()
            .map(|request| text_tokens(&prompt_of(request)))
            .collect();
        assert_eq!(sizes.len(), 3);
        assert!(
            sizes[1] < sizes[0] && sizes[2] < sizes[0],
            "each part is smaller than what was refused: {sizes:?}"
        );
        // The model's limit is kept for the next compaction.
        let limit = windows.limit(&model.identity());
        assert!(
            limit.input_limit(200).unwrap() < sizes[0] + 500,
            "{limit:?}"
        );
    }

    #[test]
    fn notes_of_dropped_turns_add_up_instead_of_piling_up() {
        let once = dropped_note(Some("The user is Sam."), 6);
        assert_eq!(once, format!("The user is Sam.\n[6{DROPPED_NOTE_END}"));
        let twice = dropped_note(Some(&once), 8);
        assert_eq!(twice, format!("The user is Sam.\n[14{DROPPED_NOTE_END}"));
        assert_eq!(dropped_note(None, 3), format!("[3{DROPPED_NOTE_END}"));
        assert_eq!(
            dropped_note(Some(&dropped_note(None, 3)), 2),
            format!("[5{DROPPED_NOTE_END}")
        );
    }
}
