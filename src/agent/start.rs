//! Starting a run: the client's tools checked, then, until the lease is taken, the start's
//! phases: load the thread (interrupting or refusing a run that holds it), fork from the
//! `parentRunId` run, merge the input and its answers to interrupts, reserve the quota, begin
//! the run. Nothing is stored unless the run begins.

mod a2ui;
mod child;
mod incoming;

pub(crate) use child::ChildStart;

use super::approval::{InterruptRecord, Resolution};
use super::context::ContextStrategy;
use super::run::{ContextState, PreparedRun, RunProgress, RunRequest, RunTelemetry};
use super::subagents::FoldedStep;
use super::thread::{self, Merged};
use super::{Agent, StartError, lease_expiry, spans};
use crate::auth::Principal;
use crate::protocol::input::{BusyThreadPolicy, check_new_messages};
use crate::protocol::{Message, MessageId, RunId, RunInput, SkippedPart, ThreadId, UserContent};
use crate::store::{
    Lease, Reservation, RunStart, StoreError, StoredThread, ThreadActivity, ThreadLink,
};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tracing::Instrument;

/// What one attempt at the start read and decided before it writes.
struct Attempt<'a> {
    /// The thread as stored; `None` for a new thread.
    loaded: Option<&'a StoredThread>,
    /// The parent run's thread a new thread starts as a copy of.
    forked: Option<&'a StoredThread>,
    merged: Merged,
    /// The store holds messages the client lacks: the run opens with a `MESSAGES_SNAPSHOT`.
    client_is_behind: bool,
    /// That snapshot, when the start read the whole thread to merge the input.
    snapshot: Option<Vec<Message>>,
    resolution: Resolution,
}

/// The thread taken: what the run starts from.
struct Taken {
    /// The state before the input's: the thread's, or the fork's.
    base_state: Option<Value>,
    merged: Merged,
    client_is_behind: bool,
    snapshot: Option<Vec<Message>>,
    resolution: Resolution,
    lease: Lease,
    /// Where the loaded history starts, the thread's checkpoint and the provider's last count.
    context: ContextState,
}

impl Agent {
    /// Loads the thread, merges the client's messages into it, and takes the lease while storing
    /// the input. `deadline` is when the run must have ended.
    pub async fn start(
        &self,
        owner: Principal,
        input: RunInput,
        deadline: Instant,
    ) -> Result<PreparedRun, StartError> {
        self.start_reserved(owner, input, deadline, None).await
    }

    /// [`Agent::start`] with the quota already reserved (a detached run's admission); a run
    /// that fails to start gives the reservation back.
    pub(crate) async fn start_reserved(
        &self,
        owner: Principal,
        input: RunInput,
        deadline: Instant,
        reservation: Option<Reservation>,
    ) -> Result<PreparedRun, StartError> {
        self.start_with(owner, input, deadline, reservation, None)
            .await
    }

    async fn start_with(
        &self,
        owner: Principal,
        input: RunInput,
        deadline: Instant,
        reservation: Option<Reservation>,
        child: Option<ChildStart>,
    ) -> Result<PreparedRun, StartError> {
        let began = std::time::Instant::now();
        let thread_id = input.thread_id.clone().unwrap_or_else(ThreadId::new_uuid);
        // One span per run, from its first store call to its last: every log line of the run
        // carries its ids.
        let span = tracing::info_span!("run", %thread_id, run_id = %input.run_id);
        let trace = spans::invoke_agent(
            &self.model.identity(),
            self.name.as_deref(),
            &thread_id,
            &input.run_id,
        );
        let meter = Arc::new(crate::store::meter::StoreMeter::default());
        let telemetry = RunTelemetry::new(span.clone(), trace.clone(), meter.clone(), began);
        let prepared = crate::store::meter::metered(
            meter,
            self.start_in_span(
                owner,
                input,
                thread_id,
                deadline,
                reservation,
                telemetry,
                child,
            )
            .instrument(trace.clone()),
        )
        .instrument(span)
        .await;
        if let Err(error) = &prepared {
            crate::telemetry::record_error(&trace, error.run_error_code());
        }
        prepared
    }

