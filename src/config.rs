//! Typed configuration, read once from the environment at cold start. Every variable, its
//! default and meaning is listed in the README's configuration table.

use crate::agent::AgentSettings;
use crate::protocol::Limits;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

pub use secrecy::{ExposeSecret, SecretString};

/// Which tokio runtime the process runs on (`RUNTIME_FLAVOR`; unset: chosen by where it runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeFlavor {
    /// One thread: under Lambda an instance serves one invocation at a time, and a second
    /// worker only adds cross-thread wake-ups (README: Benchmarks).
    CurrentThread,
    /// Worker threads (`TOKIO_WORKER_THREADS`, default one per core): the local or container
    /// server with many streams at once, and Lambda with `AWS_LAMBDA_MAX_CONCURRENCY` > 1.
    MultiThread,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelChoice {
    /// An OpenAI-compatible Chat Completions API.
    OpenAi,
    /// The offline scripted demo model.
    Demo,
    /// Amazon Bedrock ConverseStream (`MODEL_PROVIDER=bedrock`, builds with the `bedrock`
    /// feature); `AGENT_MODEL` is the model id or inference profile id.
    Bedrock,
}

/// How callers prove who they are (`AUTH_MODE`).
#[derive(Debug, Clone)]
pub enum AuthConfig {
    /// Local development: every caller is `anonymous`.
    None,
    /// `Authorization: Bearer <key>`; keys given as SHA-256 hashes per principal.
    ApiKey {
        /// `API_KEYS`: `principal=<sha256 hex>,…`
        keys: Option<SecretString>,
        /// `API_KEYS_SECRET_ID`: a Secrets Manager secret holding the same, read at cold start.
        secret_id: Option<String>,
    },
    /// OIDC / Cognito bearer tokens.
    Jwt {
        issuer: String,
        audience: String,
        jwks: JwksSource,
        leeway_secs: u64,
    },
    /// A Function URL with `AuthType: AWS_IAM`; the caller comes from the request context.
    Iam,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwksSource {
    Url(String),
    File(std::path::PathBuf),
}

/// Every setting, grouped by concern.
#[derive(Debug, Clone)]
pub struct Config {
    pub model: ModelConfig,
    pub http: HttpConfig,
    pub store: StoreConfig,
    pub auth: AuthConfig,
    pub limits: Limits,
    pub agent: AgentSettings,
    pub tools: ToolsConfig,
    pub runtime: RuntimeFlavor,
    /// `AGENT_PROFILES`: named agents chosen by `forwardedProps.agent_type`; empty when unset.
    pub profiles: BTreeMap<String, ProfileConfig>,
    pub telemetry: TelemetryConfig,
}

/// Traces and metrics: `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
/// `OTEL_SERVICE_NAME`, `OTEL_CAPTURE_CONTENT`, `EMF_METRICS`, `METRICS_NAMESPACE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TelemetryConfig {
    /// The full OTLP/HTTP traces URL; none exports nothing.
    pub traces_endpoint: Option<String>,
    pub service_name: String,
    pub capture_content: bool,
    /// One EMF metrics record per run on stdout (on under Lambda by default).
    pub emf: bool,
    pub metrics_namespace: String,
}

/// At most this many `AGENT_PROFILES`.
pub const MAX_PROFILES: usize = 32;
/// The longest profile system prompt, in characters.
pub const MAX_PROFILE_PROMPT_CHARS: usize = 100_000;
/// The longest profile model name, in characters: Bedrock's `modelId` limit, which ARNs need.
pub const MAX_PROFILE_MODEL_CHARS: usize = 2_048;

/// One profile of `AGENT_PROFILES`; a part left out is the default agent's.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProfileConfig {
    /// Instead of `AGENT_SYSTEM_PROMPT`; `""` sends none.
    pub system_prompt: Option<String>,
    /// Instead of `AGENT_MODEL`, for the same `MODEL_PROVIDER`.
    pub model: Option<String>,
    /// The server tools offered, by name (checked against the registry at start-up); `[]` is none.
    pub tools: Option<Vec<String>>,
}

/// What is wrong with `AGENT_PROFILES`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfilesConfigError {
    #[error(
        "must be a JSON object of profile name to {{\"systemPrompt\": string, \"model\": string, \"tools\": [string]}}: {0}"
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
    #[error("profile {profile}: tool name {tool:?} is not 1-64 letters, digits, _ or -")]
    BadToolName { profile: String, tool: String },
}

/// Server tools beyond the agent's own settings: result size, and remote MCP servers.
#[derive(Debug, Clone)]
pub struct ToolsConfig {
    /// `TOOL_RESULT_MAX_BYTES`: server tool results (and error messages) are cut to this, with
    /// a note, before they reach the model and the thread.
    pub max_result_bytes: usize,
    /// `MCP_SERVERS` and `MCP_CONNECT_TIMEOUT_MS`.
    pub mcp: crate::mcp::McpSettings,
}

