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
    /// The profiles are the demo team (nothing was configured): every `agent_type` is served.
    pub demo_team: bool,
    /// The headers of each remote sub-agent's `headersSecretId`, by secret id: read by start-up
    /// (`startup::read_subagent_secrets`), never from the environment.
    pub secret_headers: BTreeMap<String, Vec<(String, SecretString)>>,
    /// `A2A_AGENT_CREDENTIALS`: A2A agents' credentials from the environment, by card URL (a
    /// `credentialsSecretId` wins over it).
    pub a2a_credentials: BTreeMap<String, SecretString>,
    /// The credentials of each A2A sub-agent's `credentialsSecretId`, by secret id: read by
    /// start-up.
    pub a2a_secrets: BTreeMap<String, SecretString>,
}

impl Section for SubagentsConfig {
    const SETTINGS: &'static [&'static str] = &[
        "SUBAGENT_VISIBILITY",
        "SUBAGENT_MAX_DEPTH",
        "SUBAGENT_MAX_PER_RUN",
        "AGENT_DEFAULT_PROFILE",
        "A2A_AGENT_CREDENTIALS",
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
            demo_team: false,
            secret_headers: BTreeMap::new(),
            a2a_credentials: a2a_credentials(vars)?,
            a2a_secrets: BTreeMap::new(),
        })
    }
}

/// `A2A_AGENT_CREDENTIALS`: a JSON object of card URL to credentials, each a string (a bearer
/// token) or `{"bearer": …}` / `{"apiKey": …}`, kept as the text a secret would hold.
fn a2a_credentials(vars: &Vars) -> Result<BTreeMap<String, SecretString>, ConfigError> {
    let Some(text) = vars.text("A2A_AGENT_CREDENTIALS") else {
        return Ok(BTreeMap::new());
    };
    let invalid = || ConfigError::Invalid {
        name: "A2A_AGENT_CREDENTIALS",
        expected: "a JSON object of agent card URL to a token or {\"bearer\": …} / {\"apiKey\": …}",
        // The value is a secret: never echoed.
        value: "(not shown)".to_owned(),
    };
    let object: BTreeMap<String, serde_json::Value> =
        serde_json::from_str(&text).map_err(|_| invalid())?;
    object
        .into_iter()
        .map(|(card, credentials)| match credentials {
            serde_json::Value::String(token) => Ok((card, SecretString::from(token))),
            serde_json::Value::Object(_) => Ok((card, SecretString::from(credentials.to_string()))),
            _ => Err(invalid()),
        })
        .collect()
}
