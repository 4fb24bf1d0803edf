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

/// A prompt too large for the model, with the figures that say so.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the prompt is about {prompt_tokens} tokens; with keel's instructions and tools (about \
     {fixed_tokens} more) it cannot fit the {window}-token window of {model} (requests are \
     compacted past {limit} tokens, and compaction keeps the latest prompt whole). Nothing was \
     sent: shorten the prompt, or point the model at files instead of pasting them"
)]
pub struct PromptTooLarge {
    pub prompt_tokens: u64,
    pub fixed_tokens: u64,
    pub window: u64,
    pub limit: u64,
    pub model: String,
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
    if upper_bound(&request) <= limit {
        return Ok(());
    }
    // In the server's tokens when its tokenizer was asked (`token_scale`).
    let scale = config.token_scale;
    let total = scale.apply(estimate_request(&request));
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
