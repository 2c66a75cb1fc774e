//! Every way a request is refused before streaming: one variant, one status, one code. Bodies
//! are `{"error":{"code","message","field"?}}`; internal details go to the log, never the body.
//! An A2A refusal ([`A2aRefusal`]) is kept in its binding's shape.

use crate::agent::StartError;
use crate::dialects::v1_agent::V1AgentError;
use crate::protocol::InputError;
use bytes::Bytes;
use http::StatusCode;
use serde_json::{Value, json};

#[derive(Debug, thiserror::Error)]
pub(crate) enum ApiError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error(transparent)]
    Start(StartError),
    #[error(
        "Content-Type must be application/json (with curl, add -H 'content-type: application/json')"
    )]
    UnsupportedMediaType,
    #[error("no route for {0}")]
    NotFound(String),
    /// A path that takes other methods: the `Allow` header lists them, the message says which.
    #[error("{}", method_not_allowed(.method, .path, .allowed))]
    MethodNotAllowed {
        method: http::Method,
        path: String,
        allowed: Vec<http::Method>,
    },
    /// `GET /` with the dev page off (under Lambda, `cargo lambda watch` included, unless
    /// `DEV_UI=true`): the 405 it always was, saying how to get the page.
    #[error(
        "GET / serves the dev chat page only with DEV_UI=true (off under Lambda and cargo lambda \
         watch unless set); the agent itself answers POST / and POST /agent"
    )]
    DevPageOff,
    #[error("{0}")]
    BadQuery(String),
    #[error(transparent)]
    Unauthorized(#[from] crate::auth::Unauthorized),
    #[error("{0}")]
    UnreadableBody(&'static str),
    #[error("run not found")]
    RunNotFound,
    #[error("the history cursor is not valid for this thread")]
    BadCursor,
    /// The v1 agent API's routes: the contract's own messages, word for word.
    #[error(transparent)]
    V1Agent(#[from] crate::dialects::v1_agent::V1AgentError),
    #[error("attachments are not configured on this server (ATTACHMENTS_BUCKET)")]
    AttachmentsOff,
    #[error(transparent)]
    Attachment(crate::store::BlobError),
    /// A run asked of a server that is stopping (after `SIGTERM`).
    #[error(
        "the server is stopping and starts no new run; send it again (another instance takes it)"
    )]
    ShuttingDown,
    #[error(
        "memory is off on this server: start it with MEMORY=on (or give a profile \"memory\": \
         true) to keep memories across threads"
    )]
    MemoryOff,
    #[error("memory not found")]
    MemoryNotFound,
    /// `MEMORY_MAX_ITEMS` reached.
    #[error("{0}")]
    MemoryFull(String),
    /// CopilotKit's routes: an agent id that names neither the default agent nor a profile.
    #[error("no agent is named {0:?} here; GET /copilotkit/info lists them")]
    AgentNotFound(String),
    /// An A2A operation's error, written in its binding's shape.
    #[error("{}", .0.error)]
    A2a(Box<A2aRefusal>),
    /// An MCP App's view could not be loaded: refused here (`refused`), or its server failed.
    #[error("{message}")]
    McpView { refused: bool, message: String },
}

/// `GET /agent` → "GET /agent is not served: use POST, with a JSON RunAgentInput body …".
fn method_not_allowed(method: &http::Method, path: &str, allowed: &[http::Method]) -> String {
    let names: Vec<&str> = allowed.iter().map(http::Method::as_str).collect();
    let runs = allowed == [http::Method::POST]
        && matches!(
            path,
            "/" | "/agent" | "/send-message" | "/ag-kit/send-message" | "/process" | "/invocations"
        );
    let how = if runs {
        ", with a JSON RunAgentInput body and content-type: application/json \
         (curl -N -H 'content-type: application/json' -d '{\"messages\":[…]}' …)"
    } else {
        ""
    };
    format!(
        "{method} {path} is not served: use {}{how}",
        names.join(" or ")
    )
}

