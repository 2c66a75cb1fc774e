//! A2A tasks ([`A2aTasks`]): a task is a chain of runs on one of its owner's threads, kept as
//! long as the thread (its TTL, and deleting the thread deletes them). The store keeps the keys,
//! the state for filters, the times for ordering and a version for safe updates; the rest is the
//! A2A layer's, an opaque JSON body.

use super::StoreError;
use crate::auth::Principal;
use crate::protocol::ThreadId;
use async_trait::async_trait;
use serde_json::Value;

/// The longest task id the store takes: the id alphabet of threads and runs, which the server's
/// own ids (`task_<32 hex>`) keep to.
pub(crate) const MAX_TASK_ID_LEN: usize = 128;

/// One A2A task.
#[derive(Debug, Clone, PartialEq)]
pub struct A2aTaskRecord {
    pub owner: Principal,
    pub task_id: String,
    pub thread_id: ThreadId,
    /// When the thread was created: tasks live and expire with this incarnation of it.
    pub thread_created_at_ms: i64,
    /// `TASK_STATE_*`, for the list's filter.
    pub state: String,
    pub created_at_ms: i64,
    /// When the status last changed: the list's order.
    pub updated_at_ms: i64,
    /// 1 when created; each save of a changed record expects the version it read.
    pub version: u64,
    /// Everything else, as the A2A layer writes it.
    pub body: Value,
}

/// Which of an owner's tasks a list wants, and where the page starts.
#[derive(Debug, Clone, Default)]
pub struct A2aTaskQuery {
    pub thread_id: Option<ThreadId>,
    pub state: Option<String>,
    /// Only tasks updated at or after this time (epoch ms).
    pub updated_since_ms: Option<i64>,
    pub page_size: usize,
    /// The place after which the page starts, as the previous page's `next` gave it.
    pub after: Option<A2aTaskCursor>,
}

/// A place in an owner's tasks, newest update first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct A2aTaskCursor {
    pub updated_at_ms: i64,
    pub task_id: String,
}

/// A page of tasks, most recently updated first.
#[derive(Debug, Clone, Default)]
pub struct A2aTaskPage {
    pub tasks: Vec<A2aTaskRecord>,
    /// Where the next page starts; `None` on the last.
    pub next: Option<A2aTaskCursor>,
    /// How many tasks match the query, all pages together.
    pub total: usize,
}

/// Orders records newest update first, ties by id, and cuts one page from `query`: the one
/// rule both stores page by.
pub(crate) fn page_of(mut records: Vec<A2aTaskRecord>, query: &A2aTaskQuery) -> A2aTaskPage {
    records.retain(|record| {
        query
            .thread_id
            .as_ref()
            .is_none_or(|thread| &record.thread_id == thread)
            && query
                .state
                .as_ref()
                .is_none_or(|state| &record.state == state)
            && query
                .updated_since_ms
                .is_none_or(|since| record.updated_at_ms >= since)
    });
    records.sort_by(|a, b| {
        b.updated_at_ms
            .cmp(&a.updated_at_ms)
            .then_with(|| b.task_id.cmp(&a.task_id))
    });
    let total = records.len();
    let start = match &query.after {
        Some(after) => records
            .iter()
            .position(|record| {
                (record.updated_at_ms, &record.task_id) < (after.updated_at_ms, &after.task_id)
            })
            .unwrap_or(records.len()),
        None => 0,
    };
    let page_size = query.page_size.max(1);
    let tasks: Vec<A2aTaskRecord> = records
        .into_iter()
        .skip(start)
        .take(page_size + 1)
        .collect();
    let more = tasks.len() > page_size;
    let tasks: Vec<A2aTaskRecord> = tasks.into_iter().take(page_size).collect();
    let next = more
        .then(|| tasks.last())
        .flatten()
        .map(|last| A2aTaskCursor {
            updated_at_ms: last.updated_at_ms,
            task_id: last.task_id.clone(),
        });
    A2aTaskPage { tasks, next, total }
}

#[async_trait]
pub trait A2aTasks: Send + Sync {
    /// Stores a new task (`version` 1) on a thread of its owner's: `Conflict` when the id is
    /// taken, `NotFound` when the thread is not the owner's (or gone).
    async fn create_a2a_task(&self, record: &A2aTaskRecord) -> Result<(), StoreError>;

    /// Replaces a task with `record`, whose `version` must be one more than the stored one:
    /// `Conflict` when someone saved it in between, `NotFound` when it is gone.
    async fn save_a2a_task(&self, record: &A2aTaskRecord) -> Result<(), StoreError>;

    /// `owner`'s task `task_id`, if the store holds it and its thread is there.
    async fn a2a_task(
        &self,
        owner: &Principal,
        task_id: &str,
    ) -> Result<Option<A2aTaskRecord>, StoreError>;

    /// A page of `owner`'s tasks.
    async fn list_a2a_tasks(
        &self,
        owner: &Principal,
        query: &A2aTaskQuery,
    ) -> Result<A2aTaskPage, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, thread: &str, updated: i64) -> A2aTaskRecord {
        A2aTaskRecord {
            owner: Principal::new("p"),
            task_id: id.to_owned(),
            thread_id: ThreadId::parse(thread, 128).unwrap(),
            thread_created_at_ms: 1,
            state: "TASK_STATE_COMPLETED".to_owned(),
            created_at_ms: 1,
            updated_at_ms: updated,
            version: 1,
            body: Value::Null,
        }
    }

    #[test]
    fn pages_follow_the_newest_update_and_never_skip_a_tie() {
        let records = vec![
            record("a", "t1", 10),
            record("b", "t1", 30),
            record("c", "t2", 20),
            record("d", "t2", 20),
        ];
        let mut query = A2aTaskQuery {
            page_size: 2,
            ..A2aTaskQuery::default()
        };
        let first = page_of(records.clone(), &query);
        let ids: Vec<&str> = first.tasks.iter().map(|t| t.task_id.as_str()).collect();
        assert_eq!(ids, ["b", "d"]);
        assert_eq!(first.total, 4);
        query.after = first.next;
        let second = page_of(records.clone(), &query);
        let ids: Vec<&str> = second.tasks.iter().map(|t| t.task_id.as_str()).collect();
        assert_eq!(ids, ["c", "a"]);
        assert!(second.next.is_none());
        let only_t2 = page_of(
            records,
            &A2aTaskQuery {
                thread_id: Some(ThreadId::parse("t2", 128).unwrap()),
                page_size: 10,
                ..A2aTaskQuery::default()
            },
        );
        assert_eq!(only_t2.total, 2);
    }
}
