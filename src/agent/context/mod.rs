//! The model's view of a long thread: how large the model's window is, how large the thread has
//! grown, and the compaction that keeps it under the window (a part too large cut, old tool
//! results cleared, the oldest turns summarised or dropped). It changes what the model is sent,
//! never what the thread holds. A window the configuration does not tell is learned from the
//! model's refusals.

pub(crate) mod compact;
pub(crate) mod estimate;
mod learned;
pub(crate) mod plan;
pub(crate) mod summary;
pub(crate) mod view;
mod window;

pub(crate) use compact::Compacted;
pub(crate) use learned::LearnedWindows;
pub(crate) use window::{ContextWindow, DEFAULT_RESERVE_TOKENS, known_window};

/// What a run does when a thread grows toward the model's window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextStrategy {
    /// Clamp oversized parts, clear old tool results, summarise the oldest turns (dropping them
    /// if summarising fails).
    Summarize,
    /// The same without the summary call: the oldest turns are dropped.
    Window,
    /// Every message is sent every time, as before compaction existed.
    Off,
}

/// The agent's context settings (`MODEL_CONTEXT_TOKENS`, `CONTEXT_COMPACT_AT`,
/// `CONTEXT_STRATEGY`; a profile's `contextTokens`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContextSettings {
    /// The model's input window; `None` takes the table of well-known model ids, else 32,000.
    pub window_tokens: Option<u32>,
    /// The share of the window (less the answer's reserve) past which a thread is compacted.
    pub compact_at: f64,
    pub strategy: ContextStrategy,
}

impl Default for ContextSettings {
    fn default() -> Self {
        Self {
            window_tokens: None,
            compact_at: 0.7,
            strategy: ContextStrategy::Summarize,
        }
    }
}

impl ContextSettings {
    /// The window of `model`, with `reserve` tokens kept for the answer.
    pub(crate) fn window(&self, model: &str, reserve: u32) -> ContextWindow {
        ContextWindow {
            tokens: self
                .window_tokens
                .or_else(|| known_window(model))
                .unwrap_or(window::UNKNOWN_MODEL_TOKENS),
            reserve,
            compact_at: self.compact_at,
            input_limit: None,
        }
    }
}