/// What a 405 lists in its `Allow` header.
impl ApiError {
    pub(crate) fn allowed_methods(&self) -> Option<String> {
        match self {
            ApiError::MethodNotAllowed { allowed, .. } => Some(
                allowed
                    .iter()
                    .map(http::Method::as_str)
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            ApiError::DevPageOff => Some("POST".to_owned()),
            _ => None,
        }
    }
}

impl From<StartError> for ApiError {
    /// A start refused for its input is answered as the input's refusal at the edge would be.
    fn from(error: StartError) -> Self {
        match error {
            StartError::Input(input) => ApiError::Input(input),
            other => ApiError::Start(other),
        }
    }
}

impl From<crate::dialects::copilotkit::BodyError> for ApiError {
    /// A CopilotKit body refused as every JSON body is: 400 when it is not JSON, else 422
    /// naming the field.
    fn from(error: crate::dialects::copilotkit::BodyError) -> Self {
        use crate::dialects::copilotkit::BodyError;
        ApiError::Input(match error {
            BodyError::Syntax(message) => InputError::Syntax(message),
            BodyError::Invalid { field, message } => InputError::Invalid { field, message },
        })
    }
}

impl ApiError {
    /// A store failure outside a run's start: reads of history and of run events, cancels.
    pub(crate) fn from_store(error: crate::store::StoreError) -> Self {
        use crate::store::StoreError;
        match error {
            StoreError::BadCursor => ApiError::BadCursor,
            other => ApiError::Start(other.into()),
        }
    }
}

impl ApiError {
    /// Seconds a refused caller should wait (`Retry-After`), for refusals that pass.
    pub(crate) fn retry_after_secs(&self) -> Option<u64> {
        match self {
            ApiError::Start(StartError::QuotaExceeded(exceeded)) => {
                Some(exceeded.retry_after_secs())
            }
            ApiError::ShuttingDown => Some(1),
            _ => None,
        }
    }

    pub(crate) fn status(&self) -> StatusCode {
        match self {
            ApiError::Input(InputError::Syntax(_))
            | ApiError::BadQuery(_)
            | ApiError::BadCursor
            | ApiError::UnreadableBody(_) => StatusCode::BAD_REQUEST,
            ApiError::Input(InputError::TooLarge { .. } | InputError::HistoryTooLarge { .. })
            | ApiError::V1Agent(V1AgentError::TooLarge)
            | ApiError::Start(StartError::TooLarge(_)) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::V1Agent(error) if error.is_syntax() => StatusCode::BAD_REQUEST,
            ApiError::V1Agent(V1AgentError::Invalid(_)) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::AttachmentsOff => StatusCode::NOT_FOUND,
            ApiError::Attachment(crate::store::BlobError::Unavailable(_)) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            ApiError::Attachment(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Input(InputError::Invalid { .. })
            | ApiError::Start(
                StartError::Input(_)
                | StartError::Merge(_)
                | StartError::ToolNameClash(_)
                | StartError::UnsupportedPart { .. }
                | StartError::UnknownParentRun,
            ) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Start(StartError::QuotaExceeded(_)) => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Start(
                StartError::Busy | StartError::Interrupt(_) | StartError::RunIdTaken,
            ) => StatusCode::CONFLICT,
            ApiError::Start(StartError::Dispatch(_)) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Start(StartError::NotFound)
            | ApiError::NotFound(_)
            | ApiError::AgentNotFound(_)
            | ApiError::RunNotFound
            | ApiError::MemoryOff
            | ApiError::MemoryNotFound => StatusCode::NOT_FOUND,
            ApiError::MemoryFull(_) => StatusCode::CONFLICT,
            ApiError::Start(StartError::StoreUnavailable) | ApiError::ShuttingDown => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            ApiError::Start(StartError::StoreCorrupt) => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::MethodNotAllowed { .. } | ApiError::DevPageOff => {
                StatusCode::METHOD_NOT_ALLOWED
            }
            ApiError::A2a(refusal) => refusal.status(),
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::McpView { refused: true, .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::McpView { refused: false, .. } => StatusCode::BAD_GATEWAY,
        }
    }

    pub(crate) fn code(&self) -> &'static str {
        match self {
            ApiError::Input(InputError::Syntax(_)) => "invalid_json",
            ApiError::Input(InputError::TooLarge { .. } | InputError::HistoryTooLarge { .. })
            | ApiError::V1Agent(V1AgentError::TooLarge)
            | ApiError::Start(StartError::TooLarge(_)) => "payload_too_large",
            ApiError::V1Agent(error) if error.is_syntax() => "invalid_json",
            ApiError::V1Agent(V1AgentError::Invalid(_)) => "invalid_request",
            ApiError::AttachmentsOff => "attachments_disabled",
            ApiError::Attachment(crate::store::BlobError::Unavailable(_)) => "store_unavailable",
            ApiError::Attachment(_) => "invalid_attachment",
            ApiError::Input(InputError::Invalid { .. })
            | ApiError::Start(
                StartError::Input(_) | StartError::ToolNameClash(_) | StartError::UnknownParentRun,
            ) => "invalid_request",
            ApiError::Start(StartError::QuotaExceeded(_)) => "quota_exceeded",
            ApiError::Start(StartError::Merge(_)) => "invalid_tool_result",
            ApiError::Start(StartError::UnsupportedPart { .. }) => "unsupported_content",
            ApiError::Start(StartError::Busy) => "thread_busy",
            ApiError::Start(StartError::RunIdTaken) => "run_id_taken",
            ApiError::Start(StartError::Dispatch(_)) => "dispatch_failed",
            ApiError::Start(StartError::Interrupt(_)) => "interrupt_conflict",
            ApiError::Start(StartError::NotFound) => "thread_not_found",
            ApiError::Start(StartError::StoreUnavailable) => "store_unavailable",
            ApiError::Start(StartError::StoreCorrupt) => "store_corrupt",
            ApiError::UnsupportedMediaType => "unsupported_media_type",
            ApiError::NotFound(_) => "not_found",
            ApiError::AgentNotFound(_) => "agent_not_found",
            ApiError::MethodNotAllowed { .. } | ApiError::DevPageOff => "method_not_allowed",
            ApiError::BadQuery(_) => "invalid_query",
            ApiError::Unauthorized(_) => "unauthorized",
            ApiError::UnreadableBody(_) => "invalid_body",
            ApiError::RunNotFound => "run_not_found",
            ApiError::BadCursor => "invalid_cursor",
            ApiError::ShuttingDown => "shutting_down",
            ApiError::MemoryOff => "memory_disabled",
            ApiError::MemoryNotFound => "memory_not_found",
            ApiError::MemoryFull(_) => "memory_full",
            ApiError::A2a(refusal) => refusal.error.kind.reason(),
            ApiError::McpView { refused: true, .. } => "view_refused",
            ApiError::McpView { refused: false, .. } => "view_failed",
        }
    }

    pub(crate) fn body(&self) -> Bytes {
        if let ApiError::A2a(refusal) = self {
            return Bytes::from(refusal.body().to_string());
        }
        let mut error = json!({"code": self.code(), "message": self.to_string()});
        let field = match self {
            ApiError::Input(input) | ApiError::Start(StartError::Input(input)) => {
                input.field().map(str::to_owned)
            }
            ApiError::Start(StartError::Merge(_)) => Some("messages".to_owned()),
            ApiError::Start(StartError::ToolNameClash(_)) => Some("tools".to_owned()),
            ApiError::Start(StartError::UnknownParentRun) => Some("parentRunId".to_owned()),
            ApiError::Start(StartError::UnsupportedPart { message, part, .. }) => {
                Some(format!("messages[{message}].content[{part}]"))
            }
            _ => None,
        };
        if let Some(field) = field {
            error["field"] = json!(field);
        }
        if let Some(secs) = self.retry_after_secs() {
            error["retryAfter"] = json!(secs);
        }
        Bytes::from(json!({ "error": error }).to_string())
    }
}

/// How a request speaks A2A.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Binding {
    JsonRpc,
    Rest,
}

/// An A2A error on its way out, with what its binding needs to write it.
#[derive(Debug)]
pub(crate) struct A2aRefusal {
    pub error: crate::a2a::errors::A2aError,
    pub binding: Binding,
    /// The JSON-RPC request's id (`null` when it could not be read).
    pub id: Value,
}

impl A2aRefusal {
    pub(super) fn status(&self) -> http::StatusCode {
        match self.binding {
            // A JSON-RPC error is an answer: the HTTP exchange itself went well.
            Binding::JsonRpc => http::StatusCode::OK,
            Binding::Rest => http::StatusCode::from_u16(self.error.kind.http_status())
                .unwrap_or(http::StatusCode::BAD_REQUEST),
        }
    }

