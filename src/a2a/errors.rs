//! A2A's errors as the spec numbers them (section 5.4): each kind has one JSON-RPC code, one
//! HTTP status and one `ErrorInfo.reason`, and each binding writes it in its own shape
//! (a JSON-RPC error object; `google.rpc.Status` for HTTP+JSON).

use serde_json::{Value, json};

/// One A2A error kind (the spec's `…Error` names, without the suffix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    TaskNotFound,
    TaskNotCancelable,
    PushNotificationNotSupported,
    UnsupportedOperation,
    ContentTypeNotSupported,
    InvalidAgentResponse,
    ExtendedAgentCardNotConfigured,
    VersionNotSupported,
    JsonParse,
    InvalidRequest,
    MethodNotFound,
    InvalidParams,
    Internal,
}

impl ErrorKind {
    /// The JSON-RPC `error.code`.
    pub(crate) fn code(self) -> i64 {
        match self {
            ErrorKind::TaskNotFound => -32001,
            ErrorKind::TaskNotCancelable => -32002,
            ErrorKind::PushNotificationNotSupported => -32003,
            ErrorKind::UnsupportedOperation => -32004,
            ErrorKind::ContentTypeNotSupported => -32005,
            ErrorKind::InvalidAgentResponse => -32006,
            ErrorKind::ExtendedAgentCardNotConfigured => -32007,
            ErrorKind::VersionNotSupported => -32009,
            ErrorKind::JsonParse => -32700,
            ErrorKind::InvalidRequest => -32600,
            ErrorKind::MethodNotFound => -32601,
            ErrorKind::InvalidParams => -32602,
            ErrorKind::Internal => -32603,
        }
    }

    /// The kind a JSON-RPC code stands for.
    pub(crate) fn from_code(code: i64) -> Option<Self> {
        [
            ErrorKind::TaskNotFound,
            ErrorKind::TaskNotCancelable,
            ErrorKind::PushNotificationNotSupported,
            ErrorKind::UnsupportedOperation,
            ErrorKind::ContentTypeNotSupported,
            ErrorKind::InvalidAgentResponse,
            ErrorKind::ExtendedAgentCardNotConfigured,
            ErrorKind::VersionNotSupported,
            ErrorKind::JsonParse,
            ErrorKind::InvalidRequest,
            ErrorKind::MethodNotFound,
            ErrorKind::InvalidParams,
            ErrorKind::Internal,
        ]
        .into_iter()
        .find(|kind| kind.code() == code)
    }

    /// The HTTP+JSON binding's status.
    pub(crate) fn http_status(self) -> u16 {
        match self {
            ErrorKind::TaskNotFound | ErrorKind::MethodNotFound => 404,
            ErrorKind::InvalidAgentResponse | ErrorKind::Internal => 500,
            _ => 400,
        }
    }

    /// `google.rpc.Status.status`: the gRPC code name of the HTTP+JSON error.
    fn grpc_status(self) -> &'static str {
        match self {
            ErrorKind::TaskNotFound | ErrorKind::MethodNotFound => "NOT_FOUND",
            ErrorKind::ContentTypeNotSupported
            | ErrorKind::JsonParse
            | ErrorKind::InvalidRequest
            | ErrorKind::InvalidParams => "INVALID_ARGUMENT",
            ErrorKind::InvalidAgentResponse | ErrorKind::Internal => "INTERNAL",
            _ => "FAILED_PRECONDITION",
        }
    }

    /// `ErrorInfo.reason`: the kind in upper snake case.
    pub(crate) fn reason(self) -> &'static str {
        match self {
            ErrorKind::TaskNotFound => "TASK_NOT_FOUND",
            ErrorKind::TaskNotCancelable => "TASK_NOT_CANCELABLE",
            ErrorKind::PushNotificationNotSupported => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            ErrorKind::UnsupportedOperation => "UNSUPPORTED_OPERATION",
            ErrorKind::ContentTypeNotSupported => "CONTENT_TYPE_NOT_SUPPORTED",
            ErrorKind::InvalidAgentResponse => "INVALID_AGENT_RESPONSE",
            ErrorKind::ExtendedAgentCardNotConfigured => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            ErrorKind::VersionNotSupported => "VERSION_NOT_SUPPORTED",
            ErrorKind::JsonParse => "JSON_PARSE",
            ErrorKind::InvalidRequest => "INVALID_REQUEST",
            ErrorKind::MethodNotFound => "METHOD_NOT_FOUND",
            ErrorKind::InvalidParams => "INVALID_PARAMS",
            ErrorKind::Internal => "INTERNAL",
        }
    }
}

/// An A2A error: its kind and a message for people.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct A2aError {
    pub kind: ErrorKind,
    pub message: String,
}

impl A2aError {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    pub(crate) fn task_not_found(task_id: &str) -> Self {
        let shown: String = task_id.chars().take(128).collect();
        Self::new(ErrorKind::TaskNotFound, format!("task {shown} not found"))
    }

    pub(crate) fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidParams, message)
    }

    /// A request without `A2A-Version` (0.3 by the spec) or with another major version.
    pub(crate) fn version_not_supported(sent: Option<&str>) -> Self {
        let message = match sent {
            None => "A2A-Version is missing, which means 0.3; this agent speaks 1.0: send A2A-Version: 1.0".to_owned(),
            Some(version) => format!(
                "A2A-Version {} is not supported; this agent speaks 1.0",
                version.chars().take(16).collect::<String>()
            ),
        };
        Self::new(ErrorKind::VersionNotSupported, message)
    }

    /// The `ErrorInfo` detail both bindings attach.
    fn error_info(&self) -> Value {
        json!({
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": self.kind.reason(),
            "domain": "a2a-protocol.org",
        })
    }

    /// The JSON-RPC 2.0 error response for request `id` (`null` when it could not be read).
    pub(crate) fn jsonrpc_body(&self, id: &Value) -> Value {
        json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {
                "code": self.kind.code(),
                "message": self.message,
                "data": [self.error_info()],
            }
        })
    }

    /// The HTTP+JSON error body, a `google.rpc.Status`.
    pub(crate) fn rest_body(&self) -> Value {
        json!({
            "error": {
                "code": self.kind.http_status(),
                "status": self.kind.grpc_status(),
                "message": self.message,
                "details": [self.error_info()],
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_numbers_hold_in_both_bindings() {
        let error = A2aError::task_not_found("t-1");
        assert_eq!(
            error.jsonrpc_body(&json!("r1")),
            json!({"jsonrpc": "2.0", "id": "r1", "error": {"code": -32001, "message": "task t-1 not found",
                "data": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org"}]}})
        );
        assert_eq!(error.rest_body()["error"]["code"], 404);
        assert_eq!(error.rest_body()["error"]["status"], "NOT_FOUND");
        let version = A2aError::version_not_supported(None);
        assert_eq!(version.kind.code(), -32009);
        assert_eq!(version.kind.http_status(), 400);
        assert_eq!(ErrorKind::TaskNotCancelable.code(), -32002);
        assert_eq!(ErrorKind::UnsupportedOperation.code(), -32004);
        assert_eq!(
            ErrorKind::from_code(-32005),
            Some(ErrorKind::ContentTypeNotSupported)
        );
        assert_eq!(ErrorKind::from_code(-1), None);
    }
}
