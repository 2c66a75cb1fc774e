//! What CopilotKit's routes announce and serve beyond the agent, as start-up sets it.

use crate::dialects::copilotkit::{self as dialect, Features};

/// What CopilotKit's routes need beyond the agent: the agents' descriptions, and the optional
/// features this deployment serves (suggestions, voice input, generative UI), as start-up sets
/// them. The generative-UI flags are read from here alone.
#[derive(Debug, Clone, Default)]
pub(crate) struct CopilotKitSettings {
    /// Each profile's description (`AGENT_PROFILES`' `description`), by name.
    pub descriptions: std::collections::BTreeMap<String, String>,
    /// The default agent's description; a generic one when unset.
    pub default_description: Option<String>,
    /// `POST /agent/{agentId}/suggest` is answered.
    pub suggestions: bool,
    /// `POST /transcribe` is answered, taking recordings up to this many bytes (a transcription
    /// model is configured).
    pub transcription_max_bytes: Option<usize>,
    pub generative_ui: dialect::GenerativeUi,
}

impl CopilotKitSettings {
    pub(super) fn description(&self, profile: Option<&str>) -> String {
        match profile {
            None => self
                .default_description
                .clone()
                .unwrap_or_else(|| "An AG-UI agent on AWS Lambda".to_owned()),
            Some(name) => self
                .descriptions
                .get(name)
                .cloned()
                .unwrap_or_else(|| format!("The agent profile {name}")),
        }
    }

    pub(super) fn features(&self) -> Features {
        Features {
            suggestions: self.suggestions,
            transcription: self.transcription_max_bytes.is_some(),
            generative_ui: self.generative_ui.clone(),
        }
    }
}
