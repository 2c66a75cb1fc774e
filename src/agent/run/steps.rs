//! The loop itself: the opening snapshots, the approvals the input decided, then model turns,
//! each followed by its tool calls, until the model answers without calling a server tool, the
//! calls wait for the client or a person, or the steps run out.

use super::fit::{Fitted, Pressure};
use super::gate::{Ask, Gated};
use super::outcome::{RunEnd, RunFailure};
use super::{Emitter, PreparedRun};
use crate::agent::context::ContextStrategy;
use crate::agent::spans::{ChatEnd, ChatSpan};
use crate::agent::turn::{TurnAssembler, TurnCall};
use crate::model::{ModelError, ModelRequest};
use crate::protocol::{Event, Message, MessageId, ToolCall, ToolCallId};
use futures_util::StreamExt;
use std::collections::HashSet;
use tokio::time::timeout_at;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// How a model turn ended.
enum TurnEnd {
    Done(TurnAssembler),
    /// Stopped by a cancel: what was streamed so far.
    Stopped(TurnAssembler),
}

impl PreparedRun {
    pub(super) async fn execute(
        &mut self,
        out: &Emitter<'_>,
        stop: &CancellationToken,
    ) -> Result<RunEnd, RunFailure> {
        self.open(out).await?;
        if self.request.repeat_only {
            // A repeated resume: its answers were acted on by an earlier run.
            return Ok(RunEnd::finished());
        }
        self.carry_out_decisions(out, stop).await?;
        if let Some(end) = self.continue_delegations(out, stop).await {
            return Ok(end);
        }
        if stop.is_cancelled() {
            return Err(RunFailure::Cancelled);
        }
        self.recall().await;
        let max_steps = self.agent.settings.max_steps;
        let mut used_call_ids = self.progress.call_ids();
        for step in 1..=max_steps {
            if stop.is_cancelled() {
                return Err(RunFailure::Cancelled);
            }
            let (message, calls) = self.model_step(step, out, &mut used_call_ids, stop).await?;
            if calls.is_empty() {
                if let Some(message) = message {
                    self.progress.keep(message);
                }
                return Ok(RunEnd::finished());
            }
            let summary = &mut self.progress.summary;
            summary.tool_calls += u32::try_from(calls.len()).unwrap_or(u32::MAX);
            let gated = self.gate(&calls);
            if let Some(end) = self.follow_calls(out, message, gated, stop).await? {
                return Ok(end);
            }
        }
        Err(RunFailure::MaxSteps(max_steps))
    }

    /// The caller's memories for this run's model calls (when memory is on): one read of the
    /// store whatever their number. Memory is an aid: if the store fails, the run goes without.
    async fn recall(&mut self) {
        let settings = &self.agent.settings.memory;
        if !settings.enabled {
            return;
        }
        let user_text = self
            .progress
            .history
            .iter()
            .rev()
            .find_map(|message| match message {
                crate::protocol::Message::User { content, .. } => Some(content.text()),
                _ => None,
            })
            .unwrap_or_default();
        let span = crate::telemetry::trace_span!(
            "memory.recall",
            "internal",
            agui.memory.injected_chars = tracing::field::Empty,
        );
        let store = self.agent.store.as_ref();
        let block = crate::agent::memory::block(store, &self.lease.owner, &user_text, settings);
        let recalled = crate::store::meter::for_memory(block)
            .instrument(span.clone())
            .await;
        match recalled {
            Ok(block) => {
                let chars = block.as_ref().map_or(0, String::len);
                span.record(
                    "agui.memory.injected_chars",
                    crate::telemetry::attribute_int(chars as u64),
                );
                self.progress.memory_block = block;
            }
            Err(error) => {
                crate::telemetry::record_error(&span, "store");
                tracing::warn!(%error, "memories unavailable: the run goes without them");
            }
        }
    }

    /// What the client must see before the run's own events: the state, and the history when
    /// the client lacks some of it (the whole thread, read in pages, when the run's own history
    /// starts at a checkpoint).
    async fn open(&self, out: &Emitter<'_>) -> Result<(), RunFailure> {
        if let Some(state) = &self.progress.state {
            out.emit(Event::StateSnapshot {
                snapshot: state.clone(),
            });
        }
        // A run that answers approved or denied calls sends their results against calls made
        // in an earlier run: the snapshot first names those calls within this stream.
        if self.request.client_is_behind
            || !self.request.resolved.is_empty()
            || !self.request.delegated.is_empty()
        {
            let messages = if let Some(whole) = &self.request.snapshot {
                whole.clone()
            } else if self.progress.context.first_seq > 0 {
                self.whole_thread().await?
            } else {
                self.progress.history.clone()
            };
            out.emit(Event::MessagesSnapshot { messages });
        }
        Ok(())
    }

    /// Every message of the thread, as stored (the run's input included).
    async fn whole_thread(&self) -> Result<Vec<Message>, RunFailure> {
        let lease = &self.lease;
        let thread = self
            .agent
            .store
            .load(&lease.owner, &lease.thread_id)
            .await
            .map_err(RunFailure::Store)?;
        Ok(thread.map(|thread| thread.messages).unwrap_or_default())
    }

