//! A2UI v0.9 surfaces over AG-UI: the catalogs a client paints and what the model is told of
//! them, the validator, the operations each renderer reads (CopilotKit's spec form, assistant-ui's
//! own), the `a2ui-surface` lifecycle, and what a thread keeps so surfaces come back on reload.
//! Pure: the run loop offers the tool and streams what this builds.

pub(crate) mod action;
pub(crate) mod catalog;
pub(crate) mod client;
pub(crate) mod describe;
pub(crate) mod emit;
pub(crate) mod history;
pub(crate) mod render;
pub(crate) mod surface;
pub(crate) mod validate;

pub(crate) use client::{Mode, Offer};
pub(crate) use emit::ACTIVITY_TYPE;
pub(crate) use render::DEFAULT_MAX_ATTEMPTS;

/// When an agent offers the render tool (`A2UI`, a profile's `a2ui`) and how many attempts a
/// surface gets (`A2UI_MAX_ATTEMPTS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct A2uiSettings {
    pub mode: Mode,
    pub max_attempts: u32,
}

impl Default for A2uiSettings {
    fn default() -> Self {
        Self {
            mode: Mode::Auto,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
        }
    }
}
#[cfg(test)]
mod property_tests;
#[cfg(test)]
pub(crate) mod spec_schema;
