//! The DynamoDB store's usage and quotas, in the caller's `USAGE#<principal>` partition: one
//! item per UTC day (tokens spent and reserved, per-model counters) and one per minute with
//! runs; a reservation is a conditional write to both.

use super::items::*;
use super::reads::SortKeys;
use super::{DynamoStore, back_off};
use crate::auth::Principal;
use crate::store::{
    DayUsage, ModelUsage, QuotaExceeded, QuotaLimits, Reservation, Settlement, StoreError,
    UsageLedger, secs_to_next_day, secs_to_next_minute, usage_day,
};
use async_trait::async_trait;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity, TransactWriteItem, Update};
use std::collections::BTreeMap;
use std::time::Duration;

/// Which quota refused a reservation.
enum Refused {
    Tokens,
    Runs,
}

#[async_trait]
impl UsageLedger for DynamoStore {
    async fn reserve(
        &self,
        owner: &Principal,
        limits: &QuotaLimits,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Reservation, StoreError> {
        let reservation = Reservation {
            owner: owner.clone(),
            day: usage_day(now),
            reserved_tokens: limits.reservation(),
        };
        if limits.is_unlimited() {
            return Ok(reservation);
        }
        let tokens_refused = |limit| {
            StoreError::QuotaExceeded(QuotaExceeded::TokensPerDay {
                limit,
                retry_after_secs: secs_to_next_day(now),
            })
        };
        let runs_refused = |limit| {
            StoreError::QuotaExceeded(QuotaExceeded::RunsPerMinute {
                limit,
                retry_after_secs: secs_to_next_minute(now),
            })
        };
        let day_update = match limits.tokens_per_day {
            None => None,
            Some(limit) => Some(
                self.day_reservation(&reservation, limit, now)?
                    .ok_or_else(|| tokens_refused(limit))?,
            ),
        };
        let minute_update = match limits.runs_per_minute {
            None => None,
            Some(0) => return Err(runs_refused(0)),
            Some(limit) => Some(self.minute_admission(owner, limit, now)?),
        };
        let refused = match (day_update, minute_update) {
            (Some(day), Some(minute)) => self.reserve_both(day, minute).await?,
            (Some(update), None) => (!self.update_if(update).await?).then_some(Refused::Tokens),
            (None, Some(update)) => (!self.update_if(update).await?).then_some(Refused::Runs),
            (None, None) => None,
        };
        match refused {
            None => Ok(reservation),
            Some(Refused::Tokens) => Err(tokens_refused(limits.tokens_per_day.unwrap_or(0))),
            Some(Refused::Runs) => Err(runs_refused(limits.runs_per_minute.unwrap_or(0))),
        }
    }

    async fn settle(&self, settlement: Settlement<'_>) -> Result<(), StoreError> {
        let reservation = settlement.reservation;
        let models = settlement.run.unwrap_or_default();
        let used: u128 = models
            .iter()
            .map(|run| u128::from(run.input) + u128::from(run.output))
            .sum();
        let delta =
            i128::try_from(used).unwrap_or(i128::MAX) - i128::from(reservation.reserved_tokens);
        if settlement.run.is_none() && delta == 0 {
            return Ok(());
        }
        let day_start = chrono::NaiveDate::parse_from_str(&reservation.day, "%Y-%m-%d")
            .ok()
            .and_then(|day| day.and_hms_opt(0, 0, 0))
            .map(|midnight| midnight.and_utc().timestamp())
            .ok_or_else(|| {
                StoreError::Corrupt(format!("a reservation's day is {:?}", reservation.day))
            })?;
        let mut add = Vec::new();
        let mut update = Update::builder()
            .table_name(&self.table)
            .key("pk", usage_pk(reservation.owner.as_str()))
            .key("sk", s(day_sk(&reservation.day)))
            .expression_attribute_values(":exp", n(day_start + USAGE_RETENTION_SECS));
        if delta != 0 {
            add.push("spent :delta".to_owned());
            update = update.expression_attribute_values(":delta", num(delta));
        }
        for (number, run) in models.iter().enumerate() {
            let model = format!("{}/{}", run.provider, run.model);
            let counters = [1, run.input, run.output, run.reasoning, run.cached_input];
            // Model names hold `:`, `.` and `-`: always through name placeholders.
            for (index, (metric, value)) in USAGE_METRICS.iter().zip(counters).enumerate() {
                let slot = format!("m{number}_{index}");
                add.push(format!("#{slot} :{slot}"));
                update = update
                    .expression_attribute_names(format!("#{slot}"), format!("{metric}:{model}"))
                    .expression_attribute_values(format!(":{slot}"), num(value));
            }
        }
        // No condition: a run that ran is accounted for whatever the quota says by now.
        let expression = format!(
            "ADD {} SET expiresAt = if_not_exists(expiresAt, :exp)",
            add.join(", ")
        );
        let update = update
            .update_expression(expression)
            .build()
            .map_err(unavailable)?;
        self.update_if(update).await.map(|_| ())
    }

    async fn usage(
        &self,
        owner: &Principal,
        from: &str,
        to: &str,
    ) -> Result<Vec<DayUsage>, StoreError> {
        if from > to {
            // DynamoDB refuses a BETWEEN whose ends are reversed.
            return Ok(Vec::new());
        }
        let days = SortKeys::Between(day_sk(from), day_sk(to));
        let items = self
            .query_partition(usage_pk(owner.as_str()), days, None)
            .await?;
        Ok(items
            .iter()
            .filter_map(day_usage)
            .filter(|day| !day.models.is_empty())
            .collect())
    }
}

impl DynamoStore {
    /// The day item's update that takes `reservation` under a daily quota of `limit` tokens:
    /// admitted while the day's spend leaves room for the reservation (for at least one token
    /// when nothing is reserved). `None` when no spend could: a quota of 0 never admits.
    fn day_reservation(
        &self,
        reservation: &Reservation,
        limit: u64,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Option<Update>, StoreError> {
        use chrono::Timelike;
        let cap = i128::from(limit) - i128::from(reservation.reserved_tokens.max(1));
        if cap < 0 {
            return Ok(None);
        }
        let day_start = now.timestamp() - i64::from(now.num_seconds_from_midnight());
        Update::builder()
            .table_name(&self.table)
            .key("pk", usage_pk(reservation.owner.as_str()))
            .key("sk", s(day_sk(&reservation.day)))
            .update_expression("ADD spent :reserve SET expiresAt = if_not_exists(expiresAt, :exp)")
            .condition_expression("attribute_not_exists(spent) OR spent <= :cap")
            .expression_attribute_values(":reserve", num(reservation.reserved_tokens))
            .expression_attribute_values(":cap", num(cap))
            .expression_attribute_values(":exp", n(day_start + USAGE_RETENTION_SECS))
            .build()
            .map(Some)
            .map_err(unavailable)
    }

    /// The minute item's update that counts a run, while the minute has had fewer than
    /// `limit`.
    fn minute_admission(
        &self,
        owner: &Principal,
        limit: u32,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Update, StoreError> {
        use chrono::Timelike;
        let minute_start = now.timestamp() - i64::from(now.second());
        Update::builder()
            .table_name(&self.table)
            .key("pk", usage_pk(owner.as_str()))
            .key(
                "sk",
                s(minute_sk(&now.format("%Y-%m-%dT%H:%M").to_string())),
            )
            .update_expression("ADD runs :one SET expiresAt = :exp")
            .condition_expression("attribute_not_exists(runs) OR runs < :limit")
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":limit", num(limit))
            .expression_attribute_values(":exp", n(minute_start + MINUTE_RETENTION_SECS))
            .build()
            .map_err(unavailable)
    }

    /// One UpdateItem of a usage item: `false` when its condition refused it. The item may be
    /// in a quota transaction of a concurrent run of the same caller (TransactionConflict,
    /// which the SDK does not retry); then it is tried again a few times.
    async fn update_if(&self, update: Update) -> Result<bool, StoreError> {
        const TRIES: u32 = 8;
        let mut delay = Duration::from_millis(20);
        for attempt in 0..TRIES {
            back_off(attempt, &mut delay).await;
            self.count_write();
            let result = self
                .client
                .update_item()
                .table_name(update.table_name.clone())
                .set_key(Some(update.key.clone()))
                .update_expression(update.update_expression.clone())
                .set_condition_expression(update.condition_expression.clone())
                .set_expression_attribute_names(update.expression_attribute_names.clone())
                .set_expression_attribute_values(update.expression_attribute_values.clone())
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await;
            match result {
                Ok(output) => {
                    self.count_write_capacity(output.consumed_capacity());
                    return Ok(true);
                }
                Err(error) => match error.into_service_error() {
                    UpdateItemError::ConditionalCheckFailedException(_) => return Ok(false),
                    UpdateItemError::TransactionConflictException(_) => {}
                    other => return Err(unavailable(other)),
                },
            }
        }
        Err(StoreError::unavailable(
            "a usage record kept conflicting with concurrent quota transactions",
        ))
    }

    /// Both quotas' updates in one transaction: which quota refused, if one did. Concurrent
    /// reservations of one caller can collide on the same items (TransactionConflict); those
    /// are tried again a few times.
    async fn reserve_both(
        &self,
        day: Update,
        minute: Update,
    ) -> Result<Option<Refused>, StoreError> {
        const TRIES: u32 = 8;
        let mut delay = Duration::from_millis(20);
        for attempt in 0..TRIES {
            back_off(attempt, &mut delay).await;
            self.count_write();
            let result = self
                .client
                .transact_write_items()
                .transact_items(TransactWriteItem::builder().update(day.clone()).build())
                .transact_items(TransactWriteItem::builder().update(minute.clone()).build())
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await;
            let error = match result {
                Ok(output) => {
                    self.count_write_capacity(output.consumed_capacity());
                    return Ok(None);
                }
                Err(error) => error,
            };
            let codes = match error.into_service_error() {
                TransactWriteItemsError::TransactionCanceledException(cancelled) => cancelled
                    .cancellation_reasons()
                    .iter()
                    .map(|reason| reason.code().unwrap_or("None").to_owned())
                    .collect::<Vec<_>>(),
                other => return Err(unavailable(other)),
            };
            let failed = |index: usize| {
                codes.get(index).map(String::as_str) == Some("ConditionalCheckFailed")
            };
            if failed(0) {
                return Ok(Some(Refused::Tokens));
            }
            if failed(1) {
                return Ok(Some(Refused::Runs));
            }
            if !codes.iter().any(|code| code == "TransactionConflict") {
                return Err(StoreError::unavailable(format!(
                    "transaction cancelled: {codes:?}"
                )));
            }
        }
        Err(StoreError::unavailable(
            "the quota transaction kept conflicting with concurrent ones",
        ))
    }
}

/// A usage day item's per-model counters (`<metric>:<provider>/<model>`), models sorted by
/// provider, then model; `None` for an item that is not a day's.
fn day_usage(item: &Item) -> Option<DayUsage> {
    let day = get_s(item, "sk")?.strip_prefix("DAY#")?.to_owned();
    let mut models: BTreeMap<(String, String), ModelUsage> = BTreeMap::new();
    for (name, value) in item {
        let Some((metric, model)) = name
            .split_once(':')
            .filter(|(metric, _)| USAGE_METRICS.contains(metric))
        else {
            continue;
        };
        let (Some((provider, model)), AttributeValue::N(value)) = (model.split_once('/'), value)
        else {
            continue;
        };
        let Ok(value) = value.parse::<u64>() else {
            continue;
        };
        let entry = models
            .entry((provider.to_owned(), model.to_owned()))
            .or_insert_with(|| ModelUsage {
                provider: provider.to_owned(),
                model: model.to_owned(),
                ..ModelUsage::default()
            });
        match metric {
            "runs" => entry.runs = value,
            "in" => entry.input_tokens = value,
            "out" => entry.output_tokens = value,
            "rsn" => entry.reasoning_tokens = value,
            "cch" => entry.cached_input_tokens = value,
            _ => {}
        }
    }
    Some(DayUsage {
        day,
        models: models.into_values().collect(),
    })
}