    /// One model turn as step `step`: streamed, closed, its usage counted and its reasoning
    /// kept. Returns the turn's assistant message and its tool calls; a stopped turn keeps what
    /// it streamed and ends the run cancelled.
    async fn model_step(
        &mut self,
        step: u32,
        out: &Emitter<'_>,
        used_call_ids: &mut HashSet<ToolCallId>,
        stop: &CancellationToken,
    ) -> Result<(Option<Message>, Vec<TurnCall>), RunFailure> {
        let emit_steps = self.agent.settings.emit_steps;
        self.progress.summary.steps = step;
        let step_name = format!("model_turn_{step}");
        if emit_steps {
            out.emit(Event::StepStarted {
                step_name: step_name.clone(),
            });
        }
        let (mut turn, stopped) = match self.model_turn(out, used_call_ids, stop).await? {
            TurnEnd::Done(turn) => (turn, false),
            TurnEnd::Stopped(turn) => (turn, true),
        };
        let served = match turn.served() {
            Some(served) => {
                self.progress.summary.add_attempts(&served.attempts);
                served.identity.clone()
            }
            None => self.agent.model.identity(),
        };
        self.progress.summary.add_usage(&served, turn.usage());
        self.note_input_tokens(turn.usage().input_tokens);
        let mut events = Vec::new();
        turn.close(&mut events);
        out.emit_all(&mut events);
        // The step is the model's turn; it closes before the calls end, so that a frontend
        // call's TOOL_CALL_END is immediately followed by RUN_FINISHED (CopilotKit's rule).
        if emit_steps {
            out.emit(Event::StepFinished { step_name });
        }
        turn.end_calls(&mut events);
        out.emit_all(&mut events);
        let reasoning = turn.take_reasoning();
        if stopped {
            for message in reasoning.into_iter().chain(turn.partial()) {
                self.progress.keep(message);
            }
            return Err(RunFailure::Cancelled);
        }
        let finished = turn.finish()?;
        // Before the turn's assistant message: providers send reasoning back at its head.
        for message in reasoning {
            self.progress.keep(message);
        }
        Ok(finished)
    }

    /// Follows a turn's tool calls as the gate sorted them: the turn's message (with any
    /// confirm-tool calls) joins the history, server tools run and their results stream, calls
    /// nobody can approve are refused, state changes stream, then the confirm-tool calls. The
    /// gate's end, if it has one, ends the run.
    async fn follow_calls(
        &mut self,
        out: &Emitter<'_>,
        mut message: Option<Message>,
        gated: Gated<'_>,
        stop: &CancellationToken,
    ) -> Result<Option<RunEnd>, RunFailure> {
        let Gated {
            run,
            delegate,
            ask,
            end,
        } = gated;
        // Part of the turn's message, so that the confirm tool's answer is a known tool result.
        if let (Ask::Confirm { calls, .. }, Some(Message::Assistant { tool_calls, .. })) =
            (&ask, &mut message)
        {
            tool_calls.extend(calls.iter().cloned());
        }
        let parent_message_id = message.as_ref().map(|message| message.id().clone());
        if let Some(message) = message {
            self.progress.keep(message);
        }
        // Sub-agents run beside the server tools; a stop reaches them through their own
        // signal, and they close what they opened before this run ends.
        let mut delegator = self.delegator(stop);
        let (results, delegated) = tokio::join!(
            async {
                tokio::select! {
                    biased;
                    () = stop.cancelled() => Err(RunFailure::Cancelled),
                    results = self.run_tools(&run, stop) => results,
                }
            },
            delegator.run(&delegate, parent_message_id.as_ref(), out),
        );
        for result in results? {
            self.record_result(out, result);
        }
        self.settle_delegations(out, delegated);
        if stop.is_cancelled() {
            return Err(RunFailure::Cancelled);
        }
        let confirm = match ask {
            Ask::Nothing => None,
            Ask::Refuse(refusals) => {
                for refusal in refusals {
                    self.record_result(out, refusal);
                }
                None
            }
            Ask::Confirm { calls, approvals } => Some((calls, approvals)),
        };
        self.emit_state_changes(out);
        if let Some((calls, approvals)) = confirm {
            stream_calls(out, &calls, parent_message_id.as_ref());
            self.progress.fallback_approvals.extend(approvals);
        }
        Ok(self.suspended_end(end))
    }

