//! Continued runs: a run whose runner let it go (its invocation ended) or stopped (a crash) is
//! taken over by the next runner, at most one at a time: a claim fenced by the lease's epoch,
//! then the run rebuilt from its checkpoint. How the next runner is started (an asynchronous
//! invocation under Lambda) is the hosting side's, behind [`Continuations`] (the run loop's, since
//! its hand-off sends them). A client of the run loop: it names only what `run.rs` offers.

use super::Agent;
use super::live::LiveRun;
pub(crate) use super::run::{Continuation, Continuations};
use super::run::{PreparedRun, RunRecord, RunTelemetry, TakeOver};
use crate::auth::Principal;
use crate::protocol::{RunId, ThreadId};
use crate::store::{Claim, ClaimedRun, EventCursor, RunClaim, RunRef};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tracing::Instrument;

/// How a continuation went.
pub(crate) enum Continued {
    /// This process runs the run now.
    Started(Arc<LiveRun>),
    /// A live runner holds the run (a second delivery, or a late one): nothing done.
    Held,
    /// The run is over, or was replaced by another: nothing done.
    Gone,
    /// The store failed, or the continuation is not one: nothing done.
    Failed,
}

impl Continued {
    /// What the continuation's invocation answers.
    pub(crate) fn label(&self) -> &'static str {
        match self {
            Continued::Started(_) => "continued",
            Continued::Held => "held",
            Continued::Gone => "gone",
            Continued::Failed => "failed",
        }
    }
}

impl Agent {
    /// Takes the run `continuation` names over and runs it here, this runner's part ending at
    /// `ends` (its invocation's deadline less the margin, if it has one). A run held by a live
    /// runner is waited for until its lease would expire, then tried once more: its runner
    /// either renewed it (a second delivery: nothing done) or stopped (taken over).
    pub(crate) async fn continue_run(
        &self,
        continuation: &Continuation,
        ends: Option<Instant>,
    ) -> Continued {
        let max = crate::protocol::ids::MAX_ID_LEN;
        let (Ok(thread_id), Ok(run_id)) = (
            ThreadId::parse(&continuation.thread_id, max),
            RunId::parse(&continuation.run_id, max),
        ) else {
            tracing::error!("a continuation names no run");
            return Continued::Failed;
        };
        let owner = Principal::new(continuation.principal.clone());
        let meter = Arc::new(crate::store::meter::StoreMeter::default());
        let claim = RunClaim {
            owner: &owner,
            thread_id: &thread_id,
            run_id: &run_id,
            handed_off_by: continuation.handed_off_by,
            lease_expires_at_ms: super::lease_expiry(self.settings.lease),
        };
        let claimed = crate::store::meter::metered(meter.clone(), self.claim(&claim, ends)).await;
        match claimed {
            Ok(Claim::Taken(claimed)) => {
                tracing::info!(%run_id, runner = claimed.lease.epoch, recovered = claimed.recovered, "taking the run over");
                self.start_taken(*claimed, meter, ends).await
            }
            Ok(Claim::Held { epoch, .. }) => {
                tracing::info!(%run_id, runner = epoch, "the run has a live runner: this continuation does nothing");
                Continued::Held
            }
            Ok(Claim::Gone) => {
                tracing::info!(%run_id, "the run is over or replaced: this continuation does nothing");
                Continued::Gone
            }
            Err(error) => {
                tracing::error!(%error, %run_id, "taking the run over failed");
                Continued::Failed
            }
        }
    }

    /// The claim, and once more after the live runner's lease would have expired (if that is
    /// before `ends`).
    async fn claim(
        &self,
        claim: &RunClaim<'_>,
        ends: Option<Instant>,
    ) -> Result<Claim, crate::store::StoreError> {
        let first = self.store.claim_run(claim.clone()).await?;
        let Claim::Held { until_ms, .. } = first else {
            return Ok(first);
        };
        let wait = Duration::from_millis(
            u64::try_from(until_ms - chrono::Utc::now().timestamp_millis()).unwrap_or(0),
        ) + Duration::from_millis(500);
        if ends.is_some_and(|ends| Instant::now() + wait >= ends) {
            return Ok(first);
        }
        tokio::time::sleep(wait).await;
        let mut again = claim.clone();
        again.lease_expires_at_ms = super::lease_expiry(self.settings.lease);
        self.store.claim_run(again).await
    }

