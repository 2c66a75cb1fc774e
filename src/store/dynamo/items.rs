//! The table's item layout: keys, attribute conversions, the parsed `META` item, and what a
//! cancelled transaction says. Everything here mirrors `template.yaml`'s table.
//!
//! One partition per thread: a `META` item (owner, version, state, lease, title, message count,
//! TTL), one item per message, sorted by sequence number, and `ARCHIVED#<createdAt>` while its
//! owner has archived it. A run reads the partition with one
//! consistent Query and writes with two transactions; each write is conditional on the version
//! it read, so concurrent runs can never interleave their messages.
//!
//! Per principal, two more partitions: `OWNER#<principal>` holds where each run ended (for forks,
//! `RUN#<runId>`), the task records of detached runs (`TASK#<runId>`) and A2A tasks
//! (`A2A#<taskId>`, each with a marker of the same key in its thread's partition), `USAGE#<principal>` the
//! tokens per day and the runs per minute (for quotas). The caller's thread list is the sparse
//! index `byOwner` over the META items.
//!
//! Message items carry the time they were stored (`at`, epoch ms), so the history can be read
//! by day newest first (one Query with `ScanIndexForward=false`); those stored before times were
//! kept count as stored when their thread was created.

use crate::protocol::{Message, RunId, ThreadId, ToolCallId};
use crate::store::{Checkpoint, ContextMark, StoreError, ThreadLink};
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::batch_write_item::BatchWriteItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, ConsumedCapacity, DeleteRequest, WriteRequest};
use serde_json::Value;
use std::collections::HashMap;
use std::time::Duration;

pub(super) type Item = HashMap<String, AttributeValue>;

pub(super) const META: &str = "META";
/// DynamoDB allows 100 items per transaction; one place is the META update, one the record of
/// where the run ended and one the thread's checkpoint (both written by the last transaction of
/// `finish_run`).
pub(super) const MESSAGES_PER_WRITE: usize = 97;
/// BatchWriteItem takes at most 25 requests.
pub(super) const BATCH_WRITE_ITEMS: usize = 25;
/// BatchWriteItem calls in flight at once while deleting or forking a thread.
pub(super) const BATCH_WRITES_IN_FLIGHT: usize = 4;

/// The caller's thread list: META items by owner, most recently updated first. Sparse: only META
/// items carry both `owner` and `updatedAt`, and nothing else may.
pub(super) const OWNER_INDEX: &str = "byOwner";
pub(super) const OWNER: &str = "owner";
pub(super) const UPDATED_AT: &str = "updatedAt";
pub(super) const TITLE: &str = "title";
/// Messages in the thread (the next sequence number), kept on META for the list.
pub(super) const MSG_COUNT: &str = "msgCount";
/// A delete in progress: the thread counts as absent from the moment it is set.
pub(super) const DELETED_AT: &str = "deletedAt";
/// On a message item: the run that stored it, so deleting the thread finds its run-end records.
pub(super) const RUN: &str = "run";
/// On a message item: when it was stored (epoch ms). Messages stored before times were kept
/// have none and count as stored when their thread was created (META's `createdAt`).
pub(super) const MESSAGE_AT: &str = "at";
/// On META: which runner of the run in `leaseRun` holds the lease (1 for the one that began it);
/// every write under the lease checks it.
pub(super) const LEASE_EPOCH: &str = "leaseEpoch";
/// On META: the epoch that handed the run off to the next runner, until one takes it.
pub(super) const HANDOFF: &str = "handoff";
/// On META: the run whose record (the `LIVE#` item) is stored: it can be taken over.
pub(super) const LIVE_RUN: &str = "liveRun";
/// On a task item: `accepted`, `started` or `failed` (then with `failCode` and `failMessage`).
pub(super) const TASK_STATE: &str = "state";
/// What the list reads besides the keys; `template.yaml` projects the same attributes.
pub(super) const OWNER_INDEX_ATTRIBUTES: [&str; 7] = [
    TITLE,
    "createdAt",
    MSG_COUNT,
    "leaseRun",
    "leaseUntil",
    "expiresAt",
    DELETED_AT,
];