#[derive(Debug, Clone)]
pub struct ModelConfig {
    pub provider: ModelChoice,
    /// `AGENT_MODEL`: the model name, or Bedrock's model id or inference profile id.
    pub name: String,
    pub max_retries: u32,
    pub connect_timeout: Duration,
    pub openai: OpenAiConfig,
    /// `BEDROCK_MAX_TOKENS`: Bedrock's `inferenceConfig.maxTokens`; unset leaves the model's default.
    pub bedrock_max_tokens: Option<u32>,
    /// `BEDROCK_REASONING_BUDGET_TOKENS`: Claude's extended thinking with this budget; unset is off.
    pub bedrock_reasoning_budget_tokens: Option<u32>,
}

#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    pub base_url: String,
    pub api_key: Option<SecretString>,
    /// `OPENAI_API_KEY_SECRET_ID`: the key from Secrets Manager instead of the environment.
    pub api_key_secret_id: Option<String>,
}

#[derive(Debug, Clone)]
pub struct HttpConfig {
    pub listen: SocketAddr,
    /// Origins the server itself answers CORS for; empty leaves CORS to the Function URL.
    pub cors_allowed_origins: Vec<String>,
    pub ping_interval: Duration,
    pub run_timeout: Duration,
    /// How long before the Lambda deadline a run stops with `TIMEOUT`, leaving time to store it.
    pub deadline_margin: Duration,
    /// `DEV_UI`: `GET /` serves the dev chat page; on by default locally, off under Lambda.
    pub dev_ui: bool,
}

