//! A harness call (`set_phase`, `submit_plan`, `todo_write`, `ask_user`)
//! from its turn in the pending batches to its recorded result, with the
//! PreToolUse and PostToolUse hooks Claude Code fires for its own
//! `TodoWrite`, `ExitPlanMode` and `AskUserQuestion` (issue 36: scripts
//! that log every call with matcher `""` saw none of keel's).
//!
//! When a PreToolUse hook listens (`LoopConfig::pre_tool_hooks`) the call
//! first goes to the driver ([`Effect::CheckCalls`] with
//! [`CheckHooks::Harness`]): a deny refuses it with the hook's reason
//! (nothing changes: no task list, no plan); an ask is a question
//! ([`Effect::ConfirmCall`], its answer an `approval` line); a hook's
//! `updatedInput` is the input answered (harness calls are not judged by
//! policy, so there is nothing to judge again). Then the loop answers it
//! (`harness.rs`; a plan saved first, `decisions.rs`). When a PostToolUse
//! hook listens, an answered call's result goes through
//! [`Effect::RunPostToolHooks`] before it is recorded, as a batch's does
//! (`batch_finish.rs`): block reasons and context are appended.
//!
//! Which fire: PreToolUse for every harness tool; PostToolUse (or
//! PostToolUseFailure) for calls answered at once (`todo_write`,
//! `set_phase`, a plan approved or stopped for an offline review, the
//! tool's own refusal; not a hook's). A plan under live review and an
//! `ask_user` question get no PostToolUse (their result comes from the
//! user later); a plan under review asks with no second PreToolUse run.
//! The deferral tools (`tool_search`, `call_tool`) fire nothing: what
//! `call_tool` stands for is judged and hooked as itself.
//!
//! Invariants: pure. Without hooks a harness call gains no effect. The
//! call the history keeps is the model's; the workflow's change and its
//! lines are recorded whatever happens after the answer (an interrupt
//! during PostToolUse records them as they are).

use crate::policy::ApprovalScope;
use crate::protocol::{ToolCall, ToolMeta, ToolResult, TurnOutcome};

use super::approval_hooks;
use super::ask_user;
use super::decisions::{self, approval_event};
use super::deferred;
use super::harness::{self, HarnessOutcome};
use super::next::Next;
use super::phase::{HarnessHooks, LoopPhase, Running};
use super::record::record_result;
use super::schedule::Batch;
use super::state::LoopState;
use super::step_io::Effect;
use super::verdicts::{CallCheck, CheckHooks, HookPermission, PostToolVerdict};

/// The harness call at the front of `pending` has its turn: its
/// PreToolUse hooks first when one listens, else its answer.
pub(super) fn start(state: &mut LoopState, call: ToolCall, effects: &mut Vec<Effect>) -> Next {
    if !hooked(state, &call) {
        return answer(state, call, effects);
    }
    state.phase = LoopPhase::HarnessHooks(Box::new(HarnessHooks::Pre));
    let calls = vec![call];
    effects.push(Effect::CheckCalls { calls, hooks: CheckHooks::Harness, concurrent: false });
    Next::Wait
}

/// The PreToolUse hooks spoke: refuse, ask, or answer the call.
pub(super) fn on_checked(
    state: &mut LoopState,
    checks: Vec<CallCheck>,
    effects: &mut Vec<Effect>,
) -> Next {
    if !matches!(&state.phase, LoopPhase::HarnessHooks(hooks) if **hooks == HarnessHooks::Pre) {
        return Next::Wait;
    }
    let Some(Batch::Harness { call }) = state.pending.front().cloned() else { return Next::Wait };
    let check = checks.into_iter().find(|check| check.call_id == call.call_id);
    let verdict = check.and_then(|check| check.hooks).unwrap_or_default();
    let mut run_as = call.clone();
    if let Some(input) = verdict.updated_input {
        run_as.arguments = input.to_string();
    }
    match verdict.permission {
        Some(HookPermission::Deny) => refuse(state, &call, &verdict.reason, effects),
        Some(HookPermission::Ask) => {
            let reason = verdict.reason;
            effects.push(Effect::ConfirmCall { call: run_as.clone(), reason: reason.clone() });
            state.phase = LoopPhase::HarnessHooks(Box::new(HarnessHooks::Asked { run_as, reason }));
            Next::Wait
        }
        Some(HookPermission::Allow) | None => answer(state, run_as, effects),
    }
}

/// The user's answer on a hook's question about the call.
pub(super) fn on_answer(
    state: &mut LoopState,
    call_id: &str,
    approved: bool,
    note: Option<String>,
    effects: &mut Vec<Effect>,
) -> Next {
    let LoopPhase::HarnessHooks(hooks) = &state.phase else { return Next::Wait };
    let HarnessHooks::Asked { run_as, reason } = hooks.as_ref() else { return Next::Wait };
    if run_as.call_id != call_id {
        return Next::Wait;
    }
    let (run_as, reason) = (run_as.clone(), reason.clone());
    effects.push(Effect::Record(approval_event(
        call_id,
        approved,
        note.clone(),
        &ApprovalScope::Once,
    )));
    if approved {
        return answer(state, run_as, effects);
    }
    refuse(state, &run_as, &note.unwrap_or(reason), effects)
}

/// The PostToolUse hooks' verdicts, appended to the result, which is then
/// recorded with what the call led to.
pub(super) fn on_post_hooks(
    state: &mut LoopState,
    verdicts: Vec<PostToolVerdict>,
    effects: &mut Vec<Effect>,
) -> Next {
    let Some((call, mut outcome)) = take_post(state) else { return Next::Wait };
    if let HarnessOutcome::Answered { result, .. } | HarnessOutcome::Stop { result, .. } =
        &mut outcome
    {
        for verdict in verdicts.into_iter().filter(|v| v.call_id == result.call_id) {
            if let Some(reason) = verdict.blocked {
                result.output.push_str(&format!("\n\n[hook] {reason}"));
            }
            for context in verdict.context {
                result.output.push_str(&format!("\n\n[hook context] {context}"));
            }
        }
    }
    record(state, call, outcome, effects)
}

