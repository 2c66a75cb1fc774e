//! The profiles section: `AGENT_PROFILES`, named agents a request picks by
//! `forwardedProps.agent_type`, each checked here but for whether its tools exist.

use super::vars::Vars;
use super::{ConfigError, Section};
use std::collections::BTreeMap;
use std::fmt;

/// At most this many `AGENT_PROFILES`.
pub(crate) const MAX_PROFILES: usize = 32;
/// The longest profile system prompt, in characters.
pub(crate) const MAX_PROFILE_PROMPT_CHARS: usize = 100_000;
/// The longest profile model name, in characters: Bedrock's `modelId` limit, which ARNs need.
pub(crate) const MAX_PROFILE_MODEL_CHARS: usize = 2_048;

/// One profile of `AGENT_PROFILES`; a part left out is the default agent's.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProfileConfig {
    /// Instead of `AGENT_SYSTEM_PROMPT`; `""` sends none.
    pub system_prompt: Option<String>,
    /// Instead of `AGENT_MODEL`: `provider:model` of any configured provider, or a model of
    /// `MODEL_PROVIDER`.
    pub model: Option<String>,
    /// Instead of `REASONING_EFFORT`.
    pub reasoning_effort: Option<super::ReasoningEffort>,
    /// The server tools offered, by name (checked against the registry at start-up); `[]` is none.
    pub tools: Option<Vec<String>>,
    /// Instead of `MODEL_CONTEXT_TOKENS`: this profile's model's input window.
    pub context_tokens: Option<u32>,
    /// Instead of `MEMORY`: whether this profile's runs keep long-term memories.
    pub memory: Option<bool>,
}

/// What is wrong with `AGENT_PROFILES`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfilesConfigError {
    #[error(
        "must be a JSON object of profile name to {{\"systemPrompt\": string, \"model\": string, \"tools\": [string], \"contextTokens\": number}}: {0}"
    )]
    Json(String),
    #[error("{0} profiles; at most {MAX_PROFILES}")]
    TooMany(usize),
    #[error("profile name {0:?} is not 1-64 letters, digits, _ or -")]
    BadName(String),
    #[error("profile {0} is given twice")]
    Duplicate(String),
    #[error("profile name \"memory\" is reserved for the v1 agent API's internal automation mode")]
    Internal,
    #[error("profile {0}: systemPrompt is longer than {MAX_PROFILE_PROMPT_CHARS} characters")]
    PromptTooLong(String),
    #[error(
        "profile {0}: model must be 1-{MAX_PROFILE_MODEL_CHARS} characters, without control characters or surrounding spaces"
    )]
    BadModel(String),
    #[error("profile {0}: contextTokens must be 1000 to 10000000")]
    BadContextTokens(String),
    #[error("profile {profile}: tool name {tool:?} is not 1-64 letters, digits, _ or -")]
    BadToolName { profile: String, tool: String },
}

/// The profiles by name; empty when `AGENT_PROFILES` is unset.
pub(crate) type Profiles = BTreeMap<String, ProfileConfig>;

impl Section for Profiles {
    const SETTINGS: &'static [&'static str] = &["AGENT_PROFILES"];

    /// A JSON object of profile name to [`ProfileConfig`]. Whether its tools exist is checked at
    /// start-up, where the registry (with the MCP servers' tools) is known.
    fn from_vars(vars: &Vars) -> Result<Self, ConfigError> {
        match vars.text("AGENT_PROFILES") {
            Some(json) => Ok(parse(&json)?),
            None => Ok(BTreeMap::new()),
        }
    }
}

fn parse(json: &str) -> Result<Profiles, ProfilesConfigError> {
    let entries: Entries =
        serde_json::from_str(json).map_err(|err| ProfilesConfigError::Json(err.to_string()))?;
    if entries.0.len() > MAX_PROFILES {
        return Err(ProfilesConfigError::TooMany(entries.0.len()));
    }
    let mut profiles = BTreeMap::new();
    for (name, mut profile) in entries.0 {
        check(&name, &mut profile)?;
        if profiles.contains_key(&name) {
            return Err(ProfilesConfigError::Duplicate(name));
        }
        profiles.insert(name, profile);
    }
    Ok(profiles)
}

/// One profile's name, prompt, model and tool names; a tool listed twice is kept once.
fn check(name: &str, profile: &mut ProfileConfig) -> Result<(), ProfilesConfigError> {
    if name == crate::agent::INTERNAL_AGENT_TYPE {
        return Err(ProfilesConfigError::Internal);
    }
    // The same rule as tool names: safe in logs and error messages, and what a client's
    // routing field can carry without escaping.
    if !crate::protocol::input::is_valid_tool_name(name) {
        return Err(ProfilesConfigError::BadName(name.to_owned()));
    }
    if profile
        .system_prompt
        .as_ref()
        .is_some_and(|prompt| prompt.chars().count() > MAX_PROFILE_PROMPT_CHARS)
    {
        return Err(ProfilesConfigError::PromptTooLong(name.to_owned()));
    }
    if profile.model.as_ref().is_some_and(|model| {
        model.is_empty()
            || model.chars().count() > MAX_PROFILE_MODEL_CHARS
            || model.trim() != model
            || model.chars().any(char::is_control)
    }) {
        return Err(ProfilesConfigError::BadModel(name.to_owned()));
    }
    if profile
        .context_tokens
        .is_some_and(|tokens| !(1_000..=10_000_000).contains(&tokens))
    {
        return Err(ProfilesConfigError::BadContextTokens(name.to_owned()));
    }
    if let Some(tools) = &mut profile.tools {
        if let Some(bad) = tools
            .iter()
            .find(|tool| !crate::protocol::input::is_valid_tool_name(tool))
        {
            return Err(ProfilesConfigError::BadToolName {
                profile: name.to_owned(),
                tool: bad.clone(),
            });
        }
        tools.sort();
        tools.dedup();
    }
    Ok(())
}

