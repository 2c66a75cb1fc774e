//! The agent section: the default agent's prompt and step limit, run leases and recording,
//! approvals, and what a run posted to a busy thread does. Quotas are their own section.

use super::vars::Vars;
use super::{ConfigError, Section};
use crate::agent::{AgentSettings, Quotas};
use std::time::Duration;

impl Section for AgentSettings {
    const SETTINGS: &'static [&'static str] = &[
        "MAX_OUTPUT_TOKENS",
        "AGENT_SYSTEM_PROMPT",
        "AGENT_MAX_STEPS",
        "AGENT_EMIT_STEPS",
        "RUN_LEASE_SECS",
        "RUN_EVENTS_RECORD",
        "RUN_EVENTS_RECORD_MS",
        "APPROVAL_REQUIRED_TOOLS",
        "INTERRUPT_TTL_SECS",
        "APPROVAL_CONFIRM_TOOL",
        "BUSY_THREAD_POLICY",
        "HANDOFF_STEP_SECS",
    ];

    fn from_vars(vars: &Vars) -> Result<Self, ConfigError> {
        let defaults = AgentSettings::default();
        // A client may ask for fewer output tokens per model turn, never more.
        let max_output_tokens = vars.optional_bounded::<u32>("MAX_OUTPUT_TOKENS", 1..=1_000_000)?;
        Ok(AgentSettings {
            system_prompt: vars.text("AGENT_SYSTEM_PROMPT").or(defaults.system_prompt),
            max_steps: vars.bounded("AGENT_MAX_STEPS", defaults.max_steps, 1..=100)?,
            emit_steps: vars.flag("AGENT_EMIT_STEPS", defaults.emit_steps)?,
            lease: Duration::from_secs(vars.bounded("RUN_LEASE_SECS", 30, 2..=900)?),
            record_events: vars.flag("RUN_EVENTS_RECORD", defaults.record_events)?,
            record_interval: Duration::from_millis(vars.bounded(
                "RUN_EVENTS_RECORD_MS",
                250,
                50..=10_000,
            )?),
            max_output_tokens,
            approval_required_tools: vars.list("APPROVAL_REQUIRED_TOOLS"),
            interrupt_ttl: Duration::from_secs(vars.bounded(
                "INTERRUPT_TTL_SECS",
                defaults.interrupt_ttl.as_secs(),
                60..=604_800,
            )?),
            confirm_tool: confirm_tool(vars, &defaults.confirm_tool)?,
            step_estimate: Duration::from_secs(vars.bounded(
                "HANDOFF_STEP_SECS",
                defaults.step_estimate.as_secs(),
                1..=840,
            )?),
            quotas: Quotas::from_vars(vars)?,
            busy_thread_policy: match vars.text("BUSY_THREAD_POLICY") {
                None => defaults.busy_thread_policy,
                Some(value) => value.parse().map_err(|()| ConfigError::Invalid {
                    name: "BUSY_THREAD_POLICY",
                    expected: "interrupt or reject",
                    value,
                })?,
            },
            ..defaults
        })
    }
}

/// `APPROVAL_CONFIRM_TOOL`: the frontend tool 0.0.x clients declare for confirmations.
fn confirm_tool(vars: &Vars, default: &str) -> Result<String, ConfigError> {
    match vars.text("APPROVAL_CONFIRM_TOOL") {
        None => Ok(default.to_owned()),
        Some(name) if crate::protocol::input::is_valid_tool_name(&name) => Ok(name),
        Some(value) => Err(ConfigError::Invalid {
            name: "APPROVAL_CONFIRM_TOOL",
            expected: "a tool name (1-64 letters, digits, _ or -)",
            value,
        }),
    }
}

#[cfg(test)]
mod tests {
    use crate::config::tests::config;
    use std::time::Duration;

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
            ("RUN_MAX_SECS", "18446744073709551615"),
            ("RUN_MAX_SECS", "86401"),
            ("HANDOFF_STEP_SECS", "0"),
            ("HANDOFF_STEP_SECS", "841"),
            ("RUN_EVENTS_TTL_HOURS", "0"),
            ("BUSY_THREAD_POLICY", "queue"),
        ] {
            let err = config(&[(name, value)]).unwrap_err();
            assert!(err.to_string().starts_with(name), "{err}");
        }
    }
}
