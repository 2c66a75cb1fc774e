//! Long-term memory: short facts kept per principal, outliving the threads that wrote them
//! ([`Memories`]). Deleting a thread leaves them; only their owner's `DELETE /memories` (or their
//! expiry) removes them.

use super::StoreError;
use crate::auth::Principal;
use crate::protocol::{RunId, ThreadId};
use async_trait::async_trait;
use std::sync::Arc;

/// A memory's id: `mem_` then 13 hex digits of its creation time (ms) and 16 more, so ids sort by
/// creation time. Within a process they sort in creation order even within one millisecond (the
/// lower digits then count up from the last id), so a list by id is newest first.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MemoryId(String);

impl MemoryId {
    const PREFIX: &'static str = "mem_";
    const DIGITS: usize = 29;

    /// A fresh id for a memory created at `at_ms`, after every id this process made before.
    pub fn new(at_ms: i64) -> Self {
        let (ms, low) = next_in_order(at_ms.max(0));
        Self(format!("{}{ms:013x}{low:016x}", Self::PREFIX))
    }

    /// An id as a caller (or the model) wrote it; `None` unless it has the shape of ours.
    pub fn parse(text: &str) -> Option<Self> {
        let digits = text.strip_prefix(Self::PREFIX)?;
        (digits.len() == Self::DIGITS && digits.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| Self(text.to_ascii_lowercase()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for MemoryId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The time and lower digits of the next id, after every id this process made before.
fn next_in_order(at_ms: i64) -> (i64, u64) {
    static LAST: std::sync::Mutex<(i64, u64)> = std::sync::Mutex::new((-1, 0));
    let mut last = LAST
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    *last = following(*last, at_ms, || uuid::Uuid::new_v4().as_u64_pair().0);
    *last
}

/// The id parts after `last` for a memory created at `at_ms`: random lower digits (below 2^63,
/// so counting up cannot wrap) in a new millisecond, one more than the last's otherwise (a clock
/// that stepped back included).
fn following(last: (i64, u64), at_ms: i64, random: impl FnOnce() -> u64) -> (i64, u64) {
    if at_ms > last.0 {
        (at_ms, random() >> 1)
    } else {
        (last.0, last.1 + 1)
    }
}

/// One kept fact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Memory {
    pub id: MemoryId,
    pub text: String,
    /// Given to the model in every run, whatever the user asks.
    pub pinned: bool,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    /// The thread and run that wrote it; none when written through the API.
    pub thread_id: Option<ThreadId>,
    pub run_id: Option<RunId>,
    /// When it is forgotten (epoch ms); `None`: kept until deleted.
    pub expires_at_ms: Option<i64>,
}

impl Memory {
    pub(crate) fn is_live(&self, now_ms: i64) -> bool {
        self.expires_at_ms.is_none_or(|at| at > now_ms)
    }
}

/// A memory to save: its id and times are the store's.
#[derive(Debug, Clone)]
pub struct NewMemory {
    pub text: String,
    pub pinned: bool,
    pub thread_id: Option<ThreadId>,
    pub run_id: Option<RunId>,
    pub expires_at_ms: Option<i64>,
}

/// A change to a memory; `None` fields stay as they are.
#[derive(Debug, Clone, Default)]
pub struct MemoryEdit {
    pub text: Option<String>,
    pub pinned: Option<bool>,
}

/// A principal's memories at one version: the version changes with every write, so a reader
/// holding this can tell whether it is still current without reading the memories again.
#[derive(Debug, Clone, Default)]
pub struct MemorySet {
    pub version: u64,
    /// Live memories, newest first.
    pub memories: Arc<Vec<Memory>>,
}

#[async_trait]
pub trait Memories: Send + Sync {
    /// `owner`'s live memories, newest first. A bounded number of store reads whatever their
    /// number: one when this process already holds the current version.
    async fn memories(&self, owner: &Principal) -> Result<MemorySet, StoreError>;

    /// Saves a memory; `TooManyMemories` when `owner` already has `max_items` live ones.
    async fn save_memory(
        &self,
        owner: &Principal,
        memory: NewMemory,
        max_items: u32,
    ) -> Result<Memory, StoreError>;

    /// Changes `owner`'s memory `id`; `NotFound` when they have no such (live) memory.
    async fn edit_memory(
        &self,
        owner: &Principal,
        id: &MemoryId,
        edit: MemoryEdit,
    ) -> Result<Memory, StoreError>;

    /// Forgets `owner`'s memory `id`; `NotFound` when they have no such (live) memory.
    async fn delete_memory(&self, owner: &Principal, id: &MemoryId) -> Result<(), StoreError>;

    /// Forgets all of `owner`'s memories; how many there were.
    async fn delete_memories(&self, owner: &Principal) -> Result<usize, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_made_in_one_millisecond_sort_in_the_order_they_were_made() {
        let ids: Vec<MemoryId> = (0..1_000)
            .map(|_| MemoryId::new(1_700_000_000_000))
            .collect();
        assert!(ids.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(
            ids.iter()
                .all(|id| MemoryId::parse(id.as_str()).as_ref() == Some(id))
        );
    }

    #[test]
    fn a_new_millisecond_starts_afresh_and_a_clock_that_steps_back_counts_on() {
        let last = (1_800_000_000_000, 41);
        assert_eq!(
            following(last, 1_800_000_000_001, || 10),
            (1_800_000_000_001, 5)
        );
        assert_eq!(
            following(last, 1_800_000_000_000, || 10),
            (1_800_000_000_000, 42)
        );
        assert_eq!(
            following(last, 1_700_000_000_000, || 10),
            (1_800_000_000_000, 42)
        );
        assert_eq!(
            following(last, 1_800_000_000_001, || u64::MAX).1,
            u64::MAX >> 1
        );
    }
}