/// Usage items are kept this long after their day, for the usage endpoint.
pub(super) const USAGE_RETENTION_SECS: i64 = 400 * 86_400;
/// Minute counters outlive their minute a little, then TTL removes them.
pub(super) const MINUTE_RETENTION_SECS: i64 = 120;
/// The per-model counters of a usage day item, `<metric>:<provider>/<model>`.
pub(super) const USAGE_METRICS: [&str; 5] = ["runs", "in", "out", "rsn", "cch"];
/// Transactions are limited to 4 MB; stay well below.
pub(super) const BYTES_PER_WRITE: usize = 3_500_000;

pub(super) fn milli<'a>(capacity: impl IntoIterator<Item = &'a ConsumedCapacity>) -> u64 {
    let units: f64 = capacity
        .into_iter()
        .filter_map(ConsumedCapacity::capacity_units)
        .sum();
    // Capacity units are small non-negative numbers; the cast cannot truncate in practice.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let milli = (units * 1000.0).round() as u64;
    milli
}

pub(super) fn pk(thread_id: &ThreadId) -> AttributeValue {
    AttributeValue::S(format!("THREAD#{thread_id}"))
}

/// Message sort keys carry the thread's creation time, so items of an expired incarnation of
/// the same thread id, not yet removed by TTL, are never mixed into a new one.
pub(super) fn message_prefix(created_at_ms: i64) -> String {
    format!("MSG#{created_at_ms:013}#")
}

/// The thread's latest checkpoint (the summary of its oldest messages), one per incarnation; it
/// sorts before META, so one Query from `CKPT` to `META` reads both.
pub(super) fn checkpoint_sk(created_at_ms: i64) -> AttributeValue {
    AttributeValue::S(format!("{CHECKPOINT_PREFIX}{created_at_ms:013}"))
}

pub(super) const CHECKPOINT_PREFIX: &str = "CKPT#";

/// The marker of an archived thread's incarnation (the shelf's).
pub(super) fn archived_sk(created_at_ms: i64) -> AttributeValue {
    s(format!("ARCHIVED#{created_at_ms:013}"))
}

/// The record of the run holding the thread, once it checkpointed (one per incarnation: the
/// lease lets one run at a time hold the thread). It sorts between the checkpoint and META, so
/// the Query that reads both reads it too.
pub(super) fn live_sk(created_at_ms: i64) -> AttributeValue {
    AttributeValue::S(format!("{LIVE_PREFIX}{created_at_ms:013}"))
}

pub(super) const LIVE_PREFIX: &str = "LIVE#";

/// A checkpoint item's content.
pub(super) fn parse_checkpoint(item: &Item) -> Result<Checkpoint, StoreError> {
    let corrupt = || StoreError::Corrupt("a checkpoint record is missing fields".to_owned());
    let count = |name: &str| {
        get_n(item, name)
            .and_then(|value| u64::try_from(value).ok())
            .ok_or_else(corrupt)
    };
    Ok(Checkpoint {
        covers: count("covers")?,
        summary: get_s(item, "summary").map(str::to_owned),
        cleared_before: count("cleared")?,
        at_ms: get_n(item, "at").ok_or_else(corrupt)?,
    })
}

pub(super) fn message_sk(created_at_ms: i64, seq: usize) -> AttributeValue {
    AttributeValue::S(format!("{}{seq:010}", message_prefix(created_at_ms)))
}

/// Event log items: `RUN#<thread created>#<run id>#<attempt started>#<first seq>.<part>`. Ids
/// never contain `#`, so a run's prefix matches only its own items.
pub(super) fn run_prefix(created_at_ms: i64, run_id: &str) -> String {
    format!("RUN#{created_at_ms:013}#{run_id}#")
}

/// Every event log item of one incarnation of a thread.
pub(super) fn runs_prefix(created_at_ms: i64) -> String {
    format!("RUN#{created_at_ms:013}#")
}

