//! What keel does with a small or newly learnt context window (issue 33):
//! the window read from a server's overflow error, the tool-set profile a
//! window size chooses, and the output a compaction summary may ask for.
//!
//! Invariants: pure (strings and numbers in, numbers out). A window read
//! from an error is the first figure the server's own words put on its
//! window, never a token count of the request; the profile is a function
//! of the window a session opened with, so it is stable for the session
//! (a window learnt later changes the budgets, not the tools: the prefix
//! only grows); a summary request never asks for more output than its
//! window leaves after its input.

use crate::protocol::tool_facts::names;

/// Windows of this many tokens or fewer get the compact profile: the full
/// tool set and instructions (about 4 500 tokens) leave too little of them
/// for the work.
pub const SMALL_WINDOW: u64 = 8192;
/// The most a summary asks for, whatever the window.
pub const SUMMARY_OUTPUT_CAP: u32 = 4096;

/// The tools a compact session offers (the harness's `submit_plan` too,
/// where the workflow needs it): reading, editing and one shell, ~1 200
/// tokens of schemas where the full set is ~2 700.
pub const COMPACT_TOOLS: [&str; 6] =
    [names::READ_FILE, names::GLOB, names::GREP, names::EDIT_FILE, names::WRITE_FILE, names::SHELL];

/// The tools and instructions a session offers, chosen by its window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowProfile {
    /// Every tool, the full instructions.
    Full,
    /// A window of [`SMALL_WINDOW`] or fewer tokens: the few tools a change
    /// needs, short instructions.
    Compact,
}

impl WindowProfile {
    /// The profile for a session opening with `window` (unknown: full).
    pub fn for_window(window: Option<u64>) -> Self {
        match window {
            Some(tokens) if tokens <= SMALL_WINDOW => Self::Compact,
            Some(_) | None => Self::Full,
        }
    }

    /// Whether a session of this profile offers `tool`: every tool in full,
    /// [`COMPACT_TOOLS`] and the plan gate's `submit_plan` in compact.
    pub fn offers(self, tool: &str) -> bool {
        match self {
            Self::Full => true,
            Self::Compact => COMPACT_TOOLS.contains(&tool) || tool == names::SUBMIT_PLAN,
        }
    }
}

/// The window a server's context-length error names, if it names one:
/// OpenAI, vLLM and llama-cpp-python ("maximum context length is 2048
/// tokens"), llama.cpp ("exceeds the available context size (4096
/// tokens)"), LM Studio ("loaded with context length of only 4096
/// tokens"), Anthropic ("210000 tokens > 200000 maximum").
pub fn window_from_overflow(message: &str) -> Option<u64> {
    const BEFORE: [&str; 4] = [
        "maximum context length is",
        "available context size (",
        "context length of only",
        "context window of",
    ];
    let lower = message.to_ascii_lowercase();
    let named = BEFORE.iter().find_map(|marker| {
        let at = lower.find(marker)? + marker.len();
        leading_number(&lower[at..])
    });
    named.or_else(|| {
        // `N tokens > M maximum`: the figure before "maximum".
        let at = lower.find(" maximum")?;
        let before = lower[..at].trim_end();
        let digits = before.len() - before.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        before[before.len() - digits..].parse().ok().filter(|_| before.contains('>'))
    })
}

/// The number `text` starts with after spaces (`1,024` read as 1024).
fn leading_number(text: &str) -> Option<u64> {
    let text = text.trim_start();
    let digits: String = text
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok().filter(|tokens| *tokens > 0)
}

/// The output a summary request of `input_tokens` may ask for in `window`:
/// at most [`SUMMARY_OUTPUT_CAP`], never more than the window leaves (at
/// least one token, so the request is still well-formed: a server then
/// says the prompt does not fit).
pub fn summary_output_limit(window: Option<u64>, input_tokens: u64) -> u32 {
    let Some(window) = window else { return SUMMARY_OUTPUT_CAP };
    let left = window.saturating_sub(input_tokens).max(1);
    u32::try_from(left).unwrap_or(u32::MAX).min(SUMMARY_OUTPUT_CAP)
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! overflow {
        ($($name:ident: $text:expr => $window:expr;)*) => {$(
            #[test]
            fn $name() {
                assert_eq!(window_from_overflow($text), $window);
            }
        )*};
    }

    overflow! {
        llama_cpp_python: "This model's maximum context length is 2048 tokens. However, you \
            requested 2650 tokens (2394 in the messages, 256 in the completion)." => Some(2048);
        vllm: "This model's maximum context length is 4096 tokens. However, your request has \
            5120 input tokens. Please reduce the length of the input messages." => Some(4096);
        openai_with_commas: "This model's maximum context length is 128,000 tokens." => Some(128_000);
        llama_cpp: "request (5012 tokens) exceeds the available context size (4096 tokens), try \
            increasing it" => Some(4096);
        lm_studio: "Trying to keep the first 5012 tokens when context the overflows. However, the \
            model is loaded with context length of only 4096 tokens, which is not enough." => Some(4096);
        anthropic: "prompt is too long: 210000 tokens > 200000 maximum" => Some(200_000);
        llama_cpp_old: "the request exceeds the available context size, try increasing it" => None;
        no_figure: "context length exceeded" => None;
    }

    #[test]
    fn small_windows_get_the_compact_profile() {
        assert_eq!(WindowProfile::for_window(Some(2048)), WindowProfile::Compact);
        assert_eq!(WindowProfile::for_window(Some(8192)), WindowProfile::Compact);
        assert_eq!(WindowProfile::for_window(Some(8193)), WindowProfile::Full);
        assert_eq!(WindowProfile::for_window(None), WindowProfile::Full);
    }

    #[test]
    fn a_summary_never_asks_for_more_than_the_window_leaves() {
        assert_eq!(summary_output_limit(Some(2048), 1500), 548);
        assert_eq!(summary_output_limit(Some(200_000), 1500), SUMMARY_OUTPUT_CAP);
        assert_eq!(summary_output_limit(Some(2048), 4000), 1, "nothing left: the server says so");
        assert_eq!(summary_output_limit(None, 1500), SUMMARY_OUTPUT_CAP);
    }
}
