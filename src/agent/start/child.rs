//! A sub-agent's start: no quota reservation of its own, and a new thread created linked to its
//! parent without being read first, in the same write as the parent's step when it carries one.

use crate::agent::subagents::FoldedStep;
use crate::agent::{Agent, PreparedRun, StartError};
use crate::auth::Principal;
use crate::protocol::RunInput;
use crate::store::{Lease, Reservation, RunStart, StoreError, ThreadLink};
use tokio::time::Instant;

/// A sub-agent's run, as its delegation starts it.
pub(crate) struct ChildStart {
    /// `Some` for a new thread, linked to the delegating one in the same write (and never read
    /// first: it cannot exist yet); `None` to continue the child's thread.
    pub(crate) parent: Option<ThreadLink>,
    /// How deep the run is (the client's run is 0).
    pub(crate) depth: u32,
    /// The delegating run's step, stored in the same write as the new thread.
    pub(crate) step: Option<FoldedStep>,
}

impl Agent {
    /// A sub-agent's run: no quota reservation of its own (its tokens are settled when it
    /// ends, its delegating run's quota admitted it), and a new thread is created linked to its
    /// parent without being read first.
    pub(crate) async fn start_child(
        &self,
        owner: Principal,
        input: RunInput,
        deadline: Instant,
        child: ChildStart,
    ) -> Result<PreparedRun, StartError> {
        let unreserved = Reservation {
            owner: owner.clone(),
            day: crate::store::usage_day(chrono::Utc::now()),
            reserved_tokens: 0,
        };
        self.start_with(owner, input, deadline, Some(unreserved), Some(child))
            .await
    }

    /// A sub-agent's new thread begun, linked to its parent; with the parent's step, both in
    /// one write. A step that write could not store goes back to its run, which stores it
    /// alone; the child begins after it.
    pub(super) async fn begin_child(
        &self,
        start: RunStart<'_>,
        parent: &ThreadLink,
        step: &mut Option<FoldedStep>,
    ) -> Result<Lease, StoreError> {
        if let Some(folded) = step.take() {
            let linked = self
                .store
                .begin_linked_run(start.clone(), parent, Some(folded.as_store()))
                .await;
            match linked {
                Ok(linked) => {
                    if let Some(version) = linked.parent_version {
                        folded.stored(version);
                    }
                    return Ok(linked.lease);
                }
                Err(error) => {
                    tracing::warn!(%error, "the delegating run's step was not stored with its child's start: it is stored alone first");
                    folded.not_stored().await;
                }
            }
        }
        let linked = self.store.begin_linked_run(start, parent, None).await?;
        Ok(linked.lease)
    }
}
