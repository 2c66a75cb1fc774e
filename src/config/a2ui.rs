//! The A2UI section: when the render tool is offered (`A2UI`, a profile's `a2ui`) and how many
//! attempts a surface gets.

use super::vars::Vars;
use super::{ConfigError, Section};
use crate::genui::a2ui::{A2uiSettings, DEFAULT_MAX_ATTEMPTS, Mode};

/// What `A2UI` (and a profile's `a2ui`) accepts.
pub(crate) const MODES: &str = "auto, off, on or assistant-ui";

impl Section for A2uiSettings {
    const SETTINGS: &'static [&'static str] = &["A2UI", "A2UI_MAX_ATTEMPTS"];

    fn from_vars(vars: &Vars) -> Result<Self, ConfigError> {
        let mode = match vars.text("A2UI") {
            None => Mode::Auto,
            Some(value) => value.parse().map_err(|()| ConfigError::Invalid {
                name: "A2UI",
                expected: MODES,
                value,
            })?,
        };
        Ok(Self {
            mode,
            max_attempts: vars.bounded("A2UI_MAX_ATTEMPTS", DEFAULT_MAX_ATTEMPTS, 1..=10)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::config;

    #[test]
    fn a2ui_is_offered_to_clients_that_paint_it_with_three_attempts_by_default() {
        let unset = config(&[]).unwrap();
        assert_eq!(unset.a2ui, A2uiSettings::default());
        assert_eq!((unset.a2ui.mode, unset.a2ui.max_attempts), (Mode::Auto, 3));
        let set = config(&[("A2UI", "assistant-ui"), ("A2UI_MAX_ATTEMPTS", "5")]).unwrap();
        assert_eq!(
            (set.a2ui.mode, set.a2ui.max_attempts),
            (Mode::AssistantUi, 5)
        );
        assert!(config(&[("A2UI", "yes")]).is_err());
        assert!(config(&[("A2UI_MAX_ATTEMPTS", "0")]).is_err());
        assert!(config(&[("A2UI_MAX_ATTEMPTS", "11")]).is_err());
    }
}
