//! Typed configuration, read once from the environment at cold start: one section per concern,
//! each with the variables it reads and its own parser. Every variable, its default and meaning
//! is listed in docs/configuration.md; a test holds that table to `SETTINGS`.

mod a2ui;
mod agent;
mod auth;
mod context;
mod copilotkit;
mod hosting;
mod http_server;
mod limits;
mod memory;
mod model;
mod profiles;
mod quotas;
mod runtime;
mod store;
mod subagents;
mod telemetry;
mod tools;
mod vars;

use crate::agent::{AgentSettings, Quotas};
use crate::protocol::Limits;
use profiles::Profiles;
use std::collections::{BTreeMap, HashMap};
use vars::Vars;

pub(crate) use auth::{AuthConfig, JwksSource};
pub(crate) use context::ContextConfig;
pub use context::PromptCache;
pub(crate) use copilotkit::CopilotKitConfig;
pub(crate) use hosting::{Hosting, HostingConfig};
pub(crate) use http_server::HttpConfig;
pub use model::ModelChoice;
pub(crate) use model::{ModelConfig, ModelRef};
pub(crate) use model::{OpenAiApi, ReasoningEffort};
pub(crate) use profiles::{
    ProfileConfig, ProfilesConfigError, SubagentConfig, SubagentTargetConfig,
};
pub(crate) use runtime::RuntimeFlavor;
pub(crate) use secrecy::{ExposeSecret, SecretString};
pub(crate) use store::StoreConfig;
pub(crate) use subagents::SubagentsConfig;
pub(crate) use telemetry::TelemetryConfig;
pub(crate) use tools::ToolsConfig;

/// Every setting, grouped by concern.
#[derive(Debug, Clone)]
pub struct Config {
    /// The model provider, its endpoint, credentials and window.
    pub model: ModelConfig,
    /// The local server's address, CORS and SSE pings.
    pub http: HttpConfig,
    /// What serves the binary and how it stops.
    pub hosting: HostingConfig,
    /// The thread store (DynamoDB or memory), TTLs and attachments bucket.
    pub store: StoreConfig,
    /// Who may call the function (`AUTH_MODE` and its keys).
    pub auth: AuthConfig,
    /// Request limits: body size, messages, text, attachments.
    pub limits: Limits,
    /// The agent's prompt, steps, timeouts, approvals and quotas.
    pub agent: AgentSettings,
    /// Server tools' result limit and the MCP servers.
    pub tools: ToolsConfig,
    /// The tokio runtime's flavour.
    pub runtime: RuntimeFlavor,
    /// `AGENT_PROFILES`: named agents chosen by `forwardedProps.agent_type`; empty when unset.
    pub profiles: BTreeMap<String, ProfileConfig>,
    /// Traces and metrics.
    pub telemetry: TelemetryConfig,
    /// How a thread that outgrows the model's window is compacted.
    pub context: ContextConfig,
    /// Long-term memory per principal (`MEMORY`).
    pub memory: crate::agent::memory::MemorySettings,
    /// How sub-agents are shown and bounded, and the profile the AG-UI routes serve.
    pub subagents: SubagentsConfig,
    /// What CopilotKit's runtime (`/copilotkit`) serves beyond runs and threads.
    pub copilotkit: CopilotKitConfig,
    /// When the A2UI render tool is offered (`A2UI`).
    pub a2ui: crate::genui::a2ui::A2uiSettings,
}

