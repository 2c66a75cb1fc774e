//! When a thread needs compacting before the next model call, and how far: the tiers in order
//! (old tool results cleared, then the oldest whole turns summarised or dropped), each cut at a
//! user message so a tool call never loses its results and the view never starts with a tool
//! message. Pure: sizes in, a decision out.

use super::estimate::messages_tokens;
use super::view::{PartLimit, ThreadView};
use super::window::ContextWindow;
use crate::protocol::Message;

/// Tool results kept whole when older ones are cleared (Anthropic's context editing keeps 3).
pub(crate) const KEEP_TOOL_RESULTS: usize = 3;

/// What the next model call needs done to the thread's view first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// The view fits under the trigger as it is.
    Keep,
    /// Clearing tool results older than `cleared_before` is enough.
    Clear { cleared_before: u64 },
    /// The messages before index `cut` go into the summary (or are dropped if summarising
    /// fails); tool results before `cleared_before` stay cleared.
    Summarize { cut: usize, cleared_before: u64 },
}

/// The sizes of a request besides the thread's messages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fixed {
    /// The system prompt, the tools' specs and anything else sent before the history.
    pub(crate) prompt_tokens: u64,
    /// The running summary's tokens now, and what a new one may take.
    pub(crate) summary_tokens: u64,
    pub(crate) summary_allowance: u64,
}

/// The estimate of the request the view makes.
pub(crate) fn estimate(view: &ThreadView<'_>, fixed: Fixed, limit: PartLimit) -> u64 {
    fixed.prompt_tokens + fixed.summary_tokens + messages_tokens(&view.messages(limit))
}

/// What to do before the model call. `estimated` is the request's size as best known (the
/// provider's last report plus what was added, or [`estimate`]); `target` is where a compaction
/// brings it (the window's target, or lower after the provider refused the request).
pub(crate) fn decide(
    window: &ContextWindow,
    view: &ThreadView<'_>,
    fixed: Fixed,
    estimated: u64,
    target: u64,
) -> Decision {
    if estimated <= window.trigger() && target >= window.target() {
        return Decision::Keep;
    }
    let limit = part_limit(window);
    let cleared_before = clear_point(view).max(view.cleared_before);
    let cleared = ThreadView {
        cleared_before,
        ..*view
    };
    let clears = cleared_before > view.cleared_before;
    if clears && estimate(&cleared, fixed, limit) <= target {
        return Decision::Clear { cleared_before };
    }
    match cut_point(&cleared, fixed, limit, target) {
        Some(cut) => Decision::Summarize {
            cut,
            cleared_before: cleared_before.max(view.first_seq + cut as u64),
        },
        // One turn is all there is: clearing is the most that can be done.
        None if clears => Decision::Clear { cleared_before },
        None => Decision::Keep,
    }
}

/// The most a summary may take, in tokens, whatever the window: the summary is rewritten whole
/// at each compaction, and a summariser's answer is slow output (2,000 tokens take 20 to 40
/// seconds on the common hosted models).
const SUMMARY_MAX_TOKENS: u64 = 2_000;

/// What a summary may take: two thirds of what the target leaves after the fixed prompt (the
/// other third keeps the newest turns whole), an eighth of the budget at the least, and at most
/// [`SUMMARY_MAX_TOKENS`]. A small window with a large output reserve has a small budget, and
/// the prompt's share of it is what decides how much room the summary has.
pub(crate) fn summary_allowance(window: &ContextWindow, prompt_tokens: u64) -> u64 {
    let affordable = window.target().saturating_sub(prompt_tokens) * 2 / 3;
    affordable.max(window.budget() / 8).min(SUMMARY_MAX_TOKENS)
}

/// The largest a single part may be: a quarter of the budget.
pub(crate) fn part_limit(window: &ContextWindow) -> PartLimit {
    PartLimit {
        max_part_tokens: window.budget() / 4,
    }
}

/// The sequence number before which tool results are cleared so that the newest
/// [`KEEP_TOOL_RESULTS`] stay whole.
fn clear_point(view: &ThreadView<'_>) -> u64 {
    view.messages
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, message)| matches!(message, Message::Tool { .. }))
        .nth(KEEP_TOOL_RESULTS - 1)
        .map_or(view.first_seq, |(index, _)| view.first_seq + index as u64)
}

