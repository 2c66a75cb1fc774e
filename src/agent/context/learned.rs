//! What the warm instance has learned of its models' windows from their refusals: the window a
//! refusal named, or, when it named none, the size that was refused, an upper bound. Kept per
//! model (provider and id) for as long as the process lives, so every later run of any thread
//! fits before it is sent, and the summariser is never sent what the model refused.

use crate::model::{ModelIdentity, Refusal};
use std::collections::HashMap;
use std::sync::Mutex;

/// A model's limits as its refusals showed them. Every field only ever shrinks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Limit {
    /// The window a refusal named, in tokens (the answer included, for the providers that count
    /// it: read as the configured window is).
    pub(crate) named: Option<u32>,
    /// The smallest input (estimated) that was refused: whatever the provider counts, an input
    /// this large fails.
    refused_input: Option<u64>,
    /// The smallest input and answer's cap together that were refused: for a provider that
    /// counts the answer in its window, so much fails.
    refused_total: Option<u64>,
}

impl Limit {
    /// Nothing learned.
    #[cfg(test)]
    pub(crate) const NONE: Limit = Limit {
        named: None,
        refused_input: None,
        refused_total: None,
    };

    /// The most input a request may take beside an answer of up to `reserve` tokens without
    /// being as large as one that was refused; `None` when nothing was refused.
    pub(crate) fn input_limit(&self, reserve: u64) -> Option<u64> {
        let input = self.refused_input.map(|refused| refused.saturating_sub(1));
        let total = self
            .refused_total
            .map(|refused| refused.saturating_sub(reserve).saturating_sub(1));
        match (input, total) {
            (Some(input), Some(total)) => Some(input.min(total)),
            (one, other) => one.or(other),
        }
    }

    /// The limit after `refusal` of a request of `input` estimated tokens with an answer's cap
    /// of `reserve`.
    fn after(self, refusal: &Refusal, input: u64, reserve: u64) -> Self {
        let least = |known: Option<u64>, new: u64| Some(known.map_or(new, |known| known.min(new)));
        Self {
            named: match (self.named, refusal.window()) {
                (Some(known), Some(named)) => Some(known.min(named)),
                (known, named) => known.or(named),
            },
            refused_input: least(self.refused_input, input),
            refused_total: least(self.refused_total, input.saturating_add(reserve)),
        }
    }
}

/// The limits learned so far, by model. Shared by every run of the process (its agents and
/// profiles); a new process starts knowing nothing.
#[derive(Debug, Default)]
pub(crate) struct LearnedWindows {
    by_model: Mutex<HashMap<String, Limit>>,
}

impl LearnedWindows {
    /// What `model` is known to refuse.
    pub(crate) fn limit(&self, model: &ModelIdentity) -> Limit {
        self.models().get(&key(model)).copied().unwrap_or_default()
    }

    /// Learns from `model`'s refusal of a request of `input` estimated tokens whose answer could
    /// take `reserve`; the limit it leaves.
    pub(crate) fn learn(
        &self,
        model: &ModelIdentity,
        refusal: &Refusal,
        input: u64,
        reserve: u64,
    ) -> Limit {
        let mut models = self.models();
        let limit = models.entry(key(model)).or_default();
        *limit = limit.after(refusal, input, reserve);
        tracing::info!(
            model = %key(model),
            named = limit.named,
            input_limit = limit.input_limit(reserve),
            "the model refused a request as too long: its window is learned"
        );
        *limit
    }

    fn models(&self) -> std::sync::MutexGuard<'_, HashMap<String, Limit>> {
        self.by_model
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn key(model: &ModelIdentity) -> String {
    format!("{}:{}", model.provider, model.model)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(id: &str) -> ModelIdentity {
        ModelIdentity {
            provider: "openai".to_owned(),
            model: id.to_owned(),
        }
    }

    fn unnamed() -> Refusal {
        Refusal::new(
            Some("context_length_exceeded".to_owned()),
            "Your input exceeds the context window of this model.",
        )
    }

    #[test]
    fn a_named_window_is_kept_per_model_and_only_ever_shrinks() {
        let windows = LearnedWindows::default();
        let named = Refusal::new(None, "This model's maximum context length is 8192 tokens.");
        let limit = windows.learn(&model("small"), &named, 9_000, 1_000);
        assert_eq!(limit.named, Some(8_192));
        assert_eq!(windows.limit(&model("small")).named, Some(8_192));
        assert_eq!(windows.limit(&model("other")), Limit::default());
        let larger = Refusal::new(None, "This model's maximum context length is 16384 tokens.");
        assert_eq!(
            windows.learn(&model("small"), &larger, 20_000, 0).named,
            Some(8_192)
        );
    }

    #[test]
    fn without_a_named_window_the_refused_size_bounds_the_input() {
        let windows = LearnedWindows::default();
        let limit = windows.learn(&model("m"), &unnamed(), 8_050, 1_000);
        assert_eq!(limit.named, None);
        // The same answer's cap, or a smaller one: below the input that was refused.
        assert_eq!(limit.input_limit(1_000), Some(8_049));
        assert_eq!(limit.input_limit(200), Some(8_049));
        // A larger cap: below what input and cap together were.
        assert_eq!(limit.input_limit(3_000), Some(6_049));
        // A request sized to the bound that is refused again lowers it: each retry is smaller.
        let again = windows.learn(&model("m"), &unnamed(), 8_049, 1_000);
        assert_eq!(again.input_limit(1_000), Some(8_048));
        assert_eq!(Limit::default().input_limit(1_000), None);
    }
}
