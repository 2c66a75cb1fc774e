//! The refusal of a request's input: what every dialect's parser returns, naming the field at
//! fault.

use crate::protocol::ids::IdError;

/// A client mistake, found before any streaming.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("request body is not valid JSON: {0}")]
    Syntax(String),
    #[error("RunAgentInput payload exceeds size limit of {limit} bytes")]
    TooLarge { limit: usize },
    /// A body over the AG-UI routes' limit: a client that resends the whole thread every run.
    #[error(
        "the request body exceeds the limit of {limit} bytes. The server already holds this thread's messages: send only those it does not hold yet, after the last one it holds (README, \"Sending only new messages\")"
    )]
    HistoryTooLarge { limit: usize },
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
}

impl InputError {
    pub(crate) fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        InputError::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }

    pub(crate) fn of_id(field: &str, err: IdError) -> Self {
        InputError::invalid(field, err.to_string())
    }

    /// The offending field, where one is known.
    pub(crate) fn field(&self) -> Option<&str> {
        match self {
            InputError::Invalid { field, .. } => Some(field),
            _ => None,
        }
    }
}

/// `value` as a `T`, a mismatch named by its JSON path under `at` (`""` for a whole body, which
/// a mismatch at the root names `body`).
pub(crate) fn deserialize_at<T: serde::de::DeserializeOwned>(
    value: serde_json::Value,
    at: &str,
) -> Result<T, InputError> {
    serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        let field = match (path.as_str(), at) {
            (".", "") => "body".to_owned(),
            (".", at) => at.to_owned(),
            (path, at) => format!("{at}{path}"),
        };
        InputError::invalid(field, strip_position(&err.into_inner().to_string()))
    })
}

/// serde_json appends "at line 1 column 42", which says nothing to an API caller.
pub(crate) fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_owned(),
        None => message.to_owned(),
    }
}
