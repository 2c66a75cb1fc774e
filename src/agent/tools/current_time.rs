//! `get_current_time`, the built-in server tool.

use async_trait::async_trait;
use serde_json::{Value, json};
use std::str::FromStr;

use super::{ServerTool, ToolContext, ToolError, ToolOutput};

/// `get_current_time`: the time now in an IANA zone; the zone defaults to the client's device
/// zone (the v1 agent API's `forwardedProps.client_time`), then UTC.
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

    /// It reads the clock: running it again changes nothing.
    fn idempotent(&self) -> bool {
        true
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
    use super::super::ToolRegistry;
    use super::*;
    use crate::auth::Principal;
    use crate::protocol::{RunId, ThreadId};

    fn context(device: Option<chrono_tz::Tz>) -> ToolContext {
        ToolContext::new(
            ThreadId::parse("t", 128).unwrap(),
            RunId::parse("r", 128).unwrap(),
            Principal::anonymous(),
        )
        .with_device_timezone(device)
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
}
