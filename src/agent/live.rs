//! Runs in flight in this process: each run's events in order as it emits them, its stop
//! signal, and the followers that stream them. A run is driven by its own task, so a client
//! that goes away never stops it; every stream of a run, the first included, is a follower.

use crate::protocol::events::{Event, RecordedEvent};
use crate::protocol::{RunId, ThreadId};
use futures_util::Stream;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Why a run was told to stop early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopReason {
    /// The cancel endpoint, or a newer run on the thread (double-texting).
    Cancelled,
    /// The heartbeat found another run holding the thread.
    LeaseLost,
}

/// One run's events and controls, in this process: from the first event of the run, or of the
/// part of it this process runs (a run taken over from another invocation goes on numbering).
pub(crate) struct LiveRun {
    pub thread_id: ThreadId,
    pub run_id: RunId,
    /// The number of the run's events before this log's first (0 when the run began here).
    base: u64,
    log: Mutex<Vec<Arc<RecordedEvent>>>,
    /// The number of events pushed; followers wait on it.
    pushed: watch::Sender<u64>,
    stop: CancellationToken,
    lease_lost: AtomicBool,
    /// Set when the terminal event is pushed.
    ended: watch::Sender<bool>,
    /// Set once the run has ended and its log is written.
    done: watch::Sender<bool>,
    /// Set when this process stops adding events (the run is handed off): the recorder writes
    /// what it has and stops.
    sealed: AtomicBool,
    /// The last event the recorder has written (when runs are recorded).
    recorded: watch::Sender<u64>,
    /// The last event written to the store, locked while the log is being written: the
    /// recorder and a delegation's first write (which carries the run's pending events) never
    /// write the same events.
    recording: Arc<tokio::sync::Mutex<u64>>,
    /// Asks the recorder to write what it has now, not at its next tick.
    flush: tokio::sync::Notify,
    /// Until when the run may count on its lease (the heartbeat moves it at each renewal).
    lease_valid_until: Mutex<tokio::time::Instant>,
    /// Clients that rejoined the run's stream, for its metrics.
    rejoins: std::sync::atomic::AtomicU32,
}

tokio::task_local! {
    /// The runs started by the current task (a Lambda invocation), see [`tracking_spawned`].
    static SPAWNED: Arc<Mutex<Vec<Arc<LiveRun>>>>;
}

