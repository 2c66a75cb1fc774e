//! How many tokens a model takes in when the configuration does not say, and the part of that
//! window a thread may fill before it is compacted.

/// The window assumed for a model id the table does not know: the size self-hosted servers
/// (vLLM, llama.cpp) are commonly started with, far below any hosted model's, so an unknown
/// model is compacted early rather than overflowed.
pub(crate) const UNKNOWN_MODEL_TOKENS: u32 = 32_000;

/// The output reserve when neither the request nor the configuration caps the answer.
pub(crate) const DEFAULT_RESERVE_TOKENS: u32 = 4_096;

use super::learned::Limit;

/// Cross-region inference-profile prefixes Bedrock puts before a model id.
const REGION_PREFIXES: [&str; 6] = ["us.", "eu.", "apac.", "jp.", "au.", "global."];

/// Well-known model ids and their input windows, by prefix, most specific first. Sources: the
/// providers' model pages (OpenAI, Anthropic on Bedrock, Amazon Nova, Meta, Mistral).
const KNOWN_WINDOWS: &[(&str, u32)] = &[
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-5-chat", 128_000),
    ("gpt-5-pro", 128_000),
    ("gpt-5", 272_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4", 200_000),
    ("anthropic.claude-sonnet-4-6", 1_000_000),
    ("anthropic.claude-opus-4-6", 1_000_000),
    ("anthropic.claude-opus-4-7", 1_000_000),
    ("anthropic.claude", 200_000),
    ("claude", 200_000),
    ("amazon.nova-micro", 128_000),
    ("amazon.nova-premier", 1_000_000),
    ("amazon.nova-pro", 300_000),
    ("amazon.nova-lite", 300_000),
    ("meta.llama3", 128_000),
    ("mistral.mistral-large-2407", 128_000),
];

/// The input window of `model` from the table of well-known ids, if it is one.
pub(crate) fn known_window(model: &str) -> Option<u32> {
    let model = model.trim().to_ascii_lowercase();
    let model = REGION_PREFIXES
        .iter()
        .find_map(|prefix| model.strip_prefix(prefix))
        .unwrap_or(&model);
    KNOWN_WINDOWS
        .iter()
        .find(|(prefix, _)| model.starts_with(prefix))
        .map(|(_, tokens)| *tokens)
}

/// A model's window as a run uses it: what it takes in, what the answer needs, and the share of
/// the rest a thread may fill before compaction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ContextWindow {
    /// Input tokens the model accepts, the answer included for providers that count it.
    pub(crate) tokens: u32,
    /// Tokens kept free for the answer: the request's output limit.
    pub(crate) reserve: u32,
    /// The fraction of `tokens - reserve` past which the thread is compacted before the call.
    pub(crate) compact_at: f64,
    /// Less than the smallest input the provider refused, when it refused one: the prompt
    /// never takes as much.
    pub(crate) input_limit: Option<u64>,
}

impl ContextWindow {
    /// What the prompt may take: the window less the answer's reserve (at least a quarter of
    /// the window, so a huge output limit cannot leave nothing for the prompt), and less than
    /// any input the provider refused.
    pub(crate) fn budget(&self) -> u64 {
        let floor = u64::from(self.tokens) / 4;
        let budget = u64::from(self.tokens)
            .saturating_sub(u64::from(self.reserve))
            .max(floor);
        self.input_limit.map_or(budget, |limit| budget.min(limit))
    }

    /// This window within what the model's refusals showed: no larger than a window one named,
    /// the prompt below any input refused.
    pub(crate) fn within(self, limit: &Limit) -> Self {
        Self {
            tokens: limit
                .named
                .map_or(self.tokens, |named| self.tokens.min(named)),
            input_limit: limit.input_limit(u64::from(self.reserve)),
            ..self
        }
    }

    /// The estimate past which the thread is compacted before the model call.
    pub(crate) fn trigger(&self) -> u64 {
        // The budget is far below 2^52, so f64 holds it exactly; the product is at most it.
        (self.budget() as f64 * self.compact_at).round() as u64
    }

    /// Where a compaction brings the prompt down to: half of the budget, so that the runs after
    /// it reuse one prefix for a while instead of sliding a turn each time.
    pub(crate) fn target(&self) -> u64 {
        self.budget() / 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_ids_have_their_windows_and_region_prefixes_do_not_matter() {
        assert_eq!(known_window("gpt-4o-mini"), Some(128_000));
        assert_eq!(known_window("gpt-4.1-nano"), Some(1_047_576));
        assert_eq!(known_window("gpt-5-mini"), Some(272_000));
        assert_eq!(known_window("o4-mini"), Some(200_000));
        assert_eq!(
            known_window("us.anthropic.claude-3-7-sonnet-20250219-v1:0"),
            Some(200_000)
        );
        assert_eq!(
            known_window("global.anthropic.claude-sonnet-4-6"),
            Some(1_000_000)
        );
        assert_eq!(known_window("amazon.nova-micro-v1:0"), Some(128_000));
        assert_eq!(known_window("eu.amazon.nova-pro-v1:0"), Some(300_000));
        assert_eq!(known_window("my-local-llama"), None);
        assert_eq!(known_window("test-model"), None);
    }

    #[test]
    fn the_budget_keeps_the_answers_reserve_and_the_trigger_is_a_share_of_it() {
        let window = ContextWindow {
            tokens: 8_000,
            reserve: 1_000,
            compact_at: 0.7,
            input_limit: None,
        };
        assert_eq!(window.budget(), 7_000);
        assert_eq!(window.trigger(), 4_900);
        assert_eq!(window.target(), 3_500);
        let greedy = ContextWindow {
            reserve: 100_000,
            ..window
        };
        assert_eq!(
            greedy.budget(),
            2_000,
            "a quarter of the window stays for the prompt"
        );
        let refused = ContextWindow {
            input_limit: Some(5_000),
            ..window
        };
        assert_eq!(refused.budget(), 5_000, "below what was refused");
        assert_eq!(refused.trigger(), 3_500);
    }
}
