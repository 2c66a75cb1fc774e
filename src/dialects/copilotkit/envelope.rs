//! CopilotKit's single-route transport: every call is `POST {runtimeUrl}` with
//! `{"method", "params"?, "body"?}` (the default of `<CopilotKit>` up to react-core 1.68.3, and
//! what the client falls back to when `GET /info` fails). Each call names one REST route; the
//! thread routes come as `resource/request` once `/info` said `singleRoute.resourceOperations`.

use super::BodyError;
use serde::Deserialize;
use serde_json::{Map, Value};

/// One call of the single route, as the REST route it stands for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Call {
    /// `GET /info`.
    Info,
    /// `POST /agent/{agentId}/run`, `…/connect` or `…/suggest`, with the `RunAgentInput`.
    Agent {
        agent_id: String,
        action: AgentAction,
        body: Value,
    },
    /// `POST /agent/{agentId}/stop/{threadId}`, with `{"runId"}` or nothing.
    Stop {
        agent_id: String,
        thread_id: String,
        body: Option<Value>,
    },
    /// `POST /transcribe`, with `{"audio": base64, "mimeType", "filename"?}`.
    Transcribe { body: Value },
    /// A thread route: `path` (from `/threads`, with its query) and `method`, with `body`.
    Resource {
        path: String,
        method: String,
        body: Option<Value>,
    },
}

/// What an agent call asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AgentAction {
    Run,
    Connect,
    Suggest,
}

impl AgentAction {
    /// The last segment of its REST path.
    pub(crate) fn segment(self) -> &'static str {
        match self {
            AgentAction::Run => "run",
            AgentAction::Connect => "connect",
            AgentAction::Suggest => "suggest",
        }
    }
}

/// Why an envelope names no call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum EnvelopeError {
    #[error(transparent)]
    Body(#[from] BodyError),
    /// A method this runtime does not serve (Intelligence's memories, the inspector's learning).
    #[error("the single route has no method {0:?}")]
    UnknownMethod(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope {
    method: String,
    #[serde(default)]
    params: Option<Map<String, Value>>,
    #[serde(default)]
    body: Option<Value>,
}

/// The call a single-route body makes.
pub(crate) fn parse(body: &[u8]) -> Result<Call, EnvelopeError> {
    let envelope: Envelope = super::object_body(body)?;
    let params = envelope.params.unwrap_or_default();
    let text = |name: &str| -> Result<String, BodyError> {
        match params.get(name) {
            Some(Value::String(value)) if !value.is_empty() => Ok(value.clone()),
            _ => Err(BodyError::invalid(
                &format!("params.{name}"),
                "must be a non-empty string",
            )),
        }
    };
    let required_body = |body: Option<Value>| {
        body.ok_or_else(|| BodyError::invalid("body", "this method needs a body"))
    };
    let agent = |action, body| -> Result<Call, EnvelopeError> {
        Ok(Call::Agent {
            agent_id: text("agentId")?,
            action,
            body: required_body(body)?,
        })
    };
    match envelope.method.as_str() {
        "info" => Ok(Call::Info),
        "agent/run" => agent(AgentAction::Run, envelope.body),
        "agent/connect" => agent(AgentAction::Connect, envelope.body),
        "agent/suggest" => agent(AgentAction::Suggest, envelope.body),
        "agent/stop" => Ok(Call::Stop {
            agent_id: text("agentId")?,
            thread_id: text("threadId")?,
            body: envelope.body,
        }),
        "transcribe" => Ok(Call::Transcribe {
            body: required_body(envelope.body)?,
        }),
        "resource/request" => {
            let path = text("path")?;
            if path != "/threads"
                && !path.starts_with("/threads/")
                && !path.starts_with("/threads?")
            {
                return Err(EnvelopeError::UnknownMethod(format!(
                    "resource/request {path}"
                )));
            }
            Ok(Call::Resource {
                path,
                method: text("httpMethod")?.to_ascii_uppercase(),
                body: envelope.body,
            })
        }
        other => Err(EnvelopeError::UnknownMethod(other.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(value: Value) -> Result<Call, EnvelopeError> {
        parse(value.to_string().as_bytes())
    }

    #[test]
    fn each_method_names_its_route() {
        assert_eq!(call(json!({"method": "info"})), Ok(Call::Info));
        assert_eq!(
            call(
                json!({"method": "agent/run", "params": {"agentId": "default"}, "body": {"threadId": "t"}})
            ),
            Ok(Call::Agent {
                agent_id: "default".into(),
                action: AgentAction::Run,
                body: json!({"threadId": "t"}),
            })
        );
        assert_eq!(
            call(
                json!({"method": "agent/stop", "params": {"agentId": "default", "threadId": "t"}})
            ),
            Ok(Call::Stop {
                agent_id: "default".into(),
                thread_id: "t".into(),
                body: None,
            })
        );
        assert_eq!(
            call(
                json!({"method": "resource/request", "params": {"path": "/threads?agentId=default", "httpMethod": "get"}})
            ),
            Ok(Call::Resource {
                path: "/threads?agentId=default".into(),
                method: "GET".into(),
                body: None,
            })
        );
    }

    #[test]
    fn what_names_no_call_is_refused() {
        assert!(matches!(
            call(json!({"method": "memories/list"})),
            Err(EnvelopeError::UnknownMethod(_))
        ));
        assert!(matches!(
            call(
                json!({"method": "resource/request", "params": {"path": "/memories", "httpMethod": "GET"}})
            ),
            Err(EnvelopeError::UnknownMethod(_))
        ));
        let Err(EnvelopeError::Body(error)) = call(json!({"method": "agent/run", "body": {}}))
        else {
            panic!("a run without an agent id");
        };
        assert_eq!(error.field(), Some("params.agentId"));
        let Err(EnvelopeError::Body(error)) =
            call(json!({"method": "agent/connect", "params": {"agentId": "default"}}))
        else {
            panic!("a connect without a body");
        };
        assert_eq!(error.field(), Some("body"));
        assert!(matches!(
            parse(b"not json"),
            Err(EnvelopeError::Body(BodyError::Syntax(_)))
        ));
        assert!(matches!(
            call(json!({"method": "info", "extra": 1})),
            Err(EnvelopeError::Body(_))
        ));
    }
}