/// The first user message (never the first message) from which the rest, with a new summary,
/// fits under `target`; else the last user message, keeping only the last turn. `None` when the
/// thread has no user message to cut at.
fn cut_point(view: &ThreadView<'_>, fixed: Fixed, limit: PartLimit, target: u64) -> Option<usize> {
    let shown = view.messages(limit);
    let sizes: Vec<u64> = shown.iter().map(super::estimate::message_tokens).collect();
    let mut rest: u64 = sizes.iter().sum();
    let base = fixed.prompt_tokens + fixed.summary_allowance;
    let mut last_user = None;
    for (index, message) in view.messages.iter().enumerate() {
        if index > 0 && matches!(message, Message::User { .. }) {
            if base + rest <= target {
                return Some(index);
            }
            last_user = Some(index);
        }
        rest -= sizes[index];
    }
    last_user
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn message(value: serde_json::Value) -> Message {
        serde_json::from_value(value).unwrap()
    }

    /// `turns` turns of a ~`chars`-character user message, a tool round trip on every third
    /// and a short answer.
    fn conversation(turns: usize, chars: usize) -> Vec<Message> {
        let mut messages = Vec::new();
        for turn in 0..turns {
            messages.push(message(json!({"id": format!("u{turn}"), "role": "user", "content": "word ".repeat(chars / 5)})));
            if turn % 3 == 0 {
                messages.push(message(json!({"id": format!("a{turn}c"), "role": "assistant", "toolCalls": [
                    {"id": format!("c{turn}"), "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
                ]})));
                messages.push(message(json!({"id": format!("t{turn}"), "role": "tool", "toolCallId": format!("c{turn}"), "content": "result ".repeat(chars / 7)})));
            }
            messages.push(message(
                json!({"id": format!("a{turn}"), "role": "assistant", "content": "Noted."}),
            ));
        }
        messages
    }

    fn window() -> ContextWindow {
        ContextWindow {
            tokens: 8_000,
            reserve: 1_000,
            compact_at: 0.7,
            input_limit: None,
        }
    }

    const FIXED: Fixed = Fixed {
        prompt_tokens: 300,
        summary_tokens: 0,
        summary_allowance: 500,
    };

    fn decide_for(messages: &[Message]) -> Decision {
        let view = ThreadView {
            first_seq: 0,
            messages,
            summary: None,
            cleared_before: 0,
        };
        let estimated = estimate(&view, FIXED, part_limit(&window()));
        decide(&window(), &view, FIXED, estimated, window().target())
    }

    #[test]
    fn a_thread_under_the_trigger_is_kept_as_it_is() {
        assert_eq!(decide_for(&conversation(5, 500)), Decision::Keep);
    }

    #[test]
    fn a_long_thread_is_cut_at_a_user_message_and_the_rest_fits_the_target() {
        let messages = conversation(60, 500);
        let Decision::Summarize {
            cut,
            cleared_before,
        } = decide_for(&messages)
        else {
            panic!("{:?}", decide_for(&messages))
        };
        assert!(
            matches!(messages[cut], Message::User { .. }),
            "cut at a user message"
        );
        assert!(cut > 0 && cleared_before >= cut as u64);
        let kept = ThreadView {
            first_seq: cut as u64,
            messages: &messages[cut..],
            summary: Some("summary"),
            cleared_before,
        };
        let after = estimate(&kept, FIXED, part_limit(&window())) + FIXED.summary_allowance;
        assert!(after <= window().target(), "{after}");
        // Every result kept has its call kept: none is orphaned.
        let kept_calls: Vec<_> = messages[cut..]
            .iter()
            .flat_map(Message::tool_calls)
            .map(|call| call.id.clone())
            .collect();
        for kept in &messages[cut..] {
            if let Message::Tool { tool_call_id, .. } = kept {
                assert!(
                    kept_calls.contains(tool_call_id),
                    "{tool_call_id} lost its call"
                );
            }
        }
    }

    #[test]
    fn clearing_old_tool_results_comes_before_summarising() {
        // Few turns, huge tool results: clearing all but the last three results is enough.
        let mut messages = Vec::new();
        for turn in 0..6 {
            messages.push(message(
                json!({"id": format!("u{turn}"), "role": "user", "content": "look it up"}),
            ));
            messages.push(message(json!({"id": format!("a{turn}c"), "role": "assistant", "toolCalls": [
                {"id": format!("c{turn}"), "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
            ]})));
            messages.push(message(json!({"id": format!("t{turn}"), "role": "tool", "toolCallId": format!("c{turn}"), "content": "data ".repeat(700)})));
            messages.push(message(
                json!({"id": format!("a{turn}"), "role": "assistant", "content": "Done."}),
            ));
        }
        let decision = decide_for(&messages);
        assert_eq!(
            decision,
            Decision::Clear { cleared_before: 14 },
            "the 4th newest result is at seq 10; the 3rd at 14"
        );
    }

    #[test]
    fn the_summary_allowance_follows_what_the_window_affords() {
        // 8,000 tokens with the default 4,096 reserved for the answer: a 3,904-token budget.
        let small = ContextWindow {
            tokens: 8_000,
            reserve: 4_096,
            compact_at: 0.7,
            input_limit: None,
        };
        assert_eq!(small.target(), 1_952);
        assert_eq!(summary_allowance(&small, 300), (1_952 - 300) * 2 / 3);
        // A prompt that leaves the target nothing still leaves an eighth of the budget.
        assert_eq!(summary_allowance(&small, 3_000), 3_904 / 8);
        // A large window is capped.
        let large = ContextWindow {
            tokens: 200_000,
            ..small
        };
        assert_eq!(summary_allowance(&large, 300), 2_000);
        // The window less a summary at its allowance and the prompt keeps a third for turns.
        let allowance = summary_allowance(&small, 300);
        assert!(small.target() - 300 - allowance >= (small.target() - 300) / 3);
    }

    #[test]
    fn a_single_turn_too_large_cannot_be_cut() {
        let messages = vec![message(
            json!({"id": "u0", "role": "user", "content": "word ".repeat(30_000)}),
        )];
        assert_eq!(decide_for(&messages), Decision::Keep);
    }
}
