//! The loop itself: the opening snapshots, the approvals the input decided, then model turns,
//! each followed by its tool calls, until the model answers without calling a server tool, the
//! calls wait for the client or a person, or the steps run out.

use super::fit::Fitted;
use super::fold::Folding;
use super::gate::{Ask, Gated};
use super::outcome::{RunEnd, RunFailure};
use super::record::{Phase, ToolPlan};
use super::resume::Next;
use super::{Emitter, PreparedRun};
use crate::agent::context::ContextStrategy;
use crate::agent::spans::{ChatEnd, ChatSpan};
use crate::agent::subagents::FoldedStep;
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
    /// Stopped at the run's deadline, or at this runner's (`segment`): what was streamed so far.
    OutOfTime {
        turn: TurnAssembler,
        segment: bool,
    },
}

impl PreparedRun {
    pub(super) async fn execute(
        &mut self,
        out: &Emitter<'_>,
        stop: &CancellationToken,
    ) -> Result<RunEnd, RunFailure> {
        match self.run_all(out, stop).await {
            // This runner's time is up inside a step: the next runner goes on from here.
            Err(RunFailure::SegmentOver) => Ok(RunEnd::HandedOff),
            other => other,
        }
    }

    /// The run from its start (snapshots, the input's decisions, memories), or from where its
    /// last runner left it, then its steps.
    async fn run_all(
        &mut self,
        out: &Emitter<'_>,
        stop: &CancellationToken,
    ) -> Result<RunEnd, RunFailure> {
        let first_step = match self.resume.take() {
            Some(resume) => match self.go_on(out, stop, resume).await? {
                Next::Step(step) => step,
                Next::End(end) => return Ok(end),
            },
            None => {
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
                1
            }
        };
        self.steps_from(first_step, out, stop).await
    }