/// A setting the function cannot start with; the message names the variable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A value outside the variable's bounds.
    #[error("{name} must be {expected}, got {value:?}")]
    Invalid {
        /// The variable.
        name: &'static str,
        /// What it accepts.
        expected: &'static str,
        /// What it was set to.
        value: String,
    },
    /// A number outside the variable's bounds.
    #[error(
        "{name}={value} is out of range: it takes a whole number from {min} to {max} \
         (docs/configuration.md)"
    )]
    OutOfRange {
        /// The variable.
        name: &'static str,
        /// What it was set to.
        value: String,
        /// The least it takes.
        min: String,
        /// The most it takes.
        max: String,
    },
    /// A model provider chosen without its key.
    #[error("MODEL_PROVIDER={provider} needs {needs}")]
    NeedsKey {
        /// The provider's name.
        provider: &'static str,
        /// The settings that would configure it.
        needs: &'static str,
    },
    /// An auth mode without the settings it needs.
    #[error("AUTH_MODE={mode} needs {needs}")]
    Missing {
        /// The `AUTH_MODE` value.
        mode: &'static str,
        /// The settings it lacks.
        needs: &'static str,
    },
    /// `MCP_SERVERS` does not parse or breaks its rules.
    #[error("MCP_SERVERS: {0}")]
    Mcp(#[from] crate::mcp::McpConfigError),
    /// `AGENT_PROFILES` does not parse or breaks its rules.
    #[error("AGENT_PROFILES: {0}")]
    Profiles(#[from] ProfilesConfigError),
}

/// One section of the configuration: the variables it owns and how it reads them.
pub(crate) trait Section: Sized {
    /// Every variable the section reads, besides those Lambda sets ([`SET_BY_LAMBDA`]).
    const SETTINGS: &'static [&'static str];

    /// The section from `vars`; the first bad value stops it, named in the error.
    fn from_vars(vars: &Vars) -> Result<Self, ConfigError>;
}

/// Read to tell where the process runs and what it is called; Lambda sets them, not the operator.
pub(crate) const SET_BY_LAMBDA: &[&str] = &[
    "AWS_LAMBDA_RUNTIME_API",
    "AWS_LAMBDA_MAX_CONCURRENCY",
    "AWS_LAMBDA_FUNCTION_NAME",
];

/// Every variable [`Config::from_map`] reads, section by section: the source a configuration
/// reference is to be checked against. A test holds this list to what the parsers read. Not here: what other crates read themselves
/// (`RUST_LOG`, `AWS_LAMBDA_LOG_*`, the AWS SDK's and the OpenTelemetry SDK's own variables).
#[cfg_attr(
    not(test),
    expect(
        dead_code,
        reason = "read by the tests: the sections' parsers and docs/configuration.md are held to it"
    )
)]
pub(crate) const SETTINGS: &[&[&str]] = &[
    ModelConfig::SETTINGS,
    HttpConfig::SETTINGS,
    HostingConfig::SETTINGS,
    AuthConfig::SETTINGS,
    RuntimeFlavor::SETTINGS,
    StoreConfig::SETTINGS,
    AgentSettings::SETTINGS,
    Quotas::SETTINGS,
    ToolsConfig::SETTINGS,
    Limits::SETTINGS,
    Profiles::SETTINGS,
    TelemetryConfig::SETTINGS,
    ContextConfig::SETTINGS,
    crate::agent::memory::MemorySettings::SETTINGS,
    SubagentsConfig::SETTINGS,
    CopilotKitConfig::SETTINGS,
    crate::genui::a2ui::A2uiSettings::SETTINGS,
    SET_BY_LAMBDA,
];

