//! Fitting the thread to the model's window before each model call: the size estimated from
//! the provider's last count, the compaction the plan decides (streamed as an activity, kept
//! as the thread's checkpoint), and the request built from the model's view of the thread.

use super::outcome::RunFailure;
use super::{Emitter, PreparedRun};
use crate::agent::context::compact::{Summariser, SummaryBudget, compact};
use crate::agent::context::estimate::{message_tokens, messages_tokens, text_tokens};
use crate::agent::context::plan::{self, Decision, Fixed};
use crate::agent::context::view::{PartLimit, ThreadView};
use crate::agent::context::{Compacted, ContextStrategy, ContextWindow};
use crate::agent::thread::{answers_follow_calls, model_view};
use crate::model::{ModelRequest, Refusal};
use crate::protocol::{Event, Message, MessageId, UserContent, UserPart};
use crate::store::{Checkpoint, ContextMark, ContextUpdate};
use serde_json::json;
use tracing::Instrument;

/// The thread's view for the model as this run keeps it.
#[derive(Debug, Default)]
pub(crate) struct ContextState {
    /// The sequence number of the run's `history[0]`: the checkpoint's `covers`, or 0.
    pub(in crate::agent) first_seq: u64,
    /// The thread's latest checkpoint, as this run leaves it.
    pub(in crate::agent) checkpoint: Option<Checkpoint>,
    /// The provider's count of the thread's last model call.
    pub(in crate::agent) mark: Option<ContextMark>,
    /// This run made `checkpoint`: it is stored with the run's output.
    made_checkpoint: bool,
    /// How many times this run compacted the thread.
    pub(in crate::agent) compactions: u32,
    /// The thread's message count the model call in flight saw.
    seen: u64,
}

impl ContextState {
    pub(in crate::agent) fn new(
        first_seq: u64,
        checkpoint: Option<Checkpoint>,
        mark: Option<ContextMark>,
    ) -> Self {
        Self {
            first_seq,
            checkpoint,
            mark,
            ..Self::default()
        }
    }

    /// What the run stores for the next run: its checkpoint, if it made one, and the last count.
    pub(super) fn update(&self) -> Option<ContextUpdate> {
        let checkpoint = self.checkpoint.clone().filter(|_| self.made_checkpoint);
        (checkpoint.is_some() || self.mark.is_some()).then_some(ContextUpdate {
            checkpoint,
            mark: self.mark,
        })
    }

    fn summary(&self) -> Option<&str> {
        self.checkpoint.as_ref().and_then(|c| c.summary.as_deref())
    }

    fn cleared_before(&self) -> u64 {
        self.checkpoint.as_ref().map_or(0, |c| c.cleared_before)
    }
}

/// Why the next request must be smaller than the settings say: the provider refused the last
/// one as too long.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pressure {
    /// The most the next request's input may take, in tokens.
    input_tokens: u64,
}

impl Pressure {
    /// From the provider's refusal of a request estimated at `estimated` input tokens: three
    /// quarters of that, and no more than the window the refusal names (less the answer's
    /// `reserve`).
    fn after(refusal: &Refusal, estimated: u64, reserve: u32) -> Self {
        let named = refusal.window().map_or(u64::MAX, |window| {
            u64::from(window).saturating_sub(u64::from(reserve))
        });
        Self {
            input_tokens: (estimated * 3 / 4).min(named),
        }
    }
}

/// The model's next request and the estimate it was built with.
pub(super) struct Fitted {
    pub(super) request: ModelRequest,
    pub(super) estimated: u64,
}

