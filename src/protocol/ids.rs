//! Identifier newtypes. Each checks its invariant once, in its constructor, so code holding one
//! never re-validates it.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Longest id we accept from a client for any id-like field.
pub(crate) const MAX_ID_LEN: usize = 128;

/// Why a client-supplied id was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("must not be empty")]
    Empty,
    #[error("exceeds length limit of {0} characters")]
    TooLong(usize),
    #[error("may contain only letters, digits and - _ . : characters")]
    BadCharacter,
}

/// Ids end up in DynamoDB keys, logs and headers: a conservative alphabet keeps them inert there.
fn check_id(value: &str, max_len: usize) -> Result<(), IdError> {
    if value.is_empty() {
        return Err(IdError::Empty);
    }
    if value.chars().count() > max_len {
        return Err(IdError::TooLong(max_len));
    }
    if !value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
    {
        return Err(IdError::BadCharacter);
    }
    Ok(())
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// Checks a client-supplied id against `max_len` and the id alphabet.
            pub fn parse(value: impl Into<String>, max_len: usize) -> Result<Self, IdError> {
                let value = value.into();
                check_id(&value, max_len)?;
                Ok(Self(value))
            }

            /// A fresh random id, unique across threads.
            pub fn generate() -> Self {
                Self(format!(concat!($prefix, "{}"), uuid::Uuid::new_v4().simple()))
            }

            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

id_type!(
    /// A conversation; stable across runs.
    ThreadId,
    ""
);
id_type!(
    /// One agent run within a thread.
    RunId,
    "run_"
);
id_type!(
    /// A message of any role.
    MessageId,
    "msg_"
);
id_type!(
    /// One tool call, answered by exactly one `tool` message.
    ToolCallId,
    "call_"
);

impl ThreadId {
    /// Threads created by the server get a plain UUID, the form CopilotKit and HttpAgent use.
    pub fn new_uuid() -> Self {
        Self(uuid::Uuid::new_v4().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_id_forms_real_clients_send() {
        for id in [
            "550e8400-e29b-41d4-a716-446655440000",
            "thread_001",
            "run-xxx",
            "msg:1.2",
        ] {
            assert!(ThreadId::parse(id, MAX_ID_LEN).is_ok(), "{id}");
        }
    }

    #[test]
    fn refuses_empty_long_and_strange_ids() {
        assert_eq!(ThreadId::parse("", 128), Err(IdError::Empty));
        assert_eq!(
            RunId::parse("a".repeat(129), 128),
            Err(IdError::TooLong(128))
        );
        assert_eq!(MessageId::parse("a b", 128), Err(IdError::BadCharacter));
        assert_eq!(MessageId::parse("a#b", 128), Err(IdError::BadCharacter));
    }

    #[test]
    fn generated_ids_are_unique_and_valid() {
        let a = MessageId::generate();
        let b = MessageId::generate();
        assert_ne!(a, b);
        assert!(MessageId::parse(a.as_str(), MAX_ID_LEN).is_ok());
        assert!(a.as_str().starts_with("msg_"));
    }
}
