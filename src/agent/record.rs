//! How a call's result enters the history and the log: every handler
//! that answers a call goes through here, so a result is always both in
//! the history the model reads and on its `tool_call_finished` line, and
//! is seen by the runaway guard when it ran or was denied.
//!
//! Invariant: every call the model makes gets exactly one result, in call
//! order ([`answer_pending`] answers what is left when a turn stops).

use crate::protocol::{SessionEvent, ToolCall, ToolMeta, ToolResult};

use super::apply::emit;
use super::runaway::{self, Ran, RunawayVerdict};
use super::schedule::Batch;
use super::state::LoopState;
use super::step_io::Effect;

/// Records `result` of `call` after runaway detection (a note appended
/// when the model is repeating itself); returns whether the turn must
/// stop (`agent::runaway`).
pub(super) fn record_observed(
    state: &mut LoopState,
    call: &ToolCall,
    result: ToolResult,
    meta: ToolMeta,
    ran: Ran,
    effects: &mut Vec<Effect>,
) -> bool {
    let limits = state.config.limits.runaway;
    let verdict = state.runaway.observe(&limits, state.step, call, &result, ran);
    let stop = matches!(verdict, RunawayVerdict::Stop { .. });
    let (result, meta) = runaway::annotate(result, meta, &verdict);
    record_result(state, result, meta, effects);
    stop
}

/// Gives every call still pending an error result, so the history stays a
/// valid conversation (every call answered).
pub(super) fn answer_pending(state: &mut LoopState, reason: &str, effects: &mut Vec<Effect>) {
    let pending: Vec<Batch> = state.pending.drain(..).collect();
    for batch in pending {
        let calls = match batch {
            Batch::Run { calls, .. } => calls,
            Batch::Ask { call, .. } | Batch::Deny { call, .. } | Batch::Harness { call } => {
                vec![call]
            }
        };
        for call in calls {
            answer(state, ToolResult::error(&call.call_id, reason), effects);
        }
    }
}

/// Answers a call that did not run, with no metadata.
pub(super) fn answer(state: &mut LoopState, result: ToolResult, effects: &mut Vec<Effect>) {
    record_result(state, result, ToolMeta::new(), effects);
}

pub(super) fn record_result(
    state: &mut LoopState,
    result: ToolResult,
    meta: ToolMeta,
    effects: &mut Vec<Effect>,
) {
    emit(state, SessionEvent::ToolCallFinished { result, meta }, effects);
}

/// The text of a refused call's result.
pub(super) fn denied_text(reason: &str) -> String {
    format!("not run: {reason}")
}
