//! The quotas section: the default token and run quotas per principal, and `QUOTA_OVERRIDES`
//! for some principals.

use super::vars::Vars;
use super::{ConfigError, Section};
use crate::agent::{QuotaLimits, QuotaOverride, Quotas};
use std::collections::HashMap;
use std::ops::RangeInclusive;

const TOKENS: RangeInclusive<u64> = 1..=1_000_000_000_000;
const RUNS: RangeInclusive<u32> = 1..=100_000;

impl Section for Quotas {
    const SETTINGS: &'static [&'static str] = &[
        "QUOTA_TOKENS_PER_DAY",
        "QUOTA_RUNS_PER_MINUTE",
        "QUOTA_RESERVE_TOKENS",
        "QUOTA_OVERRIDES",
    ];

    /// `QUOTA_*`: the default quotas and `QUOTA_OVERRIDES`, a JSON object of principal to
    /// `{"tokensPerDay": n | null, "runsPerMinute": n | null}` (a key left out keeps the default;
    /// `null` lifts that quota for the principal).
    fn from_vars(vars: &Vars) -> Result<Self, ConfigError> {
        let default = QuotaLimits {
            tokens_per_day: vars.optional_bounded("QUOTA_TOKENS_PER_DAY", TOKENS)?,
            runs_per_minute: vars.optional_bounded("QUOTA_RUNS_PER_MINUTE", RUNS)?,
            reserve_tokens: vars.bounded("QUOTA_RESERVE_TOKENS", 0, 0..=10_000_000)?,
        };
        let overrides = match vars
            .raw("QUOTA_OVERRIDES")
            .filter(|text| !text.trim().is_empty())
        {
            Some(text) => overrides(text)?,
            None => HashMap::new(),
        };
        Ok(Quotas { default, overrides })
    }
}

fn overrides(text: &str) -> Result<HashMap<String, QuotaOverride>, ConfigError> {
    let invalid = || ConfigError::Invalid {
        name: "QUOTA_OVERRIDES",
        expected: "a JSON object of principal to {\"tokensPerDay\": 1..10^12 or null, \"runsPerMinute\": 1..100000 or null}",
        value: text.to_owned(),
    };
    let parsed: HashMap<String, serde_json::Map<String, serde_json::Value>> =
        serde_json::from_str(text).map_err(|_| invalid())?;
    let mut overrides = HashMap::new();
    for (principal, fields) in parsed {
        let mut custom = QuotaOverride::default();
        for (key, value) in fields {
            let number = match &value {
                serde_json::Value::Null => None,
                other => Some(other.as_u64().ok_or_else(invalid)?),
            };
            match key.as_str() {
                "tokensPerDay" => {
                    if number.is_some_and(|n| !TOKENS.contains(&n)) {
                        return Err(invalid());
                    }
                    custom.tokens_per_day = Some(number);
                }
                "runsPerMinute" => {
                    let runs = number
                        .map(|n| u32::try_from(n).ok().filter(|n| RUNS.contains(n)))
                        .map(|runs| runs.ok_or_else(invalid))
                        .transpose()?;
                    custom.runs_per_minute = Some(runs);
                }
                _ => return Err(invalid()),
            }
        }
        overrides.insert(principal, custom);
    }
    Ok(overrides)
}

#[cfg(test)]
mod tests {
    use crate::config::tests::config;

    #[test]
    fn quotas_have_per_principal_overrides() {
        use crate::agent::QuotaLimits;
        use crate::auth::Principal;
        let quotas = config(&[
            ("QUOTA_TOKENS_PER_DAY", "1000"),
            ("QUOTA_RUNS_PER_MINUTE", "5"),
            (
                "QUOTA_OVERRIDES",
                r#"{"vip": {"tokensPerDay": null}, "bot": {"runsPerMinute": 1}}"#,
            ),
        ])
        .unwrap()
        .agent
        .quotas;
        let limits = |who: &str| quotas.for_principal(&Principal::new(who));
        let default = QuotaLimits {
            tokens_per_day: Some(1000),
            runs_per_minute: Some(5),
            reserve_tokens: 0,
        };
        assert_eq!(limits("alice"), default);
        assert_eq!(
            limits("vip"),
            QuotaLimits {
                tokens_per_day: None,
                ..default
            }
        );
        assert_eq!(
            limits("bot"),
            QuotaLimits {
                runs_per_minute: Some(1),
                ..default
            }
        );
        assert!(config(&[]).unwrap().agent.quotas.default.is_unlimited());
    }
}
