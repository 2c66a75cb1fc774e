//! The in-memory store's usage and quotas: per caller, the tokens of each day (spent and
//! reserved, and by model) and the runs admitted in the current minute.

use super::MemoryStore;
use crate::auth::Principal;
use crate::store::{
    DayUsage, ModelUsage, QuotaExceeded, QuotaLimits, Reservation, Settlement, StoreError,
    UsageLedger, secs_to_next_day, secs_to_next_minute, usage_day,
};
use async_trait::async_trait;

#[async_trait]
impl UsageLedger for MemoryStore {
    async fn reserve(
        &self,
        owner: &Principal,
        limits: &QuotaLimits,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Reservation, StoreError> {
        let day = usage_day(now);
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
                    retry_after_secs: secs_to_next_day(now),
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
                    retry_after_secs: secs_to_next_minute(now),
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
        let models = settlement.run.unwrap_or_default();
        let used: u64 = models.iter().map(|run| run.input + run.output).sum();
        usage.spent += i64::try_from(used).unwrap_or(i64::MAX)
            - i64::try_from(reservation.reserved_tokens).unwrap_or(i64::MAX);
        for run in models {
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
}
