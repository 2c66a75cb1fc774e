//! The memory section: whether runs keep long-term memories per principal, and their bounds.

use super::vars::Vars;
use super::{ConfigError, Section};
use crate::agent::memory::MemorySettings;

impl Section for MemorySettings {
    const SETTINGS: &'static [&'static str] = &[
        "MEMORY",
        "MEMORY_MAX_ITEMS",
        "MEMORY_MAX_CHARS",
        "MEMORY_CONTEXT_TOKENS",
        "MEMORY_TTL_DAYS",
    ];

    fn from_vars(vars: &Vars) -> Result<Self, ConfigError> {
        let defaults = MemorySettings::default();
        Ok(MemorySettings {
            // Off unless the deployment decides to keep facts about its users.
            enabled: vars.flag("MEMORY", false)?,
            // 2,000 memories of 2,000 characters still read in a few Query pages.
            max_items: vars.bounded("MEMORY_MAX_ITEMS", defaults.max_items, 1..=2_000)?,
            max_chars: vars.bounded("MEMORY_MAX_CHARS", defaults.max_chars, 1..=2_000)?,
            context_tokens: vars.bounded(
                "MEMORY_CONTEXT_TOKENS",
                defaults.context_tokens,
                0..=20_000,
            )?,
            ttl_days: vars.bounded("MEMORY_TTL_DAYS", defaults.ttl_days, 0..=36_500)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::tests::config;

    #[test]
    fn memory_is_off_by_default_and_its_bounds_are_checked() {
        let unset = config(&[]).unwrap();
        assert!(!unset.memory.enabled);
        assert_eq!((unset.memory.max_items, unset.memory.max_chars), (200, 500));
        let set = config(&[
            ("MEMORY", "on"),
            ("MEMORY_MAX_ITEMS", "1000"),
            ("MEMORY_TTL_DAYS", "30"),
        ])
        .unwrap();
        assert!(set.memory.enabled);
        assert_eq!((set.memory.max_items, set.memory.ttl_days), (1000, 30));
        assert!(config(&[("MEMORY_MAX_ITEMS", "0")]).is_err());
        assert!(config(&[("MEMORY_MAX_CHARS", "2001")]).is_err());
        assert!(config(&[("MEMORY", "sometimes")]).is_err());
    }
}