/// Interrupted while the call's hooks run: an answered call's lines are
/// recorded as they are (its change to the workflow happened); an
/// unanswered one stays pending, to be answered "interrupted" with the
/// rest by the caller.
pub(super) fn on_interrupted(state: &mut LoopState, effects: &mut Vec<Effect>) {
    if let Some((call, outcome)) = take_post(state) {
        // What follows is the interrupt's, whatever the outcome says.
        let _ = record(state, call, outcome, effects);
    }
}

/// Records what a harness call led to (its plan saved, if it submitted
/// one), after its PostToolUse hooks when one listens: the loop goes on,
/// waits for a plan review or an answer, or the turn stops after the plan.
pub(super) fn finish(
    state: &mut LoopState,
    call: ToolCall,
    outcome: HarnessOutcome,
    effects: &mut Vec<Effect>,
) -> Next {
    let answered = match &outcome {
        HarnessOutcome::Answered { result, .. } | HarnessOutcome::Stop { result, .. } => {
            Some(result.clone())
        }
        HarnessOutcome::Review { .. } | HarnessOutcome::Ask { .. } => None,
    };
    match answered {
        Some(result) if state.config.post_tool_hooks && call.harness_tool().is_some() => {
            let ran = vec![(call.clone(), result, ToolMeta::harness())];
            effects.push(Effect::RunPostToolHooks { ran });
            state.phase = LoopPhase::HarnessHooks(Box::new(HarnessHooks::Post { call, outcome }));
            Next::Wait
        }
        Some(_) | None => record(state, call, outcome, effects),
    }
}

/// Whether the call's PreToolUse hooks run before its answer.
fn hooked(state: &LoopState, call: &ToolCall) -> bool {
    state.config.pre_tool_hooks && call.harness_tool().is_some()
}

/// Answers the call (as a hook left it), unless its plan must be saved
/// first (then the loop waits).
fn answer(state: &mut LoopState, call: ToolCall, effects: &mut Vec<Effect>) -> Next {
    // Between two waits, as the loop works through the pending batches.
    state.phase = LoopPhase::Execute(Running::default());
    if deferred::is_deferral_tool(&call.name) {
        let result = deferred::answer(&call, state.deferred_tools());
        let outcome = HarnessOutcome::Answered { events: Vec::new(), result };
        return finish(state, call, outcome, effects);
    }
    let outcome = harness::answer(&mut state.workflow, &call);
    match decisions::save_plan_first(state, &call, outcome, effects) {
        Some(outcome) => finish(state, call, outcome, effects),
        None => Next::Wait,
    }
}

/// A hook refused the call: its result says why; nothing else changes.
/// No PostToolUse follows (Claude Code fires none for a blocked call).
fn refuse(state: &mut LoopState, call: &ToolCall, reason: &str, effects: &mut Vec<Effect>) -> Next {
    state.phase = LoopPhase::Execute(Running::default());
    let result = ToolResult::error(&call.call_id, format!("blocked by a hook: {reason}"));
    let outcome = HarnessOutcome::Answered { events: Vec::new(), result };
    record(state, call.clone(), outcome, effects)
}

/// Records `outcome`'s lines and result and says what follows.
fn record(
    state: &mut LoopState,
    call: ToolCall,
    outcome: HarnessOutcome,
    effects: &mut Vec<Effect>,
) -> Next {
    match outcome {
        HarnessOutcome::Answered { events, result } => {
            state.pending.pop_front();
            effects.extend(events.into_iter().map(Effect::Record));
            decisions::leave_plan_mode(state, effects);
            record_result(state, result, ToolMeta::harness(), effects);
            Next::Advance
        }
        HarnessOutcome::Review { events, reason } => {
            effects.extend(events.into_iter().map(Effect::Record));
            let path = state.workflow.flow.plan.as_ref().map(|plan| plan.path.clone());
            let plan_review = Some(path.unwrap_or_default());
            if hooked(state, &call) {
                // Its PreToolUse hooks spoke before the plan was taken.
                approval_hooks::ask_heard(state, call, reason, plan_review, effects);
            } else {
                approval_hooks::ask(state, call, reason, plan_review, effects);
            }
            Next::Wait
        }
        HarnessOutcome::Ask { events, question, choices } => {
            effects.extend(events.into_iter().map(Effect::Record));
            ask_user::ask(state, &call, question, choices, effects)
        }
        HarnessOutcome::Stop { events, result } => {
            state.pending.pop_front();
            effects.extend(events.into_iter().map(Effect::Record));
            record_result(state, result, ToolMeta::harness(), effects);
            let reason = "not run: the turn stopped for the plan review";
            Next::Stop { reason, outcome: TurnOutcome::Completed }
        }
    }
}

/// The answered call waiting for its PostToolUse hooks, taken out of its
/// phase; `None`, and nothing changed, when none waits.
fn take_post(state: &mut LoopState) -> Option<(ToolCall, HarnessOutcome)> {
    match std::mem::replace(&mut state.phase, LoopPhase::Execute(Running::default())) {
        LoopPhase::HarnessHooks(hooks) => match *hooks {
            HarnessHooks::Post { call, outcome } => Some((call, outcome)),
            other => {
                state.phase = LoopPhase::HarnessHooks(Box::new(other));
                None
            }
        },
        other => {
            state.phase = other;
            None
        }
    }
}