#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// DynamoDB when set, else threads live in memory.
    pub threads_table: Option<String>,
    /// Threads are deleted this many days after creation (DynamoDB TTL); 0 keeps them.
    pub thread_ttl_days: u32,
    /// Run event logs (for resuming streams) are deleted this many hours after they were written.
    pub run_events_ttl_hours: u32,
    /// `ATTACHMENTS_BUCKET`: the v1 agent API's signed-URL image uploads; off when unset.
    pub attachments_bucket: Option<String>,
    /// `ATTACHMENTS_S3_ENDPOINT`: an S3-compatible endpoint (path-style URLs), for local use.
    pub attachments_endpoint: Option<String>,
    /// `ATTACHMENT_MAX_BYTES`: the largest image a caller may upload.
    pub attachment_max_bytes: u64,
    /// `SELF_INVOKE_ENDPOINT`: the Invoke API of a Lambda emulator (`cargo lambda watch`) for
    /// detached runs; unset on AWS.
    pub self_invoke_endpoint: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{name} must be {expected}, got {value:?}")]
    Invalid {
        name: &'static str,
        expected: &'static str,
        value: String,
    },
    #[error("AUTH_MODE={mode} needs {needs}")]
    Missing {
        mode: &'static str,
        needs: &'static str,
    },
    #[error("MCP_SERVERS: {0}")]
    Mcp(#[from] crate::mcp::McpConfigError),
    #[error("AGENT_PROFILES: {0}")]
    Profiles(#[from] ProfilesConfigError),
}

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_map(&std::env::vars().collect())
    }

    /// Reads configuration from `vars`; tests pass their own map instead of the process
    /// environment.
    pub fn from_map(vars: &HashMap<String, String>) -> Result<Self, ConfigError> {
        let get = |name: &str| {
            vars.get(name)
                .map(|value| value.trim().to_owned())
                .filter(|value| !value.is_empty())
        };
        let openai_api_key = get("OPENAI_API_KEY").map(SecretString::from);
        let openai_base_url = get("OPENAI_BASE_URL");
        let model = match get("MODEL_PROVIDER").as_deref() {
            None | Some("openai") if openai_api_key.is_some() || openai_base_url.is_some() => {
                ModelChoice::OpenAi
            }
            None | Some("openai") | Some("demo") | Some("scripted") => ModelChoice::Demo,
            Some("bedrock") if cfg!(feature = "bedrock") => {
                if get("AGENT_MODEL").is_none() {
                    return Err(ConfigError::Invalid {
                        name: "AGENT_MODEL",
                        expected: "a Bedrock model id or inference profile id with MODEL_PROVIDER=bedrock",
                        value: String::new(),
                    });
                }
                ModelChoice::Bedrock
            }
            Some(other) => {
                return Err(ConfigError::Invalid {
                    name: "MODEL_PROVIDER",
                    expected: if cfg!(feature = "bedrock") {
                        "openai, bedrock or demo"
                    } else {
                        "openai or demo (this build has no `bedrock` feature)"
                    },
                    value: other.to_owned(),
                });
            }
        };
        let bedrock_max_tokens = Some(bounded::<u32>(
            vars,
            "BEDROCK_MAX_TOKENS",
            0,
            0..=1_000_000,
        )?)
        .filter(|max| *max > 0);
        // Claude's extended thinking takes a budget of at least 1,024 tokens.
        let bedrock_reasoning_budget_tokens =
            optional_bounded::<u32>(vars, "BEDROCK_REASONING_BUDGET_TOKENS", 1_024..=1_000_000)?;
        // A client may ask for fewer output tokens per model turn, never more.
        let max_output_tokens = optional_bounded::<u32>(vars, "MAX_OUTPUT_TOKENS", 1..=1_000_000)?;
        let defaults = Limits::default();
        let agent_defaults = AgentSettings::default();
        let system_prompt = match get("AGENT_SYSTEM_PROMPT") {
            Some(prompt) => Some(prompt),
            None => agent_defaults.system_prompt,
        };
        let port: u16 = number(vars, "PORT", 8787)?;
        let host: IpAddr = match get("HOST") {
            Some(host) => host.parse().map_err(|_| ConfigError::Invalid {
                name: "HOST",
                expected: "an IP address",
                value: host,
            })?,
            None => IpAddr::V4(Ipv4Addr::LOCALHOST),
        };
        let auth = match get("AUTH_MODE").as_deref() {
            None | Some("none") => AuthConfig::None,
            Some("api-key") => {
                let keys = get("API_KEYS").map(SecretString::from);
                let secret_id = get("API_KEYS_SECRET_ID");
                if keys.is_none() && secret_id.is_none() {
                    return Err(ConfigError::Missing {
                        mode: "api-key",
                        needs: "API_KEYS or API_KEYS_SECRET_ID",
                    });
                }
                AuthConfig::ApiKey { keys, secret_id }
            }
            Some("jwt") => {
                let missing = ConfigError::Missing {
                    mode: "jwt",
                    needs: "JWT_ISSUER, JWT_AUDIENCE and JWT_JWKS_URL or JWT_JWKS_FILE",
                };
                let jwks = match (get("JWT_JWKS_URL"), get("JWT_JWKS_FILE")) {
                    (Some(url), _) => JwksSource::Url(url),
                    (None, Some(file)) => JwksSource::File(file.into()),
                    (None, None) => return Err(missing),
                };
                AuthConfig::Jwt {
                    issuer: get("JWT_ISSUER").ok_or(missing.clone())?,
                    audience: get("JWT_AUDIENCE").ok_or(missing)?,
                    jwks,
                    leeway_secs: bounded(vars, "JWT_LEEWAY_SECS", 30, 0..=3_600)?,
                }
            }
            Some("iam") => AuthConfig::Iam,
            Some(other) => {
                return Err(ConfigError::Invalid {
                    name: "AUTH_MODE",
                    expected: "none, api-key, jwt or iam",
                    value: other.to_owned(),
                });
            }
        };
        let cors_allowed_origins = get("CORS_ALLOWED_ORIGINS")
            .map(|origins| {
                origins
                    .split(',')
                    .map(|origin| origin.trim().trim_end_matches('/').to_owned())
                    .filter(|o| !o.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let runtime = match get("RUNTIME_FLAVOR").as_deref() {
            Some("current-thread") => RuntimeFlavor::CurrentThread,
            Some("multi-thread") => RuntimeFlavor::MultiThread,
            None => {
                let under_lambda = get("AWS_LAMBDA_RUNTIME_API").is_some();
                let concurrent = number::<u32>(vars, "AWS_LAMBDA_MAX_CONCURRENCY", 1)? > 1;
                if under_lambda && !concurrent {
                    RuntimeFlavor::CurrentThread
                } else {
                    RuntimeFlavor::MultiThread
                }
            }
            Some(other) => {
                return Err(ConfigError::Invalid {
                    name: "RUNTIME_FLAVOR",
                    expected: "current-thread or multi-thread",
                    value: other.to_owned(),
                });
            }
        };
        Ok(Self {
            model: ModelConfig {
                provider: model,
                name: get("AGENT_MODEL").unwrap_or_else(|| "gpt-4o-mini".to_owned()),
                max_retries: bounded(vars, "MODEL_MAX_RETRIES", 3, 0..=10)?,
                connect_timeout: Duration::from_millis(bounded(
                    vars,
                    "MODEL_CONNECT_TIMEOUT_MS",
                    10_000,
                    100..=60_000,
                )?),
                openai: OpenAiConfig {
                    base_url: openai_base_url
                        .unwrap_or_else(|| "https://api.openai.com/v1".to_owned()),
                    api_key: openai_api_key,
                    api_key_secret_id: get("OPENAI_API_KEY_SECRET_ID"),
                },
                bedrock_max_tokens,
                bedrock_reasoning_budget_tokens,
            },
            http: HttpConfig {
                listen: SocketAddr::new(host, port),
                cors_allowed_origins,
                ping_interval: Duration::from_millis(bounded(
                    vars,
                    "SSE_PING_INTERVAL_MS",
                    15_000,
                    100..=300_000,
                )?),
                // Lambda's own maximum is 900 s.
                run_timeout: Duration::from_secs(bounded(vars, "RUN_TIMEOUT_SECS", 870, 1..=900)?),
                deadline_margin: Duration::from_millis(bounded(
                    vars,
                    "DEADLINE_MARGIN_MS",
                    3_000,
                    0..=60_000,
                )?),
                dev_ui: flag(vars, "DEV_UI", get("AWS_LAMBDA_RUNTIME_API").is_none())?,
            },
            store: StoreConfig {
                threads_table: get("THREADS_TABLE"),
                thread_ttl_days: bounded(vars, "THREAD_TTL_DAYS", 0, 0..=36_500)?,
                run_events_ttl_hours: bounded(vars, "RUN_EVENTS_TTL_HOURS", 24, 1..=8_760)?,
                attachments_bucket: match get("ATTACHMENTS_BUCKET") {
                    Some(bucket) if is_bucket_name(&bucket) => Some(bucket),
                    Some(value) => {
                        return Err(ConfigError::Invalid {
                            name: "ATTACHMENTS_BUCKET",
                            expected: "an S3 bucket name (3-63 lowercase letters, digits, . or -)",
                            value,
                        });
                    }
                    None => None,
                },
                attachments_endpoint: http_endpoint(vars, "ATTACHMENTS_S3_ENDPOINT")?,
                attachment_max_bytes: bounded(
                    vars,
                    "ATTACHMENT_MAX_BYTES",
                    5 * 1024 * 1024,
                    1..=50 * 1024 * 1024,
                )?,
                self_invoke_endpoint: http_endpoint(vars, "SELF_INVOKE_ENDPOINT")?,
            },
            auth,
            agent: AgentSettings {
                system_prompt,
                max_steps: bounded(vars, "AGENT_MAX_STEPS", agent_defaults.max_steps, 1..=100)?,
                emit_steps: flag(vars, "AGENT_EMIT_STEPS", agent_defaults.emit_steps)?,
                lease: Duration::from_secs(bounded(vars, "RUN_LEASE_SECS", 30, 2..=900)?),
                record_events: flag(vars, "RUN_EVENTS_RECORD", agent_defaults.record_events)?,
                max_output_tokens,
                approval_required_tools: get("APPROVAL_REQUIRED_TOOLS")
                    .map(|names| {
                        names
                            .split(',')
                            .map(str::trim)
                            .filter(|name| !name.is_empty())
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default(),
                interrupt_ttl: Duration::from_secs(bounded(
                    vars,
                    "INTERRUPT_TTL_SECS",
                    agent_defaults.interrupt_ttl.as_secs(),
                    60..=604_800,
                )?),
                confirm_tool: match get("APPROVAL_CONFIRM_TOOL") {
                    None => agent_defaults.confirm_tool.clone(),
                    Some(name) if crate::protocol::input::is_valid_tool_name(&name) => name,
                    Some(value) => {
                        return Err(ConfigError::Invalid {
                            name: "APPROVAL_CONFIRM_TOOL",
                            expected: "a tool name (1-64 letters, digits, _ or -)",
                            value,
                        });
                    }
                },
                quotas: quotas(vars)?,
                busy_thread_policy: match get("BUSY_THREAD_POLICY") {
                    None => agent_defaults.busy_thread_policy,
                    Some(value) => value.parse().map_err(|()| ConfigError::Invalid {
                        name: "BUSY_THREAD_POLICY",
                        expected: "interrupt or reject",
                        value,
                    })?,
                },
                ..agent_defaults
            },
            tools: ToolsConfig {
                max_result_bytes: bounded(
                    vars,
                    "TOOL_RESULT_MAX_BYTES",
                    crate::agent::tools::DEFAULT_MAX_RESULT_BYTES,
                    1_024..=1_048_576,
                )?,
                mcp: crate::mcp::McpSettings {
                    servers: match get("MCP_SERVERS") {
                        Some(json) => crate::mcp::McpServerSettings::parse_list(&json)?,
                        None => Vec::new(),
                    },
                    list_timeout: Duration::from_millis(bounded(
                        vars,
                        "MCP_CONNECT_TIMEOUT_MS",
                        5_000,
                        100..=60_000,
                    )?),
                },
            },
            limits: Limits {
                // Lambda takes request payloads of up to 6 MB.
                max_payload_bytes: bounded(
                    vars,
                    "MAX_PAYLOAD_BYTES",
                    defaults.max_payload_bytes,
                    1_024..=6_291_456,
                )?,
                max_run_id_chars: bounded(
                    vars,
                    "MAX_RUN_ID_CHARS",
                    defaults.max_run_id_chars,
                    1..=1_024,
                )?,
                max_messages: bounded(vars, "MAX_MESSAGES", defaults.max_messages, 1..=100_000)?,
                max_user_text_chars: bounded(
                    vars,
                    "MAX_USER_TEXT_CHARS",
                    defaults.max_user_text_chars,
                    1..=6_291_456,
                )?,
                max_attachments_per_message: bounded(
                    vars,
                    "MAX_ATTACHMENTS",
                    defaults.max_attachments_per_message,
                    0..=1_000,
                )?,
                max_inline_attachment_bytes: bounded(
                    vars,
                    "MAX_INLINE_ATTACHMENT_BYTES",
                    defaults.max_inline_attachment_bytes,
                    0..=6_291_456,
                )?,
            },
            runtime,
            profiles: match get("AGENT_PROFILES") {
                Some(json) => profiles(&json)?,
                None => BTreeMap::new(),
            },
            telemetry: telemetry(vars, &get)?,
        })
    }
}

/// The telemetry settings; an empty variable counts as unset (SAM passes empty parameters so).
fn telemetry(
    vars: &HashMap<String, String>,
    get: &dyn Fn(&str) -> Option<String>,
) -> Result<TelemetryConfig, ConfigError> {
    let url = |name: &'static str, value: String| {
        if (value.starts_with("http://") || value.starts_with("https://")) && value.len() <= 2_048 {
            Ok(value)
        } else {
            Err(ConfigError::Invalid {
                name,
                expected: "an http:// or https:// URL",
                value,
            })
        }
    };
    let traces_endpoint = match (
        get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
        get("OTEL_EXPORTER_OTLP_ENDPOINT"),
    ) {
        (Some(traces), _) => Some(url("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", traces)?),
        (None, Some(base)) => Some(format!(
            "{}/v1/traces",
            url("OTEL_EXPORTER_OTLP_ENDPOINT", base)?.trim_end_matches('/')
        )),
        (None, None) => None,
    };
    let service_name = get("OTEL_SERVICE_NAME")
        .or_else(|| get("AWS_LAMBDA_FUNCTION_NAME"))
        .unwrap_or_else(|| "agui-lambda".to_owned());
    if service_name.chars().count() > 255 {
        return Err(ConfigError::Invalid {
            name: "OTEL_SERVICE_NAME",
            expected: "at most 255 characters (a CloudWatch dimension value)",
            value: service_name,
        });
    }
    let metrics_namespace = get("METRICS_NAMESPACE")
        .unwrap_or_else(|| crate::telemetry::emf::DEFAULT_NAMESPACE.to_owned());
    // CloudWatch's rule for namespaces; `AWS/` is AWS's own.
    let namespace_ok = metrics_namespace.len() <= 255
        && !metrics_namespace.starts_with("AWS/")
        && metrics_namespace
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".-_/#: ".contains(c));
    if !namespace_ok {
        return Err(ConfigError::Invalid {
            name: "METRICS_NAMESPACE",
            expected: "1-255 letters, digits or . - _ / # : and spaces, not starting with AWS/",
            value: metrics_namespace,
        });
    }
    Ok(TelemetryConfig {
        traces_endpoint,
        service_name,
        capture_content: flag(vars, "OTEL_CAPTURE_CONTENT", false)?,
        emf: flag(vars, "EMF_METRICS", get("AWS_LAMBDA_RUNTIME_API").is_some())?,
        metrics_namespace,
    })
}

/// `AGENT_PROFILES`: a JSON object of profile name to [`ProfileConfig`]. Whether its tools exist
/// is checked at start-up, where the registry (with the MCP servers' tools) is known.
fn profiles(json: &str) -> Result<BTreeMap<String, ProfileConfig>, ProfilesConfigError> {
    let entries: Entries =
        serde_json::from_str(json).map_err(|err| ProfilesConfigError::Json(err.to_string()))?;
    if entries.0.len() > MAX_PROFILES {
        return Err(ProfilesConfigError::TooMany(entries.0.len()));
    }
    let mut profiles = BTreeMap::new();
    for (name, mut profile) in entries.0 {
        if name == crate::agent::INTERNAL_AGENT_TYPE {
            return Err(ProfilesConfigError::Internal);
        }
        // The same rule as tool names: safe in logs and error messages, and what a client's
        // routing field can carry without escaping.
        if !crate::protocol::input::is_valid_tool_name(&name) {
            return Err(ProfilesConfigError::BadName(name));
        }
        if profile
            .system_prompt
            .as_ref()
            .is_some_and(|prompt| prompt.chars().count() > MAX_PROFILE_PROMPT_CHARS)
        {
            return Err(ProfilesConfigError::PromptTooLong(name));
        }
        if profile.model.as_ref().is_some_and(|model| {
            model.is_empty()
                || model.chars().count() > MAX_PROFILE_MODEL_CHARS
                || model.trim() != model
                || model.chars().any(char::is_control)
        }) {
            return Err(ProfilesConfigError::BadModel(name));
        }
        if let Some(tools) = &mut profile.tools {
            if let Some(bad) = tools
                .iter()
                .find(|tool| !crate::protocol::input::is_valid_tool_name(tool))
            {
                return Err(ProfilesConfigError::BadToolName {
                    profile: name,
                    tool: bad.clone(),
                });
            }
            // A name listed twice offers the tool once.
            tools.sort();
            tools.dedup();
        }
        if profiles.contains_key(&name) {
            return Err(ProfilesConfigError::Duplicate(name));
        }
        profiles.insert(name, profile);
    }
    Ok(profiles)
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

fn number<T: std::str::FromStr>(
    vars: &HashMap<String, String>,
    name: &'static str,
    default: T,
) -> Result<T, ConfigError> {
    match vars
        .get(name)
        .map(|value| value.trim())
        .filter(|value| !value.is_empty())
    {
        None => Ok(default),
        Some(value) => value.parse().map_err(|_| ConfigError::Invalid {
            name,
            expected: "a non-negative whole number",
            value: value.to_owned(),
        }),
    }
}

/// A whole number within `range`.
/// An S3 bucket name as S3 allows it for virtual-hosted URLs.
fn is_bucket_name(name: &str) -> bool {
    (3..=63).contains(&name.len())
        && name.bytes().all(|byte| {
            byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'.' || byte == b'-'
        })
        && !name.starts_with(['.', '-'])
        && !name.ends_with(['.', '-'])
}

/// An optional `http(s)://` endpoint, without a trailing slash.
fn http_endpoint(
    vars: &HashMap<String, String>,
    name: &'static str,
) -> Result<Option<String>, ConfigError> {
    let Some(value) = vars
        .get(name)
        .map(|value| value.trim())
        .filter(|value| !value.is_empty())
    else {
        return Ok(None);
    };
    if (value.starts_with("http://") || value.starts_with("https://"))
        && reqwest::Url::parse(value).is_ok()
    {
        Ok(Some(value.trim_end_matches('/').to_owned()))
    } else {
        Err(ConfigError::Invalid {
            name,
            expected: "an http:// or https:// URL",
            value: value.to_owned(),
        })
    }
}

fn bounded<T>(
    vars: &HashMap<String, String>,
    name: &'static str,
    default: T,
    range: std::ops::RangeInclusive<T>,
) -> Result<T, ConfigError>
where
    T: std::str::FromStr + PartialOrd + fmt::Display + Copy,
{
    let value = number(vars, name, default)?;
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(ConfigError::Invalid {
            name,
            expected: "a whole number within its bounds (see the README's configuration table)",
            value: format!("{value} (allowed {}..={})", range.start(), range.end()),
        })
    }
}

/// `QUOTA_*`: the default quotas and `QUOTA_OVERRIDES`, a JSON object of principal to
/// `{"tokensPerDay": n | null, "runsPerMinute": n | null}` (a key left out keeps the default;
/// `null` lifts that quota for the principal).
fn quotas(vars: &HashMap<String, String>) -> Result<crate::agent::Quotas, ConfigError> {
    use crate::agent::QuotaOverride;
    const TOKENS: std::ops::RangeInclusive<u64> = 1..=1_000_000_000_000;
    const RUNS: std::ops::RangeInclusive<u32> = 1..=100_000;
    let default = crate::agent::QuotaLimits {
        tokens_per_day: optional_bounded(vars, "QUOTA_TOKENS_PER_DAY", TOKENS)?,
        runs_per_minute: optional_bounded(vars, "QUOTA_RUNS_PER_MINUTE", RUNS)?,
        reserve_tokens: bounded(vars, "QUOTA_RESERVE_TOKENS", 0, 0..=10_000_000)?,
    };
    let mut overrides = HashMap::new();
    let Some(text) = vars
        .get("QUOTA_OVERRIDES")
        .filter(|text| !text.trim().is_empty())
    else {
        return Ok(crate::agent::Quotas { default, overrides });
    };
    let invalid = || ConfigError::Invalid {
        name: "QUOTA_OVERRIDES",
        expected: "a JSON object of principal to {\"tokensPerDay\": 1..10^12 or null, \"runsPerMinute\": 1..100000 or null}",
        value: text.clone(),
    };
    let parsed: HashMap<String, serde_json::Map<String, serde_json::Value>> =
        serde_json::from_str(text).map_err(|_| invalid())?;
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
    Ok(crate::agent::Quotas { default, overrides })
}

/// A whole number within `range`, or `None` when the variable is unset.
fn optional_bounded<T>(
    vars: &HashMap<String, String>,
    name: &'static str,
    range: std::ops::RangeInclusive<T>,
) -> Result<Option<T>, ConfigError>
where
    T: std::str::FromStr + PartialOrd + fmt::Display + Copy,
{
    let set = vars.get(name).is_some_and(|value| !value.trim().is_empty());
    if !set {
        return Ok(None);
    }
    bounded(vars, name, *range.start(), range).map(Some)
}

fn flag(
    vars: &HashMap<String, String>,
    name: &'static str,
    default: bool,
) -> Result<bool, ConfigError> {
    match vars
        .get(name)
        .map(|value| value.trim().to_ascii_lowercase())
        .as_deref()
    {
        None | Some("") => Ok(default),
        Some("1" | "true" | "yes" | "on") => Ok(true),
        Some("0" | "false" | "no" | "off") => Ok(false),
        Some(other) => Err(ConfigError::Invalid {
            name,
            expected: "true or false",
            value: other.to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        Config::from_map(
            &pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    }

    #[test]
    fn telemetry_is_off_locally_and_names_its_endpoint_service_and_namespace() {
        let local = config(&[]).unwrap().telemetry;
        assert_eq!(local.traces_endpoint, None);
        assert!(!local.emf && !local.capture_content);
        assert_eq!(
            (
                local.service_name.as_str(),
                local.metrics_namespace.as_str()
            ),
            ("agui-lambda", "AguiLambda")
        );
        let lambda = config(&[
            ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"),
            ("AWS_LAMBDA_FUNCTION_NAME", "stack-agui"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318/"),
            ("METRICS_NAMESPACE", ""),
        ])
        .unwrap()
        .telemetry;
        assert!(lambda.emf);
        assert_eq!(lambda.service_name, "stack-agui");
        assert_eq!(lambda.metrics_namespace, "AguiLambda");
        assert_eq!(
            lambda.traces_endpoint.as_deref(),
            Some("http://127.0.0.1:4318/v1/traces")
        );
        let traces = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://b/traces"),
        ])
        .unwrap()
        .telemetry;
        assert_eq!(traces.traces_endpoint.as_deref(), Some("https://b/traces"));
        for (name, value) in [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318"),
            ("METRICS_NAMESPACE", "AWS/Lambda"),
            ("METRICS_NAMESPACE", "a,b"),
            ("OTEL_CAPTURE_CONTENT", "maybe"),
            ("EMF_METRICS", "2"),
        ] {
            assert!(
                matches!(config(&[(name, value)]), Err(ConfigError::Invalid { name: n, .. }) if n == name),
                "{name}={value}"
            );
        }
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
    fn a_configured_key_or_base_url_selects_the_real_model() {
        assert_eq!(
            config(&[("OPENAI_API_KEY", "sk-x")])
                .unwrap()
                .model
                .provider,
            ModelChoice::OpenAi
        );
        assert_eq!(
            config(&[("OPENAI_BASE_URL", "http://127.0.0.1:4010/v1")])
                .unwrap()
                .model
                .provider,
            ModelChoice::OpenAi
        );
        assert_eq!(
            config(&[("OPENAI_API_KEY", "sk-x"), ("MODEL_PROVIDER", "demo")])
                .unwrap()
                .model
                .provider,
            ModelChoice::Demo
        );
    }

    #[test]
    fn bad_values_name_the_variable() {
        let err = config(&[("AGENT_MAX_STEPS", "lots")]).unwrap_err();
        assert!(err.to_string().starts_with("AGENT_MAX_STEPS must be"));
        assert!(config(&[("MODEL_PROVIDER", "gemini")]).is_err());
        assert!(config(&[("AGENT_EMIT_STEPS", "maybe")]).is_err());
    }

    #[test]
    fn auth_modes_need_their_settings() {
        assert!(matches!(config(&[]).unwrap().auth, AuthConfig::None));
        assert!(matches!(
            config(&[("AUTH_MODE", "api-key")]),
            Err(ConfigError::Missing { .. })
        ));
        assert!(matches!(
            config(&[("AUTH_MODE", "api-key"), ("API_KEYS", "a=b")])
                .unwrap()
                .auth,
            AuthConfig::ApiKey { .. }
        ));
        assert!(matches!(
            config(&[("AUTH_MODE", "jwt"), ("JWT_ISSUER", "i")]),
            Err(ConfigError::Missing { .. })
        ));
        let jwt = config(&[
            ("AUTH_MODE", "jwt"),
            ("JWT_ISSUER", "i"),
            ("JWT_AUDIENCE", "a"),
            ("JWT_JWKS_FILE", "/k.json"),
        ])
        .unwrap();
        assert!(matches!(
            jwt.auth,
            AuthConfig::Jwt {
                leeway_secs: 30,
                ..
            }
        ));
        assert!(config(&[("AUTH_MODE", "magic")]).is_err());
        let cors = config(&[(
            "CORS_ALLOWED_ORIGINS",
            "https://a.example/, http://localhost:3000",
        )])
        .unwrap();
        assert_eq!(
            cors.http.cors_allowed_origins,
            ["https://a.example", "http://localhost:3000"]
        );
    }

    #[test]
    fn bedrock_needs_a_model_id() {
        let bedrock = config(&[
            ("MODEL_PROVIDER", "bedrock"),
            ("AGENT_MODEL", "us.anthropic.claude-sonnet-4-20250514-v1:0"),
            ("BEDROCK_MAX_TOKENS", "2048"),
        ]);
        if cfg!(feature = "bedrock") {
            let bedrock = bedrock.unwrap();
            assert_eq!(bedrock.model.provider, ModelChoice::Bedrock);
            assert_eq!(
                bedrock.model.name,
                "us.anthropic.claude-sonnet-4-20250514-v1:0"
            );
            assert_eq!(bedrock.model.bedrock_max_tokens, Some(2048));
            let err = config(&[("MODEL_PROVIDER", "bedrock")]).unwrap_err();
            assert!(err.to_string().starts_with("AGENT_MODEL must be"));
            // An OpenAI key in the environment does not override the explicit choice.
            assert_eq!(
                config(&[
                    ("MODEL_PROVIDER", "bedrock"),
                    ("AGENT_MODEL", "amazon.nova-lite-v1:0"),
                    ("OPENAI_API_KEY", "sk-x")
                ])
                .unwrap()
                .model
                .provider,
                ModelChoice::Bedrock
            );
            assert!(config(&[("BEDROCK_MAX_TOKENS", "many")]).is_err());
        } else {
            assert!(bedrock.unwrap_err().to_string().contains("bedrock"));
        }
    }

    #[test]
    fn lifecycle_settings_are_bounded() {
        let set = config(&[("RUN_LEASE_SECS", "3"), ("BUSY_THREAD_POLICY", "reject")]).unwrap();
        assert_eq!(set.agent.lease, Duration::from_secs(3));
        assert_eq!(
            set.agent.busy_thread_policy,
            crate::protocol::input::BusyThreadPolicy::Reject
        );
        assert_eq!(set.store.run_events_ttl_hours, 24);
        for (name, value) in [
            ("RUN_LEASE_SECS", "0"),
            ("RUN_TIMEOUT_SECS", "18446744073709551615"),
            ("RUN_TIMEOUT_SECS", "901"),
            ("RUN_EVENTS_TTL_HOURS", "0"),
            ("BUSY_THREAD_POLICY", "queue"),
        ] {
            let err = config(&[(name, value)]).unwrap_err();
            assert!(err.to_string().starts_with(name), "{err}");
        }
    }

    #[test]
    fn quotas_have_per_principal_overrides() {
        use crate::agent::QuotaLimits;
        use crate::store::Principal;
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
    fn jwt_leeway_is_bounded() {
        let err = config(&[
            ("AUTH_MODE", "jwt"),
            ("JWT_ISSUER", "i"),
            ("JWT_AUDIENCE", "a"),
            ("JWT_JWKS_FILE", "/k.json"),
            ("JWT_LEEWAY_SECS", "86400"),
        ])
        .unwrap_err();
        assert!(err.to_string().starts_with("JWT_LEEWAY_SECS"), "{err}");
    }

    #[test]
    fn lambda_gets_a_current_thread_runtime_unless_it_serves_concurrently() {
        let lambda = [("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001")];
        assert_eq!(
            config(&lambda).unwrap().runtime,
            RuntimeFlavor::CurrentThread
        );
        let concurrent = [
            ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"),
            ("AWS_LAMBDA_MAX_CONCURRENCY", "8"),
        ];
        assert_eq!(
            config(&concurrent).unwrap().runtime,
            RuntimeFlavor::MultiThread
        );
        let forced = [
            ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"),
            ("RUNTIME_FLAVOR", "multi-thread"),
        ];
        assert_eq!(config(&forced).unwrap().runtime, RuntimeFlavor::MultiThread);
        assert_eq!(
            config(&[("RUNTIME_FLAVOR", "current-thread")])
                .unwrap()
                .runtime,
            RuntimeFlavor::CurrentThread
        );
    }

    #[test]
    fn tool_settings_have_defaults_and_read_mcp_servers() {
        let unset = config(&[]).unwrap();
        assert_eq!(unset.tools.max_result_bytes, 100_000);
        assert!(unset.tools.mcp.servers.is_empty());
        assert_eq!(unset.tools.mcp.list_timeout, Duration::from_secs(5));
        let set = config(&[
            ("TOOL_RESULT_MAX_BYTES", "2048"),
            ("MCP_CONNECT_TIMEOUT_MS", "1500"),
            (
                "MCP_SERVERS",
                r#"[{"name":"docs","url":"https://mcp.example.com/mcp","timeout_ms":2000}]"#,
            ),
        ])
        .unwrap();
        assert_eq!(set.tools.max_result_bytes, 2048);
        assert_eq!(set.tools.mcp.list_timeout, Duration::from_millis(1500));
        assert_eq!(set.tools.mcp.servers[0].name, "docs");
        assert_eq!(
            set.tools.mcp.servers[0].timeout,
            Duration::from_millis(2000)
        );
    }

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

    #[test]
    fn the_dev_page_is_on_locally_and_off_under_lambda_unless_asked() {
        let lambda = ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001");
        assert!(config(&[]).unwrap().http.dev_ui);
        assert!(!config(&[lambda]).unwrap().http.dev_ui);
        assert!(config(&[lambda, ("DEV_UI", "true")]).unwrap().http.dev_ui);
        assert!(!config(&[("DEV_UI", "false")]).unwrap().http.dev_ui);
        let err = config(&[("DEV_UI", "maybe")]).unwrap_err();
        assert!(
            err.to_string().starts_with("DEV_UI must be true or false"),
            "{err}"
        );
    }

    #[test]
    fn secrets_never_print() {
        let config = config(&[("OPENAI_API_KEY", "sk-very-secret")]).unwrap();
        assert!(!format!("{config:?}").contains("sk-very-secret"));
    }
}
