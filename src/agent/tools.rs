//! Server tools: a registry of named async handlers whose arguments are checked against their
//! JSON Schema before the handler runs, and the built-in `get_current_time`.

use async_trait::async_trait;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::Arc;

use crate::model::ToolSpec;
use crate::protocol::{RunId, ThreadId};

/// What a tool may know about the run that called it.
#[derive(Debug, Clone)]
pub struct ToolContext {
    pub thread_id: ThreadId,
    pub run_id: RunId,
    /// The client's time zone from `forwardedProps.client_time.device_timezone`.
    pub device_timezone: Option<chrono_tz::Tz>,
    /// The thread's state as it is when the tool runs.
    pub state: Value,
}

/// A tool's answer: content for the model, and optionally a JSON Patch to the thread's state.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub content: String,
    pub state_patch: Option<json_patch::Patch>,
}

impl ToolOutput {
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            state_patch: None,
        }
    }
}

/// A tool failure. `Failed` goes back to the model as an error result, so it can correct itself;
/// `Fatal` ends the run with `RUN_ERROR` code `TOOL_EXECUTION_ERROR`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    #[error("{0}")]
    Failed(String),
    #[error("{0}")]
    Fatal(String),
}

#[async_trait]
pub trait ServerTool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// A JSON Schema object for the arguments.
    fn parameters(&self) -> Value;
    async fn call(&self, arguments: Value, context: &ToolContext) -> Result<ToolOutput, ToolError>;
}

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("tool {0} is registered twice")]
    Duplicate(String),
    #[error("tool {name} has an invalid schema: {reason}")]
    BadSchema { name: String, reason: String },
    #[error("tool name {0} is not accepted by model APIs")]
    BadName(String),
}

struct Registered {
    tool: Arc<dyn ServerTool>,
    validator: jsonschema::Validator,
    spec: ToolSpec,
}

/// Server tools by name. Schemas are compiled once, at start-up.
#[derive(Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Registered>,
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// The registry every deployment starts with.
    pub fn with_builtins() -> Result<Self, RegistryError> {
        let mut registry = Self::new();
        registry.register(Arc::new(CurrentTime))?;
        Ok(registry)
    }

    pub fn register(&mut self, tool: Arc<dyn ServerTool>) -> Result<(), RegistryError> {
        let name = tool.name().to_owned();
        if !crate::protocol::input::is_valid_tool_name(&name) {
            return Err(RegistryError::BadName(name));
        }
        if self.tools.contains_key(&name) {
            return Err(RegistryError::Duplicate(name));
        }
        let parameters = tool.parameters();
        let validator =
            jsonschema::validator_for(&parameters).map_err(|err| RegistryError::BadSchema {
                name: name.clone(),
                reason: err.to_string(),
            })?;
        let spec = ToolSpec {
            name: name.clone(),
            description: tool.description().to_owned(),
            parameters,
        };
        self.tools.insert(
            name,
            Registered {
                tool,
                validator,
                spec,
            },
        );
        Ok(())
    }

    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.values().map(|registered| &registered.spec)
    }

    /// Parses and checks the arguments, then runs the tool. `None` when no such tool exists.
    pub async fn call(
        &self,
        name: &str,
        arguments: &str,
        context: &ToolContext,
    ) -> Option<Result<ToolOutput, ToolError>> {
        let registered = self.tools.get(name)?;
        let arguments = if arguments.trim().is_empty() {
            "{}"
        } else {
            arguments
        };
        let value: Value = match serde_json::from_str(arguments) {
            Ok(value) => value,
            Err(err) => {
                return Some(Err(ToolError::Failed(format!(
                    "arguments are not valid JSON: {err}"
                ))));
            }
        };
        let problems: Vec<String> = registered
            .validator
            .iter_errors(&value)
            .map(|error| {
                let path = error.instance_path().to_string();
                if path.is_empty() {
                    error.to_string()
                } else {
                    format!("{path}: {error}")
                }
            })
            .collect();
        if !problems.is_empty() {
            return Some(Err(ToolError::Failed(format!(
                "arguments do not match the tool's schema: {}",
                problems.join("; ")
            ))));
        }
        Some(registered.tool.call(value, context).await)
    }
}

