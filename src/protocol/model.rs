//! What the loop asks of a model and what comes back: the request, the
//! incremental stream events, and the assembled response.

use serde::{Deserialize, Serialize};

use super::items::Item;
use super::tool::{ToolCall, ToolSpec};

/// A provider-neutral inference request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    pub model: String,
    /// System / developer instructions.
    pub instructions: String,
    /// The conversation so far, oldest first.
    pub items: Vec<Item>,
    pub tools: Vec<ToolSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
}

/// Token usage of one response (or a running total).
///
/// `input_tokens` is the whole prompt, whatever the provider calls it:
/// cache reads (`cached_input_tokens`) and cache writes
/// (`cache_write_tokens`, Anthropic only) are parts of it, billed at their
/// own prices (`context::Pricing`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache.
    #[serde(default)]
    pub cached_input_tokens: u64,
    #[serde(default)]
    pub reasoning_tokens: u64,
    /// Input tokens written to the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// The most tokens one response may report for any count; a server
/// reporting more (a bug or a hostile endpoint: `u64::MAX`) is taken at
/// this, so sums over a session and the spend projection stay far from
/// overflow and a token limit is still crossed.
pub const MAX_REPORTED_TOKENS: u64 = 1 << 40;

impl Usage {
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    pub fn add(&mut self, other: &Usage) {
        let sum = |mine: &mut u64, theirs: u64| *mine = mine.saturating_add(theirs);
        sum(&mut self.input_tokens, other.input_tokens);
        sum(&mut self.output_tokens, other.output_tokens);
        sum(&mut self.cached_input_tokens, other.cached_input_tokens);
        sum(&mut self.reasoning_tokens, other.reasoning_tokens);
        sum(&mut self.cache_write_tokens, other.cache_write_tokens);
    }

    /// This response's usage with every count at most
    /// [`MAX_REPORTED_TOKENS`] (see there).
    #[must_use]
    pub fn clamped(self) -> Usage {
        let clamp = |count: u64| count.min(MAX_REPORTED_TOKENS);
        Usage {
            input_tokens: clamp(self.input_tokens),
            output_tokens: clamp(self.output_tokens),
            cached_input_tokens: clamp(self.cached_input_tokens),
            reasoning_tokens: clamp(self.reasoning_tokens),
            cache_write_tokens: clamp(self.cache_write_tokens),
        }
    }

    /// Share of the input read from the cache, when there was input.
    pub fn cache_hit_rate(&self) -> Option<f64> {
        (self.input_tokens > 0).then(|| {
            self.cached_input_tokens.min(self.input_tokens) as f64 / self.input_tokens as f64
        })
    }
}

/// Why the model stopped producing output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer.
    EndTurn,
    /// The model stopped to have tools run.
    ToolUse,
    /// The output token limit was hit.
    MaxTokens,
    /// The model refused or a content filter stopped it.
    Refusal,
    /// Anything else the provider reported, kept verbatim.
    Other(String),
}

impl StopReason {
    /// The reason in the log's words (`end_turn`, `max_tokens`, or the
    /// provider's own for anything else).
    pub fn as_str(&self) -> &str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::Refusal => "refusal",
            StopReason::Other(reason) => reason,
        }
    }
}

/// One complete model response, assembled from the stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ModelResponse {
    /// Items in the order the model produced them (reasoning, text, calls).
    pub items: Vec<Item>,
    pub usage: Usage,
    pub stop_reason: StopReason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
}

impl ModelResponse {
    /// The tool calls of this response, in call order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.items.iter().filter_map(|item| match item {
            Item::ToolCall(call) => Some(call),
            Item::User { .. }
            | Item::Assistant { .. }
            | Item::Reasoning(_)
            | Item::ToolResult(_)
            | Item::Context { .. } => None,
        })
    }

    /// All visible text of this response joined in order.
    pub fn text(&self) -> String {
        self.items.iter().filter_map(Item::assistant_text).collect()
    }
}

/// Incremental events while a response streams in, for live display.
/// The assembled [`ModelResponse`] is the source of truth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    TextDelta {
        delta: String,
    },
    ReasoningDelta {
        delta: String,
    },
    ToolCallStarted {
        call_id: String,
        name: String,
    },
    ToolCallArgumentsDelta {
        call_id: String,
        delta: String,
    },
    /// The attempt failed with a transient error and the request is sent
    /// again after `delay_ms`; whatever streamed so far is void (the next
    /// attempt streams from the start). `attempt` is the one about to
    /// start (2 for the first retry) of at most `max_attempts`.
    Retrying {
        attempt: u32,
        max_attempts: u32,
        reason: String,
        delay_ms: u64,
    },
}
