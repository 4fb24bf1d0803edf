//! Hooks: commands that run because an event happened, speaking Claude
//! Code's contract so existing hook scripts work unchanged: the event as
//! JSON on stdin; exit 0 = success with an optional JSON decision on
//! stdout; exit 2 = block with stderr as the reason; anything else (and a
//! timeout) = a non-blocking error shown to the user.
//!
//! Invariants: a failing, crashing or hanging hook never ends a session
//! (its process group is killed at the timeout); a hook may tighten a
//! policy decision but never loosen it ([`guard`]); every run is returned
//! as a [`HookRun`] for the session log. Processes are spawned only through
//! `sandbox`. Native hooks ([`NativeHook`], e.g. [`ProtectSecrets`]) run in
//! process through the same bus, outcome type and guard.
//!
//! Files: `config.rs` (event → matcher groups, `if` rules, Claude↔keel tool names), `payload.rs`
//! (stdin JSON, per-dialect naming; `claude_shape.rs`: the harness tools' arguments as Claude's
//! `TodoWrite`, `ExitPlanMode`, `AskUserQuestion` take them), `outcome.rs` (exit codes / JSON →
//! verdict; `guard` only tightens), `runner.rs` (`HookBus::dispatch` through `sandbox`, stdin
//! staged in a private temp file, the trust gate), `native.rs` (in-process hooks on the same bus,
//! recorded only when they have a say), `protect_secrets.rs` (the native hook, on by default;
//! names from `policy::secrets`, shell words through policy's parser, paths through
//! `HookPayload::path_links`). Wired in by `runtime/hooks_glue.rs` (runs them for `step`'s
//! `Effect::CheckCalls`/`RunPostToolHooks`); what a verdict leads to, a hook's `updatedInput`
//! judged by policy and the native hooks again included, is decided in `agent/call_checks.rs`,
//! `agent/approval_hooks.rs` and `agent/batch_finish.rs` (for the harness tools:
//! `agent/harness_hooks.rs`).

mod claude_shape;
mod config;
mod native;
mod outcome;
mod payload;
mod protect_secrets;
mod runner;

#[cfg(test)]
mod conformance_tests;

pub use config::{CommandHook, HookGroup, HookSource, HooksConfig, IfRule, claude_alias};
pub use native::{NATIVE_SOURCE, NativeHook};
pub use outcome::{HookOutcome, HookVerdict, Permission, Tightened, guard, interpret};
pub use payload::{HookPayload, ToolNaming};
pub use protect_secrets::{ProtectSecrets, is_secret_file};
pub use runner::{HookBus, HookRun};

use serde::{Deserialize, Serialize};

/// Events hooks can subscribe to (Claude Code's names, plus keel's own
/// `PhaseChange`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum HookEvent {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    PostToolUseFailure,
    PhaseChange,
    PreCompact,
    Stop,
    /// A subagent starts its task (the matcher is tested against its type).
    SubagentStart,
    /// A subagent finished its task; a block sends it back to work.
    SubagentStop,
    SessionEnd,
    Notification,
}

impl HookEvent {
    /// Every event, in the order hooks documentation lists them.
    pub const ALL: [HookEvent; 12] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::PhaseChange,
        HookEvent::PreCompact,
        HookEvent::Stop,
        HookEvent::SubagentStart,
        HookEvent::SubagentStop,
        HookEvent::SessionEnd,
        HookEvent::Notification,
    ];

    /// The event called `name` (as in config files), if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|event| event.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::PhaseChange => "PhaseChange",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::Stop => "Stop",
            HookEvent::SubagentStart => "SubagentStart",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::Notification => "Notification",
        }
    }
}

/// Why hook configuration could not be used.
#[derive(Debug, thiserror::Error)]
pub enum HookConfigError {
    #[error("invalid hooks in {source_name}: {message}")]
    Parse { source_name: String, message: String },
    #[error("invalid matcher `{matcher}` in {source_name}: {message}")]
    Matcher { source_name: String, matcher: String, message: String },
    #[error("invalid glob `{glob}` in `[secrets] allow_files`: {message}")]
    Glob { glob: String, message: String },
}
