//! The profiles section: `AGENT_PROFILES`, named agents a request picks by
//! `forwardedProps.agent_type`, each checked here but for whether its tools exist.

use super::vars::Vars;
use super::{ConfigError, Section};
use crate::agent::subagents::{A2aAgentSettings, RemoteAgentSettings, Visibility};
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

/// At most this many `AGENT_PROFILES`.
pub(crate) const MAX_PROFILES: usize = 32;
/// The longest profile system prompt, in characters.
pub(crate) const MAX_PROFILE_PROMPT_CHARS: usize = 100_000;
/// The longest profile model name, in characters: Bedrock's `modelId` limit, which ARNs need.
pub(crate) const MAX_PROFILE_MODEL_CHARS: usize = 2_048;

/// One profile of `AGENT_PROFILES`; a part left out is the default agent's.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
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
    /// What the profile does: the tool description a delegating model reads.
    pub description: Option<String>,
    /// The agents this profile may delegate to, each a tool its model sees.
    pub subagents: Vec<SubagentConfig>,
    /// Instead of `SUBAGENT_VISIBILITY`.
    pub subagent_visibility: Option<Visibility>,
    /// Instead of `A2UI`: when this profile offers the A2UI render tool.
    pub a2ui: Option<crate::genui::a2ui::Mode>,
}

/// One sub-agent of a profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentConfig {
    /// The tool name the delegating model calls.
    pub name: String,
    /// Its tool description; a profile's own `description` when left out.
    pub description: Option<String>,
    pub target: SubagentTargetConfig,
    /// The longest a delegation may take (`timeoutMs`).
    pub timeout: Option<Duration>,
}

/// What runs behind a sub-agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubagentTargetConfig {
    /// A profile of `AGENT_PROFILES`, by name.
    Profile(String),
    /// A remote AG-UI agent.
    Remote(RemoteAgentSettings),
    /// An A2A 1.0 agent, by its agent card.
    A2a(A2aAgentSettings),
}

/// A profile as written: checked into a [`ProfileConfig`].
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawProfile {
    system_prompt: Option<String>,
    model: Option<String>,
    reasoning_effort: Option<super::ReasoningEffort>,
    tools: Option<Vec<String>>,
    context_tokens: Option<u32>,
    memory: Option<bool>,
    description: Option<String>,
    #[serde(default)]
    subagents: Vec<serde_json::Value>,
    subagent_visibility: Option<String>,
    a2ui: Option<String>,
}

/// A sub-agent as written, when it is more than a profile's name.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawSubagent {
    name: Option<String>,
    description: Option<String>,
    profile: Option<String>,
    url: Option<String>,
    /// An A2A agent's card URL.
    a2a: Option<String>,
    credentials_secret_id: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    headers_secret_id: Option<String>,
    cancel_url: Option<String>,
    timeout_ms: Option<u64>,
}

/// What is wrong with `AGENT_PROFILES`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfilesConfigError {
    #[error(
        "must be a JSON object of profile name to {{\"systemPrompt\": string, \"model\": string, \"tools\": [string], \"contextTokens\": number, \"memory\": bool, \"reasoningEffort\": string, \"description\": string, \"subagents\": [...], \"subagentVisibility\": string, \"a2ui\": string}}: {0}"
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
    #[error("profile {profile}: subagents[{index}]: {reason}")]
    BadSubagent {
        profile: String,
        index: usize,
        reason: String,
    },
    #[error("profile {0}: subagentVisibility must be auto, attributed, inline or hidden")]
    BadVisibility(String),
    #[error("profile {0}: a2ui must be {modes}", modes = super::a2ui::MODES)]
    BadA2ui(String),
    #[error("sub-agents delegate in a cycle: {0}")]
    Cycle(String),
}

/// The profiles by name; empty when `AGENT_PROFILES` is unset.
pub(crate) type Profiles = BTreeMap<String, ProfileConfig>;

