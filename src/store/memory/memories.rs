//! The in-memory store's long-term memories: per principal, a version and the memories, expired
//! ones dropped as DynamoDB's TTL would.

use super::{MemoryStore, now_ms};
use crate::auth::Principal;
use crate::store::{Memories, Memory, MemoryEdit, MemoryId, MemorySet, NewMemory, StoreError};
use async_trait::async_trait;
use std::sync::Arc;

/// One principal's memories, in the order they were saved.
#[derive(Default)]
pub(super) struct Kept {
    version: u64,
    memories: Vec<Memory>,
}

impl Kept {
    fn forget_expired(&mut self, now: i64) {
        let before = self.memories.len();
        self.memories.retain(|memory| memory.is_live(now));
        if self.memories.len() != before {
            self.version += 1;
        }
    }
}

#[async_trait]
impl Memories for MemoryStore {
    async fn memories(&self, owner: &Principal) -> Result<MemorySet, StoreError> {
        let mut accounts = self.accounts();
        let kept = accounts.memories.entry(owner.clone()).or_default();
        kept.forget_expired(now_ms());
        // Newest first by id, as DynamoDB's query returns them: the list's cursor is an id.
        let mut memories = kept.memories.clone();
        memories.sort_by(|a, b| b.id.cmp(&a.id));
        Ok(MemorySet {
            version: kept.version,
            memories: Arc::new(memories),
        })
    }

    async fn save_memory(
        &self,
        owner: &Principal,
        memory: NewMemory,
        max_items: u32,
    ) -> Result<Memory, StoreError> {
        let now = now_ms();
        let mut accounts = self.accounts();
        let kept = accounts.memories.entry(owner.clone()).or_default();
        kept.forget_expired(now);
        if kept.memories.len() >= max_items as usize {
            return Err(StoreError::TooManyMemories(max_items));
        }
        let saved = Memory {
            id: MemoryId::new(now),
            text: memory.text,
            pinned: memory.pinned,
            created_at_ms: now,
            updated_at_ms: now,
            thread_id: memory.thread_id,
            run_id: memory.run_id,
            expires_at_ms: memory.expires_at_ms,
        };
        kept.memories.push(saved.clone());
        kept.version += 1;
        Ok(saved)
    }

    async fn edit_memory(
        &self,
        owner: &Principal,
        id: &MemoryId,
        edit: MemoryEdit,
    ) -> Result<Memory, StoreError> {
        let now = now_ms();
        let mut accounts = self.accounts();
        let kept = accounts.memories.entry(owner.clone()).or_default();
        kept.forget_expired(now);
        let memory = kept
            .memories
            .iter_mut()
            .find(|memory| &memory.id == id)
            .ok_or(StoreError::NotFound)?;
        if let Some(text) = edit.text {
            memory.text = text;
        }
        if let Some(pinned) = edit.pinned {
            memory.pinned = pinned;
        }
        memory.updated_at_ms = now;
        let edited = memory.clone();
        kept.version += 1;
        Ok(edited)
    }

    async fn delete_memory(&self, owner: &Principal, id: &MemoryId) -> Result<(), StoreError> {
        let mut accounts = self.accounts();
        let kept = accounts.memories.entry(owner.clone()).or_default();
        kept.forget_expired(now_ms());
        let before = kept.memories.len();
        kept.memories.retain(|memory| &memory.id != id);
        if kept.memories.len() == before {
            return Err(StoreError::NotFound);
        }
        kept.version += 1;
        Ok(())
    }

    async fn delete_memories(&self, owner: &Principal) -> Result<usize, StoreError> {
        let mut accounts = self.accounts();
        let kept = accounts.memories.entry(owner.clone()).or_default();
        kept.forget_expired(now_ms());
        let count = kept.memories.len();
        kept.memories.clear();
        kept.version += 1;
        Ok(count)
    }
}
