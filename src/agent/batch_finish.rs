//! What follows a batch's run, call by call, before its results are
//! recorded: the offer of one unsandboxed re-run of a command the sandbox
//! blocked (ask mode only; the user's answer is an `approval` line, once
//! in scope) and the verdicts of PostToolUse/PostToolUseFailure hooks
//! (a block reason and added context appended to the result the model
//! reads). The driver only runs what these ask for: the question
//! ([`Effect::ConfirmCall`]), the re-run ([`Effect::RerunUnsandboxed`]),
//! the hooks ([`Effect::RunPostToolHooks`], only when a hook listens, so
//! a hook-less call gains no effect).
//!
//! Invariants: pure. The batch's results wait in
//! [`Finishing`] (phase `Finish`) and are recorded in call
//! order once every offer is answered and the hooks have spoken, as
//! `on_batch_finished` recorded them before; an interrupt records them as
//! they are. Re-runs are offered in call order, one question at a time,
//! after the whole batch ran (lifting the confinement then touches no
//! other command).

use crate::policy::{ApprovalMode, ApprovalScope};
use crate::protocol::{ResultKind, ToolMeta, ToolResult};

use super::call_checks::take_checked;
use super::decisions::approval_event;
use super::next::Next;
use super::phase::{Finishing, LoopPhase, Running};
use super::record::record_observed;
use super::runaway::Ran;
use super::schedule::Batch;
use super::state::LoopState;
use super::step_io::Effect;
use super::verdicts::PostToolVerdict;

/// The question asked before an unsandboxed re-run.
pub const RERUN_QUESTION: &str =
    "the sandbox blocked this command; run it once more outside the sandbox?";

/// The batch at the front of `pending` finished with `results`: they wait
/// for the re-run offers and the hooks, then are recorded.
pub(super) fn on_batch_finished(
    state: &mut LoopState,
    results: Vec<(ToolResult, ToolMeta)>,
    effects: &mut Vec<Effect>,
) -> Next {
    if !hold(state, results) {
        return Next::Wait;
    }
    proceed(state, effects)
}

/// Keeps the front batch's calls with their results (and the refusals
/// its checks gave), in call order; whether there was a batch.
fn hold(state: &mut LoopState, mut results: Vec<(ToolResult, ToolMeta)>) -> bool {
    let Some(Batch::Run { calls, concurrent }) = state.pending.pop_front() else { return false };
    let Running { refused, run_as: rewritten } = take_checked(state);
    results.extend(refused);
    let run_as = calls
        .iter()
        .map(|call| {
            let as_run = rewritten.iter().find(|ran| ran.call_id == call.call_id);
            as_run.unwrap_or(call).clone()
        })
        .collect();
    let ran = calls
        .into_iter()
        .map(|call| {
            let position = results.iter().position(|(result, _)| result.call_id == call.call_id);
            let (result, meta) = match position {
                Some(index) => results.remove(index),
                None => (
                    ToolResult::error(&call.call_id, "the tool produced no result"),
                    ToolMeta::new(),
                ),
            };
            (call, result, meta)
        })
        .collect();
    state.phase = LoopPhase::Finish(Finishing {
        ran,
        run_as,
        concurrent,
        next: 0,
        asked: None,
        rerunning: None,
        hooked: false,
    });
    true
}

/// The results of calls that never ran in this process (a resumed
/// turn's, answered "interrupted"): recorded as a batch's, with no re-run
/// offer and no hook (nothing ran).
pub(super) fn on_reconciled(
    state: &mut LoopState,
    results: Vec<(ToolResult, ToolMeta)>,
    effects: &mut Vec<Effect>,
) -> Next {
    if !hold(state, results) {
        return Next::Wait;
    }
    record(state, effects)
}

/// The user's answer on a re-run offer: recorded, then the re-run (or the
/// next offer).
pub(super) fn on_answer(
    state: &mut LoopState,
    call_id: &str,
    approved: bool,
    note: Option<String>,
    effects: &mut Vec<Effect>,
) -> Next {
    let Some(finishing) = finishing_mut(state) else { return Next::Wait };
    let Some(index) = finishing.asked.filter(|&i| finishing.ran[i].0.call_id == call_id) else {
        return Next::Wait;
    };
    finishing.asked = None;
    effects.push(Effect::Record(approval_event(call_id, approved, note, &ApprovalScope::Once)));
    if approved {
        finishing.rerunning = Some(index);
        let call = finishing.run_as[index].clone();
        let concurrent = finishing.concurrent;
        effects.push(Effect::RerunUnsandboxed { call, concurrent });
        return Next::Wait;
    }
    proceed(state, effects)
}

