//! Refusing a prompt that cannot fit the model's window, before anything
//! is sent. Every request carries the instructions, the tool
//! schemas and the latest prompt whole (compaction summarises the history
//! but keeps the latest request verbatim), so when those alone pass the
//! compaction limit no compaction can make room: sending it anyway only
//! fails at the provider, or compacts in circles and grows the request.
//!
//! Invariant: the encoder is built only when the byte bound (every token
//! is at least one byte, whatever the tokenizer) says the prompt might not
//! fit; with an unknown window nothing is refused (the provider's own
//! error says it). The figures are the server's tokens when its tokenizer
//! was asked (`LoopConfig::token_scale`), else keel's estimate.

use crate::agent::LoopState;
use crate::context::tokens::{count, estimate_request, upper_bound};
use crate::protocol::{Item, ModelRequest};

/// A prompt too large for the model, with the figures that say so. Its
/// message names the sizes, which part is too large (the prompt, or keel's
/// instructions and tools alone, when no prompt could fit) and what the
/// user can change: the prompt, `--model`, `-c context.window=N` (a window
/// keel guessed too small) and `-c context.compact_threshold=F` (at most
/// 1.0, the config keys `[context] window` and `compact_threshold`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.message())]
pub struct PromptTooLarge {
    pub prompt_tokens: u64,
    pub fixed_tokens: u64,
    pub window: u64,
    pub limit: u64,
    pub model: String,
}

impl PromptTooLarge {
    fn message(&self) -> String {
        let Self { prompt_tokens, fixed_tokens, window, limit, model } = self;
        let total = prompt_tokens.saturating_add(*fixed_tokens);
        let head = format!(
            "the prompt is about {prompt_tokens} tokens; with keel's instructions and tools \
             (about {fixed_tokens} more) the request is about {total} tokens and cannot fit the \
             {window}-token window of {model}: requests are compacted past {limit} tokens, and \
             compaction keeps the latest prompt whole. Nothing was sent"
        );
        let window_fixes = format!(
            "use a model with a larger window (--model), or, if {model}'s window is larger than \
             {window} tokens, say so with -c context.window=N (`[context] window`); -c \
             context.compact_threshold=1.0 lets requests use the whole window"
        );
        if fixed_tokens >= limit {
            format!(
                "{head}. keel's instructions and tools alone (about {fixed_tokens} tokens) pass \
                 the {limit}-token limit, so no prompt fits: {window_fixes}; fewer MCP servers, \
                 skills or a shorter AGENTS.md make them smaller"
            )
        } else {
            format!(
                "{head}. Shorten the prompt to under about {room} tokens, or point the model at \
                 files instead of pasting them; else {window_fixes}",
                room = limit - fixed_tokens
            )
        }
    }
}

/// Whether `prompt` can be sent in a request of `state`'s session.
pub(super) fn check(state: &LoopState, prompt: &str) -> Result<(), Box<PromptTooLarge>> {
    let config = &state.config();
    let Some(window) = config.context_window else { return Ok(()) };
    let limit = (window as f64 * config.compact_threshold) as u64;
    let request = ModelRequest {
        model: config.model.clone(),
        instructions: config.prefix.text(),
        items: vec![Item::user(prompt.to_owned())],
        tools: config.tools.clone(),
        max_output_tokens: None,
    };
    if upper_bound(&request, config.strict_tools) <= limit {
        return Ok(());
    }
    // In the server's tokens when its tokenizer was asked (`token_scale`).
    let scale = config.token_scale;
    let total = scale.apply(estimate_request(&request, config.strict_tools));
    if total <= limit {
        return Ok(());
    }
    let prompt_tokens = scale.apply(count(prompt));
    Err(Box::new(PromptTooLarge {
        prompt_tokens,
        fixed_tokens: total.saturating_sub(prompt_tokens),
        window,
        limit,
        model: config.model.clone(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(prompt_tokens: u64, fixed_tokens: u64) -> String {
        let model = "gpt-4o".to_owned();
        PromptTooLarge { prompt_tokens, fixed_tokens, window: 128_000, limit: 108_800, model }
            .to_string()
    }

    // The refusal says the sizes, what is too large and what the user can
    // change (flags and config keys that exist: `cli::ModelArgs`'s
    // --model and -c, `[context] window` and `compact_threshold`).
    #[test]
    fn a_refused_prompt_says_the_sizes_the_culprit_and_the_remedies() {
        let prompt = refusal(200_000, 9_000);
        for said in [
            "the prompt is about 200000 tokens",
            "about 9000 more",
            "about 209000 tokens",
            "cannot fit the 128000-token window of gpt-4o",
            "compacted past 108800 tokens",
            "Nothing was sent",
            "Shorten the prompt to under about 99800 tokens",
            "--model",
            "-c context.window=N (`[context] window`)",
            "-c context.compact_threshold=1.0",
        ] {
            assert!(prompt.contains(said), "{said}: {prompt}");
        }
        let fixed = refusal(10, 120_000);
        assert!(
            fixed.contains(
                "keel's instructions and tools alone (about 120000 tokens) pass the \
                 108800-token limit, so no prompt fits"
            ),
            "{fixed}"
        );
        assert!(!fixed.contains("Shorten the prompt"), "no prompt would fit: {fixed}");
        assert!(fixed.contains("fewer MCP servers"), "{fixed}");
    }
}