impl PreparedRun {
    /// The request for the next model call, the thread compacted first when it has outgrown
    /// the window (or the window `pressure` says). A newest user message larger than the
    /// window on its own is `ContextTooLong`: no compaction can help.
    pub(super) async fn fitted_request(
        &mut self,
        out: &Emitter<'_>,
        pressure: Option<Pressure>,
    ) -> Result<Fitted, RunFailure> {
        let mut request = ModelRequest {
            system: self.request.system.clone(),
            tools: self
                .agent
                .tool_specs(&self.request.client_tools, self.request.a2ui.as_ref()),
            sampling: self.request.sampling.clone(),
            cache_key: Some(self.lease.thread_id.to_string()),
            ..ModelRequest::default()
        };
        let settings = self.agent.settings.context;
        if settings.strategy == ContextStrategy::Off {
            request.messages = model_view(&answers_follow_calls(&self.progress.history));
            with_memories(&mut request.messages, self.progress.memory_block.as_deref());
            self.progress.context.seen = self.message_count();
            return Ok(Fitted {
                estimated: 0,
                request,
            });
        }
        let window = self.window(pressure);
        // The memory block rides with the newest user message but is as fixed as the prompt.
        let prompt_tokens = request.system.as_deref().map_or(0, text_tokens)
            + tools_tokens(&request)
            + self.progress.memory_block.as_deref().map_or(0, text_tokens);
        let fixed = Fixed {
            prompt_tokens,
            summary_tokens: 0,
            summary_allowance: plan::summary_allowance(&window, prompt_tokens),
        };
        self.check_newest_fits(&window, fixed)?;
        self.compact_if_needed(out, &window, fixed, pressure.is_some())
            .await;
        let context = &self.progress.context;
        let view = self.view();
        let limit = plan::part_limit(&window);
        let shown = newest_user_unclamped(view.messages(limit), &self.progress.history);
        let fixed = Fixed {
            summary_tokens: context.summary().map_or(0, text_tokens),
            ..fixed
        };
        let estimated = fixed.prompt_tokens + fixed.summary_tokens + messages_tokens(&shown);
        request.summary = context.summary().map(summary_block);
        request.messages = model_view(&answers_follow_calls(&shown));
        with_memories(&mut request.messages, self.progress.memory_block.as_deref());
        self.progress.context.seen = self.message_count();
        Ok(Fitted { request, estimated })
    }

    /// The provider refused a request estimated at `estimated` input tokens as too long: its
    /// window is learned for every later run, and this call is retried under the pressure it
    /// leaves.
    pub(super) fn refused(&self, refusal: &Refusal, estimated: u64) -> Pressure {
        let reserve = self.reserve();
        self.agent.windows.learn(
            &self.agent.model.identity(),
            refusal,
            estimated,
            u64::from(reserve),
        );
        Pressure::after(refusal, estimated, reserve)
    }

    /// After a model call that reported `input_tokens`: the count the next estimate starts from.
    pub(super) fn note_input_tokens(&mut self, input_tokens: u64) {
        let context = &mut self.progress.context;
        if input_tokens == 0 || self.agent.settings.context.strategy == ContextStrategy::Off {
            return;
        }
        context.mark = Some(ContextMark {
            input_tokens,
            seen: context.seen,
            covers: context.first_seq,
            cleared_before: context.cleared_before(),
        });
    }

    /// The model's window with the answer's reserve, within what its refusals showed, or the
    /// smaller one `pressure` leaves.
    fn window(&self, pressure: Option<Pressure>) -> ContextWindow {
        let reserve = self.reserve();
        let settings = self.agent.settings.context;
        let model = self.agent.model.identity();
        let mut window = settings
            .window(&model.model, reserve)
            .within(&self.agent.windows.limit(&model));
        if let Some(pressure) = pressure {
            // The input alone: what the provider refused had the reserve beside it already.
            let tokens = u32::try_from(pressure.input_tokens).unwrap_or(u32::MAX);
            window.tokens = window.tokens.saturating_sub(reserve).min(tokens);
            window.reserve = 0;
        }
        window
    }

    /// The tokens kept for the answer: what the request may generate.
    pub(super) fn reserve(&self) -> u32 {
        self.request
            .sampling
            .max_tokens
            .or(self.agent.settings.max_output_tokens)
            .unwrap_or(crate::agent::context::DEFAULT_RESERVE_TOKENS)
    }

