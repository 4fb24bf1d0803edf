//! `ask_user`, the harness tool that puts a question to the user: `step`
//! waits in `LoopPhase::AwaitAnswer` (the call stays the front pending
//! batch, so an interrupt answers it like any open call) after
//! [`Effect::AskUser`]; the driver asks the front end (`Approver::ask_user`:
//! the TUI's dialog; nobody in `keel exec` but a script's stdin under
//! `--answer-from-stdin`) and answers
//! [`Input::UserAnswered`](super::Input::UserAnswered). The answer becomes
//! the call's result; no answer is the result [`NO_ANSWER`], which tells
//! the model to decide or stop.
//!
//! Invariants: one question at a time (the loop waits); the result is
//! recorded by `step` like any harness call's, so a resume rebuilds it from
//! the log; a stale answer (another call's id) changes nothing.

use crate::protocol::{ToolCall, ToolMeta, ToolResult};

use super::next::Next;
use super::phase::LoopPhase;
use super::record::record_result;
use super::schedule::Batch;
use super::state::LoopState;
use super::step_io::Effect;

/// The result when nobody answered (a headless run, a dismissed dialog).
pub const NO_ANSWER: &str = "No one can answer this question now: decide yourself from what \
you know, or stop and say what you need.";

/// Puts `question` to the user and waits.
pub(super) fn ask(
    state: &mut LoopState,
    call: &ToolCall,
    question: String,
    choices: Vec<String>,
    effects: &mut Vec<Effect>,
) -> Next {
    state.phase = LoopPhase::AwaitAnswer;
    effects.push(Effect::AskUser { call_id: call.call_id.clone(), question, choices });
    Next::Wait
}

/// The user's answer (`None`: nobody answered) to the front call.
pub(super) fn on_answer(
    state: &mut LoopState,
    call_id: &str,
    answer: Option<String>,
    effects: &mut Vec<Effect>,
) -> Next {
    let asked =
        matches!(state.pending.front(), Some(Batch::Harness { call }) if call.call_id == call_id);
    if !asked {
        return Next::Wait;
    }
    state.pending.pop_front();
    // Between two waits, as the loop works through the pending batches.
    state.phase = LoopPhase::Execute(Default::default());
    let text = match answer.filter(|text| !text.trim().is_empty()) {
        Some(text) => format!("The user answered: {text}"),
        None => NO_ANSWER.to_owned(),
    };
    record_result(state, ToolResult::ok(call_id, text), ToolMeta::harness(), effects);
    Next::Advance
}