/// Runs `work` and returns, with its output, the runs it started. Under Lambda an invocation
/// waits for those before it ends, so the environment is never frozen with a run half done.
pub(crate) async fn tracking_spawned<F: std::future::Future>(
    work: F,
) -> (F::Output, Vec<Arc<LiveRun>>) {
    let spawned = Arc::new(Mutex::new(Vec::new()));
    let output = SPAWNED.scope(spawned.clone(), work).await;
    let runs = std::mem::take(
        &mut *spawned
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    (output, runs)
}

fn note_spawned(run: &Arc<LiveRun>) {
    let _ = SPAWNED.try_with(|spawned| {
        spawned
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(run.clone());
    });
}

impl LiveRun {
    pub(crate) fn new(thread_id: ThreadId, run_id: RunId) -> Arc<Self> {
        Self::after(thread_id, run_id, 0)
    }

    /// The log of a run taken over from another runner, whose events up to `base` were sent
    /// (and recorded) before.
    pub(crate) fn after(thread_id: ThreadId, run_id: RunId, base: u64) -> Arc<Self> {
        Arc::new(Self {
            thread_id,
            run_id,
            base,
            log: Mutex::new(Vec::with_capacity(64)),
            pushed: watch::Sender::new(base),
            stop: CancellationToken::new(),
            lease_lost: AtomicBool::new(false),
            ended: watch::Sender::new(false),
            done: watch::Sender::new(false),
            rejoins: std::sync::atomic::AtomicU32::new(0),
            sealed: AtomicBool::new(false),
            recorded: watch::Sender::new(base),
            recording: Arc::new(tokio::sync::Mutex::new(base)),
            flush: tokio::sync::Notify::new(),
            lease_valid_until: Mutex::new(tokio::time::Instant::now()),
        })
    }

    /// The run may count on its lease until `until` (it took or renewed it just before).
    pub(crate) fn hold_lease_until(&self, until: tokio::time::Instant) {
        let mut valid = self
            .lease_valid_until
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *valid = (*valid).max(until);
    }

    /// Whether the run may still count on its lease: no other runner can have taken the run
    /// over yet. Always, once the run has released the lease with its terminal event.
    pub(crate) fn lease_valid(&self) -> bool {
        self.has_ended()
            || tokio::time::Instant::now()
                < *self
                    .lease_valid_until
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The number of the run's events before this log's first.
    pub(crate) fn base(&self) -> u64 {
        self.base
    }

    /// The number of the last event of the run, this log's or before it.
    pub(crate) fn last_seq(&self) -> u64 {
        self.base + self.log().iter().filter(|event| !event.notice).count() as u64
    }

    /// Resolves once the terminal event is in the log (without waking on every event before).
    pub(crate) async fn ended(&self) {
        let mut ended = self.ended.subscribe();
        let _ = ended.wait_for(|ended| *ended).await;
    }

    /// Resolves once the run has ended and its log is written.
    pub(crate) async fn done(&self) {
        let mut done = self.done.subscribe();
        let _ = done.wait_for(|done| *done).await;
    }

    fn log(&self) -> MutexGuard<'_, Vec<Arc<RecordedEvent>>> {
        self.log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Appends an event: numbered, stamped and serialised once, here.
    pub(crate) fn push(&self, event: Event) {
        let (count, terminal) = {
            let mut log = self.log();
            let seq = self.base + log.len() as u64 + 1;
            let recorded = RecordedEvent::new(seq, event, chrono::Utc::now().timestamp_millis());
            let terminal = recorded.terminal;
            log.push(Arc::new(recorded));
            (seq, terminal)
        };
        self.pushed.send_replace(count);
        if terminal {
            self.ended.send_replace(true);
        }
    }

    /// Ends this process's part of the run with `notice` (the run goes on elsewhere): every
    /// stream of the log ends with it; it is not recorded.
    pub(crate) fn push_notice(&self, notice: RecordedEvent) {
        let count = {
            let mut log = self.log();
            log.push(Arc::new(notice));
            self.base + log.len() as u64
        };
        self.pushed.send_replace(count);
        self.ended.send_replace(true);
    }

    /// Events after sequence number `after` (from this log's first when `after` is before
    /// it), and whether the log has ended (its last event is terminal, or a notice).
    pub(crate) fn since(&self, after: u64) -> (Vec<Arc<RecordedEvent>>, bool) {
        let log = self.log();
        let start = usize::try_from(after.saturating_sub(self.base))
            .unwrap_or(usize::MAX)
            .min(log.len());
        let ended = log.last().is_some_and(|event| event.terminal);
        (log[start..].to_vec(), ended)
    }

    /// No event will be added but a notice: the recorder writes what it has and stops.
    pub(crate) fn seal(&self) {
        self.sealed.store(true, Ordering::Relaxed);
        self.ended.send_replace(true);
    }

    /// The recorder's work is over: the run's terminal event is in, or the log is sealed.
    pub(crate) fn closed(&self) -> bool {
        self.sealed.load(Ordering::Relaxed) || self.has_ended()
    }

    /// The last event the recorder has written.
    pub(crate) fn recorded_seq(&self) -> u64 {
        *self.recorded.borrow()
    }

    /// The recorder wrote every event up to `seq`.
    pub(crate) fn note_recorded(&self, seq: u64) {
        self.recorded.send_replace(seq);
    }

    /// The last event written to the store, held until the writer lets go: no one else writes
    /// the log meanwhile. The writer moves it on (and calls [`Self::note_recorded`]) once its
    /// write is stored.
    pub(crate) async fn recording(&self) -> tokio::sync::OwnedMutexGuard<u64> {
        self.recording.clone().lock_owned().await
    }

    /// Resolves when the recorder is asked to write now.
    pub(crate) async fn flush_requested(&self) {
        self.flush.notified().await;
    }

    /// Has the recorder write every event so far now, and waits (up to `within`) until it
    /// has: what a stored checkpoint says was sent is then in the event log.
    pub(crate) async fn flush(&self, within: std::time::Duration) -> bool {
        let target = self.last_seq();
        let mut recorded = self.recorded.subscribe();
        if *recorded.borrow() >= target {
            return true;
        }
        self.flush.notify_one();
        tokio::time::timeout(within, recorded.wait_for(|seq| *seq >= target))
            .await
            .is_ok_and(|waited| waited.is_ok())
    }

    /// A client rejoins the run's stream (the events route).
    pub(crate) fn note_rejoin(&self) {
        self.rejoins
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    pub(crate) fn rejoins(&self) -> u32 {
        self.rejoins.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub(crate) fn has_ended(&self) -> bool {
        self.log().last().is_some_and(|event| event.terminal)
    }

    /// The run's events after `after`, in batches of what has arrived since the last batch was
    /// taken, until the terminal event.
    pub(crate) fn follow(
        self: Arc<Self>,
        after: u64,
    ) -> impl Stream<Item = Vec<Arc<RecordedEvent>>> {
        let mut changes = self.pushed.subscribe();
        async_stream::stream! {
            let mut cursor = after;
            loop {
                changes.mark_unchanged();
                let (batch, ended) = self.since(cursor);
                if let Some(last) = batch.last() {
                    cursor = last.seq;
                    yield batch;
                }
                if ended || changes.changed().await.is_err() {
                    break;
                }
            }
        }
    }

    pub(crate) fn cancel(&self) {
        self.stop.cancel();
    }

    pub(crate) fn lose_lease(&self) {
        self.lease_lost.store(true, Ordering::Relaxed);
        self.stop.cancel();
    }

    /// Resolves when the run is told to stop.
    pub(crate) fn stop_token(&self) -> &CancellationToken {
        &self.stop
    }

    pub(crate) fn stop_reason(&self) -> Option<StopReason> {
        if !self.stop.is_cancelled() {
            None
        } else if self.lease_lost.load(Ordering::Relaxed) {
            Some(StopReason::LeaseLost)
        } else {
            Some(StopReason::Cancelled)
        }
    }
}

type RunKey = (ThreadId, RunId);

/// The runs in flight in this process.
pub struct LiveRuns {
    registry: Mutex<Registry>,
    /// Runs and holds together; [`LiveRuns::idle`] waits for zero.
    count: watch::Sender<usize>,
    /// When the process last went from idle to busy or back (Unix seconds): AgentCore's
    /// `time_of_last_update`, stamped at the change itself so no change between two pings is
    /// lost.
    changed_at: AtomicI64,
}

#[derive(Default)]
struct Registry {
    runs: HashMap<RunKey, Arc<LiveRun>>,
    /// Work about to become a run: a detached run accepted and not started yet.
    holds: usize,
}

/// Whether any run is in flight, and since when that has been so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Activity {
    pub busy: bool,
    pub since_secs: i64,
}

/// Counts as a run in flight until dropped (see [`LiveRuns::hold`]).
pub(crate) struct Hold(Arc<LiveRuns>);

impl Drop for Hold {
    fn drop(&mut self) {
        let mut registry = self.0.registry();
        registry.holds = registry.holds.saturating_sub(1);
        self.0.publish(&registry);
    }
}

impl Default for LiveRuns {
    fn default() -> Self {
        Self {
            registry: Mutex::new(Registry::default()),
            count: watch::Sender::new(0),
            changed_at: AtomicI64::new(chrono::Utc::now().timestamp()),
        }
    }
}

impl LiveRuns {
    fn registry(&self) -> MutexGuard<'_, Registry> {
        self.registry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Called with the registry locked, so counts are published in the order they happened.
    fn publish(&self, registry: &Registry) {
        let count = registry.runs.len() + registry.holds;
        let before = self.count.send_replace(count);
        if (before == 0) != (count == 0) {
            self.changed_at
                .store(chrono::Utc::now().timestamp(), Ordering::Relaxed);
        }
    }

    pub(crate) fn insert(&self, run: Arc<LiveRun>) {
        note_spawned(&run);
        let mut registry = self.registry();
        registry
            .runs
            .insert((run.thread_id.clone(), run.run_id.clone()), run);
        self.publish(&registry);
    }

    pub(crate) fn remove(&self, run: &LiveRun) {
        let mut registry = self.registry();
        let key = (run.thread_id.clone(), run.run_id.clone());
        if registry
            .runs
            .get(&key)
            .is_some_and(|held| std::ptr::eq(&**held, run))
        {
            registry.runs.remove(&key);
        }
        self.publish(&registry);
        drop(registry);
        run.done.send_replace(true);
    }

    pub(crate) fn get(&self, thread_id: &ThreadId, run_id: &RunId) -> Option<Arc<LiveRun>> {
        self.registry()
            .runs
            .get(&(thread_id.clone(), run_id.clone()))
            .cloned()
    }

    /// Counts as a run in flight until the guard is dropped: a detached run between its
    /// acceptance and its start, which a stop must wait for and AgentCore must see as work.
    pub(crate) fn hold(self: &Arc<Self>) -> Hold {
        let mut registry = self.registry();
        registry.holds += 1;
        self.publish(&registry);
        Hold(self.clone())
    }

    /// Tells every run in flight to stop, as the cancel route does; returns how many.
    pub(crate) fn stop_all(&self) -> usize {
        let runs: Vec<Arc<LiveRun>> = self.registry().runs.values().cloned().collect();
        for run in &runs {
            run.cancel();
        }
        runs.len()
    }

    pub(crate) fn activity(&self) -> Activity {
        Activity {
            busy: *self.count.borrow() > 0,
            since_secs: self.changed_at.load(Ordering::Relaxed),
        }
    }

    /// Runs (and holds) in flight.
    pub fn len(&self) -> usize {
        *self.count.borrow()
    }

    #[cfg(any(test, feature = "test-utils"))]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Resolves once no run is in flight and every run's log is written.
    pub async fn idle(&self) {
        let mut count = self.count.subscribe();
        let _ = count.wait_for(|count| *count == 0).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    fn ids() -> (ThreadId, RunId) {
        (
            ThreadId::parse("t", 128).unwrap(),
            RunId::parse("r", 128).unwrap(),
        )
    }

    fn step(name: &str) -> Event {
        Event::StepStarted {
            step_name: name.into(),
        }
    }

    #[tokio::test]
    async fn followers_get_every_event_once_in_order_from_where_they_join() {
        let (thread_id, run_id) = ids();
        let run = LiveRun::new(thread_id.clone(), run_id.clone());
        run.push(step("a"));
        run.push(step("b"));
        let late = tokio::spawn(run.clone().follow(1).collect::<Vec<_>>());
        let early = tokio::spawn(run.clone().follow(0).collect::<Vec<_>>());
        tokio::task::yield_now().await;
        run.push(step("c"));
        run.push(Event::RunFinished {
            thread_id,
            run_id,
            outcome: None,
            usage: Default::default(),
        });
        let seqs = |batches: Vec<Vec<Arc<RecordedEvent>>>| {
            batches
                .into_iter()
                .flatten()
                .map(|event| event.seq)
                .collect::<Vec<_>>()
        };
        assert_eq!(seqs(early.await.unwrap()), [1, 2, 3, 4]);
        assert_eq!(seqs(late.await.unwrap()), [2, 3, 4]);
        assert!(run.has_ended());
    }

    #[tokio::test]
    async fn a_task_learns_which_runs_it_started() {
        let runs = LiveRuns::default();
        let (thread_id, run_id) = ids();
        let run = LiveRun::new(thread_id, run_id);
        let ((), spawned) = tracking_spawned(async { runs.insert(run.clone()) }).await;
        assert_eq!(spawned.len(), 1);
        let waiter = tokio::spawn(async move { spawned[0].done().await });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        runs.remove(&run);
        waiter.await.unwrap();
    }

    #[tokio::test]
    async fn idle_waits_for_the_last_run() {
        let runs = Arc::new(LiveRuns::default());
        let (thread_id, run_id) = ids();
        let run = LiveRun::new(thread_id, run_id);
        runs.insert(run.clone());
        let waiter = tokio::spawn({
            let runs = runs.clone();
            async move { runs.idle().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        runs.remove(&run);
        waiter.await.unwrap();
        assert!(runs.is_empty());
    }

    #[tokio::test]
    async fn a_hold_counts_as_work_and_changes_are_stamped_when_they_happen() {
        let runs = Arc::new(LiveRuns::default());
        assert!(!runs.activity().busy);
        runs.changed_at.store(0, Ordering::Relaxed);
        let hold = runs.hold();
        let busy = runs.activity();
        assert!(busy.busy && busy.since_secs > 0);
        let (thread_id, run_id) = ids();
        let run = LiveRun::new(thread_id, run_id);
        runs.insert(run.clone());
        drop(hold);
        runs.changed_at.store(1, Ordering::Relaxed);
        assert_eq!(
            runs.activity(),
            Activity {
                busy: true,
                since_secs: 1
            },
            "still busy: no change"
        );
        assert_eq!(runs.stop_all(), 1);
        assert_eq!(run.stop_reason(), Some(StopReason::Cancelled));
        runs.remove(&run);
        let idle = runs.activity();
        assert!(!idle.busy && idle.since_secs > 1);
        runs.idle().await;
    }
}
