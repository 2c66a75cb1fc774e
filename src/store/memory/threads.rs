//! The in-memory store's threads as wholes: load, create (forks), the caller's list and shelf,
//! titles, archiving, deletion, and where runs ended.

use super::{MemoryStore, Record, now_ms, owned_mut};
use crate::auth::Principal;
use crate::protocol::{RunId, ThreadId};
use crate::store::{
    Archived, Deletion, NewThread, RunEnd, ShelfPage, ShelfQuery, ShelvedThread, StoreError,
    StoredThread, ThreadActivity, ThreadList, ThreadShelf, ThreadSummary, Threads, check_sizes,
    message_time,
};
use async_trait::async_trait;

#[async_trait]
impl Threads for MemoryStore {
    async fn load(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
    ) -> Result<Option<StoredThread>, StoreError> {
        Ok(self.owned_from(owner, thread_id, |_| 0))
    }

    async fn load_recent(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
    ) -> Result<Option<StoredThread>, StoreError> {
        Ok(self.owned_from(owner, thread_id, |record| {
            record
                .checkpoint
                .as_ref()
                .map_or(0, |checkpoint| checkpoint.covers)
        }))
    }

    async fn activity(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
    ) -> Result<ThreadActivity, StoreError> {
        let threads = self.threads();
        let Some(record) = threads
            .get(thread_id)
            .filter(|record| &record.owner == owner)
        else {
            return Ok(ThreadActivity::Missing);
        };
        let created_at_ms = record.created_at_ms;
        Ok(match (record.live_lease(), record.stalled_run()) {
            (Some(lease), _) => ThreadActivity::Running {
                created_at_ms,
                run_id: lease.run_id.clone(),
            },
            (None, Some(run_id)) => ThreadActivity::Stalled {
                created_at_ms,
                run_id,
            },
            (None, None) => ThreadActivity::Idle { created_at_ms },
        })
    }

    async fn create_thread(&self, thread: NewThread<'_>) -> Result<(), StoreError> {
        check_sizes(thread.messages, thread.state)?;
        let mut threads = self.threads();
        if threads.contains_key(thread.thread_id) {
            return Err(StoreError::Conflict);
        }
        let record = Record {
            messages: thread.messages.to_vec(),
            message_at_ms: (0..thread.messages.len())
                .map(|index| message_time(thread.copied_at_ms, index, thread.at_ms))
                .collect(),
            state: thread.state.cloned(),
            title: thread.title.map(str::to_owned),
            ..Record::new(thread.owner.clone(), now_ms())
        };
        threads.insert(thread.thread_id.clone(), record);
        Ok(())
    }

    async fn list_threads(
        &self,
        owner: &Principal,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<ThreadList, StoreError> {
        let (page, next) =
            newest_first(self.summaries(owner), limit, cursor, |(summary, _)| summary)?;
        Ok(ThreadList {
            threads: page.into_iter().map(|(summary, _)| summary).collect(),
            next,
        })
    }

    async fn set_title(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        title: &str,
    ) -> Result<(), StoreError> {
        let mut threads = self.threads();
        owned_mut(&mut threads, owner, thread_id)?.title = Some(title.to_owned());
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
        // The thread and its sub-agents' threads, theirs too, whatever they are doing.
        let mut removed = Vec::new();
        let mut doomed = vec![thread_id.clone()];
        while let Some(id) = doomed.pop() {
            if let Some(record) = threads.remove(&id).filter(|record| &record.owner == owner) {
                doomed.extend(record.children.iter().cloned());
                removed.push((id, record.created_at_ms));
            }
        }
        drop(threads);
        let mut accounts = self.accounts();
        accounts.run_ends.retain(|(run_owner, _), end| {
            !(run_owner == owner
                && removed
                    .iter()
                    .any(|(id, created)| &end.thread_id == id && end.created_at_ms == *created))
        });
        accounts
            .a2a_tasks
            .retain(|_, task| !(&task.owner == owner && &task.thread_id == thread_id));
        Ok(Deletion::Deleted)
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

    fn describe(&self) -> String {
        "in-memory thread store (lost on restart; set THREADS_TABLE for DynamoDB)".to_owned()
    }
}

#[async_trait]
impl ThreadShelf for MemoryStore {
    async fn shelf(
        &self,
        owner: &Principal,
        query: ShelfQuery<'_>,
    ) -> Result<ShelfPage, StoreError> {
        let mut mine = self.summaries(owner);
        if query.archived == Archived::Hidden {
            mine.retain(|(_, archived)| !archived);
        }
        let (page, next) = newest_first(mine, query.limit, query.cursor, |(summary, _)| summary)?;
        Ok(ShelfPage {
            threads: page
                .into_iter()
                .map(|(summary, archived)| ShelvedThread { summary, archived })
                .collect(),
            next,
        })
    }

    async fn set_archived(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        archived: bool,
    ) -> Result<(), StoreError> {
        let mut threads = self.threads();
        owned_mut(&mut threads, owner, thread_id)?.archived = archived;
        Ok(())
    }
}

impl MemoryStore {
    /// Every thread of `owner`'s, as its list entry, with whether it is archived.
    fn summaries(&self, owner: &Principal) -> Vec<(ThreadSummary, bool)> {
        self.threads()
            .iter()
            .filter(|(_, record)| &record.owner == owner)
            .map(|(thread_id, record)| {
                let summary = ThreadSummary {
                    thread_id: thread_id.clone(),
                    title: record.title.clone(),
                    created_at_ms: record.created_at_ms,
                    updated_at_ms: record.updated_at_ms,
                    message_count: record.messages.len() as u64,
                    active_run: record.active_run(),
                };
                (summary, record.archived)
            })
            .collect()
    }
}

/// `entries` newest first (the id breaks ties, as DynamoDB's index does), the `limit` after
/// `cursor`, and the cursor of the page after them.
fn newest_first<T>(
    mut entries: Vec<T>,
    limit: usize,
    cursor: Option<&str>,
    summary: impl Fn(&T) -> &ThreadSummary,
) -> Result<(Vec<T>, Option<String>), StoreError> {
    let after = cursor.map(parse_list_cursor).transpose()?;
    let order = |summary: &ThreadSummary| {
        (
            std::cmp::Reverse(summary.updated_at_ms),
            std::cmp::Reverse(summary.thread_id.as_str().to_owned()),
        )
    };
    entries.sort_by_key(|entry| order(summary(entry)));
    if let Some((updated, id)) = after {
        let position = (
            std::cmp::Reverse(updated),
            std::cmp::Reverse(id.as_str().to_owned()),
        );
        entries.retain(|entry| order(summary(entry)) > position);
    }
    let more = entries.len() > limit;
    entries.truncate(limit);
    let next = more
        .then(|| entries.last().map(|entry| list_cursor(summary(entry))))
        .flatten();
    Ok((entries, next))
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

impl MemoryStore {
    /// The caller's thread from the message `first(record)` names on.
    fn owned_from(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        first: impl FnOnce(&super::Record) -> u64,
    ) -> Option<StoredThread> {
        self.threads()
            .get(thread_id)
            .filter(|record| &record.owner == owner)
            .map(|record| record.stored_from(first(record)))
    }
}
