//! Conversation items: the provider-neutral history the loop keeps.
//!
//! The history is a flat list in the order things happened, the way the
//! OpenAI Responses API models it. Providers that group items into messages
//! (Chat Completions, Anthropic Messages) fold consecutive assistant items
//! into one assistant message and consecutive tool results into one turn.

use serde::{Deserialize, Serialize};

use super::context::ContextPart;
use super::image::ImagePart;
use super::tool::{ToolCall, ToolResult};

/// One entry of the conversation history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Item {
    /// Text the user typed (or the harness added on the user's behalf),
    /// with the images attached to it (`image.rs`).
    User {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImagePart>,
    },
    /// Visible text the model produced.
    Assistant { text: String },
    /// Hidden reasoning that must be sent back unchanged on the next request.
    Reasoning(ReasoningItem),
    /// A tool call the model asked for.
    ToolCall(ToolCall),
    /// The outcome of a tool call, matched by `call_id`.
    ToolResult(ToolResult),
    /// keel's note of what changed in the session (environment, mode,
    /// phase, …), appended instead of rewriting the instructions; sent as
    /// a user message holding `text`. `parts` say what it announced.
    Context { text: String, parts: Vec<ContextPart> },
}

/// Reasoning state of one provider. Each provider replays only its own kind
/// and drops the others (a reasoning item is meaningless to another vendor).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "provider", rename_all = "snake_case")]
pub enum ReasoningItem {
    /// OpenAI Responses `reasoning` item.
    OpenAi {
        id: String,
        #[serde(default)]
        summary: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<String>,
        /// The raw reasoning text (`reasoning_text` parts), which servers
        /// running open models (llama.cpp, vLLM) send instead of an
        /// encrypted blob, and read back from `content`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        content: Vec<String>,
    },
    /// Anthropic `thinking` block; the signature must come back unchanged.
    AnthropicThinking {
        thinking: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Anthropic `redacted_thinking` block: opaque data, sent back as is.
    AnthropicRedacted { data: String },
    /// What a Chat Completions server said besides text and calls: the
    /// reasoning streamed in `reasoning_content` or `reasoning` (`field`
    /// names which, so it goes back under the same name where the server
    /// wants it back), and opaque message-level fields it wants echoed
    /// verbatim (`reasoning_details`, `extra_content`, `thinking_blocks`).
    Chat {
        #[serde(default, skip_serializing_if = "String::is_empty")]
        text: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        field: String,
        #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
        provider_data: serde_json::Map<String, serde_json::Value>,
    },
}

impl Item {
    /// A user message of text alone.
    pub fn user(text: impl Into<String>) -> Self {
        Item::User { text: text.into(), images: Vec::new() }
    }

    /// The visible assistant text of this item, if it is assistant text.
    pub fn assistant_text(&self) -> Option<&str> {
        match self {
            Item::Assistant { text } => Some(text),
            Item::User { .. }
            | Item::Reasoning(_)
            | Item::ToolCall(_)
            | Item::ToolResult(_)
            | Item::Context { .. } => None,
        }
    }
}