    #[allow(clippy::too_many_arguments)]
    async fn start_in_span(
        &self,
        owner: Principal,
        input: RunInput,
        thread_id: ThreadId,
        deadline: Instant,
        mut reservation: Option<Reservation>,
        telemetry: RunTelemetry,
        mut child: Option<ChildStart>,
    ) -> Result<PreparedRun, StartError> {
        let mut step = child.as_mut().and_then(|child| child.step.take());
        let link = child.as_ref().and_then(|child| child.parent.as_ref());
        let (input, said) = a2ui::with_action(input);
        let taken = self
            .take_thread(
                &owner,
                &input,
                &thread_id,
                &mut reservation,
                (link, &mut step),
            )
            .await;
        let taken = match taken {
            Ok(taken) => taken,
            Err(error) => {
                if let Some(reservation) = &reservation {
                    self.settle(reservation, None).await;
                }
                return Err(error);
            }
        };
        let reservation = reservation.ok_or(StartError::StoreCorrupt)?;
        let depth = child.as_ref().map_or(0, |child| child.depth);
        let mut prepared = self.prepare(input, taken, reservation, deadline, telemetry);
        prepared.request.depth = depth;
        prepared.request.said = said;
        if child.is_some() {
            // A child's events go to its parent, which shows them as its own client wants.
            prepared.request.visibility = super::subagents::FOR_A_PARENT;
            // Surfaces are painted for the client that asked, by the agent it talks to.
            prepared.request.a2ui = None;
        }
        Ok(prepared)
    }

