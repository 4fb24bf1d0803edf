//! Conversation items: the provider-neutral history the loop keeps.
//!
//! The history is a flat list in the order things happened, the way the
//! OpenAI Responses API models it. Providers that group items into messages
//! (Chat Completions, Anthropic Messages) fold consecutive assistant items
//! into one assistant message and consecutive tool results into one turn.

use serde::{Deserialize, Serialize};

use super::tool::{ToolCall, ToolResult};

/// One entry of the conversation history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Item {
    /// Text the user typed (or the harness added on the user's behalf).
    User { text: String },
    /// Visible text the model produced.
    Assistant { text: String },
    /// Hidden reasoning that must be sent back unchanged on the next request.
    Reasoning(ReasoningItem),
    /// A tool call the model asked for.
    ToolCall(ToolCall),
    /// The outcome of a tool call, matched by `call_id`.
    ToolResult(ToolResult),
}

/// Reasoning state of one provider. Each provider replays only its own kind
/// and drops the others (a reasoning item is meaningless to another vendor).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "provider", rename_all = "snake_case")]
pub enum ReasoningItem {
    /// OpenAI Responses `reasoning` item.
    OpenAi {
        id: String,
        #[serde(default)]
        summary: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<String>,
    },
    /// Anthropic `thinking` block; the signature must come back unchanged.
    AnthropicThinking {
        thinking: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Anthropic `redacted_thinking` block: opaque data, sent back as is.
    AnthropicRedacted { data: String },
}

impl Item {
    /// The visible assistant text of this item, if it is assistant text.
    pub fn assistant_text(&self) -> Option<&str> {
        match self {
            Item::Assistant { text } => Some(text),
            Item::User { .. } | Item::Reasoning(_) | Item::ToolCall(_) | Item::ToolResult(_) => {
                None
            }
        }
    }
}