    /// `ContextTooLong` when the prompt and the newest user message alone do not fit.
    fn check_newest_fits(&self, window: &ContextWindow, fixed: Fixed) -> Result<(), RunFailure> {
        let Some(newest) = newest_user(&self.progress.history) else {
            return Ok(());
        };
        let tokens = fixed.prompt_tokens + message_tokens(&self.progress.history[newest]);
        if tokens > window.budget() {
            return Err(RunFailure::ContextTooLong {
                tokens,
                window: window.budget(),
            });
        }
        Ok(())
    }

    /// The plan's decision carried out, when the thread has outgrown the window (or the
    /// provider said it had): streamed as an activity and kept as the run's checkpoint.
    async fn compact_if_needed(
        &mut self,
        out: &Emitter<'_>,
        window: &ContextWindow,
        fixed: Fixed,
        refused: bool,
    ) {
        let view = self.view();
        let limit = plan::part_limit(window);
        let fixed = Fixed {
            summary_tokens: view.summary.map_or(0, text_tokens),
            ..fixed
        };
        let estimated = if refused {
            // The provider counted more than the window: whatever the estimate says.
            u64::MAX
        } else {
            self.estimate(&view, fixed, limit)
        };
        let target = window.target();
        let decision = plan::decide(window, &view, fixed, estimated, target);
        if decision == Decision::Keep {
            return;
        }
        let before = plan::estimate(&view, fixed, limit).min(estimated);
        let summarizer = match self.agent.settings.context.strategy {
            ContextStrategy::Summarize => Some(self.summarizer()),
            ContextStrategy::Window | ContextStrategy::Off => None,
        };
        let budget = self.summary_budget(summarizer.as_deref(), fixed.summary_allowance);
        let summariser = summarizer.as_deref().map(|model| Summariser {
            model,
            windows: &self.agent.windows,
        });
        let span = crate::agent::spans::compaction(&decision);
        let compacted = compact(summariser, &decision, &view, budget)
            .instrument(span)
            .await;
        let Some(compacted) = compacted else {
            return;
        };
        // The summariser's tokens are its model's, which may be another provider's.
        let usage = compacted.usage;
        self.apply(compacted, before, out, fixed, limit);
        if let Some(model) = summarizer {
            self.progress.summary.add_usage(&model.identity(), usage);
        }
    }

    /// What the summariser may read and write: its request and answer are bounded by its
    /// model's window (within what that model's refusals showed), not by what the compacted
    /// request may take (nor by this call's pressure); its summary by `allowance`.
    fn summary_budget(
        &self,
        summarizer: Option<&dyn crate::model::ModelProvider>,
        allowance: u64,
    ) -> SummaryBudget {
        let model =
            summarizer.map_or_else(|| self.agent.model.identity(), |model| model.identity());
        let limit = self.agent.windows.limit(&model);
        let window = self
            .agent
            .settings
            .context
            .window(&model.model, 0)
            .within(&limit);
        SummaryBudget {
            read: u64::from(window.tokens),
            write: allowance,
            limit,
        }
    }

    /// The compaction kept: the covered messages leave the model's view, the checkpoint
    /// replaces the thread's, and the client is told (the caller counts the summariser's tokens).
    fn apply(
        &mut self,
        compacted: Compacted,
        before: u64,
        out: &Emitter<'_>,
        fixed: Fixed,
        limit: PartLimit,
    ) {
        let progress = &mut self.progress;
        let context = &mut progress.context;
        let summarized = compacted.covers.saturating_sub(context.first_seq);
        let drained = usize::try_from(summarized).unwrap_or(usize::MAX);
        progress
            .history
            .drain(..drained.min(progress.history.len()));
        context.first_seq = compacted.covers;
        context.checkpoint = Some(Checkpoint {
            covers: compacted.covers,
            summary: compacted.summary,
            cleared_before: compacted.cleared_before,
            at_ms: chrono::Utc::now().timestamp_millis(),
        });
        context.made_checkpoint = true;
        context.compactions += 1;
        let view = self.view();
        let after = plan::estimate(
            &view,
            Fixed {
                summary_tokens: view.summary.map_or(0, text_tokens),
                ..fixed
            },
            limit,
        );
        tracing::info!(
            how = compacted.how.as_str(),
            summarized,
            tokens_before = before,
            tokens_after = after,
            "the thread was compacted to fit the model's window"
        );
        out.emit(Event::ActivitySnapshot {
            message_id: MessageId::generate(),
            activity_type: "context-compaction",
            content: json!({
                "strategy": compacted.how.as_str(),
                "tokensBefore": before,
                "tokensAfter": after,
                "summarizedMessages": summarized,
                "coversMessages": compacted.covers,
            }),
        });
    }