/// The demo team's coordinator, which the AG-UI routes serve.
pub(crate) const DEMO_COORDINATOR: &str = "assistant";

/// What `cargo run` serves with nothing configured: `assistant` (the default agent's prompt,
/// tools and model) may delegate to `researcher`, a run of its own with no tools.
pub(crate) fn demo_team() -> Profiles {
    let researcher = ProfileConfig {
        system_prompt: Some("You look into one question and answer it briefly.".to_owned()),
        tools: Some(Vec::new()),
        description: Some(
            "Looks into one question and answers briefly: give it the question in words."
                .to_owned(),
        ),
        ..ProfileConfig::default()
    };
    let assistant = ProfileConfig {
        subagents: vec![SubagentConfig {
            name: "researcher".to_owned(),
            description: None,
            target: SubagentTargetConfig::Profile("researcher".to_owned()),
            timeout: None,
        }],
        ..ProfileConfig::default()
    };
    BTreeMap::from([
        (DEMO_COORDINATOR.to_owned(), assistant),
        ("researcher".to_owned(), researcher),
    ])
}

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
    for (name, raw) in entries.0 {
        let mut profile = ProfileConfig {
            system_prompt: raw.system_prompt,
            model: raw.model,
            reasoning_effort: raw.reasoning_effort,
            tools: raw.tools,
            context_tokens: raw.context_tokens,
            memory: raw.memory,
            description: raw.description,
            subagents: raw
                .subagents
                .into_iter()
                .enumerate()
                .map(|(index, value)| subagent(&name, index, value))
                .collect::<Result<_, _>>()?,
            subagent_visibility: raw
                .subagent_visibility
                .map(|value| value.parse())
                .transpose()
                .map_err(|()| ProfilesConfigError::BadVisibility(name.clone()))?,
            a2ui: raw
                .a2ui
                .map(|value| value.parse())
                .transpose()
                .map_err(|()| ProfilesConfigError::BadA2ui(name.clone()))?,
        };
        check(&name, &mut profile)?;
        if profiles.contains_key(&name) {
            return Err(ProfilesConfigError::Duplicate(name));
        }
        profiles.insert(name, profile);
    }
    check_delegations(&profiles)?;
    Ok(profiles)
}

/// One entry of a profile's `subagents`: a profile's name, or an object naming a profile or a
/// remote AG-UI agent's URL.
fn subagent(
    profile: &str,
    index: usize,
    value: serde_json::Value,
) -> Result<SubagentConfig, ProfilesConfigError> {
    let bad = |reason: String| ProfilesConfigError::BadSubagent {
        profile: profile.to_owned(),
        index,
        reason,
    };
    if let serde_json::Value::String(target) = value {
        return Ok(SubagentConfig {
            name: target.clone(),
            description: None,
            target: SubagentTargetConfig::Profile(target),
            timeout: None,
        });
    }
    let raw: RawSubagent = serde_json::from_value(value).map_err(|err| {
        bad(format!(
            "a profile's name, or {{\"profile\"|\"url\"|\"a2a\", \"name\", \"description\", \"headers\", \"headersSecretId\", \"cancelUrl\", \"credentialsSecretId\", \"timeoutMs\"}}: {err}"
        ))
    })?;
    let timeout = match raw.timeout_ms {
        Some(ms) if !(1_000..=900_000).contains(&ms) => {
            return Err(bad("timeoutMs must be 1000 to 900000".to_owned()));
        }
        ms => ms.map(Duration::from_millis),
    };
    let no_headers =
        raw.headers.is_empty() && raw.headers_secret_id.is_none() && raw.cancel_url.is_none();
    let target = match (raw.profile, raw.url, raw.a2a) {
        (Some(target), None, None) if no_headers && raw.credentials_secret_id.is_none() => {
            SubagentTargetConfig::Profile(target)
        }
        (None, Some(url), None) if raw.credentials_secret_id.is_none() => {
            SubagentTargetConfig::Remote(
                remote(url, raw.headers, raw.headers_secret_id, raw.cancel_url).map_err(bad)?,
            )
        }
        (None, None, Some(card_url)) if no_headers => {
            SubagentTargetConfig::A2a(a2a(card_url, raw.credentials_secret_id).map_err(bad)?)
        }
        _ => {
            return Err(bad(
                "names one of a profile, a remote AG-UI agent's url with its headers, or an A2A agent's card (a2a) with its credentialsSecretId".to_owned(),
            ));
        }
    };
    let name = match (raw.name, &target) {
        (Some(name), _) => name,
        (None, SubagentTargetConfig::Profile(target)) => target.clone(),
        (None, SubagentTargetConfig::Remote(_) | SubagentTargetConfig::A2a(_)) => {
            return Err(bad("a remote agent needs a name".to_owned()));
        }
    };
    if !crate::protocol::input::is_valid_tool_name(&name) {
        return Err(bad(format!(
            "name {name:?} is not 1-64 letters, digits, _ or -"
        )));
    }
    Ok(SubagentConfig {
        name,
        description: raw.description.filter(|text| !text.trim().is_empty()),
        target,
        timeout,
    })
}