/// `get_current_time`: the time now in an IANA zone; the zone defaults to the client's device
/// zone (seed 004's `forwardedProps.client_time`), then UTC.
pub struct CurrentTime;

#[async_trait]
impl ServerTool for CurrentTime {
    fn name(&self) -> &str {
        "get_current_time"
    }

    fn description(&self) -> &str {
        "Get the current date and time. Without a timezone, uses the user's device time zone, else UTC."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "timezone": {"type": "string", "description": "IANA time zone name, e.g. Europe/Paris"}
            },
            "additionalProperties": false
        })
    }

    async fn call(&self, arguments: Value, context: &ToolContext) -> Result<ToolOutput, ToolError> {
        let zone = match arguments.get("timezone").and_then(Value::as_str) {
            Some(name) => chrono_tz::Tz::from_str(name).map_err(|_| {
                ToolError::Failed(format!(
                    "unknown time zone {name:?}; use an IANA name such as Europe/Paris"
                ))
            })?,
            None => context.device_timezone.unwrap_or(chrono_tz::UTC),
        };
        let now = chrono::Utc::now().with_timezone(&zone);
        let answer = json!({
            "timezone": zone.name(),
            "iso": now.to_rfc3339_opts(chrono::SecondsFormat::Secs, false),
        });
        Ok(ToolOutput::text(answer.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context(device: Option<chrono_tz::Tz>) -> ToolContext {
        ToolContext {
            thread_id: ThreadId::parse("t", 128).unwrap(),
            run_id: RunId::parse("r", 128).unwrap(),
            device_timezone: device,
            state: Value::Null,
        }
    }

    async fn time(arguments: &str, device: Option<chrono_tz::Tz>) -> Result<Value, ToolError> {
        let registry = ToolRegistry::with_builtins().unwrap();
        let output = registry
            .call("get_current_time", arguments, &context(device))
            .await
            .unwrap()?;
        Ok(serde_json::from_str(&output.content).unwrap())
    }

    #[tokio::test]
    async fn named_zone_wins_then_device_zone_then_utc() {
        let paris = time(
            r#"{"timezone":"Europe/Paris"}"#,
            Some(chrono_tz::Asia::Tokyo),
        )
        .await
        .unwrap();
        assert_eq!(paris["timezone"], "Europe/Paris");
        let device = time("{}", Some(chrono_tz::Asia::Tokyo)).await.unwrap();
        assert_eq!(device["timezone"], "Asia/Tokyo");
        assert!(device["iso"].as_str().unwrap().ends_with("+09:00"));
        let utc = time("", None).await.unwrap();
        assert_eq!(utc["timezone"], "UTC");
        assert!(chrono::DateTime::parse_from_rfc3339(utc["iso"].as_str().unwrap()).is_ok());
    }

    #[tokio::test]
    async fn bad_arguments_are_tool_errors_for_the_model() {
        assert!(
            matches!(time(r#"{"timezone":"Mars/Base"}"#, None).await, Err(ToolError::Failed(m)) if m.contains("unknown time zone"))
        );
        assert!(
            matches!(time(r#"{"timezone":7}"#, None).await, Err(ToolError::Failed(m)) if m.contains("schema"))
        );
        assert!(
            matches!(time(r#"{"zone":"UTC"}"#, None).await, Err(ToolError::Failed(m)) if m.contains("schema"))
        );
        assert!(
            matches!(time("{not json", None).await, Err(ToolError::Failed(m)) if m.contains("not valid JSON"))
        );
    }

    #[tokio::test]
    async fn unknown_tools_are_none() {
        let registry = ToolRegistry::with_builtins().unwrap();
        assert!(registry.call("nope", "{}", &context(None)).await.is_none());
    }

    #[test]
    fn duplicate_registration_is_refused() {
        let mut registry = ToolRegistry::with_builtins().unwrap();
        assert!(matches!(
            registry.register(Arc::new(CurrentTime)),
            Err(RegistryError::Duplicate(_))
        ));
    }
}
