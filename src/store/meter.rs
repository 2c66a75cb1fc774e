//! Per-run store usage: a run's task (and the tasks it spawns) carries a [`StoreMeter`], and
//! every DynamoDB call made inside it adds its time, and its capacity, the bytes it read and the
//! items it returned once answered, to it.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

tokio::task_local! {
    static METER: Arc<StoreMeter>;
}

/// Counters of one run's store calls.
#[derive(Debug, Default)]
pub(crate) struct StoreMeter {
    read_calls: AtomicU64,
    write_calls: AtomicU64,
    read_micros: AtomicU64,
    write_micros: AtomicU64,
    /// Capacity units × 1000.
    read_milli_units: AtomicU64,
    write_milli_units: AtomicU64,
    /// Of the calls, those made for long-term memory (`for_memory`).
    memory_read_calls: AtomicU64,
    memory_write_calls: AtomicU64,
    /// What the read calls' answers carried: their bodies' bytes, and the items in them.
    read_bytes: AtomicU64,
    read_items: AtomicU64,
}

/// A meter's counts at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct MeteredUsage {
    pub read_calls: u64,
    pub write_calls: u64,
    pub read_time: Duration,
    pub write_time: Duration,
    pub read_capacity_units: f64,
    pub write_capacity_units: f64,
    pub memory_read_calls: u64,
    pub memory_write_calls: u64,
    pub read_bytes: u64,
    pub read_items: u64,
}

/// Whether a call reads or writes (DynamoDB bills and throttles the two apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    Write,
}

impl StoreMeter {
    pub(crate) fn usage(&self) -> MeteredUsage {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        MeteredUsage {
            read_calls: load(&self.read_calls),
            write_calls: load(&self.write_calls),
            read_time: Duration::from_micros(load(&self.read_micros)),
            write_time: Duration::from_micros(load(&self.write_micros)),
            read_capacity_units: load(&self.read_milli_units) as f64 / 1000.0,
            write_capacity_units: load(&self.write_milli_units) as f64 / 1000.0,
            memory_read_calls: load(&self.memory_read_calls),
            memory_write_calls: load(&self.memory_write_calls),
            read_bytes: load(&self.read_bytes),
            read_items: load(&self.read_items),
        }
    }

    fn add_call(&self, access: Access, took: Duration) {
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        let (calls, time) = match access {
            Access::Read => (&self.read_calls, &self.read_micros),
            Access::Write => (&self.write_calls, &self.write_micros),
        };
        calls.fetch_add(1, Ordering::Relaxed);
        time.fetch_add(micros, Ordering::Relaxed);
    }

    fn add_capacity(&self, access: Access, milli_units: u64) {
        match access {
            Access::Read => &self.read_milli_units,
            Access::Write => &self.write_milli_units,
        }
        .fetch_add(milli_units, Ordering::Relaxed);
    }
}

/// Runs `future` with `meter` as the meter its store calls count into.
pub(crate) async fn metered<F: Future>(meter: Arc<StoreMeter>, future: F) -> F::Output {
    METER.scope(meter, future).await
}

/// Runs `future` (a memory read or write) and counts the store calls it made into the current
/// task's meter as memory calls too. Calls made meanwhile by other futures of the same task
/// (parallel tool calls) would count as well; the memory tools' neighbours rarely call the store.
pub(crate) async fn for_memory<F: Future>(future: F) -> F::Output {
    let before = METER.try_with(|meter| meter.usage()).ok();
    let output = future.await;
    if let Some(before) = before {
        let _ = METER.try_with(|meter| {
            let now = meter.usage();
            let reads = now.read_calls.saturating_sub(before.read_calls);
            let writes = now.write_calls.saturating_sub(before.write_calls);
            meter.memory_read_calls.fetch_add(reads, Ordering::Relaxed);
            meter
                .memory_write_calls
                .fetch_add(writes, Ordering::Relaxed);
        });
    }
    output
}

/// Counts a call that took `took` into the current task's meter, if it has one.
pub(crate) fn count_call(access: Access, took: Duration) {
    let _ = METER.try_with(|meter| meter.add_call(access, took));
}

/// Counts what a read call's answer carried (its body's bytes, its items) into the current
/// task's meter, if it has one.
pub(crate) fn count_read(bytes: u64, items: u64) {
    let _ = METER.try_with(|meter| {
        meter.read_bytes.fetch_add(bytes, Ordering::Relaxed);
        meter.read_items.fetch_add(items, Ordering::Relaxed);
    });
}

/// Counts consumed capacity (units × 1000) into the current task's meter, if it has one.
pub(crate) fn count_capacity(access: Access, milli_units: u64) {
    let _ = METER.try_with(|meter| meter.add_capacity(access, milli_units));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn calls_count_into_the_meter_of_their_task_only() {
        let meter = Arc::new(StoreMeter::default());
        metered(meter.clone(), async {
            count_call(Access::Read, Duration::from_millis(3));
            count_call(Access::Write, Duration::from_millis(5));
            count_capacity(Access::Write, 1_500);
            count_read(4_096, 3);
            let inner = METER.try_with(Arc::clone).unwrap();
            tokio::spawn(metered(inner, async {
                count_call(Access::Read, Duration::from_millis(1))
            }))
            .await
            .unwrap();
        })
        .await;
        // Outside any meter: nothing to count into, and no panic.
        count_call(Access::Read, Duration::from_secs(1));
        let usage = meter.usage();
        assert_eq!((usage.read_calls, usage.write_calls), (2, 1));
        assert_eq!(usage.read_time, Duration::from_millis(4));
        assert_eq!(usage.write_time, Duration::from_millis(5));
        assert_eq!(usage.write_capacity_units, 1.5);
        assert_eq!(usage.read_capacity_units, 0.0);
        assert_eq!((usage.read_bytes, usage.read_items), (4_096, 3));
    }
}
