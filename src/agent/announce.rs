//! Context updates: what changed in the session reaches the
//! model as one `Item::Context` appended to the history right before the
//! request that needs it, instead of a rewrite of the instructions.
//!
//! What is in force for each [`ContextKind`] is read from the history
//! itself: the latest context item holding a part of that kind, else (for
//! the AGENTS.md, memory and skills sections) the session's prefix. So a
//! compaction that drops old context items makes them be announced again,
//! and a resume (which rebuilds the history from the log) announces the
//! same things the live session would have.
//!
//! Invariants: pure; an update is recorded (`context_updated`) as it is
//! appended, so the rebuilt history holds the same bytes; nothing here
//! ever changes an item already in the history.

use crate::prompts::mode_block;
use crate::protocol::{ContextKind, ContextPart, Item, SessionEvent};

use super::apply::emit;
use super::state::LoopState;
use super::step_io::Effect;

/// Appends one context item with every part that changed since the model
/// was last told (and any SessionStart hook context waiting), recording
/// it; nothing when nothing changed.
pub(super) fn announce(state: &mut LoopState, effects: &mut Vec<Effect>) {
    let mut parts: Vec<ContextPart> = ContextKind::ALL
        .into_iter()
        .filter_map(|kind| {
            let now = current(state, kind)?;
            (in_force(state, kind) != Some(now.as_str())).then_some(ContextPart { kind, text: now })
        })
        .collect();
    parts.extend(
        state.hook_context.drain(..).map(|text| ContextPart { kind: ContextKind::Hook, text }),
    );
    parts.extend(
        state
            .process_notes
            .drain(..)
            .map(|text| ContextPart { kind: ContextKind::Processes, text }),
    );
    if parts.is_empty() {
        return;
    }
    emit(state, SessionEvent::ContextUpdated { parts }, effects);
}

/// What the model should know now about `kind`, if keel knows it.
fn current(state: &LoopState, kind: ContextKind) -> Option<String> {
    match kind {
        ContextKind::Environment => {
            (!state.environment.is_empty()).then(|| state.environment.clone())
        }
        ContextKind::Mode => {
            let policy = &state.config.policy;
            let walls = policy.sandboxed.then_some(&state.config.walls);
            Some(mode_block(policy.mode.as_str(), walls))
        }
        ContextKind::Workflow => {
            let offered: Vec<&str> =
                state.callable_tools().map(|tool| tool.name.as_str()).collect();
            Some(state.workflow.guidance(&offered, state.config.policy.sandboxed))
        }
        ContextKind::ProjectInstructions | ContextKind::Memory | ContextKind::Skills => {
            state.observed.as_ref()?.section(kind).map(str::to_owned)
        }
        ContextKind::Hook | ContextKind::Processes => None,
    }
}

/// What the model was last told about `kind`: the newest context part of
/// that kind in the history, else the prefix's section.
fn in_force(state: &LoopState, kind: ContextKind) -> Option<&str> {
    let announced = state.items.iter().rev().find_map(|item| match item {
        Item::Context { parts, .. } => {
            parts.iter().rev().find(|part| part.kind == kind).map(|part| part.text.as_str())
        }
        Item::User { .. }
        | Item::Assistant { .. }
        | Item::Reasoning(_)
        | Item::ToolCall(_)
        | Item::ToolResult(_) => None,
    });
    announced.or_else(|| state.config.prefix.section(kind))
}