impl Config {
    /// Every setting from the process environment; the first bad value is the error. With
    /// nothing configured, the demo model answers as a team ([`Config::with_demo_team`]).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_map(&std::env::vars().collect()).map(Self::with_demo_team)
    }

    /// With nothing configured (the demo model, no `AGENT_PROFILES`), the demo team: the
    /// profile `assistant`, served by the AG-UI routes, may delegate to the profile
    /// `researcher`, so a first `cargo run` shows sub-agents. Every `agent_type` is still served
    /// (by `assistant`), as without profiles. Anything configured keeps its configuration.
    pub(crate) fn with_demo_team(mut self) -> Self {
        let unconfigured = self.model.provider == ModelChoice::Demo
            && self.profiles.is_empty()
            && self.subagents.default_profile.is_none();
        if unconfigured {
            self.profiles = profiles::demo_team();
            self.subagents.default_profile = Some(profiles::DEMO_COORDINATOR.to_owned());
            self.subagents.demo_team = true;
        }
        self
    }

    /// Reads configuration from `vars`; tests pass their own map instead of the process
    /// environment.
    pub fn from_map(vars: &HashMap<String, String>) -> Result<Self, ConfigError> {
        Self::from_vars(&Vars::new(vars))
    }

    /// Section by section, in this order: of two bad values, the one whose section comes first
    /// is reported.
    fn from_vars(vars: &Vars) -> Result<Self, ConfigError> {
        let config = Self {
            model: ModelConfig::from_vars(vars)?,
            http: HttpConfig::from_vars(vars)?,
            hosting: HostingConfig::from_vars(vars)?,
            auth: AuthConfig::from_vars(vars)?,
            runtime: RuntimeFlavor::from_vars(vars)?,
            store: StoreConfig::from_vars(vars)?,
            agent: AgentSettings::from_vars(vars)?,
            tools: ToolsConfig::from_vars(vars)?,
            limits: Limits::from_vars(vars)?,
            profiles: Profiles::from_vars(vars)?,
            telemetry: TelemetryConfig::from_vars(vars)?,
            context: ContextConfig::from_vars(vars)?,
            memory: crate::agent::memory::MemorySettings::from_vars(vars)?,
            subagents: SubagentsConfig::from_vars(vars)?,
            copilotkit: CopilotKitConfig::from_vars(vars)?,
            a2ui: crate::genui::a2ui::A2uiSettings::from_vars(vars)?,
        };
        if let Some(profile) = &config.subagents.default_profile
            && !config.profiles.contains_key(profile)
        {
            return Err(ConfigError::Invalid {
                name: "AGENT_DEFAULT_PROFILE",
                expected: "the name of a profile of AGENT_PROFILES",
                value: profile.clone(),
            });
        }
        Ok(config)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::BTreeSet;

    pub(crate) fn config(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        Config::from_map(&map(pairs))
    }

    fn map(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn embedded_defaults_run_the_demo_model_locally() {
        let config = config(&[]).unwrap();
        assert_eq!(config.model.provider, ModelChoice::Demo);
        assert_eq!(config.http.listen.to_string(), "127.0.0.1:8787");
        assert_eq!(config.limits, Limits::default());
        assert!(config.store.threads_table.is_none());
        assert_eq!(config.runtime, RuntimeFlavor::MultiThread);
    }

    #[test]
    fn bad_values_name_the_variable() {
        let err = config(&[("AGENT_MAX_STEPS", "lots")]).unwrap_err();
        assert!(err.to_string().starts_with("AGENT_MAX_STEPS must be"));
        assert!(config(&[("MODEL_PROVIDER", "gemini")]).is_err());
        assert!(config(&[("AGENT_EMIT_STEPS", "maybe")]).is_err());
    }

    #[test]
    fn with_nothing_configured_the_demo_answers_as_a_team() {
        let team = config(&[]).unwrap().with_demo_team();
        assert!(team.subagents.demo_team);
        assert_eq!(team.subagents.default_profile.as_deref(), Some("assistant"));
        assert_eq!(
            team.profiles.keys().map(String::as_str).collect::<Vec<_>>(),
            ["assistant", "researcher"]
        );
        let delegates: Vec<&str> = team.profiles["assistant"]
            .subagents
            .iter()
            .map(|subagent| subagent.name.as_str())
            .collect();
        assert_eq!(delegates, ["researcher"]);
        // Anything configured keeps its configuration.
        for configured in [
            config(&[("OPENAI_API_KEY", "sk-x")]),
            config(&[("AGENT_PROFILES", r#"{"solo": {}}"#)]),
        ] {
            let kept = configured.unwrap().with_demo_team();
            assert!(!kept.subagents.demo_team);
            assert!(!kept.profiles.contains_key("researcher"));
        }
    }

    #[test]
    fn a_number_out_of_range_says_the_range_in_words() {
        let err = config(&[("RUN_MAX_SECS", "0")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "RUN_MAX_SECS=0 is out of range: it takes a whole number from 1 to 86400 \
             (docs/configuration.md)"
        );
    }

    #[test]
    fn every_number_is_bounded() {
        for (name, value) in [
            ("MODEL_MAX_RETRIES", "4294967295"),
            ("MODEL_CONNECT_TIMEOUT_MS", "0"),
            ("SSE_PING_INTERVAL_MS", "18446744073709551615"),
            ("DEADLINE_MARGIN_MS", "900000"),
            ("THREAD_TTL_DAYS", "4294967295"),
            ("AGENT_MAX_STEPS", "0"),
            ("MAX_PAYLOAD_BYTES", "18446744073709551615"),
            ("MAX_RUN_ID_CHARS", "0"),
            ("MAX_MESSAGES", "0"),
            ("MAX_ATTACHMENTS", "100000"),
            ("BEDROCK_MAX_TOKENS", "4294967295"),
            ("BEDROCK_REASONING_BUDGET_TOKENS", "1023"),
            ("BEDROCK_REASONING_BUDGET_TOKENS", "1000001"),
            ("MAX_OUTPUT_TOKENS", "0"),
            ("MAX_OUTPUT_TOKENS", "1000001"),
            ("MAX_INLINE_ATTACHMENT_BYTES", "6291457"),
            ("INTERRUPT_TTL_SECS", "59"),
            ("APPROVAL_CONFIRM_TOOL", "not a name"),
            ("PORT", "65536"),
            ("HOSTING", "kubernetes"),
            ("SHUTDOWN_GRACE_SECS", "86400"),
            ("RUN_MAX_SECS", "0"),
            ("RUNTIME_FLAVOR", "fibers"),
            ("TOOL_RESULT_MAX_BYTES", "1023"),
            ("TOOL_RESULT_MAX_BYTES", "1048577"),
            ("MCP_CONNECT_TIMEOUT_MS", "99"),
            ("MCP_SERVERS", "[{\"name\":\"a b\",\"url\":\"http://x\"}]"),
            ("QUOTA_TOKENS_PER_DAY", "0"),
            ("QUOTA_RUNS_PER_MINUTE", "100001"),
            ("QUOTA_RESERVE_TOKENS", "10000001"),
            ("QUOTA_OVERRIDES", "{\"alice\": {\"runsPerMinute\": 0}}"),
            ("QUOTA_OVERRIDES", "{\"alice\": {\"tokens\": 5}}"),
            ("QUOTA_OVERRIDES", "[1]"),
        ] {
            let err = config(&[(name, value)]).unwrap_err();
            assert!(err.to_string().starts_with(name), "{err}");
        }
    }

    #[test]
    fn output_reasoning_and_attachment_settings_are_optional_and_bounded() {
        let unset = config(&[]).unwrap();
        assert_eq!(unset.agent.max_output_tokens, None);
        assert_eq!(unset.model.bedrock_reasoning_budget_tokens, None);
        assert_eq!(unset.limits.max_inline_attachment_bytes, 262_144);
        let set = config(&[
            ("MAX_OUTPUT_TOKENS", "2048"),
            ("BEDROCK_REASONING_BUDGET_TOKENS", "1024"),
            ("MAX_INLINE_ATTACHMENT_BYTES", "0"),
        ])
        .unwrap();
        assert_eq!(set.agent.max_output_tokens, Some(2048));
        assert_eq!(set.model.bedrock_reasoning_budget_tokens, Some(1024));
        assert_eq!(set.limits.max_inline_attachment_bytes, 0);
        let err = config(&[("MAX_OUTPUT_TOKENS", "lots")]).unwrap_err();
        assert!(err.to_string().starts_with("MAX_OUTPUT_TOKENS"), "{err}");
    }

    #[test]
    fn secrets_never_print() {
        let config = config(&[("OPENAI_API_KEY", "sk-very-secret")]).unwrap();
        assert!(!format!("{config:?}").contains("sk-very-secret"));
    }

    #[test]
    fn the_settings_list_is_every_variable_the_sections_read() {
        let listed: BTreeSet<&str> = SETTINGS
            .iter()
            .flat_map(|names| names.iter().copied())
            .collect();
        let listed_count: usize = SETTINGS.iter().map(|names| names.len()).sum();
        assert_eq!(listed.len(), listed_count, "a variable is listed twice");
        // Together these reach every branch that reads a variable of its own.
        let api_key = [("AUTH_MODE", "api-key"), ("API_KEYS", "a=b")];
        let jwt = [
            ("AUTH_MODE", "jwt"),
            ("JWT_ISSUER", "i"),
            ("JWT_AUDIENCE", "a"),
            ("JWT_JWKS_FILE", "/k.json"),
        ];
        let voice = [("TRANSCRIPTION_MODEL", "whisper-1")];
        let mut read = BTreeSet::new();
        for pairs in [&[][..], &api_key, &jwt, &voice] {
            let map = map(pairs);
            let vars = Vars::new(&map);
            Config::from_vars(&vars).unwrap();
            read.extend(vars.names_read());
        }
        let unlisted: Vec<_> = read.difference(&listed).collect();
        let never_read: Vec<_> = listed.difference(&read).collect();
        assert!(
            unlisted.is_empty() && never_read.is_empty(),
            "read but not listed: {unlisted:?}; listed but never read: {never_read:?}"
        );
    }

    /// The configuration reference, as shipped.
    const REFERENCE: &str = include_str!("../../docs/configuration.md");
    /// How the reference marks a row the code's configuration does not read (the logging
    /// set-up, the OpenTelemetry SDK): exempt from the check unless `SETTINGS` lists it.
    const READ_ELSEWHERE: &str = "not in `config::SETTINGS`";

    /// The variables named in the first cell of the reference's table rows: (documented, of
    /// them marked as read elsewhere).
    fn documented(reference: &str) -> (BTreeSet<&str>, BTreeSet<&str>) {
        let mut all = BTreeSet::new();
        let mut elsewhere = BTreeSet::new();
        for row in reference.lines().filter(|line| line.starts_with("| `")) {
            let first = row.split('|').nth(1).unwrap_or_default();
            let names = first.split('`').skip(1).step_by(2).filter(|name| {
                name.starts_with(|c: char| c.is_ascii_uppercase())
                    && name
                        .chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            });
            for name in names {
                all.insert(name);
                if row.contains(READ_ELSEWHERE) {
                    elsewhere.insert(name);
                }
            }
        }
        (all, elsewhere)
    }

    /// What is wrong between `settings` and `reference`, as a message; `None` when they agree.
    fn reference_problems(settings: &[&[&str]], reference: &str) -> Option<String> {
        let code: BTreeSet<&str> = settings.iter().flat_map(|s| s.iter().copied()).collect();
        let (documented, elsewhere) = documented(reference);
        let undocumented: Vec<_> = code.difference(&documented).collect();
        let unread: Vec<_> = documented
            .difference(&code)
            .filter(|name| !elsewhere.contains(*name))
            .collect();
        (!undocumented.is_empty() || !unread.is_empty()).then(|| {
            format!(
                "read by the code but missing from docs/configuration.md: {undocumented:?}; \
                 documented there but not read by the code (nor marked {READ_ELSEWHERE:?}): {unread:?}"
            )
        })
    }

    #[test]
    fn the_configuration_reference_documents_every_setting() {
        assert_eq!(reference_problems(SETTINGS, REFERENCE), None);
    }

    #[test]
    fn the_reference_check_catches_a_setting_missing_from_either_side() {
        let table = "| variable | default | bounds | meaning |\n|---|---|---|---|\n\
                     | `PORT` / `HOST` | `8787` | | address |\n\
                     | `RUST_LOG` | `info` | | _read by the logging set-up, not in `config::SETTINGS`:_ filter |\n";
        assert_eq!(reference_problems(&[&["PORT", "HOST"]], table), None);
        let missing = reference_problems(&[&["PORT", "HOST", "NEW_SETTING"]], table).unwrap();
        assert!(
            missing.contains("missing from docs/configuration.md: [\"NEW_SETTING\"]"),
            "{missing}"
        );
        let stale = reference_problems(&[&["PORT"]], table).unwrap();
        assert!(
            stale.contains("not read by the code") && stale.contains("\"HOST\""),
            "{stale}"
        );
    }
}
