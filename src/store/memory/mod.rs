//! The in-memory store: local runs and tests. Same semantics as the DynamoDB store, lost on
//! restart. One file per capability; here the records they share and the store itself.

mod a2a_tasks;
mod checkpoints;
mod events;
mod history;
mod memories;
mod runs;
mod tasks;
mod threads;
mod usage;

use super::{
    A2aTaskRecord, Checkpoint, ContextMark, ContextUpdate, Lease, ModelUsage, RunEnd, StoreError,
    StoredThread, TaskRecord,
};
use crate::auth::Principal;
use crate::protocol::{Message, RunId, ThreadId};
use bytes::Bytes;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

struct Record {
    owner: Principal,
    messages: Vec<Message>,
    /// When each message was stored, index-aligned with `messages`.
    message_at_ms: Vec<i64>,
    state: Option<Value>,
    interrupts: Option<Value>,
    version: u64,
    created_at_ms: i64,
    updated_at_ms: i64,
    title: Option<String>,
    /// Archived by its owner: left out of the shelf unless asked for.
    archived: bool,
    lease: Option<HeldLease>,
    /// Event logs by run id: each attempt's start time and its events in order.
    runs: HashMap<RunId, Vec<(i64, Vec<Bytes>)>>,
    /// The latest compaction's checkpoint and the provider's count of the last model call.
    checkpoint: Option<Checkpoint>,
    context: Option<ContextMark>,
    /// The record of the run holding the lease, once it checkpointed: it can be taken over.
    live: Option<LiveRecord>,
    /// A sub-agent's thread: where it was delegated from.
    parent: Option<super::ThreadLink>,
    /// The threads of this thread's sub-agents, deleted with it.
    children: Vec<ThreadId>,
}

struct HeldLease {
    run_id: RunId,
    until_ms: i64,
    cancel_requested: bool,
    /// Which runner of the run holds it (1 for the one that began it).
    epoch: u64,
    /// The runner of this epoch handed the run off to the next.
    handed_off: bool,
}

/// A run's last checkpointed record, as [`crate::store::RunCheckpoints`] keeps it.
struct LiveRecord {
    run_id: RunId,
    record: String,
    started_at_ms: i64,
    stored_messages: usize,
}

impl Record {
    /// A thread created at `created_at_ms`, empty, at its first version.
    fn new(owner: Principal, created_at_ms: i64) -> Self {
        Self {
            owner,
            messages: Vec::new(),
            message_at_ms: Vec::new(),
            state: None,
            interrupts: None,
            version: 1,
            created_at_ms,
            updated_at_ms: created_at_ms,
            title: None,
            archived: false,
            lease: None,
            runs: HashMap::new(),
            checkpoint: None,
            context: None,
            live: None,
            parent: None,
            children: Vec::new(),
        }
    }

    /// What a run's checkpoint or finish adds: its new messages, the state and open interrupts
    /// it leaves, and the compaction it made.
    fn apply_progress(
        &mut self,
        new_messages: &[Message],
        state: Option<&Value>,
        interrupts: Option<&Value>,
        context: Option<&ContextUpdate>,
        at_ms: i64,
    ) {
        self.messages.extend_from_slice(new_messages);
        self.message_at_ms
            .extend(std::iter::repeat_n(at_ms, new_messages.len()));
        if let Some(state) = state {
            self.state = Some(state.clone());
        }
        self.interrupts = interrupts.cloned();
        if let Some(context) = context {
            if let Some(checkpoint) = &context.checkpoint {
                self.checkpoint = Some(checkpoint.clone());
            }
            if context.mark.is_some() {
                self.context = context.mark;
            }
        }
    }

    fn live_lease(&self) -> Option<&HeldLease> {
        self.lease
            .as_ref()
            .filter(|lease| lease.until_ms > now_ms())
    }

    fn active_run(&self) -> Option<RunId> {
        self.live_lease().map(|lease| lease.run_id.clone())
    }

    /// The run whose lease expired while it held the thread with a checkpoint.
    fn stalled_run(&self) -> Option<RunId> {
        let held = self
            .lease
            .as_ref()
            .filter(|lease| lease.until_ms <= now_ms())?;
        self.live
            .as_ref()
            .filter(|live| live.run_id == held.run_id)
            .map(|live| live.run_id.clone())
    }