/// The unsandboxed re-run's result replaces the blocked one.
pub(super) fn on_rerun(
    state: &mut LoopState,
    result: ToolResult,
    meta: ToolMeta,
    effects: &mut Vec<Effect>,
) -> Next {
    let Some(finishing) = finishing_mut(state) else { return Next::Wait };
    let Some(index) = finishing.rerunning.filter(|&i| finishing.ran[i].0.call_id == result.call_id)
    else {
        return Next::Wait;
    };
    finishing.ran[index].1 = result;
    finishing.ran[index].2 = meta;
    finishing.rerunning = None;
    proceed(state, effects)
}

/// The PostToolUse hooks' verdicts, appended to the results they name.
pub(super) fn on_post_hooks(
    state: &mut LoopState,
    verdicts: Vec<PostToolVerdict>,
    effects: &mut Vec<Effect>,
) -> Next {
    let Some(finishing) = finishing_mut(state) else { return Next::Wait };
    if !finishing.hooked || finishing.asked.is_some() || finishing.rerunning.is_some() {
        return Next::Wait;
    }
    for verdict in verdicts {
        let Some((_, result, _)) =
            finishing.ran.iter_mut().find(|(call, _, _)| call.call_id == verdict.call_id)
        else {
            continue;
        };
        if let Some(reason) = verdict.blocked {
            result.output.push_str(&format!("\n\n[hook] {reason}"));
        }
        for context in verdict.context {
            result.output.push_str(&format!("\n\n[hook context] {context}"));
        }
    }
    record(state, effects)
}

/// Interrupted while a batch finishes: its results are recorded as they
/// are; whether the turn went on is the caller's.
pub(super) fn on_interrupted(state: &mut LoopState, effects: &mut Vec<Effect>) {
    if let Some(finishing) = take_finishing(state, LoopPhase::Idle) {
        record_all(state, finishing, effects);
    }
}

/// The next thing the batch waits for: a re-run offer, the hooks, or
/// nothing (the results are recorded and the loop goes on).
fn proceed(state: &mut LoopState, effects: &mut Vec<Effect>) -> Next {
    let ask_mode = state.config.policy.mode == ApprovalMode::Ask;
    let post_hooks = state.config.post_tool_hooks;
    let Some(finishing) = finishing_mut(state) else { return Next::Wait };
    while ask_mode && finishing.next < finishing.ran.len() {
        let index = finishing.next;
        finishing.next += 1;
        let meta = &finishing.ran[index].2;
        if meta.kind() == Some(ResultKind::SandboxViolation) {
            finishing.asked = Some(index);
            let call = finishing.run_as[index].clone();
            effects.push(Effect::ConfirmCall { call, reason: RERUN_QUESTION.to_owned() });
            return Next::Wait;
        }
    }
    if post_hooks && !finishing.hooked {
        finishing.hooked = true;
        let ran = finishing.run_as.iter().zip(&finishing.ran);
        let ran = ran.map(|(call, (_, result, meta))| (call.clone(), result.clone(), meta.clone()));
        effects.push(Effect::RunPostToolHooks { ran: ran.collect() });
        return Next::Wait;
    }
    record(state, effects)
}

/// Records the batch's results and goes on (or stops a turn going in
/// circles).
fn record(state: &mut LoopState, effects: &mut Vec<Effect>) -> Next {
    let Some(finishing) = take_finishing(state, LoopPhase::Execute(Running::default())) else {
        return Next::Wait;
    };
    if record_all(state, finishing, effects) {
        return Next::stuck();
    }
    Next::Advance
}

/// Records every result in call order; whether the turn must stop.
fn record_all(state: &mut LoopState, finishing: Finishing, effects: &mut Vec<Effect>) -> bool {
    let mut stuck = false;
    for (call, result, meta) in finishing.ran {
        state.workflow.observe(&call, &result, &meta);
        stuck |= record_observed(state, &call, result, meta, Ran::Yes, effects);
    }
    stuck
}

/// The batch that ran, while it waits for what follows its calls.
fn finishing_mut(state: &mut LoopState) -> Option<&mut Finishing> {
    match &mut state.phase {
        LoopPhase::Finish(finishing) => Some(finishing),
        _ => None,
    }
}

/// The batch that ran, taken out of its phase (the loop is in `then`
/// afterwards); `None`, and nothing changed, when no batch waits.
fn take_finishing(state: &mut LoopState, then: LoopPhase) -> Option<Finishing> {
    match std::mem::replace(&mut state.phase, then) {
        LoopPhase::Finish(finishing) => Some(finishing),
        other => {
            state.phase = other;
            None
        }
    }
}