    pub(super) fn body(&self) -> Value {
        match self.binding {
            Binding::JsonRpc => self.error.jsonrpc_body(&self.id),
            Binding::Rest => self.error.rest_body(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_has_a_fixed_status_and_a_json_body_naming_the_field() {
        let error = ApiError::Input(InputError::Invalid {
            field: "runId".into(),
            message: "runId exceeds length limit".into(),
        });
        assert_eq!(error.status(), StatusCode::UNPROCESSABLE_ENTITY);
        let body: serde_json::Value = serde_json::from_slice(&error.body()).unwrap();
        assert_eq!(
            body,
            json!({"error": {"code": "invalid_request", "message": "runId: runId exceeds length limit", "field": "runId"}})
        );
        assert_eq!(
            ApiError::Start(StartError::Busy).status(),
            StatusCode::CONFLICT
        );
        assert_eq!(
            ApiError::Start(StartError::StoreUnavailable).status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(
            ApiError::Input(InputError::Syntax("x".into())).status(),
            StatusCode::BAD_REQUEST
        );
    }

    #[test]
    fn a_part_the_model_cannot_take_is_a_422_naming_the_part() {
        let error = ApiError::Start(StartError::UnsupportedPart {
            message: 2,
            part: 1,
            reason: "the OpenAI-compatible model takes no video".into(),
        });
        assert_eq!(error.status(), StatusCode::UNPROCESSABLE_ENTITY);
        let body: serde_json::Value = serde_json::from_slice(&error.body()).unwrap();
        assert_eq!(
            body,
            json!({"error": {"code": "unsupported_content", "message": "messages[2].content[1]: the OpenAI-compatible model takes no video", "field": "messages[2].content[1]"}})
        );
    }
}
