//! Usage and quotas: [`UsageLedger`] takes a run from its caller's quotas before it starts,
//! settles its real tokens after, and reports a caller's usage by day and model.

use super::StoreError;
use crate::auth::Principal;
use async_trait::async_trait;

/// A caller's quotas, as configured for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QuotaLimits {
    pub tokens_per_day: Option<u64>,
    pub runs_per_minute: Option<u32>,
    /// Tokens counted against the daily quota while a run is in flight, settled at its end.
    pub reserve_tokens: u64,
}

impl QuotaLimits {
    pub fn is_unlimited(&self) -> bool {
        self.tokens_per_day.is_none() && self.runs_per_minute.is_none()
    }

    /// The tokens a run reserves: never more than the quota, so a fresh day admits a run.
    pub fn reservation(&self) -> u64 {
        self.tokens_per_day
            .map_or(0, |limit| self.reserve_tokens.min(limit))
    }
}

/// Which quota refused a run, and when to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaExceeded {
    TokensPerDay { limit: u64, retry_after_secs: u64 },
    RunsPerMinute { limit: u32, retry_after_secs: u64 },
}

impl QuotaExceeded {
    pub(crate) fn retry_after_secs(&self) -> u64 {
        match self {
            QuotaExceeded::TokensPerDay {
                retry_after_secs, ..
            }
            | QuotaExceeded::RunsPerMinute {
                retry_after_secs, ..
            } => *retry_after_secs,
        }
    }
}

impl std::fmt::Display for QuotaExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QuotaExceeded::TokensPerDay { limit, .. } => {
                write!(f, "the daily quota of {limit} tokens is used up")
            }
            QuotaExceeded::RunsPerMinute { limit, .. } => {
                write!(f, "the quota of {limit} runs per minute is reached")
            }
        }
    }
}

/// The UTC day (`YYYY-MM-DD`) a usage record belongs to.
pub fn usage_day(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%Y-%m-%d").to_string()
}

/// Seconds from `at` to the next UTC midnight (at least 1).
pub(crate) fn secs_to_next_day(at: chrono::DateTime<chrono::Utc>) -> u64 {
    use chrono::Timelike;
    86_400 - u64::from(at.num_seconds_from_midnight()).min(86_399)
}

/// Seconds from `at` to the next UTC minute (at least 1).
pub(crate) fn secs_to_next_minute(at: chrono::DateTime<chrono::Utc>) -> u64 {
    use chrono::Timelike;
    60 - u64::from(at.second()).min(59)
}

/// What a run took from its caller's quota before it started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    pub owner: Principal,
    /// The UTC day the run is accounted to: the day it started.
    pub day: String,
    pub reserved_tokens: u64,
}

/// One run's tokens, in AG-UI's accounting (reasoning and cached counts are parts of the
/// input and output totals).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunTokens<'a> {
    pub provider: &'a str,
    pub model: &'a str,
    pub input: u64,
    pub output: u64,
    pub reasoning: u64,
    pub cached_input: u64,
}

/// A run's usage for the day's record: its real tokens replace what it reserved.
#[derive(Debug, Clone)]
pub struct Settlement<'a> {
    pub reservation: &'a Reservation,
    /// What the run used, one entry per provider and model (a fallback, a sub-agent's model);
    /// `None` for a run that never started: only the reservation is given back.
    pub run: Option<&'a [RunTokens<'a>]>,
}

/// A model's usage on one day.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelUsage {
    pub provider: String,
    pub model: String,
    pub runs: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub reasoning_tokens: u64,
    pub cached_input_tokens: u64,
}

/// A caller's usage on one UTC day, by model.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct DayUsage {
    pub day: String,
    pub models: Vec<ModelUsage>,
}

#[async_trait]
pub trait UsageLedger: Send + Sync {
    /// Checks the caller's quotas and takes a run from them, in one conditional write:
    /// `QuotaExceeded` when a quota refuses, and then nothing is taken.
    async fn reserve(
        &self,
        owner: &Principal,
        limits: &QuotaLimits,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Reservation, StoreError>;

    /// Adds a run's tokens to its day and gives back its reservation, atomically.
    async fn settle(&self, settlement: Settlement<'_>) -> Result<(), StoreError>;

    /// The caller's usage by day (`YYYY-MM-DD`, both ends included), oldest first.
    async fn usage(
        &self,
        owner: &Principal,
        from: &str,
        to: &str,
    ) -> Result<Vec<DayUsage>, StoreError>;
}
