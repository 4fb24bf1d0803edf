//! What the driver reports about calls before and after they run: which
//! PreToolUse hooks to run ([`CheckHooks`]), what they said
//! ([`PreToolVerdict`]) with the symlinks on a call's paths
//! ([`CallCheck`]), and what PostToolUse hooks said about a result
//! ([`PostToolVerdict`]).
//!
//! Invariant: plain data, shared by `step_io.rs` (the inputs and effects
//! that carry it) and the phases that wait for it.

use serde_json::Value;

use crate::policy::PathLinks;

/// What the driver looks at for an [`Effect::CheckCalls`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckHooks {
    /// Before a batch: every PreToolUse hook and the symlinks. The driver
    /// first takes the undo checkpoint of a batch that may write.
    PreToolUse,
    /// Before a batch whose call the hooks already judged before its
    /// approval: the symlinks only (and the checkpoint).
    Judged,
    /// A hook's rewrite that policy allowed: keel's native hooks only,
    /// and the symlinks of the rewritten call.
    Natives,
    /// Before the user is asked about a call policy prompts for
    /// (`reason`): every PreToolUse hook, no symlinks.
    BeforeApproval { reason: String },
    /// Before a harness call is answered (`agent::harness_hooks`): every
    /// PreToolUse hook; no checkpoint, no symlinks (it touches no file).
    Harness,
}

/// A PreToolUse hook's permission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookPermission {
    Allow,
    Ask,
    Deny,
}

/// What the PreToolUse hooks said about one call.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PreToolVerdict {
    pub permission: Option<HookPermission>,
    /// Why (the hooks' reasons, for the model and the question).
    pub reason: String,
    /// A hook's new input for the call.
    pub updated_input: Option<Value>,
}

/// What the driver found about one call before it runs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CallCheck {
    pub call_id: String,
    /// `None` when no hook listens.
    pub hooks: Option<PreToolVerdict>,
    /// The symlinks on the way to the call's paths.
    pub links: PathLinks,
}

/// What PostToolUse hooks said about one call's result.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PostToolVerdict {
    pub call_id: String,
    /// A hook's block reason (the call already ran: the model is told).
    pub blocked: Option<String>,
    /// Context hooks added for the model.
    pub context: Vec<String>,
}