pub(super) fn attempt_prefix(created_at_ms: i64, run_id: &str, started_at_ms: i64) -> String {
    format!("{}{started_at_ms:013}#", run_prefix(created_at_ms, run_id))
}

pub(super) fn batch_sk(prefix: &str, first_seq: u64, part: usize) -> AttributeValue {
    AttributeValue::S(format!("{prefix}{first_seq:010}.{part:03}"))
}

/// The partition of a principal's run-end records.
pub(super) fn owner_pk(owner: &str) -> AttributeValue {
    AttributeValue::S(format!("OWNER#{owner}"))
}

/// A run-end record's sort key. Keyed by run id alone (a fork names only the run); a run id
/// reused on another thread of the same principal replaces the record.
pub(super) fn run_end_sk(run_id: &str) -> AttributeValue {
    AttributeValue::S(format!("RUN#{run_id}"))
}

/// A detached run's task record, in its principal's partition beside the run-end records.
/// Task items never carry `owner` (the principal is in the key), so they stay out of `byOwner`.
pub(super) fn task_sk(run_id: &str) -> AttributeValue {
    AttributeValue::S(format!("TASK#{run_id}"))
}

/// The partition of a principal's usage: one item per UTC day, one per minute with runs.
pub(super) fn usage_pk(owner: &str) -> AttributeValue {
    AttributeValue::S(format!("USAGE#{owner}"))
}

pub(super) fn day_sk(day: &str) -> String {
    format!("DAY#{day}")
}

pub(super) fn minute_sk(minute: &str) -> String {
    format!("MIN#{minute}")
}

/// A list cursor: the page's last key as `<updatedAt>.<thread id>`. Thread ids may contain `.`,
/// the number never does, so the first `.` separates them.
pub(super) fn encode_list_cursor(key: &Item) -> Option<String> {
    let thread = get_s(key, "pk")?.strip_prefix("THREAD#")?;
    let updated = get_n(key, UPDATED_AT)?;
    Some(format!("{updated}.{thread}"))
}

/// The index key a list cursor stands for; `BadCursor` for anything this store never made.
pub(super) fn decode_list_cursor(cursor: &str, owner: &str) -> Result<Item, StoreError> {
    let (updated, thread) = cursor.split_once('.').ok_or(StoreError::BadCursor)?;
    let updated: i64 = updated
        .parse()
        .ok()
        .filter(|updated| *updated >= 0)
        .ok_or(StoreError::BadCursor)?;
    let thread = ThreadId::parse(thread, crate::protocol::ids::MAX_ID_LEN)
        .map_err(|_| StoreError::BadCursor)?;
    Ok(Item::from([
        ("pk".to_owned(), pk(&thread)),
        ("sk".to_owned(), s(META)),
        (OWNER.to_owned(), s(owner)),
        (UPDATED_AT.to_owned(), n(updated)),
    ]))
}

pub(super) fn n(value: i64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

pub(super) fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

pub(super) fn get_n(item: &Item, key: &str) -> Option<i64> {
    match item.get(key) {
        Some(AttributeValue::N(value)) => value.parse().ok(),
        _ => None,
    }
}

pub(super) fn get_s<'a>(item: &'a Item, key: &str) -> Option<&'a str> {
    match item.get(key) {
        Some(AttributeValue::S(value)) => Some(value),
        _ => None,
    }
}

/// A number attribute from anything that prints as one (token counts are `u64`).
pub(super) fn num(value: impl std::fmt::Display) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// Delete requests for BatchWriteItem, one per `(pk, sk)`.
pub(super) fn delete_requests(
    keys: Vec<(AttributeValue, AttributeValue)>,
) -> Result<Vec<WriteRequest>, StoreError> {
    keys.into_iter()
        .map(|(pk, sk)| {
            let delete = DeleteRequest::builder()
                .key("pk", pk)
                .key("sk", sk)
                .build()
                .map_err(unavailable)?;
            Ok(WriteRequest::builder().delete_request(delete).build())
        })
        .collect()
}