    /// The thread's size for the model: the provider's count of its last call when it saw
    /// this same view, plus an estimate of what was added since; otherwise all estimated.
    fn estimate(&self, view: &ThreadView<'_>, fixed: Fixed, limit: PartLimit) -> u64 {
        let Some(mark) = self.progress.context.mark else {
            return plan::estimate(view, fixed, limit);
        };
        let same_view = mark.covers == view.first_seq && mark.cleared_before == view.cleared_before;
        let end = view.first_seq + view.messages.len() as u64;
        if !same_view || mark.seen < view.first_seq || mark.seen > end {
            return plan::estimate(view, fixed, limit);
        }
        let added = usize::try_from(mark.seen - view.first_seq).unwrap_or(usize::MAX);
        mark.input_tokens + messages_tokens(&view.messages_from(added, limit))
    }

    fn view(&self) -> ThreadView<'_> {
        let context = &self.progress.context;
        ThreadView {
            first_seq: context.first_seq,
            messages: &self.progress.history,
            summary: context.summary(),
            cleared_before: context.cleared_before(),
        }
    }

    /// The thread's message count, counting those before the view.
    fn message_count(&self) -> u64 {
        self.progress.context.first_seq + self.progress.history.len() as u64
    }

    fn summarizer(&self) -> std::sync::Arc<dyn crate::model::ModelProvider> {
        self.agent
            .summarizer
            .clone()
            .unwrap_or_else(|| self.agent.model.clone())
    }
}

/// The tools' specs as the model reads them.
fn tools_tokens(request: &ModelRequest) -> u64 {
    request
        .tools
        .iter()
        .map(|tool| {
            text_tokens(&tool.name)
                + text_tokens(&tool.description)
                + text_tokens(&tool.parameters.to_string())
        })
        .sum()
}

/// The summary as the model reads it, after the system prompt.
fn summary_block(summary: &str) -> String {
    format!(
        "Summary of the earlier part of this conversation (its messages are no longer shown):\n{summary}"
    )
}

fn newest_user(history: &[Message]) -> Option<usize> {
    history
        .iter()
        .rposition(|message| matches!(message, Message::User { .. }))
}

/// The view with the newest user message as the user wrote it: the message the run answers is
/// never cut (one too large for the window is refused instead).
fn newest_user_unclamped(mut shown: Vec<Message>, history: &[Message]) -> Vec<Message> {
    if let Some(newest) = newest_user(history)
        && let Some(slot) = shown.get_mut(newest)
    {
        slot.clone_from(&history[newest]);
    }
    shown
}

/// The memory block given with the newest user message, in the model's view only: after the
/// cached prefix (tools, system prompt, summary, earlier turns), so a block that changes from
/// run to run never moves the provider's prompt cache.
fn with_memories(messages: &mut [Message], block: Option<&str>) {
    let Some(block) = block else { return };
    let Some(Message::User { content, .. }) = messages
        .iter_mut()
        .rev()
        .find(|message| matches!(message, Message::User { .. }))
    else {
        return;
    };
    let memory = UserPart::Text {
        text: block.to_owned(),
    };
    *content = match std::mem::replace(content, UserContent::Parts(Vec::new())) {
        UserContent::Text(text) => UserContent::Parts(vec![UserPart::Text { text }, memory]),
        UserContent::Parts(mut parts) => {
            parts.push(memory);
            UserContent::Parts(parts)
        }
    };
}
