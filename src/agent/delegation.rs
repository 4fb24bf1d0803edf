//! What subagents, custom commands and context hooks feed the loop: a
//! command's narrowing of the turn about to start, a child session opened
//! for an `agent` call and what its task came to, an `agent` call finished
//! from its child's log on a resume, and context hooks add for the next
//! request.
//!
//! Invariants: pure, like `step`. Every state change here is recorded
//! (a narrowing as `turn_scope`, a child's spend as `subagent_finished`, a
//! recovered result as `tool_call_finished`), except hook context, which
//! is recorded when it is announced with the next request; so a rebuild
//! from the log reproduces each.

use crate::protocol::{SessionEvent, ToolCall, ToolMeta, ToolResult, TurnOutcome, Usage};

use super::state::{LoopState, ToolScope};
use super::step::{Effect, record_result};

/// A child session opened for the `agent` call `call_id`, its log on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct SubagentOpened {
    pub call_id: String,
    pub session_id: String,
    pub log_path: String,
    pub agent: String,
    pub description: String,
}

/// What a child's task came to.
#[derive(Debug, Clone, PartialEq)]
pub struct SubagentDone {
    pub call_id: String,
    pub session_id: String,
    pub outcome: TurnOutcome,
    /// The whole child session's spend, its own children included.
    pub usage: Usage,
    pub cost_usd: Option<f64>,
}

/// The turn about to start may call only `scope`'s tools (recorded, so a
/// resumed turn stays narrowed); the turn's end clears it.
pub(super) fn narrow_turn(state: &mut LoopState, scope: ToolScope, effects: &mut Vec<Effect>) {
    effects.push(Effect::Record(SessionEvent::TurnScope {
        owner: scope.owner.clone(),
        tools: scope.tools.iter().cloned().collect(),
    }));
    state.turn_scope = Some(scope);
}

/// Recorded before the child runs, so a crash mid-child can be resumed
/// from the child's own log.
pub(super) fn subagent_opened(opened: SubagentOpened, effects: &mut Vec<Effect>) {
    let SubagentOpened { call_id, session_id, log_path, agent, description } = opened;
    effects.push(Effect::Record(SessionEvent::SubagentStarted {
        call_id,
        session_id,
        log_path,
        agent,
        description,
    }));
}

/// A child's spend counts against this session's limits from the next
/// request on; recorded before the call's result.
pub(super) fn subagent_done(state: &mut LoopState, done: SubagentDone, effects: &mut Vec<Effect>) {
    let SubagentDone { call_id, session_id, outcome, usage, cost_usd } = done;
    state.delegated.usage.add(&usage);
    state.delegated.cost_usd += cost_usd.unwrap_or(0.0);
    effects.push(Effect::Record(SessionEvent::SubagentFinished {
        call_id,
        session_id,
        outcome,
        usage,
        cost_usd,
    }));
}

/// An open call's result recovered on a resume (an `agent` call finished
/// from its child's log): seen by the workflow and recorded as a batch's
/// result would be, before the rest of the turn is reconciled.
pub(super) fn call_recovered(
    state: &mut LoopState,
    call: &ToolCall,
    result: ToolResult,
    meta: ToolMeta,
    effects: &mut Vec<Effect>,
) {
    state.workflow.observe(call, &result, &meta);
    record_result(state, result, meta, effects);
}

/// Context hooks added (SessionStart, SubagentStart): announced in the
/// history with the next request, the prefix staying as recorded.
pub(super) fn hook_context(state: &mut LoopState, context: Vec<String>) {
    state.hook_context.extend(context);
}
