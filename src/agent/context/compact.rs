//! Carrying out a decision: the summariser called on the oldest whole turns (in chunks when they
//! are more than it can read at once), its answer checked, and, when summarising fails for any
//! reason, the same turns dropped with a note instead, so a thread is never stuck.

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
    /// Summarising failed; the oldest turns were dropped, the previous summary kept.
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
}

/// How much the summariser may read and write.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SummaryBudget {
    /// Its request, in tokens (the window's budget).
    pub(crate) read: u64,
    /// Its answer, in tokens.
    pub(crate) write: u64,
}

/// Carries out `decision` on `view`. Only `Summarize` calls the model, and only when there is
/// one: without, the oldest turns are dropped.
pub(crate) async fn compact(
    model: Option<&dyn ModelProvider>,
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
            let summarized = match model {
                Some(model) => summarize(model, view.summary, older, budget, &mut usage).await,
                None => Err(SummaryFailed::NotAsked),
            };
            let covers = view.first_seq + cut as u64;
            Some(match summarized {
                Ok(summary) => Compacted {
                    covers,
                    summary: Some(summary),
                    cleared_before,
                    how: How::Summarized,
                    usage,
                },
                Err(error) => {
                    if !matches!(error, SummaryFailed::NotAsked) {
                        tracing::warn!(%error, dropped = cut, "summarising failed: dropping the oldest turns instead");
                    }
                    Compacted {
                        covers,
                        summary: Some(dropped_note(view.summary, cut)),
                        cleared_before,
                        how: How::Dropped,
                        usage,
                    }
                }
            })
        }
    }
}

/// The previous summary (if any) with a line that says what was dropped without one.
fn dropped_note(previous: Option<&str>, dropped: usize) -> String {
    let note = format!(
        "[{dropped} earlier messages of this conversation were removed without a summary to keep \
         it within the model's context window.]"
    );
    match previous {
        Some(previous) => format!("{previous}\n{note}"),
        None => note,
    }
}

/// The running summary extended with `older`, in as many calls as it takes for each request to
/// fit what the summariser may read.
async fn summarize(
    model: &dyn ModelProvider,
    previous: Option<&str>,
    older: &[Message],
    budget: SummaryBudget,
    usage: &mut Usage,
) -> Result<String, SummaryFailed> {
    let mut summary = previous.map(str::to_owned);
    let mut rest = older;
    while !rest.is_empty() {
        let chunk = chunk_len(summary.as_deref(), rest, budget);
        let room = budget.read.saturating_sub(budget.write);
        if summary::request_tokens(summary.as_deref(), &rest[..chunk]) > room {
            return Err(SummaryFailed::TooLarge);
        }
        let request = summary::request(summary.as_deref(), &rest[..chunk], write_cap(budget));
        let answer = ask(model, &request, usage).await?;
        summary = Some(summary::accept(&answer, budget.write)?);
        rest = &rest[chunk..];
    }
    summary.ok_or(SummaryFailed::Unfinished)
}

fn write_cap(budget: SummaryBudget) -> u32 {
    u32::try_from(budget.write).unwrap_or(u32::MAX)
}

/// How many of `rest`'s messages the next summariser request can take: as many as fit what it
/// may read beside the previous summary and its own answer, and at least one.
fn chunk_len(previous: Option<&str>, rest: &[Message], budget: SummaryBudget) -> usize {
    let room = budget.read.saturating_sub(budget.write);
    let mut take = rest.len();
    while take > 1 && summary::request_tokens(previous, &rest[..take]) > room {
        take = take.div_ceil(2);
    }
    take
}

/// The summariser's whole answer to `request`; its usage is added to `usage` even when it fails.
async fn ask(
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