/// A remote agent's URL and headers, checked as `MCP_SERVERS`' are: credentials only from a
/// secret.
fn remote(
    url: String,
    headers: BTreeMap<String, String>,
    headers_secret_id: Option<String>,
    cancel_url: Option<String>,
) -> Result<RemoteAgentSettings, String> {
    let http_url = |url: &str| {
        reqwest::Url::parse(url)
            .is_ok_and(|url| matches!(url.scheme(), "http" | "https") && url.has_host())
    };
    if !http_url(&url) {
        return Err(format!("url {url:?} is not an http(s) URL"));
    }
    if let Some(cancel) = &cancel_url
        && !http_url(&cancel.replace("{threadId}", "t").replace("{runId}", "r"))
    {
        return Err(format!("cancelUrl {cancel:?} is not an http(s) URL"));
    }
    for (header, value) in &headers {
        crate::mcp::check_header_pair(header, value)
            .map_err(|reason| format!("header {header:?}: {reason}"))?;
        if crate::mcp::looks_like_a_credential(header) {
            return Err(format!(
                "header {header:?}: credentials go in the secret named by headersSecretId, never in the environment"
            ));
        }
    }
    Ok(RemoteAgentSettings {
        url,
        headers,
        headers_secret_id: headers_secret_id.filter(|id| !id.trim().is_empty()),
        cancel_url,
    })
}

/// An A2A agent's card URL (http or https) and the secret of its credentials.
fn a2a(
    card_url: String,
    credentials_secret_id: Option<String>,
) -> Result<A2aAgentSettings, String> {
    let parsed = reqwest::Url::parse(&card_url)
        .ok()
        .filter(|url| matches!(url.scheme(), "http" | "https") && url.has_host());
    if parsed.is_none() {
        return Err(format!(
            "a2a {card_url:?} is not an http(s) URL of an agent card"
        ));
    }
    Ok(A2aAgentSettings {
        card_url,
        credentials_secret_id: credentials_secret_id.filter(|id| !id.trim().is_empty()),
    })
}

/// Every profile a profile delegates to exists, no profile delegates to one of the tools it
/// has by name twice, and no chain of delegations comes back to where it began.
fn check_delegations(profiles: &Profiles) -> Result<(), ProfilesConfigError> {
    for (name, profile) in profiles {
        for (index, subagent) in profile.subagents.iter().enumerate() {
            let bad = |reason: String| ProfilesConfigError::BadSubagent {
                profile: name.clone(),
                index,
                reason,
            };
            if let SubagentTargetConfig::Profile(target) = &subagent.target
                && !profiles.contains_key(target)
            {
                return Err(bad(format!("names no profile {target:?}")));
            }
            if profile.subagents[..index]
                .iter()
                .any(|earlier| earlier.name == subagent.name)
            {
                return Err(bad(format!("the name {:?} is used twice", subagent.name)));
            }
        }
    }
    for start in profiles.keys() {
        let mut path = vec![start.clone()];
        if let Some(cycle) = cycle_from(profiles, &mut path) {
            return Err(ProfilesConfigError::Cycle(cycle.join(" -> ")));
        }
    }
    Ok(())
}

