//! The in-memory store: local runs and tests. Same semantics as the DynamoDB store, lost on
//! restart.

use super::{
    CancelState, DayUsage, Deletion, EventCursor, EventPage, HistoryPage, Lease, ModelUsage,
    NewThread, Principal, Pulse, QuotaExceeded, QuotaLimits, Reservation, RunEnd, RunRef, RunStart,
    Settlement, StoreError, StoredThread, TaskRecord, TaskState, ThreadActivity, ThreadList,
    ThreadStore, ThreadSummary, TimedMessage, TimedPage, message_time,
};
use crate::protocol::events::RecordedEvent;
use crate::protocol::{Message, RunId, ThreadId};
use async_trait::async_trait;
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
    lease: Option<HeldLease>,
    /// Event logs by run id: each attempt's start time and its events in order.
    runs: HashMap<RunId, Vec<(i64, Vec<Bytes>)>>,
}

struct HeldLease {
    run_id: RunId,
    until_ms: i64,
    cancel_requested: bool,
}

impl Record {
    fn live_lease(&self) -> Option<&HeldLease> {
        self.lease
            .as_ref()
            .filter(|lease| lease.until_ms > now_ms())
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
    pub fn with_events_ttl_hours(self, hours: u32) -> Self {
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

/// A list cursor: the last entry's update time and id; the list continues after it.
fn list_cursor(summary: &ThreadSummary) -> String {
    format!("{}.{}", summary.updated_at_ms, summary.thread_id)
}

fn parse_list_cursor(cursor: &str) -> Result<(i64, ThreadId), StoreError> {
    let (updated, id) = cursor.split_once('.').ok_or(StoreError::BadCursor)?;
    let updated = updated.parse().map_err(|_| StoreError::BadCursor)?;
    let id =
        ThreadId::parse(id, crate::protocol::ids::MAX_ID_LEN).map_err(|_| StoreError::BadCursor)?;
    Ok((updated, id))
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Whether `lease` still holds `record`.
fn holds(record: &Record, lease: &Lease) -> bool {
    record.version == lease.version
        && matches!(&record.lease, Some(held) if held.run_id == lease.run_id)
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

#[async_trait]
impl ThreadStore for MemoryStore {
    async fn load(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
    ) -> Result<Option<StoredThread>, StoreError> {
        Ok(self
            .threads()
            .get(thread_id)
            .filter(|record| &record.owner == owner)
            .map(|record| StoredThread {
                messages: record.messages.clone(),
                message_at_ms: record.message_at_ms.clone(),
                state: record.state.clone(),
                version: record.version,
                created_at_ms: record.created_at_ms,
                active_run: record.live_lease().map(|lease| lease.run_id.clone()),
                interrupts: record.interrupts.clone(),
                title: record.title.clone(),
            }))
    }

    async fn begin_run(&self, start: RunStart<'_>) -> Result<Lease, StoreError> {
        super::check_sizes(start.new_messages, start.state)?;
        let now = now_ms();
        let mut threads = self.threads();
        let expected_version = start.loaded.map(|thread| thread.version);
        let held = HeldLease {
            run_id: start.run_id.clone(),
            until_ms: start.lease_expires_at_ms,
            cancel_requested: false,
        };
        let times = (0..start.new_messages.len())
            .map(|index| message_time(start.copied_at_ms, index, start.at_ms));
        let record = match (threads.get_mut(start.thread_id), expected_version) {
            (None, None) => threads.entry(start.thread_id.clone()).or_insert(Record {
                owner: start.owner.clone(),
                messages: start.new_messages.to_vec(),
                message_at_ms: times.collect(),
                state: start.state.cloned(),
                interrupts: None,
                version: 1,
                created_at_ms: now,
                updated_at_ms: now,
                title: start.title.map(str::to_owned),
                lease: Some(held),
                runs: HashMap::new(),
            }),
            (Some(record), _) if &record.owner != start.owner => return Err(StoreError::NotFound),
            (Some(record), Some(expected)) if record.version == expected => {
                if record.live_lease().is_some() {
                    return Err(StoreError::Conflict);
                }
                record.messages.extend_from_slice(start.new_messages);
                record.message_at_ms.extend(times);
                if let Some(state) = start.state {
                    record.state = Some(state.clone());
                }
                record.version += 1;
                record.lease = Some(held);
                record.updated_at_ms = now;
                if record.title.is_none() {
                    record.title = start.title.map(str::to_owned);
                }
                record
            }
            // Created or changed by someone else since our load.
            _ => return Err(StoreError::Conflict),
        };
        Ok(Lease {
            owner: start.owner.clone(),
            thread_id: start.thread_id.clone(),
            run_id: start.run_id.clone(),
            version: record.version,
            created_at_ms: record.created_at_ms,
            next_seq: record.messages.len(),
            started_at_ms: now,
            input_messages: start.new_messages.len(),
        })
    }

    async fn finish_run(
        &self,
        lease: &Lease,
        new_messages: &[Message],
        state: Option<&Value>,
        interrupts: Option<&Value>,
        at_ms: i64,
    ) -> Result<(), StoreError> {
        super::check_sizes(new_messages, state)?;
        let mut threads = self.threads();
        let record = leased(&mut threads, lease)?;
        record.messages.extend_from_slice(new_messages);
        record
            .message_at_ms
            .extend(std::iter::repeat_n(at_ms, new_messages.len()));
        if let Some(state) = state {
            record.state = Some(state.clone());
        }
        record.interrupts = interrupts.cloned();
        record.version += 1;
        record.lease = None;
        record.updated_at_ms = now_ms();
        let end = RunEnd {
            thread_id: lease.thread_id.clone(),
            created_at_ms: record.created_at_ms,
            message_count: record.messages.len(),
        };
        drop(threads);
        if lease.input_messages + new_messages.len() > 0 {
            self.accounts()
                .run_ends
                .insert((lease.owner.clone(), lease.run_id.clone()), end);
        }
        Ok(())
    }

    async fn history(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        after: Option<&str>,
        limit: usize,
    ) -> Result<HistoryPage, StoreError> {
        let threads = self.threads();
        let record = threads
            .get(thread_id)
            .filter(|record| &record.owner == owner)
            .ok_or(StoreError::NotFound)?;
        let start = match after {
            None => 0,
            Some(cursor) => cursor.parse::<usize>().map_err(|_| StoreError::BadCursor)?,
        };
        let start = start.min(record.messages.len());
        let end = start.saturating_add(limit).min(record.messages.len());
        let messages = record.messages.get(start..end).unwrap_or_default().to_vec();
        Ok(HistoryPage {
            messages,
            state: record.state.clone(),
            next: (end < record.messages.len()).then(|| end.to_string()),
            active_run: record.live_lease().map(|lease| lease.run_id.clone()),
            title: record.title.clone(),
        })
    }

    async fn timed_messages(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        before_seq: Option<u64>,
        limit: usize,
    ) -> Result<TimedPage, StoreError> {
        let threads = self.threads();
        let record = threads
            .get(thread_id)
            .filter(|record| &record.owner == owner)
            .ok_or(StoreError::NotFound)?;
        let len = record.messages.len();
        let end = before_seq.map_or(len, |before| {
            usize::try_from(before).map_or(len, |before| before.min(len))
        });
        let start = end.saturating_sub(limit);
        let messages = (start..end)
            .rev()
            .filter_map(|seq| {
                Some(TimedMessage {
                    seq: seq as u64,
                    at_ms: record
                        .message_at_ms
                        .get(seq)
                        .copied()
                        .unwrap_or(record.created_at_ms),
                    message: record.messages.get(seq)?.clone(),
                })
            })
            .collect();
        Ok(TimedPage {
            messages,
            more: start > 0,
        })
    }

    async fn activity(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
    ) -> Result<ThreadActivity, StoreError> {
        let threads = self.threads();
        Ok(
            match threads
                .get(thread_id)
                .filter(|record| &record.owner == owner)
            {
                None => ThreadActivity::Missing,
                Some(record) => match record.live_lease() {
                    Some(lease) => ThreadActivity::Running {
                        created_at_ms: record.created_at_ms,
                        run_id: lease.run_id.clone(),
                    },
                    None => ThreadActivity::Idle {
                        created_at_ms: record.created_at_ms,
                    },
                },
            },
        )
    }

    async fn pulse(&self, lease: &Lease, renew_until_ms: Option<i64>) -> Result<Pulse, StoreError> {
        let mut threads = self.threads();
        let record = leased(&mut threads, lease)?;
        let held = record.lease.as_mut().ok_or(StoreError::LeaseLost)?;
        if let Some(until) = renew_until_ms {
            held.until_ms = held.until_ms.max(until);
        }
        Ok(Pulse {
            cancel_requested: held.cancel_requested,
        })
    }

    async fn request_cancel(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        run_id: &RunId,
    ) -> Result<CancelState, StoreError> {
        let mut threads = self.threads();
        let record = threads
            .get_mut(thread_id)
            .filter(|record| &record.owner == owner)
            .ok_or(StoreError::NotFound)?;
        let now = now_ms();
        if let Some(held) = record
            .lease
            .as_mut()
            .filter(|held| &held.run_id == run_id && held.until_ms > now)
        {
            held.cancel_requested = true;
            return Ok(CancelState::Requested);
        }
        if record.runs.contains_key(run_id) {
            Ok(CancelState::Ended)
        } else {
            Err(StoreError::NotFound)
        }
    }

    async fn append_events(
        &self,
        lease: &Lease,
        first_seq: u64,
        events: &[Bytes],
    ) -> Result<(), StoreError> {
        let mut threads = self.threads();
        if first_seq == 1 {
            // A run's first write: once per run, drop every thread's expired logs.
            let expired_before = now_ms().saturating_sub(self.events_ttl_ms);
            for record in threads.values_mut() {
                record.runs.retain(|_, attempts| {
                    attempts.retain(|(started, _)| *started >= expired_before);
                    !attempts.is_empty()
                });
            }
        }
        let Some(record) = threads
            .get_mut(&lease.thread_id)
            .filter(|record| record.created_at_ms == lease.created_at_ms)
        else {
            return Err(StoreError::NotFound);
        };
        let attempts = record.runs.entry(lease.run_id.clone()).or_default();
        if attempts.last().map(|(started, _)| *started) != Some(lease.started_at_ms) {
            attempts.push((lease.started_at_ms, Vec::new()));
        }
        if let Some((_, log)) = attempts.last_mut() {
            // Sequence numbers are contiguous; a repeated batch (a retried write) is ignored.
            let have = log.len() as u64;
            let skip = have.saturating_sub(first_seq.saturating_sub(1));
            let skip = usize::try_from(skip).unwrap_or(usize::MAX);
            log.extend(events.iter().skip(skip).cloned());
        }
        Ok(())
    }

    async fn read_events(
        &self,
        run: &RunRef,
        from: Option<EventCursor>,
    ) -> Result<EventPage, StoreError> {
        let threads = self.threads();
        let Some(attempts) = threads
            .get(&run.thread_id)
            .filter(|record| record.created_at_ms == run.created_at_ms)
            .and_then(|record| record.runs.get(&run.run_id))
        else {
            return Ok(EventPage::default());
        };
        let attempt = match from {
            Some(cursor) => attempts
                .iter()
                .find(|(started, _)| *started == cursor.started_at_ms),
            None => attempts.last(),
        };
        let Some((started_at_ms, log)) = attempt else {
            return Ok(EventPage::default());
        };
        let next_seq = from.map_or(1, |cursor| cursor.next_seq.max(1));
        let skip = usize::try_from(next_seq - 1).unwrap_or(usize::MAX);
        let events: Vec<RecordedEvent> = log
            .iter()
            .enumerate()
            .skip(skip)
            .map(|(index, json)| RecordedEvent::stored(index as u64 + 1, json.clone()))
            .collect();
        Ok(EventPage {
            next: Some(EventCursor {
                started_at_ms: *started_at_ms,
                next_seq: log.len() as u64 + 1,
            }),
            events,
        })
    }

    async fn list_threads(
        &self,
        owner: &Principal,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<ThreadList, StoreError> {
        let after = cursor.map(parse_list_cursor).transpose()?;
        let threads = self.threads();
        let mut mine: Vec<ThreadSummary> = threads
            .iter()
            .filter(|(_, record)| &record.owner == owner)
            .map(|(thread_id, record)| ThreadSummary {
                thread_id: thread_id.clone(),
                title: record.title.clone(),
                created_at_ms: record.created_at_ms,
                updated_at_ms: record.updated_at_ms,
                message_count: record.messages.len() as u64,
                active_run: record.live_lease().map(|lease| lease.run_id.clone()),
            })
            .collect();
        drop(threads);
        // Newest first; the id breaks ties, as DynamoDB's index does.
        let order = |summary: &ThreadSummary| {
            (
                std::cmp::Reverse(summary.updated_at_ms),
                std::cmp::Reverse(summary.thread_id.as_str().to_owned()),
            )
        };
        mine.sort_by_key(order);
        if let Some((updated, id)) = after {
            let position = (
                std::cmp::Reverse(updated),
                std::cmp::Reverse(id.as_str().to_owned()),
            );
            mine.retain(|summary| order(summary) > position);
        }
        let more = mine.len() > limit;
        mine.truncate(limit);
        Ok(ThreadList {
            next: more.then(|| mine.last().map(list_cursor)).flatten(),
            threads: mine,
        })
    }

    async fn set_title(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        title: &str,
    ) -> Result<(), StoreError> {
        let mut threads = self.threads();
        let record = threads
            .get_mut(thread_id)
            .filter(|record| &record.owner == owner)
            .ok_or(StoreError::NotFound)?;
        record.title = Some(title.to_owned());
        Ok(())
    }

    async fn delete_thread(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
    ) -> Result<Deletion, StoreError> {
        let mut threads = self.threads();
        let Some(record) = threads.get(thread_id) else {
            return Ok(Deletion::Absent);
        };
        if &record.owner != owner {
            return Err(StoreError::NotFound);
        }
        if record.live_lease().is_some() {
            return Err(StoreError::Conflict);
        }
        let created_at_ms = record.created_at_ms;
        threads.remove(thread_id);
        drop(threads);
        self.accounts().run_ends.retain(|(run_owner, _), end| {
            !(run_owner == owner
                && &end.thread_id == thread_id
                && end.created_at_ms == created_at_ms)
        });
        Ok(Deletion::Deleted)
    }

    async fn create_thread(&self, thread: NewThread<'_>) -> Result<(), StoreError> {
        super::check_sizes(thread.messages, thread.state)?;
        let mut threads = self.threads();
        if threads.contains_key(thread.thread_id) {
            return Err(StoreError::Conflict);
        }
        let now = now_ms();
        threads.insert(
            thread.thread_id.clone(),
            Record {
                owner: thread.owner.clone(),
                messages: thread.messages.to_vec(),
                message_at_ms: (0..thread.messages.len())
                    .map(|index| message_time(thread.copied_at_ms, index, thread.at_ms))
                    .collect(),
                state: thread.state.cloned(),
                interrupts: None,
                version: 1,
                created_at_ms: now,
                updated_at_ms: now,
                title: thread.title.map(str::to_owned),
                lease: None,
                runs: HashMap::new(),
            },
        );
        Ok(())
    }

    async fn run_end(
        &self,
        owner: &Principal,
        run_id: &RunId,
    ) -> Result<Option<RunEnd>, StoreError> {
        Ok(self
            .accounts()
            .run_ends
            .get(&(owner.clone(), run_id.clone()))
            .cloned())
    }

    async fn reserve(
        &self,
        owner: &Principal,
        limits: &QuotaLimits,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Reservation, StoreError> {
        let day = super::usage_day(now);
        let reserved_tokens = limits.reservation();
        let reservation = Reservation {
            owner: owner.clone(),
            day: day.clone(),
            reserved_tokens,
        };
        if limits.is_unlimited() {
            return Ok(reservation);
        }
        let mut accounts = self.accounts();
        let spent = accounts
            .days
            .get(&(owner.clone(), day.clone()))
            .map_or(0, |usage| usage.spent);
        if let Some(limit) = limits.tokens_per_day {
            let cap = i64::try_from(limit).unwrap_or(i64::MAX)
                - i64::try_from(reserved_tokens.max(1)).unwrap_or(i64::MAX);
            if cap < 0 || spent > cap {
                return Err(StoreError::QuotaExceeded(QuotaExceeded::TokensPerDay {
                    limit,
                    retry_after_secs: super::secs_to_next_day(now),
                }));
            }
        }
        let minute = now.format("%Y-%m-%dT%H:%M").to_string();
        if let Some(limit) = limits.runs_per_minute {
            let admitted = match accounts.minutes.get(owner) {
                Some((current, runs)) if current == &minute => *runs,
                _ => 0,
            };
            if admitted >= limit {
                return Err(StoreError::QuotaExceeded(QuotaExceeded::RunsPerMinute {
                    limit,
                    retry_after_secs: super::secs_to_next_minute(now),
                }));
            }
            accounts
                .minutes
                .insert(owner.clone(), (minute, admitted + 1));
        }
        accounts.days.entry((owner.clone(), day)).or_default().spent +=
            i64::try_from(reserved_tokens).unwrap_or(i64::MAX);
        Ok(reservation)
    }

    async fn settle(&self, settlement: Settlement<'_>) -> Result<(), StoreError> {
        let reservation = settlement.reservation;
        let mut accounts = self.accounts();
        let usage = accounts
            .days
            .entry((reservation.owner.clone(), reservation.day.clone()))
            .or_default();
        let used = settlement.run.map_or(0, |run| run.input + run.output);
        usage.spent += i64::try_from(used).unwrap_or(i64::MAX)
            - i64::try_from(reservation.reserved_tokens).unwrap_or(i64::MAX);
        if let Some(run) = settlement.run {
            let model = usage
                .models
                .entry((run.provider.to_owned(), run.model.to_owned()))
                .or_insert_with(|| ModelUsage {
                    provider: run.provider.to_owned(),
                    model: run.model.to_owned(),
                    ..ModelUsage::default()
                });
            model.runs += 1;
            model.input_tokens += run.input;
            model.output_tokens += run.output;
            model.reasoning_tokens += run.reasoning;
            model.cached_input_tokens += run.cached_input;
        }
        Ok(())
    }

    async fn usage(
        &self,
        owner: &Principal,
        from: &str,
        to: &str,
    ) -> Result<Vec<DayUsage>, StoreError> {
        let accounts = self.accounts();
        let mut days: Vec<DayUsage> = accounts
            .days
            .iter()
            .filter(|((who, day), usage)| {
                who == owner
                    && day.as_str() >= from
                    && day.as_str() <= to
                    && !usage.models.is_empty()
            })
            .map(|((_, day), usage)| DayUsage {
                day: day.clone(),
                models: usage.models.values().cloned().collect(),
            })
            .collect();
        days.sort_by(|a, b| a.day.cmp(&b.day));
        Ok(days)
    }

    async fn create_task(&self, task: &TaskRecord) -> Result<(), StoreError> {
        let now = now_ms();
        let mut accounts = self.accounts();
        // Expired records are dropped here, as DynamoDB's TTL would, so their ids are free.
        accounts.tasks.retain(|_, (_, expires)| *expires > now);
        let key = (task.owner.clone(), task.run_id.clone());
        if accounts.tasks.contains_key(&key) {
            return Err(StoreError::Conflict);
        }
        let mut task = task.clone();
        if let TaskState::Failed { message, .. } = &mut task.state {
            *message = super::task_message(message);
        }
        accounts
            .tasks
            .insert(key, (task, now.saturating_add(self.events_ttl_ms)));
        Ok(())
    }

    async fn claim_task(&self, owner: &Principal, run_id: &RunId) -> Result<bool, StoreError> {
        let now = now_ms();
        let mut accounts = self.accounts();
        match accounts
            .tasks
            .get_mut(&(owner.clone(), run_id.clone()))
            .filter(|(_, expires)| *expires > now)
        {
            Some((task, _)) if task.state == TaskState::Accepted => {
                task.state = TaskState::Started;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn fail_task(
        &self,
        owner: &Principal,
        run_id: &RunId,
        code: &str,
        message: &str,
    ) -> Result<(), StoreError> {
        let now = now_ms();
        let mut accounts = self.accounts();
        let (task, _) = accounts
            .tasks
            .get_mut(&(owner.clone(), run_id.clone()))
            .filter(|(_, expires)| *expires > now)
            .ok_or(StoreError::NotFound)?;
        if !matches!(task.state, TaskState::Failed { .. }) {
            task.state = TaskState::Failed {
                code: code.to_owned(),
                message: super::task_message(message),
            };
        }
        Ok(())
    }

    async fn task(
        &self,
        owner: &Principal,
        run_id: &RunId,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let now = now_ms();
        Ok(self
            .accounts()
            .tasks
            .get(&(owner.clone(), run_id.clone()))
            .filter(|(_, expires)| *expires > now)
            .map(|(task, _)| task.clone()))
    }

    fn describe(&self) -> String {
        "in-memory thread store (lost on restart; set THREADS_TABLE for DynamoDB)".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    async fn run_with_log(store: &MemoryStore, owner: &Principal, run: &str) -> RunRef {
        let thread = ThreadId::new_uuid();
        let lease = store
            .begin_run(RunStart {
                owner,
                thread_id: &thread,
                run_id: &RunId::parse(run, 128).unwrap(),
                loaded: None,
                lease_expires_at_ms: now_ms() + 60_000,
                new_messages: &[],
                state: None,
                title: None,
                at_ms: now_ms(),
                copied_at_ms: &[],
            })
            .await
            .unwrap();
        let events = [Bytes::from_static(br#"{"type":"RUN_STARTED"}"#)];
        store.append_events(&lease, 1, &events).await.unwrap();
        lease.run_ref()
    }

    #[tokio::test]
    async fn run_event_logs_expire_after_their_ttl() {
        let store = MemoryStore::new().with_events_ttl(Duration::from_millis(50));
        let owner = Principal::new("alice");
        let old = run_with_log(&store, &owner, "old").await;
        assert_eq!(store.read_events(&old, None).await.unwrap().events.len(), 1);
        tokio::time::sleep(Duration::from_millis(80)).await;
        // The next run's first write drops the logs older than the TTL, and keeps its own.
        let new = run_with_log(&store, &owner, "new").await;
        assert!(
            store
                .read_events(&old, None)
                .await
                .unwrap()
                .events
                .is_empty()
        );
        assert_eq!(store.read_events(&new, None).await.unwrap().events.len(), 1);
    }
}
