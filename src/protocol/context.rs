//! What the model is told about the session besides the conversation: the
//! request prefix ([`PrefixSections`], fixed for a session) and the
//! context updates appended to the history when something changes
//! ([`ContextPart`]).
//!
//! Invariant: a request is the prefix (tools, then the
//! instructions built from [`PrefixSections`]) followed by the history, and
//! the history only grows; whatever changes during a session reaches the
//! model as a new `Item::Context` at the end of the history, never by
//! rewriting earlier bytes. Plain data: the texts are rendered by
//! `prompts`.

use serde::{Deserialize, Serialize};

/// What a context update is about.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ContextKind {
    /// Workspace, working directory, platform, shell, git status, date.
    Environment,
    /// The approval mode and whether commands are sandboxed.
    Mode,
    /// The workflow phase, its guidance and the checks that count.
    Workflow,
    /// The project's AGENTS.md files, re-read and found changed.
    ProjectInstructions,
    /// The memory index, re-read and found changed.
    Memory,
    /// The skills index, re-read and found changed.
    Skills,
    /// Context a SessionStart hook added.
    Hook,
    /// Background processes a resumed session no longer has.
    Processes,
}

impl ContextKind {
    /// Every kind, in the order parts of one update are rendered.
    pub const ALL: [ContextKind; 8] = [
        ContextKind::Environment,
        ContextKind::ProjectInstructions,
        ContextKind::Memory,
        ContextKind::Skills,
        ContextKind::Mode,
        ContextKind::Workflow,
        ContextKind::Hook,
        ContextKind::Processes,
    ];
}

/// One piece of a context update: its kind and the text in force from
/// here on (for the index kinds, the new section as it would stand in the
/// instructions).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContextPart {
    pub kind: ContextKind,
    pub text: String,
}

/// The sections of the instructions every request of a session starts
/// with, as built at the session's start (or at a recorded prefix break).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PrefixSections {
    /// keel's own rules (`prompts/system.md`).
    pub core: String,
    /// The AGENTS.md block, empty without one.
    #[serde(default)]
    pub project: String,
    /// The memory index, empty without notes.
    #[serde(default)]
    pub memory: String,
    /// The skills index, empty without skills.
    #[serde(default)]
    pub skills: String,
}

impl PrefixSections {
    /// The instructions text: the sections in order (each carries its own
    /// leading blank lines).
    pub fn text(&self) -> String {
        [&self.core, &self.project, &self.memory, &self.skills]
            .into_iter()
            .map(String::as_str)
            .collect()
    }

    /// The section a context update of `kind` replaces, if it is one.
    pub fn section(&self, kind: ContextKind) -> Option<&str> {
        match kind {
            ContextKind::ProjectInstructions => Some(&self.project),
            ContextKind::Memory => Some(&self.memory),
            ContextKind::Skills => Some(&self.skills),
            ContextKind::Environment
            | ContextKind::Mode
            | ContextKind::Workflow
            | ContextKind::Hook
            | ContextKind::Processes => None,
        }
    }
}
