//! The table's item layout: keys, attribute conversions, the parsed `META` item, and what a
//! cancelled transaction says. Everything here mirrors `template.yaml`'s table.

use super::super::StoreError;
use crate::protocol::{Message, ThreadId};
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, ConsumedCapacity};
use serde_json::Value;
use std::collections::HashMap;

pub(super) type Item = HashMap<String, AttributeValue>;

pub(super) const META: &str = "META";
/// DynamoDB allows 100 items per transaction; one place is the META update.
pub(super) const MESSAGES_PER_WRITE: usize = 99;
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

pub(super) fn message_sk(created_at_ms: i64, seq: usize) -> AttributeValue {
    AttributeValue::S(format!("{}{seq:010}", message_prefix(created_at_ms)))
}

/// Event log items: `RUN#<thread created>#<run id>#<attempt started>#<first seq>.<part>`. Ids
/// never contain `#`, so a run's prefix matches only its own items.
pub(super) fn run_prefix(created_at_ms: i64, run_id: &str) -> String {
    format!("RUN#{created_at_ms:013}#{run_id}#")
}

pub(super) fn attempt_prefix(created_at_ms: i64, run_id: &str, started_at_ms: i64) -> String {
    format!("{}{started_at_ms:013}#", run_prefix(created_at_ms, run_id))
}

pub(super) fn batch_sk(prefix: &str, first_seq: u64, part: usize) -> AttributeValue {
    AttributeValue::S(format!("{prefix}{first_seq:010}.{part:03}"))
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
        })
    }

    /// TTL deletion is lazy: an expired thread counts as gone the moment it expires.
    pub(super) fn is_live(&self) -> bool {
        self.expires_at
            .is_none_or(|expires| expires * 1000 > now_ms())
    }
}

pub(super) fn parse_message(item: &Item) -> Result<Message, StoreError> {
    let body = get_s(item, "body")
        .ok_or_else(|| StoreError::Corrupt("a message item has no body".to_owned()))?;
    serde_json::from_str(body)
        .map_err(|err| StoreError::Corrupt(format!("a stored message does not parse: {err}")))
}
