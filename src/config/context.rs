//! The context section: how large the model's window is, when and how a long thread is
//! compacted, and whether prompts are marked for the provider's cache.

use super::vars::Vars;
use super::{ConfigError, Section};
use crate::agent::{ContextSettings, ContextStrategy};

/// Whether requests carry the provider's prompt-cache markers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptCache {
    /// Where the model is known to take them (Bedrock: Claude and Nova; OpenAI: api.openai.com).
    Auto,
    Off,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ContextConfig {
    /// `MODEL_CONTEXT_TOKENS`: the model's input window; `None` takes the table of well-known
    /// model ids, else a safe 32,000.
    pub window_tokens: Option<u32>,
    /// `CONTEXT_COMPACT_AT`: the share of the window (less the answer's reserve) past which a
    /// thread is compacted before the model call.
    pub compact_at: f64,
    /// `CONTEXT_STRATEGY`.
    pub strategy: ContextStrategy,
    /// `CONTEXT_SUMMARY_MODEL`: another model id for summaries (same provider); `None` uses the
    /// run's own.
    pub summary_model: Option<String>,
    /// `PROMPT_CACHE`.
    pub prompt_cache: PromptCache,
}

impl Section for ContextConfig {
    const SETTINGS: &'static [&'static str] = &[
        "MODEL_CONTEXT_TOKENS",
        "CONTEXT_COMPACT_AT",
        "CONTEXT_STRATEGY",
        "CONTEXT_SUMMARY_MODEL",
        "PROMPT_CACHE",
    ];

    fn from_vars(vars: &Vars) -> Result<Self, ConfigError> {
        Ok(Self {
            window_tokens: vars.optional_bounded("MODEL_CONTEXT_TOKENS", 1_000..=10_000_000)?,
            compact_at: compact_at(vars)?,
            strategy: match vars.text("CONTEXT_STRATEGY").as_deref() {
                None | Some("summarize") => ContextStrategy::Summarize,
                Some("window") => ContextStrategy::Window,
                Some("off") => ContextStrategy::Off,
                Some(other) => {
                    return Err(invalid(
                        "CONTEXT_STRATEGY",
                        "summarize, window or off",
                        other,
                    ));
                }
            },
            summary_model: vars.text("CONTEXT_SUMMARY_MODEL"),
            prompt_cache: match vars.text("PROMPT_CACHE").as_deref() {
                None | Some("auto") => PromptCache::Auto,
                Some("off") => PromptCache::Off,
                Some(other) => return Err(invalid("PROMPT_CACHE", "auto or off", other)),
            },
        })
    }
}

/// `CONTEXT_COMPACT_AT`, 0.3 to 0.95, default 0.7: early enough that the turn's tool results
/// still fit before the next check, late enough that compaction is rare.
fn compact_at(vars: &Vars) -> Result<f64, ConfigError> {
    let Some(text) = vars.text("CONTEXT_COMPACT_AT") else {
        return Ok(0.7);
    };
    match text.parse::<f64>() {
        Ok(share) if (0.3..=0.95).contains(&share) => Ok(share),
        _ => Err(invalid(
            "CONTEXT_COMPACT_AT",
            "a fraction from 0.3 to 0.95",
            &text,
        )),
    }
}

impl ContextConfig {
    /// What the agent needs of this section (the summariser and caches are start-up's).
    pub(crate) fn settings(&self) -> ContextSettings {
        ContextSettings {
            window_tokens: self.window_tokens,
            compact_at: self.compact_at,
            strategy: self.strategy,
        }
    }
}

fn invalid(name: &'static str, expected: &'static str, value: &str) -> ConfigError {
    ConfigError::Invalid {
        name,
        expected,
        value: value.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::config;

    #[test]
    fn context_settings_have_defaults_bounds_and_named_values() {
        let unset = config(&[]).unwrap().context;
        assert_eq!(unset.window_tokens, None);
        assert_eq!(unset.compact_at, 0.7);
        assert_eq!(unset.strategy, ContextStrategy::Summarize);
        assert_eq!(unset.prompt_cache, PromptCache::Auto);
        let set = config(&[
            ("MODEL_CONTEXT_TOKENS", "8000"),
            ("CONTEXT_COMPACT_AT", "0.8"),
            ("CONTEXT_STRATEGY", "window"),
            ("CONTEXT_SUMMARY_MODEL", "gpt-4o-mini"),
            ("PROMPT_CACHE", "off"),
        ])
        .unwrap()
        .context;
        assert_eq!(set.window_tokens, Some(8_000));
        assert_eq!(set.compact_at, 0.8);
        assert_eq!(set.strategy, ContextStrategy::Window);
        assert_eq!(set.summary_model.as_deref(), Some("gpt-4o-mini"));
        assert_eq!(set.prompt_cache, PromptCache::Off);
        for (name, value) in [
            ("MODEL_CONTEXT_TOKENS", "999"),
            ("CONTEXT_COMPACT_AT", "0.99"),
            ("CONTEXT_COMPACT_AT", "most"),
            ("CONTEXT_STRATEGY", "truncate"),
            ("PROMPT_CACHE", "always"),
        ] {
            let error = config(&[(name, value)]).unwrap_err().to_string();
            assert!(error.starts_with(name), "{error}");
        }
    }
}