    fn runner(&self) -> Option<crate::store::Runner> {
        self.live_lease().map(|lease| crate::store::Runner {
            epoch: lease.epoch,
            handed_off: lease.handed_off,
        })
    }

    /// The thread as stored, from message `first_seq` on.
    fn stored_from(&self, first_seq: u64) -> StoredThread {
        let from = usize::try_from(first_seq)
            .unwrap_or(usize::MAX)
            .min(self.messages.len());
        StoredThread {
            messages: self.messages[from..].to_vec(),
            message_at_ms: self.message_at_ms[from..].to_vec(),
            state: self.state.clone(),
            version: self.version,
            created_at_ms: self.created_at_ms,
            active_run: self.active_run(),
            interrupts: self.interrupts.clone(),
            title: self.title.clone(),
            first_seq: from as u64,
            checkpoint: self.checkpoint.clone(),
            context: self.context,
        }
    }
}

/// A caller's usage on one day: tokens counted against the quota (settled and reserved), and
/// per (provider, model) counters.
#[derive(Default)]
struct UsageDay {
    spent: i64,
    models: std::collections::BTreeMap<(String, String), ModelUsage>,
}

#[derive(Default)]
struct Accounts {
    days: HashMap<(Principal, String), UsageDay>,
    /// Runs admitted per caller in the current minute (`YYYY-MM-DDTHH:MM`).
    minutes: HashMap<Principal, (String, u32)>,
    /// Where each caller's runs left their threads.
    run_ends: HashMap<(Principal, RunId), RunEnd>,
    /// Detached runs' task records, each with when it expires (epoch ms; DynamoDB's TTL here).
    tasks: HashMap<(Principal, RunId), (TaskRecord, i64)>,
    /// Each caller's long-term memories; thread deletion never touches them.
    memories: HashMap<Principal, memories::Kept>,
    /// A2A tasks by owner and task id; gone with their thread.
    a2a_tasks: HashMap<(Principal, String), A2aTaskRecord>,
}

pub struct MemoryStore {
    threads: Mutex<HashMap<ThreadId, Record>>,
    accounts: Mutex<Accounts>,
    /// Run event logs are dropped this long after their run started (DynamoDB's TTL, here), so
    /// a long-lived local server does not keep every run's events.
    events_ttl_ms: i64,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self {
            threads: Mutex::new(HashMap::new()),
            accounts: Mutex::new(Accounts::default()),
            events_ttl_ms: 24 * 3_600_000,
        }
    }
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// `RUN_EVENTS_TTL_HOURS`.
    pub(crate) fn with_events_ttl_hours(self, hours: u32) -> Self {
        self.with_events_ttl(std::time::Duration::from_secs(u64::from(hours) * 3600))
    }

    fn with_events_ttl(mut self, ttl: std::time::Duration) -> Self {
        self.events_ttl_ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        self
    }

    fn threads(&self) -> MutexGuard<'_, HashMap<ThreadId, Record>> {
        self.threads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn accounts(&self) -> MutexGuard<'_, Accounts> {
        self.accounts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// `owner`'s thread: `NotFound` for another principal's thread and for a missing one alike.
fn owned<'a>(
    threads: &'a HashMap<ThreadId, Record>,
    owner: &Principal,
    thread_id: &ThreadId,
) -> Result<&'a Record, StoreError> {
    threads
        .get(thread_id)
        .filter(|record| &record.owner == owner)
        .ok_or(StoreError::NotFound)
}

/// [`owned`], to change.
fn owned_mut<'a>(
    threads: &'a mut HashMap<ThreadId, Record>,
    owner: &Principal,
    thread_id: &ThreadId,
) -> Result<&'a mut Record, StoreError> {
    threads
        .get_mut(thread_id)
        .filter(|record| &record.owner == owner)
        .ok_or(StoreError::NotFound)
}

/// Whether `lease` still holds `record`: its runner, at the version it last wrote.
fn holds(record: &Record, lease: &Lease) -> bool {
    record.version == lease.version
        && matches!(&record.lease, Some(held) if held.run_id == lease.run_id && held.epoch == lease.epoch)
}

/// The thread `lease` is held on, while it is held.
fn leased<'a>(
    threads: &'a mut HashMap<ThreadId, Record>,
    lease: &Lease,
) -> Result<&'a mut Record, StoreError> {
    threads
        .get_mut(&lease.thread_id)
        .filter(|record| holds(record, lease))
        .ok_or(StoreError::LeaseLost)
}
