//! What a rewind takes back (`rewound` lines, `keel exec --rewind-scope`,
//! `/rewind`): the code, the conversation or both.
//!
//! Invariant: the names are the log's and the flag's (`code`,
//! `conversation`, `both`); renaming one breaks old logs.

use serde::{Deserialize, Serialize};

/// What a rewind takes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RewindScope {
    /// The workspace only; the conversation goes on.
    Code,
    /// The conversation only; the files stay as they are.
    Conversation,
    /// Both.
    Both,
}

impl RewindScope {
    pub fn includes_code(self) -> bool {
        matches!(self, Self::Code | Self::Both)
    }

    pub fn includes_conversation(self) -> bool {
        matches!(self, Self::Conversation | Self::Both)
    }

    /// `code`, `conversation` or `both`, as the flag and the log spell it.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "code" => Some(Self::Code),
            "conversation" => Some(Self::Conversation),
            "both" => Some(Self::Both),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Code => "code",
            Self::Conversation => "conversation",
            Self::Both => "both",
        }
    }
}