/// A chain of delegations from the last profile of `path` back into `path`, if any.
fn cycle_from(profiles: &Profiles, path: &mut Vec<String>) -> Option<Vec<String>> {
    let last = path.last()?.clone();
    for subagent in &profiles.get(&last)?.subagents {
        let SubagentTargetConfig::Profile(next) = &subagent.target else {
            continue;
        };
        if let Some(at) = path.iter().position(|name| name == next) {
            let mut cycle = path[at..].to_vec();
            cycle.push(next.clone());
            return Some(cycle);
        }
        path.push(next.clone());
        if let Some(cycle) = cycle_from(profiles, path) {
            return Some(cycle);
        }
        path.pop();
    }
    None
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
struct Entries(Vec<(String, RawProfile)>);

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
                ..ProfileConfig::default()
            }
        );
        assert_eq!(profiles["chat-2"], ProfileConfig::default());
        let no_tools = config(&[("AGENT_PROFILES", r#"{"plain": {"tools": []}}"#)]).unwrap();
        assert_eq!(no_tools.profiles["plain"].tools, Some(vec![]));
        let painting =
            config(&[("AGENT_PROFILES", r#"{"forms": {"a2ui": "assistant-ui"}}"#)]).unwrap();
        assert_eq!(
            painting.profiles["forms"].a2ui,
            Some(crate::genui::a2ui::Mode::AssistantUi)
        );
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

    #[test]
    fn profiles_declare_their_sub_agents_and_a_cycle_stops_start_up() {
        let profiles = config(&[(
            "AGENT_PROFILES",
            r#"{"coordinator": {"subagents": ["researcher",
                    {"profile": "researcher", "name": "second_opinion", "timeoutMs": 5000},
                    {"name": "weather", "description": "Knows the weather.", "url": "https://agents.example/weather",
                     "headers": {"x-team": "a"}, "headersSecretId": "weather-key", "cancelUrl": "https://agents.example/threads/{threadId}/runs/{runId}/cancel"}],
                  "subagentVisibility": "hidden"},
                "researcher": {"description": "Finds facts."}}"#,
        )])
        .unwrap()
        .profiles;
        let coordinator = &profiles["coordinator"];
        assert_eq!(coordinator.subagent_visibility, Some(Visibility::Hidden));
        let names: Vec<&str> = coordinator
            .subagents
            .iter()
            .map(|subagent| subagent.name.as_str())
            .collect();
        assert_eq!(names, ["researcher", "second_opinion", "weather"]);
        assert_eq!(
            coordinator.subagents[1].target,
            SubagentTargetConfig::Profile("researcher".into())
        );
        assert_eq!(
            coordinator.subagents[1].timeout,
            Some(Duration::from_secs(5))
        );
        let SubagentTargetConfig::Remote(remote) = &coordinator.subagents[2].target else {
            panic!("a remote agent");
        };
        assert_eq!(remote.headers_secret_id.as_deref(), Some("weather-key"));

        let error = |json: &str| config(&[("AGENT_PROFILES", json)]).unwrap_err().to_string();
        assert_eq!(
            error(
                r#"{"a": {"subagents": ["b"]}, "b": {"subagents": ["c"]}, "c": {"subagents": ["a"]}}"#
            ),
            "AGENT_PROFILES: sub-agents delegate in a cycle: a -> b -> c -> a"
        );
        assert!(error(r#"{"a": {"subagents": ["a"]}}"#).contains("cycle: a -> a"));
        assert!(
            error(r#"{"a": {"subagents": ["nobody"]}}"#).contains("names no profile \"nobody\"")
        );
        assert!(error(r#"{"a": {"subagents": ["b", "b"]}, "b": {}}"#).contains("used twice"));
        assert!(
            error(r#"{"a": {"subagents": [{"url": "https://x.example"}]}}"#)
                .contains("needs a name")
        );
        assert!(
            error(r#"{"a": {"subagents": [{"name": "x", "url": "ftp://x"}]}}"#)
                .contains("not an http(s) URL")
        );
        assert!(
            error(r#"{"a": {"subagents": [{"name": "x", "url": "https://x.example", "headers": {"Authorization": "Bearer k"}}]}}"#)
                .contains("headersSecretId")
        );
        assert!(error(r#"{"a": {"subagents": [{"name": "x", "profile": "b", "url": "https://x.example"}]}, "b": {}}"#).contains("names one of"));
        assert!(error(r#"{"a": {"subagents": [{"name": "x", "a2a": "https://x.example/card", "headers": {"x-team": "a"}}]}}"#).contains("names one of"));
        assert!(
            error(r#"{"a": {"subagents": [{"name": "x", "a2a": "file:///card"}]}}"#)
                .contains("not an http(s) URL")
        );
        assert!(
            error(r#"{"a": {"subagents": [{"a2a": "https://x.example/card"}]}}"#)
                .contains("needs a name")
        );
        let a2a = config(&[(
            "AGENT_PROFILES",
            r#"{"a": {"subagents": [{"name": "travel", "a2a": "https://x.example/.well-known/agent-card.json", "credentialsSecretId": "travel-key", "timeoutMs": 60000}]}}"#,
        )])
        .unwrap()
        .profiles;
        assert_eq!(
            a2a["a"].subagents[0].target,
            SubagentTargetConfig::A2a(A2aAgentSettings {
                card_url: "https://x.example/.well-known/agent-card.json".into(),
                credentials_secret_id: Some("travel-key".into()),
            })
        );
        assert!(
            error(r#"{"a": {"subagents": [{"name": "x y", "url": "https://x.example"}]}}"#)
                .contains("is not 1-64")
        );
        assert!(
            error(r#"{"a": {"subagents": [{"profile": "b", "timeoutMs": 10}]}, "b": {}}"#)
                .contains("timeoutMs")
        );
        assert!(error(r#"{"a": {"subagentVisibility": "loud"}}"#).contains("subagentVisibility"));
        assert!(
            error(r#"{"a": {"a2ui": "always"}}"#)
                .contains("a2ui must be auto, off, on or assistant-ui")
        );
        assert!(error(r#"{"a": {"subagents": [5]}}"#).contains("subagents[0]"));
    }

    #[test]
    fn sub_agent_settings_are_bounded_and_the_default_profile_must_exist() {
        use crate::agent::subagents::SubagentSettings;
        assert_eq!(
            config(&[]).unwrap().subagents.settings,
            SubagentSettings::default()
        );
        let set = config(&[
            ("SUBAGENT_VISIBILITY", "inline"),
            ("SUBAGENT_MAX_DEPTH", "3"),
            ("SUBAGENT_MAX_PER_RUN", "2"),
            ("AGENT_PROFILES", r#"{"coordinator": {}}"#),
            ("AGENT_DEFAULT_PROFILE", "coordinator"),
        ])
        .unwrap();
        assert_eq!(set.subagents.settings.visibility, Visibility::Inline);
        assert_eq!(
            (
                set.subagents.settings.max_depth,
                set.subagents.settings.max_per_run
            ),
            (3, 2)
        );
        assert_eq!(
            set.subagents.default_profile.as_deref(),
            Some("coordinator")
        );
        for (name, value) in [
            ("SUBAGENT_VISIBILITY", "loud"),
            ("SUBAGENT_MAX_DEPTH", "0"),
            ("SUBAGENT_MAX_PER_RUN", "65"),
            ("AGENT_DEFAULT_PROFILE", "nobody"),
        ] {
            let err = config(&[(name, value)]).unwrap_err().to_string();
            assert!(err.starts_with(name), "{err}");
        }
    }
}