/// Whether a BatchWriteItem was refused for capacity, so sending it again later may work.
pub(super) fn throttled(error: &BatchWriteItemError) -> bool {
    error.is_provisioned_throughput_exceeded_exception()
        || error.is_throttling_exception()
        || error.is_request_limit_exceeded()
}

/// Between half of `delay` and all of it, at random: retries of concurrent writers spread out.
pub(super) fn jittered(delay: Duration) -> Duration {
    let nanos = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX);
    let half = nanos / 2;
    let random = uuid::Uuid::new_v4().as_u64_pair().0;
    Duration::from_nanos(half + random % (nanos - half + 1))
}

pub(super) fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

pub(super) fn unavailable<E: std::error::Error + Send + Sync + 'static>(error: E) -> StoreError {
    StoreError::Unavailable(Box::new(error))
}

/// What a cancelled transaction's reasons say about its first item (the META write).
pub(super) enum Cancelled {
    /// The META condition failed; the item as it was, if DynamoDB returned it.
    Meta(Option<Item>),
    Other(String),
}

pub(super) type TransactError =
    SdkError<TransactWriteItemsError, aws_sdk_dynamodb::config::http::HttpResponse>;

pub(super) fn cancellation(error: TransactError) -> Result<Cancelled, StoreError> {
    match error.into_service_error() {
        TransactWriteItemsError::TransactionCanceledException(cancelled) => {
            let reasons = cancelled.cancellation_reasons();
            match reasons.first() {
                Some(reason) if reason.code() == Some("ConditionalCheckFailed") => {
                    Ok(Cancelled::Meta(reason.item().cloned()))
                }
                _ => Ok(Cancelled::Other(format!(
                    "{:?}",
                    reasons
                        .iter()
                        .map(|reason| reason.code().unwrap_or("None"))
                        .collect::<Vec<_>>()
                ))),
            }
        }
        other => Err(unavailable(other)),
    }
}

/// A thread's META item, parsed.
pub(super) struct Meta {
    pub(super) owner: String,
    pub(super) version: u64,
    pub(super) created_at_ms: i64,
    pub(super) state: Option<Value>,
    pub(super) interrupts: Option<Value>,
    pub(super) expires_at: Option<i64>,
    /// The run holding the lease, while the lease is live.
    pub(super) active_run: Option<String>,
    /// Which runner holds the live lease, and whether it handed the run off.
    pub(super) runner: Option<crate::store::Runner>,
    pub(super) title: Option<String>,
    /// A delete has begun; the thread counts as absent.
    pub(super) deleted: bool,
    /// The provider's count of the thread's last model call.
    pub(super) context: Option<ContextMark>,
    /// A sub-agent's thread: where it was delegated from.
    pub(super) parent: Option<ThreadLink>,
}

/// A sub-agent thread's link to its parent, from its META item.
fn parent_link(item: &Item) -> Option<ThreadLink> {
    let id = |name: &str| get_s(item, name).map(str::to_owned);
    Some(ThreadLink {
        thread_id: ThreadId::parse(id(PARENT_THREAD)?, crate::protocol::ids::MAX_ID_LEN).ok()?,
        created_at_ms: get_n(item, "parentCreatedAt")?,
        run_id: RunId::parse(id("parentRun")?, crate::protocol::ids::MAX_ID_LEN).ok()?,
        tool_call_id: ToolCallId::parse(id("parentCall")?, crate::protocol::ids::MAX_ID_LEN)
            .ok()?,
        agent: id("parentAgent")?,
    })
}

/// On a sub-agent thread's META item: its parent thread (with `parentCreatedAt`, `parentRun`,
/// `parentCall` and `parentAgent`).
pub(super) const PARENT_THREAD: &str = "parentThread";

/// A parent's record of one sub-agent thread, in the parent's partition: deleting the parent
/// finds its sub-agents' threads by these. Keyed by the parent's incarnation.
pub(super) fn child_sk(parent_created_at_ms: i64, child: &ThreadId) -> AttributeValue {
    AttributeValue::S(format!("{}{child}", children_prefix(parent_created_at_ms)))
}