    /// Runs a claimed run here: its record read, its profile's agent, its trace continued, the
    /// events its last runner sent after its last checkpoint read, then its loop.
    async fn start_taken(
        &self,
        claimed: ClaimedRun,
        meter: Arc<crate::store::meter::StoreMeter>,
        ends: Option<Instant>,
    ) -> Continued {
        let record: RunRecord = match serde_json::from_str(&claimed.record) {
            Ok(record) => record,
            Err(error) => {
                // Its lease expires and the thread is free for a new run.
                tracing::error!(%error, run_id = %claimed.lease.run_id, "a run's record does not parse");
                return Continued::Failed;
            }
        };
        let agent = match record.profile() {
            Some(name) => match self.profile(name) {
                Ok(agent) => agent,
                Err(error) => {
                    tracing::error!(%error, "the run's agent profile is gone");
                    return Continued::Failed;
                }
            },
            None => self.clone(),
        };
        let lease = &claimed.lease;
        let span = tracing::info_span!("run", thread_id = %lease.thread_id, run_id = %lease.run_id);
        let trace = super::spans::invoke_agent(
            &agent.model.identity(),
            agent.name.as_deref(),
            &lease.thread_id,
            &lease.run_id,
        );
        if let Some(parent) = record.trace_parent() {
            crate::telemetry::otel::continue_trace(&trace, parent);
        }
        super::spans::note_runner(&trace, lease.epoch);
        let tail = crate::store::meter::metered(
            meter.clone(),
            self.tail(&claimed, record.events_through())
                .instrument(span.clone()),
        )
        .await;
        let took = meter.usage();
        tracing::info!(
            run_id = %claimed.lease.run_id,
            runner = claimed.lease.epoch,
            store_read_calls = took.read_calls,
            store_write_calls = took.write_calls,
            store_read_capacity = took.read_capacity_units,
            store_read_ms = took.read_time.as_secs_f64() * 1000.0,
            store_write_ms = took.write_time.as_secs_f64() * 1000.0,
            tail_events = tail.len(),
            "run taken over"
        );
        let telemetry = RunTelemetry::new(span, trace, meter, std::time::Instant::now());
        let take = TakeOver {
            claimed,
            record,
            tail,
        };
        let (run, base) = PreparedRun::taken_over(agent, take, telemetry, ends);
        Continued::Started(run.spawn_after(base))
    }

    /// The run's recorded events after `events_through`: one read, as long as one step's
    /// events. A failed read is taken as none (the run goes on numbering after the checkpoint).
    async fn tail(
        &self,
        claimed: &ClaimedRun,
        events_through: u64,
    ) -> Vec<crate::protocol::events::RecordedEvent> {
        if !self.settings.record_events {
            return Vec::new();
        }
        let lease = &claimed.lease;
        let run = RunRef {
            thread_id: lease.thread_id.clone(),
            created_at_ms: lease.created_at_ms,
            run_id: lease.run_id.clone(),
        };
        let from = EventCursor {
            started_at_ms: lease.started_at_ms,
            next_seq: events_through + 1,
        };
        match self.store.read_events(&run, Some(from)).await {
            Ok(page) => page.events,
            Err(error) => {
                tracing::warn!(%error, "reading the run's last events failed");
                Vec::new()
            }
        }
    }

    /// Has a stalled run taken over (its runner stopped without letting it go): by the next
    /// invocation under Lambda (sent before this returns: the invocation that asks may end
    /// soon after), else on a task of this process.
    pub(crate) async fn recover(&self, owner: &Principal, thread_id: &ThreadId, run_id: &RunId) {
        let continuation = Continuation {
            principal: owner.as_str().to_owned(),
            thread_id: thread_id.to_string(),
            run_id: run_id.to_string(),
            handed_off_by: None,
        };
        tracing::info!(%run_id, "the run's runner stopped: asking for its recovery");
        match &self.continuations {
            Some(continuations) => {
                if let Err(error) = continuations.send(&continuation).await {
                    tracing::warn!(%error, "asking for a run's recovery failed");
                }
            }
            None => {
                let agent = self.clone();
                tokio::spawn(
                    async move {
                        agent.continue_run(&continuation, None).await;
                    }
                    .in_current_span(),
                );
            }
        }
    }
}

#[cfg(test)]
#[path = "continuation_tests.rs"]
mod tests;
