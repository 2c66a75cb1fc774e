//! The store section: where threads live and for how long, the attachments bucket, and the
//! Invoke API detached runs are sent to under an emulator.

use super::vars::Vars;
use super::{ConfigError, Section};

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

impl Section for StoreConfig {
    const SETTINGS: &'static [&'static str] = &[
        "THREADS_TABLE",
        "THREAD_TTL_DAYS",
        "RUN_EVENTS_TTL_HOURS",
        "ATTACHMENTS_BUCKET",
        "ATTACHMENTS_S3_ENDPOINT",
        "ATTACHMENT_MAX_BYTES",
        "SELF_INVOKE_ENDPOINT",
    ];

    fn from_vars(vars: &Vars) -> Result<Self, ConfigError> {
        Ok(Self {
            threads_table: vars.text("THREADS_TABLE"),
            thread_ttl_days: vars.bounded("THREAD_TTL_DAYS", 0, 0..=36_500)?,
            run_events_ttl_hours: vars.bounded("RUN_EVENTS_TTL_HOURS", 24, 1..=8_760)?,
            attachments_bucket: attachments_bucket(vars)?,
            attachments_endpoint: vars.http_endpoint("ATTACHMENTS_S3_ENDPOINT")?,
            attachment_max_bytes: vars.bounded(
                "ATTACHMENT_MAX_BYTES",
                5 * 1024 * 1024,
                1..=50 * 1024 * 1024,
            )?,
            self_invoke_endpoint: vars.http_endpoint("SELF_INVOKE_ENDPOINT")?,
        })
    }
}

fn attachments_bucket(vars: &Vars) -> Result<Option<String>, ConfigError> {
    match vars.text("ATTACHMENTS_BUCKET") {
        Some(bucket) if is_bucket_name(&bucket) => Ok(Some(bucket)),
        Some(value) => Err(ConfigError::Invalid {
            name: "ATTACHMENTS_BUCKET",
            expected: "an S3 bucket name (3-63 lowercase letters, digits, . or -)",
            value,
        }),
        None => Ok(None),
    }
}

/// An S3 bucket name as S3 allows it for virtual-hosted URLs.
fn is_bucket_name(name: &str) -> bool {
    (3..=63).contains(&name.len())
        && name.bytes().all(|byte| {
            byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'.' || byte == b'-'
        })
        && !name.starts_with(['.', '-'])
        && !name.ends_with(['.', '-'])
}