pub(super) fn children_prefix(parent_created_at_ms: i64) -> String {
    format!("CHILD#{parent_created_at_ms:013}#")
}

/// The runner of the live lease on a META item.
fn runner(item: &Item) -> Option<crate::store::Runner> {
    get_n(item, "leaseUntil").filter(|until| *until > now_ms())?;
    Some(crate::store::Runner {
        epoch: get_n(item, LEASE_EPOCH).and_then(|epoch| u64::try_from(epoch).ok())?,
        handed_off: item.contains_key(HANDOFF),
    })
}

/// META's record of the last model call, when it has one.
fn context_mark(item: &Item) -> Option<ContextMark> {
    let count = |name: &str| get_n(item, name).and_then(|value| u64::try_from(value).ok());
    Some(ContextMark {
        input_tokens: count("ctxTokens")?,
        seen: count("ctxSeen")?,
        covers: count("ctxCovers")?,
        cleared_before: count("ctxCleared")?,
    })
}

impl Meta {
    pub(super) fn parse(item: &Item) -> Result<Self, StoreError> {
        let corrupt = || StoreError::Corrupt("a thread record is missing fields".to_owned());
        Ok(Self {
            owner: get_s(item, "owner").ok_or_else(corrupt)?.to_owned(),
            version: get_n(item, "version")
                .and_then(|v| u64::try_from(v).ok())
                .ok_or_else(corrupt)?,
            created_at_ms: get_n(item, "createdAt").ok_or_else(corrupt)?,
            state: get_s(item, "state")
                .map(serde_json::from_str)
                .transpose()
                .map_err(|_| corrupt())?,
            interrupts: get_s(item, "interrupts")
                .map(serde_json::from_str)
                .transpose()
                .map_err(|_| corrupt())?,
            expires_at: get_n(item, "expiresAt"),
            active_run: get_s(item, "leaseRun")
                .filter(|_| get_n(item, "leaseUntil").is_some_and(|until| until > now_ms()))
                .map(str::to_owned),
            runner: runner(item),
            title: get_s(item, TITLE).map(str::to_owned),
            deleted: item.contains_key(DELETED_AT),
            context: context_mark(item),
            parent: parent_link(item),
        })
    }

    /// TTL deletion is lazy: an expired thread counts as gone the moment it expires; a thread
    /// being deleted counts as gone from the moment the delete began.
    pub(super) fn is_live(&self) -> bool {
        !self.deleted
            && self
                .expires_at
                .is_none_or(|expires| expires * 1000 > now_ms())
    }
}

/// Whether a META item (whole or projected) stands for a thread that exists, not being deleted
/// and not expired; for a run-end record, whether its thread may still exist.
pub(super) fn is_present(item: &Item) -> bool {
    !item.contains_key(DELETED_AT)
        && get_n(item, "expiresAt").is_none_or(|expires| expires * 1000 > now_ms())
}

/// A message item's sequence number (from its sort key, under `prefix`) and time, for timed
/// reads; `created_at_ms` stands in for the time of a message stored before times were kept.
pub(super) fn message_place(
    item: &Item,
    prefix: &str,
    created_at_ms: i64,
) -> Result<(u64, i64), StoreError> {
    let seq = get_s(item, "sk")
        .and_then(|sk| sk.strip_prefix(prefix))
        .and_then(|seq| seq.parse::<u64>().ok())
        .ok_or_else(|| StoreError::Corrupt("a message item's key has no sequence".to_owned()))?;
    Ok((seq, get_n(item, MESSAGE_AT).unwrap_or(created_at_ms)))
}

pub(super) fn parse_message(item: &Item) -> Result<Message, StoreError> {
    let body = get_s(item, "body")
        .ok_or_else(|| StoreError::Corrupt("a message item has no body".to_owned()))?;
    serde_json::from_str(body)
        .map_err(|err| StoreError::Corrupt(format!("a stored message does not parse: {err}")))
}
