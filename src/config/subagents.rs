//! The sub-agents section: how a run's client sees its sub-agents' work, how deep and how many
//! delegations go, and which profile the AG-UI routes serve. Profiles declare their sub-agents
//! in `AGENT_PROFILES` (the profiles section).

use super::vars::Vars;
use super::{ConfigError, SecretString, Section};
use crate::agent::subagents::{SubagentSettings, Visibility};
use std::collections::BTreeMap;

/// `SUBAGENT_*` and `AGENT_DEFAULT_PROFILE`.
#[derive(Debug, Clone, Default)]
pub struct SubagentsConfig {
    pub settings: SubagentSettings,
    /// The profile the AG-UI routes serve instead of the default agent.
    pub default_profile: Option<String>,
    /// The headers of each remote sub-agent's `headersSecretId`, by secret id: read by start-up
    /// (`startup::read_subagent_secrets`), never from the environment.
    pub secret_headers: BTreeMap<String, Vec<(String, SecretString)>>,
}

impl Section for SubagentsConfig {
    const SETTINGS: &'static [&'static str] = &[
        "SUBAGENT_VISIBILITY",
        "SUBAGENT_MAX_DEPTH",
        "SUBAGENT_MAX_PER_RUN",
        "AGENT_DEFAULT_PROFILE",
    ];

    fn from_vars(vars: &Vars) -> Result<Self, ConfigError> {
        let defaults = SubagentSettings::default();
        let visibility = match vars.text("SUBAGENT_VISIBILITY") {
            None => Visibility::default(),
            Some(value) => value.parse().map_err(|()| ConfigError::Invalid {
                name: "SUBAGENT_VISIBILITY",
                expected: "auto, attributed, inline or hidden",
                value,
            })?,
        };
        Ok(Self {
            settings: SubagentSettings {
                visibility,
                max_depth: vars.bounded("SUBAGENT_MAX_DEPTH", defaults.max_depth, 1..=8)?,
                max_per_run: vars.bounded("SUBAGENT_MAX_PER_RUN", defaults.max_per_run, 1..=64)?,
            },
            default_profile: vars.text("AGENT_DEFAULT_PROFILE"),
            secret_headers: BTreeMap::new(),
        })
    }
}