    /// Model turns from `first` on, each followed by its tool calls, until the model answers
    /// without calling a server tool, the calls wait for the client or a person, the steps run
    /// out, or the run goes on in the next invocation.
    async fn steps_from(
        &mut self,
        first: u32,
        out: &Emitter<'_>,
        stop: &CancellationToken,
    ) -> Result<RunEnd, RunFailure> {
        let max_steps = self.agent.settings.max_steps;
        let mut used_call_ids = self.progress.call_ids();
        for step in first..=max_steps {
            if stop.is_cancelled() {
                return Err(RunFailure::Cancelled);
            }
            if self.hand_off_before_turn(step) {
                return Ok(RunEnd::HandedOff);
            }
            self.progress.phase = Phase::Model { step };
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
            if let Some(end) = self.follow_calls(step, out, message, gated, stop).await? {
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
        } else if let Some(said) = &self.request.said {
            // A click on a surface: what the server made of it, where the client shows it.
            super::surfaces::say(out, said);
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
        self.segment.steps += 1;
        let step_name = format!("model_turn_{step}");
        if emit_steps {
            out.emit(Event::StepStarted {
                step_name: step_name.clone(),
            });
        }
        let began = tokio::time::Instant::now();
        let (mut turn, stopped) = match self.model_turn(out, used_call_ids, stop).await? {
            TurnEnd::Done(turn) => (turn, None),
            TurnEnd::Stopped(turn) => (turn, Some(RunFailure::Cancelled)),
            TurnEnd::OutOfTime { turn, segment } => {
                // The next runner goes on with the next turn, after this one's partial answer.
                self.progress.phase = Phase::Model { step: step + 1 };
                let failure = if segment {
                    RunFailure::SegmentOver
                } else {
                    RunFailure::Timeout
                };
                (turn, Some(failure))
            }
        };
        let took = began.elapsed();
        self.progress.longest_model_turn = self.progress.longest_model_turn.max(took);
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
        if let Some(failure) = stopped {
            for message in reasoning.into_iter().chain(turn.partial()) {
                self.progress.keep(message);
            }
            return Err(failure);
        }
        let finished = turn.finish()?;
        // Before the turn's assistant message: providers send reasoning back at its head.
        for message in reasoning {
            self.progress.keep(message);
        }
        Ok(finished)
    }

    /// Follows a turn's tool calls as the gate sorted them: the turn's message (with any
    /// confirm-tool calls) joins the history, then the plan for its calls (server tools and
    /// sub-agents) is carried out. The gate's end, if it has one, ends the run.
    async fn follow_calls(
        &mut self,
        step: u32,
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
        let (refusals, confirm) = match ask {
            Ask::Nothing => (Vec::new(), None),
            Ask::Refuse(refusals) => (refusals, None),
            Ask::Confirm { calls, approvals } => (Vec::new(), Some((calls, approvals))),
        };
        // In the model's order: results stream in it whichever batch ran them.
        let mut calls: Vec<TurnCall> = run.into_iter().chain(delegate).cloned().collect();
        calls.sort_by_key(|call| call.index);
        let plan = ToolPlan {
            step,
            unanswered: calls.iter().map(|call| call.id.clone()).collect(),
            pending: calls,
            started: Vec::new(),
            held: Vec::new(),
            refusals,
            confirm,
            end: end.as_ref().map(Into::into),
            parent_message_id,
        };
        self.carry_out(out, plan, stop).await
    }

    /// What is left of a turn's calls, as `plan` says: the server calls and delegations in
    /// batches, each stored as started before it runs and with its results after (so a call
    /// whose result was stored never runs again), the refusals, the state changes, then the
    /// confirm-tool calls. Before a batch that may not finish in this invocation the run is
    /// handed off. Returns the plan's end (or the sub-agents' that wait), if it has one.
    pub(super) async fn carry_out(
        &mut self,
        out: &Emitter<'_>,
        mut plan: ToolPlan,
        stop: &CancellationToken,
    ) -> Result<Option<RunEnd>, RunFailure> {
        loop {
            let batch = super::handoff::next_batch(&plan.pending, &self.agent);
            if batch.is_empty() {
                break;
            }
            if self.hand_off_before_calls(&batch) {
                self.progress.phase = Phase::Tools(Box::new(plan));
                return Ok(Some(RunEnd::HandedOff));
            }
            plan.started = batch.iter().map(|call| call.id.clone()).collect();
            self.progress.phase = Phase::Tools(Box::new(plan.clone()));
            // A profile's child stores the run's checkpoint with its own start.
            let folding = if self.folds(&batch) {
                Some(self.folded_step(out).await?)
            } else {
                self.checkpoint(out).await?;
                None
            };
            self.segment.steps += 1;
            self.run_batch(out, &batch, &mut plan, stop, folding)
                .await?;
            plan.pending.retain(|call| !plan.started.contains(&call.id));
            plan.started.clear();
            self.progress.phase = Phase::Tools(Box::new(plan.clone()));
            if stop.is_cancelled() {
                return Err(RunFailure::Cancelled);
            }
        }
        for refusal in std::mem::take(&mut plan.refusals) {
            self.record_result(out, refusal);
        }
        self.emit_state_changes(out);
        if let Some((calls, approvals)) = plan.confirm.take() {
            stream_calls(out, &calls, plan.parent_message_id.as_ref());
            self.progress.fallback_approvals.extend(approvals);
        }
        self.progress.phase = Phase::Model {
            step: plan.step + 1,
        };
        match self.suspended_end(plan.end.map(Into::into)) {
            Some(end) => Ok(Some(end)),
            None => {
                // The results are stored before the next model call.
                self.checkpoint(out).await?;
                Ok(None)
            }
        }
    }

    /// Runs one batch of `plan`'s calls: its server calls, and beside them its delegations (a
    /// stop reaches those through their own signal, and they close what they opened). A
    /// delegation ends within this runner's time (a child's deadline is within its parent's),
    /// so its outcome is kept even when the server calls beside it were cut off: an answer held
    /// with the plan, a child that stopped to ask kept for the run's end.
    async fn run_batch(
        &mut self,
        out: &Emitter<'_>,
        batch: &[TurnCall],
        plan: &mut ToolPlan,
        stop: &CancellationToken,
        folding: Option<(FoldedStep, Folding)>,
    ) -> Result<(), RunFailure> {
        let (delegations, server): (Vec<&TurnCall>, Vec<&TurnCall>) = batch
            .iter()
            .partition(|call| self.agent.subagent(&call.name).is_some());
        let mut delegator = self.delegator(stop);
        let folding = folding.map(|(step, folding)| {
            delegator.carry(step, folding.gate());
            folding
        });
        let parent_message_id = plan.parent_message_id.clone();
        let delegating = delegator.run(&delegations, parent_message_id.as_ref(), out);
        let mut delegating = std::pin::pin!(delegating);
        // The server calls start once the step that says they started is stored.
        let ended = match folding {
            Some(folding) => self.step_stored(folding, &mut delegating, out).await?,
            None => None,
        };
        let (results, delegated) = tokio::join!(
            async {
                tokio::select! {
                    biased;
                    () = stop.cancelled() => Err(RunFailure::Cancelled),
                    results = self.run_tools(&server, stop) => results,
                }
            },
            async {
                match ended {
                    Some(delegated) => delegated,
                    None => delegating.await,
                }
            },
        );
        let settled: Vec<ToolCallId> = delegated.iter().map(|(id, _)| id.clone()).collect();
        plan.held.extend(self.settle_delegations(delegated));
        let waiting = &self.progress.delegated;
        plan.unanswered
            .retain(|id| !waiting.iter().any(|child| &child.tool_call_id == id));
        plan.pending.retain(|call| !settled.contains(&call.id));
        plan.started.retain(|id| !settled.contains(id));
        match results {
            Ok(results) => {
                plan.held.extend(results);
                self.stream_in_order(out, plan);
                Ok(())
            }
            Err(failure) => {
                // What the next runner needs: the delegations' outcomes, the server calls it
                // may find cut off.
                self.stream_in_order(out, plan);
                self.progress.phase = Phase::Tools(Box::new(plan.clone()));
                Err(failure)
            }
        }
    }

    /// Streams the held results whose earlier calls all have theirs, in call order, then the
    /// state changes their tools made.
    pub(super) fn stream_in_order(&mut self, out: &Emitter<'_>, plan: &mut ToolPlan) {
        while let Some(next) = plan.unanswered.first() {
            let Some(at) = plan
                .held
                .iter()
                .position(|result| &result.tool_call_id == next)
            else {
                break;
            };
            let result = plan.held.remove(at);
            plan.unanswered.remove(0);
            self.record_result(out, result);
        }
        self.emit_state_changes(out);
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
                Ok(TurnEnd::Stopped(_) | TurnEnd::OutOfTime { .. }) => ChatEnd::Stopped,
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
                    pressure = Some(self.refused(&refusal, estimated.max(1)));
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
        let deadline = self.limit();
        let segment = self.limit_is_segment();
        let mut turn = TurnAssembler::new(MessageId::generate())
            .with_value_types(self.request.encrypted_value_types);
        let mut stream = tokio::select! {
            biased;
            () = stop.cancelled() => return Ok(TurnEnd::Stopped(turn)),
            stream = timeout_at(deadline, self.agent.model.stream(request)) => match stream {
                Ok(stream) => stream.map_err(before_output)?,
                Err(_) => return Ok(TurnEnd::OutOfTime { turn, segment }),
            }
        };
        let mut events = Vec::new();
        let mut surfaces = super::surfaces::SurfaceWatch::new(self.request.a2ui.is_some());
        loop {
            let next = tokio::select! {
                biased;
                () = stop.cancelled() => return Ok(TurnEnd::Stopped(turn)),
                next = timeout_at(deadline, stream.next()) => match next {
                    Ok(next) => next,
                    // The answer so far is kept, as a cancel keeps it.
                    Err(_) => return Ok(TurnEnd::OutOfTime { turn, segment }),
                },
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
            surfaces.watch(&mut events, &self.progress.history);
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