    /// The start's retry loop: each attempt loads, forks, merges, reserves and begins; one that
    /// lost the thread to another run between its read and its write tries again, until the
    /// interrupt wait is over. `reservation` holds the quota taken, for the caller to give back
    /// on failure. A sub-agent's thread is linked to its parent (and may carry its parent's
    /// step).
    async fn take_thread(
        &self,
        owner: &Principal,
        input: &RunInput,
        thread_id: &ThreadId,
        reservation: &mut Option<Reservation>,
        (link, step): (Option<&ThreadLink>, &mut Option<FoldedStep>),
    ) -> Result<Taken, StartError> {
        self.check_client_tools(&input.tools)?;
        let policy = input
            .forwarded_props
            .busy_thread_policy
            .unwrap_or(self.settings.busy_thread_policy);
        let give_up = Instant::now() + self.settings.interrupt_wait;
        // Read once, however many attempts there are.
        let mut parent: Option<StoredThread> = None;
        loop {
            // A sub-agent's new thread cannot exist yet: nothing to read.
            let loaded = match link {
                Some(_) => None,
                None => self.load_idle(owner, thread_id, policy, give_up).await?,
            };
            let forked = self
                .fork_source(owner, input, loaded.as_ref(), &mut parent)
                .await?;
            let whole = self
                .whole_if_resent(owner, thread_id, input, loaded.as_ref())
                .await?;
            let attempt = self.merge(input, loaded.as_ref(), forked, whole.as_deref())?;
            if reservation.is_none() {
                *reservation = Some(self.reserve(owner).await?);
            }
            match self
                .begin(owner, thread_id, input, &attempt, (link, &mut *step))
                .await
            {
                Ok(lease) => {
                    let base = attempt.loaded.or(attempt.forked);
                    let context = attempt.loaded.map_or_else(ContextState::default, |thread| {
                        ContextState::new(
                            thread.first_seq,
                            thread.checkpoint.clone(),
                            thread.context,
                        )
                    });
                    return Ok(Taken {
                        base_state: base.and_then(|thread| thread.state.clone()),
                        merged: attempt.merged,
                        client_is_behind: attempt.client_is_behind,
                        snapshot: attempt.snapshot,
                        resolution: attempt.resolution,
                        lease,
                        context,
                    });
                }
                // Another run took the thread between our read and our write.
                Err(StoreError::Conflict)
                    if policy == BusyThreadPolicy::Interrupt && Instant::now() < give_up =>
                {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(error) => return Err(error.into()),
            }
        }
    }

    /// Load: the thread as stored once no run holds it; a run that does is interrupted, or the
    /// start refused, as `policy` says.
    async fn load_idle(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        policy: BusyThreadPolicy,
        give_up: Instant,
    ) -> Result<Option<StoredThread>, StartError> {
        loop {
            let loaded = self.load_for_run(owner, thread_id).await?;
            let Some(active) = loaded.as_ref().and_then(|thread| thread.active_run.clone()) else {
                return Ok(loaded);
            };
            if policy == BusyThreadPolicy::Reject {
                return Err(StartError::Busy);
            }
            self.interrupt(owner, thread_id, &active, give_up).await?;
        }
    }

    /// The thread from its latest checkpoint on, so the read does not grow with its length (a
    /// client that names the last message it holds and one that sends only its new message
    /// alike); the whole thread when compaction is off.
    async fn load_for_run(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
    ) -> Result<Option<StoredThread>, StoreError> {
        if self.settings.context.strategy == ContextStrategy::Off {
            return self.store.load(owner, thread_id).await;
        }
        self.store.load_recent(owner, thread_id).await
    }

    /// Every message of the thread, when the input resends older messages without any of
    /// those `loaded` (a client far behind), which only the whole thread can tell apart from
    /// new ones. The run itself still starts from the checkpoint.
    async fn whole_if_resent(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        input: &RunInput,
        loaded: Option<&StoredThread>,
    ) -> Result<Option<Vec<Message>>, StoreError> {
        match loaded {
            Some(thread)
                if thread.first_seq > 0
                    && resends_unloaded(
                        thread,
                        &super::subagents::child_messages(&input.messages),
                    ) =>
            {
                let whole = self.store.load(owner, thread_id).await?;
                Ok(whole.map(|thread| thread.messages))
            }
            _ => Ok(None),
        }
    }

    /// Stops the thread's active run and waits, until `give_up`, for it to release the thread.
    pub(super) async fn interrupt(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        active: &RunId,
        give_up: Instant,
    ) -> Result<(), StartError> {
        tracing::info!(%thread_id, run_id = %active, "interrupting the active run for a new one");
        match self.cancel(owner, thread_id, active).await {
            Ok(_) | Err(StoreError::NotFound) => {}
            Err(error) => return Err(error.into()),
        }
        let mut pause = Duration::from_millis(20);
        while Instant::now() < give_up {
            match self.store.activity(owner, thread_id).await? {
                ThreadActivity::Running { run_id, .. } if &run_id == active => {}
                _ => return Ok(()),
            }
            tokio::time::sleep(pause.min(give_up.saturating_duration_since(Instant::now()))).await;
            pause = (pause * 2).min(Duration::from_millis(250));
        }
        Err(StartError::Busy)
    }

    /// Fork: a new thread whose input names `parentRunId` starts as a copy of where that run
    /// left its thread (AG-UI's branching). `parent` keeps the copy across attempts.
    async fn fork_source<'p>(
        &self,
        owner: &Principal,
        input: &RunInput,
        loaded: Option<&StoredThread>,
        parent: &'p mut Option<StoredThread>,
    ) -> Result<Option<&'p StoredThread>, StartError> {
        if loaded.is_some() {
            return Ok(None);
        }
        if parent.is_none()
            && let Some(parent_run) = &input.parent_run_id
        {
            *parent = Some(self.parent_history(owner, parent_run).await?);
        }
        Ok(parent.as_ref())
    }

    /// Merge: the input's answers to the thread's interrupts resolved, and the messages the
    /// thread does not hold yet checked and merged into the thread's (or the fork's), the calls
    /// waiting for approval left open. `whole`, when read, is every message of the thread:
    /// what the input holds is told apart against it, the new messages merge into `loaded`.
    fn merge<'a>(
        &self,
        input: &RunInput,
        loaded: Option<&'a StoredThread>,
        forked: Option<&'a StoredThread>,
        whole: Option<&[Message]>,
    ) -> Result<Attempt<'a>, StartError> {
        let record = InterruptRecord::parse(loaded.and_then(|thread| thread.interrupts.as_ref()))
            .map_err(|error| {
            tracing::error!(%error, "a thread's interrupt record does not parse");
            StartError::StoreCorrupt
        })?;
        let waiting = record.waiting_calls();
        let resolution = record.resolve(
            &input.resume,
            &input.messages,
            input.speaks_v1(),
            |name| self.tools.parameters_of(name).cloned(),
            chrono::Utc::now().timestamp_millis(),
        )?;
        let stored = loaded
            .or(forked)
            .map_or(&[][..], |thread| &thread.messages[..]);
        // What sub-agents said, sent back by the client, is theirs: never this thread's.
        let sent = super::subagents::child_messages(&input.messages);
        let incoming = incoming::split(whole.unwrap_or(stored), &sent);
        if let Some(limits) = &input.new_message_limits {
            check_new_messages(&sent, &incoming.positions, limits).map_err(StartError::Input)?;
        }
        if let Some(first) = incoming.changed.first() {
            tracing::info!(
                changed = incoming.changed.len(),
                first = %first,
                "resent messages differ from the stored ones, which are kept"
            );
        }
        let merged = thread::merge_keeping_open(stored, incoming.new, &waiting)?;
        if !input.skips_unusable_parts
            && let Some(first) = self
                .unusable_parts(&input.messages, &merged.new_messages)
                .next()
        {
            return Err(StartError::UnsupportedPart {
                message: first.0,
                part: first.1,
                reason: first.2,
            });
        }
        let snapshot = whole.filter(|_| incoming.behind).map(|whole| {
            let stored_now = whole.iter().chain(&merged.new_messages);
            stored_now.cloned().collect()
        });
        Ok(Attempt {
            loaded,
            forked,
            merged,
            client_is_behind: incoming.behind,
            snapshot,
            resolution,
        })
    }

    /// Begin: takes the lease while storing the input (a fork: with the copied history, in the
    /// same writes).
    async fn begin(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        input: &RunInput,
        attempt: &Attempt<'_>,
        (link, step): (Option<&ThreadLink>, &mut Option<FoldedStep>),
    ) -> Result<Lease, StoreError> {
        let Attempt { loaded, forked, .. } = *attempt;
        let merged = &attempt.merged;
        let copied: Vec<Message>;
        let new_messages = match forked {
            Some(parent) => {
                copied = parent
                    .messages
                    .iter()
                    .chain(&merged.new_messages)
                    .cloned()
                    .collect();
                &copied[..]
            }
            None => &merged.new_messages[..],
        };
        let title = forked
            .and_then(|parent| parent.title.clone())
            .or_else(|| thread::derive_title(&merged.history));
        let start = RunStart {
            owner,
            thread_id,
            run_id: &input.run_id,
            loaded,
            lease_expires_at_ms: lease_expiry(self.settings.lease),
            new_messages,
            state: input
                .state
                .as_ref()
                .or(forked.and_then(|parent| parent.state.as_ref())),
            title: title.as_deref(),
            at_ms: chrono::Utc::now().timestamp_millis(),
            // A fork from `parentRunId` keeps the copied messages' times.
            copied_at_ms: forked.map_or(&[], |parent| &parent.message_at_ms[..]),
        };
        match link {
            Some(parent) => self.begin_child(start, parent, step).await,
            None => self.store.begin_run(start).await,
        }
    }

    /// The started run: its request as the start checked it, its loop's starting point, and
    /// its telemetry.
    fn prepare(
        &self,
        input: RunInput,
        taken: Taken,
        reservation: Reservation,
        deadline: Instant,
        telemetry: RunTelemetry,
    ) -> PreparedRun {
        let Taken {
            base_state,
            merged,
            client_is_behind,
            snapshot,
            resolution,
            lease,
            context,
        } = taken;
        let speaks_v1 = input.speaks_v1();
        let encrypted_value_types = input.speaks_at_least(1, 1);
        let a2ui = self.a2ui_offer(&input);
        let skipped_parts = self.skipped_parts(&input, &merged.new_messages);
        let request = RunRequest {
            parent_run_id: input.parent_run_id,
            system: self.system_prompt(&a2ui::model_context(&input.context)),
            a2ui,
            said: None,
            device_timezone: input.forwarded_props.device_timezone,
            deadline,
            ends_at_ms: chrono::Utc::now().timestamp_millis()
                + i64::try_from(
                    deadline
                        .saturating_duration_since(Instant::now())
                        .as_millis(),
                )
                .unwrap_or(i64::MAX / 2),
            received_at_ms: None,
            speaks_v1,
            encrypted_value_types,
            skipped_parts,
            sampling: input
                .forwarded_props
                .sampling
                .capped(self.settings.max_output_tokens),
            client_is_behind,
            snapshot,
            resolved: resolution.resolved,
            delegated: resolution.delegated,
            depth: 0,
            visibility: self.settings.subagents.visibility.for_client(speaks_v1),
            repeat_only: resolution.only_repeats && merged.new_messages.is_empty(),
            client_tools: input.tools,
        };
        PreparedRun {
            agent: self.clone(),
            lease,
            reservation,
            request,
            progress: RunProgress::new(
                merged.history,
                input.state.or(base_state),
                resolution.record,
                context,
            ),
            telemetry,
            segment: super::run::Segment::default(),
            resume: None,
            end_hook: None,
        }
    }

    /// The parts of new user messages the model cannot take: each one's message (its index in
    /// the input's messages, as parsed), its place among the message's parts and why. Parts
    /// already in the thread were judged when they came.
    fn unusable_parts<'m>(
        &'m self,
        sent: &'m [Message],
        new: &'m [Message],
    ) -> impl Iterator<Item = (usize, usize, String)> + 'm {
        new.iter()
            .filter_map(|message| match message {
                Message::User {
                    id,
                    content: UserContent::Parts(parts),
                    ..
                } => Some((id, parts)),
                _ => None,
            })
            .flat_map(move |(id, parts)| {
                let message = sent.iter().position(|sent| sent.id() == id).unwrap_or(0);
                parts.iter().enumerate().filter_map(move |(part, content)| {
                    let reason = self.model.check_part(content).err()?;
                    Some((message, part, reason))
                })
            })
    }

    /// What the run does without in the messages the thread does not hold yet, as AG-UI's
    /// run-input rules ask (skip, never fail): the parts the parse left out and, on the AG-UI
    /// routes, those the model cannot take (the thread keeps them; the model is told in one line
    /// that it cannot see them). Each is logged, and `RUN_STARTED` lists them.
    fn skipped_parts(&self, input: &RunInput, new: &[Message]) -> Vec<SkippedPart> {
        let is_new = |id: &Option<MessageId>| {
            id.as_ref()
                .is_some_and(|id| new.iter().any(|message| message.id() == id))
        };
        let mut skipped: Vec<SkippedPart> = input
            .skipped_parts
            .iter()
            .filter(|part| is_new(&part.message_id))
            .cloned()
            .collect();
        if input.skips_unusable_parts {
            let left_out = skipped.clone();
            for (message, part, reason) in self.unusable_parts(&input.messages, new) {
                // Its place as sent: the parts the parse left out of that message are not counted.
                let dropped: Vec<usize> = left_out
                    .iter()
                    .filter(|skipped| skipped.message_index() == Some(message))
                    .filter_map(SkippedPart::part_index)
                    .collect();
                let sent = (0..)
                    .filter(|at| !dropped.contains(at))
                    .nth(part)
                    .unwrap_or(part);
                skipped.push(SkippedPart::new(
                    format!("messages[{message}].content[{sent}]"),
                    reason,
                ));
            }
        }
        skipped.sort_by_key(|part| (part.message_index(), part.part_index()));
        for part in &skipped {
            tracing::warn!(run_id = %input.run_id, field = %part.field, reason = %part.reason, "content part skipped");
        }
        skipped
    }
}

/// Whether `incoming` may resend messages from before the loaded history that the loaded part
/// cannot recognise: it holds none of the loaded messages, yet more than one user or assistant
/// message (an incremental client sends one, or tool results).
fn resends_unloaded(loaded: &StoredThread, incoming: &[Message]) -> bool {
    let known: std::collections::HashSet<_> = loaded.messages.iter().map(Message::id).collect();
    let conversational = incoming
        .iter()
        .filter(|message| matches!(message, Message::User { .. } | Message::Assistant { .. }))
        .count();
    conversational > 1 && !incoming.iter().any(|message| known.contains(message.id()))
}
