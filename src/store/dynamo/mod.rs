//! The DynamoDB store: one table, laid out as `items` describes. One file per capability's
//! implementation, one for the reads and one for the chunked writes they share; here the store
//! itself, its call and capacity counters, and the pacing of retries.

use crate::store::meter::{self, Access};
use crate::store::{MAX_STATE_BYTES, StoreError};
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{AttributeValue, ConsumedCapacity};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

mod a2a_tasks;
mod calls;
mod checkpoints;
mod client;
mod deletion;
mod events;
mod history;
mod items;
mod linked;
mod memories;
mod reads;
mod runs;
mod shelf;
mod table;
mod tasks;
mod threads;
mod usage;
mod writes;

pub(crate) use client::{AwsEnvironment, connect};
pub(crate) use table::TableError;
pub use table::TableSetup;

use items::*;

pub struct DynamoStore {
    client: Client,
    table: String,
    /// Threads are deleted this long after they were created; `None` keeps them.
    ttl_seconds: Option<i64>,
    /// Run event logs are deleted this long after they were written.
    events_ttl_seconds: i64,
    usage: Usage,
    /// Each principal's memories as last read, by version (see `memories`).
    memory_cache: memories::MemoryCache,
}

/// Calls made and capacity consumed since the store was built, for benchmarks and logs.
#[derive(Default)]
struct Usage {
    reads: AtomicU64,
    writes: AtomicU64,
    /// Capacity units × 1000.
    read_milli_units: AtomicU64,
    write_milli_units: AtomicU64,
}

#[cfg(any(test, feature = "test-utils"))]
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StoreUsage {
    pub read_calls: u64,
    pub write_calls: u64,
    pub read_capacity_units: f64,
    pub write_capacity_units: f64,
}

impl DynamoStore {
    pub fn new(client: Client, table: impl Into<String>, ttl_days: u32) -> Self {
        let table = table.into();
        // Every call gets its span and counts into its run's meter.
        let client = Client::from_conf(
            client
                .config()
                .to_builder()
                .interceptor(calls::StoreCalls {
                    table: table.clone(),
                })
                .build(),
        );
        Self {
            client,
            table,
            ttl_seconds: (ttl_days > 0).then(|| i64::from(ttl_days) * 86_400),
            events_ttl_seconds: 24 * 3600,
            usage: Usage::default(),
            memory_cache: memories::MemoryCache::default(),
        }
    }

    /// How long run event logs are kept (`RUN_EVENTS_TTL_HOURS`).
    pub(crate) fn with_events_ttl_hours(mut self, hours: u32) -> Self {
        self.events_ttl_seconds = i64::from(hours.max(1)) * 3600;
        self
    }

    #[cfg(any(test, feature = "test-utils"))]
    pub fn usage(&self) -> StoreUsage {
        let units = |milli: &AtomicU64| milli.load(Ordering::Relaxed) as f64 / 1000.0;
        StoreUsage {
            read_calls: self.usage.reads.load(Ordering::Relaxed),
            write_calls: self.usage.writes.load(Ordering::Relaxed),
            read_capacity_units: units(&self.usage.read_milli_units),
            write_capacity_units: units(&self.usage.write_milli_units),
        }
    }

    fn count_read(&self, capacity: Option<&ConsumedCapacity>) {
        let milli_units = milli(capacity);
        self.usage.reads.fetch_add(1, Ordering::Relaxed);
        self.usage
            .read_milli_units
            .fetch_add(milli_units, Ordering::Relaxed);
        meter::count_capacity(Access::Read, milli_units);
    }

    /// Counts a write call; its capacity once it answered (a failed call reports none).
    fn count_write(&self) {
        self.usage.writes.fetch_add(1, Ordering::Relaxed);
    }

    fn count_write_capacity<'a>(&self, capacity: impl IntoIterator<Item = &'a ConsumedCapacity>) {
        let milli_units = milli(capacity);
        self.usage
            .write_milli_units
            .fetch_add(milli_units, Ordering::Relaxed);
        meter::count_capacity(Access::Write, milli_units);
    }

    fn expires_at(&self, created_at_ms: i64) -> Option<AttributeValue> {
        self.ttl_seconds.map(|ttl| n(created_at_ms / 1000 + ttl))
    }

    fn state_value(state: &Value) -> Result<AttributeValue, StoreError> {
        let text = state.to_string();
        if text.len() > MAX_STATE_BYTES {
            return Err(StoreError::StateTooLarge(text.len()));
        }
        Ok(s(text))
    }
}

/// Before a retry (any try but the first): waits about `delay`, then doubles it, up to 1 s.
async fn back_off(attempt: u32, delay: &mut Duration) {
    if attempt > 0 {
        tokio::time::sleep(jittered(*delay)).await;
        *delay = (*delay * 2).min(Duration::from_secs(1));
    }
}