/// A JSON object's entries in order, duplicates kept: a map would silently keep the last of two
/// profiles of one name.
struct Entries(Vec<(String, ProfileConfig)>);

impl<'de> serde::Deserialize<'de> for Entries {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Entries;
            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("an object of profile name to profile")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Entries, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(Entries(entries))
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::config;

    #[test]
    fn agent_profiles_parse_with_every_part_optional() {
        assert!(config(&[]).unwrap().profiles.is_empty());
        assert!(
            config(&[("AGENT_PROFILES", "  ")])
                .unwrap()
                .profiles
                .is_empty()
        );
        let profiles = config(&[(
            "AGENT_PROFILES",
            r#"{"worker": {"systemPrompt": "You file tickets.", "model": "gpt-4o",
                           "tools": ["lookup_order", "get_current_time", "lookup_order"]},
                "chat-2": {}}"#,
        )])
        .unwrap()
        .profiles;
        assert_eq!(
            profiles.keys().map(String::as_str).collect::<Vec<_>>(),
            ["chat-2", "worker"]
        );
        assert_eq!(
            profiles["worker"],
            ProfileConfig {
                system_prompt: Some("You file tickets.".to_owned()),
                model: Some("gpt-4o".to_owned()),
                tools: Some(vec![
                    "get_current_time".to_owned(),
                    "lookup_order".to_owned()
                ]),
                context_tokens: None,
                memory: None,
                reasoning_effort: None,
            }
        );
        assert_eq!(profiles["chat-2"], ProfileConfig::default());
        let no_tools = config(&[("AGENT_PROFILES", r#"{"plain": {"tools": []}}"#)]).unwrap();
        assert_eq!(no_tools.profiles["plain"].tools, Some(vec![]));
    }

    #[test]
    fn agent_profiles_refuse_what_they_cannot_serve() {
        let error = |json: &str| config(&[("AGENT_PROFILES", json)]).unwrap_err().to_string();
        let unknown_key = error(r#"{"worker": {"temperature": 0.2}}"#);
        assert!(
            unknown_key.starts_with("AGENT_PROFILES: must be a JSON object")
                && unknown_key.contains("unknown field `temperature`"),
            "{unknown_key}"
        );
        assert_eq!(
            error(r#"{"work er": {}}"#),
            "AGENT_PROFILES: profile name \"work er\" is not 1-64 letters, digits, _ or -"
        );
        assert!(error(&format!(r#"{{"{}": {{}}}}"#, "a".repeat(65))).contains("is not 1-64"));
        assert!(error(r#"{"": {}}"#).contains("is not 1-64"));
        assert_eq!(
            error(r#"{"memory": {}}"#),
            "AGENT_PROFILES: profile name \"memory\" is reserved for the v1 agent API's internal automation mode"
        );
        let too_many: Vec<String> = (0..=MAX_PROFILES)
            .map(|n| format!(r#""p{n}": {{}}"#))
            .collect();
        assert_eq!(
            error(&format!("{{{}}}", too_many.join(","))),
            "AGENT_PROFILES: 33 profiles; at most 32"
        );
        let thirty_two: Vec<String> = (0..MAX_PROFILES)
            .map(|n| format!(r#""p{n}": {{}}"#))
            .collect();
        assert_eq!(
            config(&[("AGENT_PROFILES", &format!("{{{}}}", thirty_two.join(",")))])
                .unwrap()
                .profiles
                .len(),
            32
        );
        assert_eq!(
            error(r#"{"a": {}, "a": {"model": "x"}}"#),
            "AGENT_PROFILES: profile a is given twice"
        );
        for bad_json in [
            "{",
            "[]",
            "null",
            r#"{"a": []}"#,
            r#"{"a": {"tools": "get_current_time"}}"#,
        ] {
            assert!(
                error(bad_json).starts_with("AGENT_PROFILES: must be a JSON object"),
                "{bad_json}: {}",
                error(bad_json)
            );
        }
        for model in [
            String::new(),
            " gpt-4o".to_owned(),
            "gpt\n4o".to_owned(),
            "m".repeat(2_049),
        ] {
            let json = serde_json::json!({"a": {"model": model}}).to_string();
            assert!(error(&json).starts_with("AGENT_PROFILES: profile a: model must be"));
        }
        assert!(
            config(&[(
                "AGENT_PROFILES",
                &serde_json::json!({"a": {"model": "m".repeat(2_048)}}).to_string()
            )])
            .is_ok()
        );
        let long_prompt = serde_json::json!({"a": {"systemPrompt": "x".repeat(100_001)}});
        assert!(error(&long_prompt.to_string()).contains("systemPrompt is longer"));
        assert_eq!(
            error(r#"{"a": {"tools": ["get time"]}}"#),
            "AGENT_PROFILES: profile a: tool name \"get time\" is not 1-64 letters, digits, _ or -"
        );
    }
}