    /// Streams one model turn. A turn that fails midway returns the failure and nothing of it
    /// is stored or executed; a stopped turn returns what was streamed. Dropping the model's
    /// stream closes its connection, so the provider stops generating. A request the provider
    /// refuses as too long, before any output, is compacted harder and sent once more.
    async fn model_turn(
        &mut self,
        out: &Emitter<'_>,
        used_call_ids: &mut HashSet<ToolCallId>,
        stop: &CancellationToken,
    ) -> Result<TurnEnd, RunFailure> {
        let mut pressure = None;
        loop {
            let Fitted {
                mut request,
                estimated,
            } = self.fitted_request(out, pressure).await?;
            self.presign(&mut request.messages).await?;
            let mut chat = ChatSpan::new(&self.agent.model.identity(), &request);
            let streamed = self
                .stream_turn(out, &request, used_call_ids, stop, &mut chat)
                .await;
            if let Err(RunFailure::Model(ModelError::Exhausted { attempts, .. })) = &streamed {
                chat.attempts(attempts);
                self.progress.summary.add_attempts(attempts);
            }
            chat.end(match &streamed {
                Ok(TurnEnd::Done(turn)) => ChatEnd::Answered(turn),
                Ok(TurnEnd::Stopped(_)) => ChatEnd::Stopped,
                Err(failure) => ChatEnd::Failed(failure.error_type()),
            });
            match streamed {
                // Without compaction there is nothing to retry with: the provider's refusal.
                Err(RunFailure::Overflow(refusal))
                    if self.agent.settings.context.strategy == ContextStrategy::Off =>
                {
                    return Err(RunFailure::Model(ModelError::ContextOverflow(refusal)));
                }
                Err(RunFailure::Overflow(refusal)) if pressure.is_none() => {
                    tracing::warn!(%refusal, estimated, "the model refused the request as too long: compacting harder");
                    pressure = Some(Pressure::after(&refusal, estimated.max(1), self.reserve()));
                }
                Err(RunFailure::Overflow(refusal)) => {
                    tracing::warn!(%refusal, estimated, "the model refused the compacted request as too long");
                    return Err(RunFailure::ContextTooLong {
                        tokens: estimated,
                        window: refusal.window().map_or(estimated, u64::from),
                    });
                }
                other => return other,
            }
        }
    }

    /// Stored uploads are `s3://` paths: Bedrock reads them itself, other models get a
    /// presigned GET, fresh for each turn.
    async fn presign(&self, messages: &mut [Message]) -> Result<(), RunFailure> {
        if let Some(blobs) = &self.agent.blobs
            && !self.agent.model.reads_s3()
        {
            blobs.presign_for_model(messages).await.map_err(|error| {
                tracing::error!(%error, "presigning an attachment for the model failed");
                RunFailure::Attachment
            })?;
        }
        Ok(())
    }

    /// The model's answer to `request`, streamed as events.
    async fn stream_turn(
        &mut self,
        out: &Emitter<'_>,
        request: &ModelRequest,
        used_call_ids: &mut HashSet<ToolCallId>,
        stop: &CancellationToken,
        chat: &mut ChatSpan,
    ) -> Result<TurnEnd, RunFailure> {
        let deadline = self.request.deadline;
        let mut turn = TurnAssembler::new(MessageId::generate())
            .with_value_types(self.request.encrypted_value_types);
        let mut stream = tokio::select! {
            biased;
            () = stop.cancelled() => return Ok(TurnEnd::Stopped(turn)),
            stream = timeout_at(deadline, self.agent.model.stream(request)) => {
                stream.map_err(|_| RunFailure::Timeout)?.map_err(before_output)?
            }
        };
        let mut events = Vec::new();
        loop {
            let next = tokio::select! {
                biased;
                () = stop.cancelled() => return Ok(TurnEnd::Stopped(turn)),
                next = timeout_at(deadline, stream.next()) => next.map_err(|_| RunFailure::Timeout)?,
            };
            let Some(delta) = next else { break };
            let delta = match delta {
                Err(error) if !turn.has_output() => return Err(before_output(error)),
                delta => delta?,
            };
            if delta.is_output() {
                chat.first_chunk();
                self.telemetry
                    .first_output
                    .get_or_insert_with(std::time::Instant::now);
            }
            chat.observe(&delta);
            turn.push(delta, used_call_ids, &mut events);
            out.emit_all(&mut events);
        }
        Ok(TurnEnd::Done(turn))
    }
}

/// A model error before the turn's first output: the provider's overflow refusal is one the
/// run can answer by compacting.
fn before_output(error: ModelError) -> RunFailure {
    match error {
        ModelError::ContextOverflow(refusal) => RunFailure::Overflow(refusal),
        other => RunFailure::Model(other),
    }
}

/// Streams calls the server made itself (a 0.0.x client's confirm tool) as the model's are.
fn stream_calls(out: &Emitter<'_>, calls: &[ToolCall], parent_message_id: Option<&MessageId>) {
    for call in calls {
        out.emit(Event::ToolCallStart {
            tool_call_id: call.id.clone(),
            tool_call_name: call.function.name.clone(),
            parent_message_id: parent_message_id.cloned(),
        });
        out.emit(Event::ToolCallArgs {
            tool_call_id: call.id.clone(),
            delta: call.function.arguments.clone(),
        });
        out.emit(Event::ToolCallEnd {
            tool_call_id: call.id.clone(),
        });
    }
}
