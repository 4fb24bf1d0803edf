//! The decisions that reach the loop from the user and from hooks rather
//! than from the model: approval answers (recorded as `approval` lines; an
//! "always" answer is persisted as a rule first, and counts once if that
//! fails), plan reviews (live, with the plan file as the user left it and
//! the mode chosen for the implementation, or from a later run), mode
//! changes, the plan review style, and the saving of a submitted plan to
//! its file before its `plan_updated` line is recorded.
//!
//! Invariants: pure, like `step`. Every state change here is recorded
//! (except the review style, a per-process flag), so a rebuild from the
//! log reproduces it. A line is recorded once, complete: a plan's path is
//! known before its `plan_updated` line is recorded, and a lasting
//! approval's scope before its `approval` line. A plan review is one answer
//! on one plan, never a rule.

use crate::policy::{ApprovalMode, ApprovalScope};
use crate::protocol::{self, SessionEvent, ToolCall};

use super::apply::emit;
use super::harness::{self, HarnessOutcome};
use super::next::Next;
use super::phase::{LoopPhase, Running, SavingPlan};
use super::record::record_result;
use super::schedule::Batch;
use super::state::LoopState;
use super::step_io::Effect;
use super::workflow::PlanReview;

/// The user's answer on a plan under review (see `Input::PlanReviewed`).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct PlanAnswer {
    pub(super) approved: bool,
    pub(super) note: Option<String>,
    pub(super) edited_text: Option<String>,
    pub(super) then_mode: Option<ApprovalMode>,
}

/// The `approval` line: the answer, its scope, and what a lasting scope
/// allows (so a resume rebuilds the session's approvals).
pub fn approval_event(
    call_id: &str,
    approved: bool,
    note: Option<String>,
    scope: &ApprovalScope,
) -> SessionEvent {
    let (scope, prefix, path, tool) = match scope {
        ApprovalScope::Once => (protocol::ApprovalScope::Once, None, None, None),
        ApprovalScope::AlwaysPrefix(prefix) => {
            (protocol::ApprovalScope::Always, Some(prefix.clone()), None, None)
        }
        ApprovalScope::SessionFile(path) => {
            (protocol::ApprovalScope::Session, None, Some(path.clone()), None)
        }
        ApprovalScope::AlwaysTool(tool) => {
            (protocol::ApprovalScope::Always, None, None, Some(tool.clone()))
        }
    };
    SessionEvent::Approval {
        call_id: call_id.to_owned(),
        approved,
        scope,
        note,
        prefix,
        path,
        tool,
    }
}

/// A new approval mode, recorded when it changes; plan mode requires a
/// plan (also when it was the mode already).
pub(super) fn set_mode(state: &mut LoopState, mode: ApprovalMode, effects: &mut Vec<Effect>) {
    if mode == ApprovalMode::Plan {
        state.workflow.flow.plan_required = true;
    }
    if state.config.policy.mode == mode {
        return;
    }
    emit(state, SessionEvent::ModeChanged { mode }, effects);
}

/// A new model (its window and prices) for the requests that follow,
/// recorded when it changes; `for_turn` remembers the model to go back to
/// when the turn ends (`step::end_turn`). A model without prices is
/// refused while a cost limit is set (the limit could not be kept).
pub(super) fn set_model(
    state: &mut LoopState,
    model: String,
    for_turn: bool,
    effects: &mut Vec<Effect>,
) {
    if state.config.model == model || super::budget::unpriced_switch(state, &model) {
        return;
    }
    let after_turn =
        for_turn.then(|| state.turn_model.clone().unwrap_or_else(|| state.config.model.clone()));
    emit(state, SessionEvent::ModelChanged { model, after_turn }, effects);
}

/// Forgets an "always" answer (`Input::ForgetAlways`); a scope that
/// remembers nothing records nothing.
pub(super) fn forget_always(
    state: &mut LoopState,
    scope: ApprovalScope,
    file: Option<String>,
    effects: &mut Vec<Effect>,
) {
    let (prefix, path, tool) = match scope {
        ApprovalScope::Once => return,
        ApprovalScope::AlwaysPrefix(prefix) => (Some(prefix), None, None),
        ApprovalScope::SessionFile(path) => (None, Some(path), None),
        ApprovalScope::AlwaysTool(tool) => (None, None, Some(tool)),
    };
    emit(state, SessionEvent::AlwaysRemoved { prefix, path, tool, file }, effects);
}

/// Requires a plan, reviewed `review`'s way.
pub(super) fn set_plan_review(state: &mut LoopState, review: PlanReview) {
    state.workflow.flow.plan_required = true;
    state.workflow.review = review;
}

/// Approves or rejects the plan waiting for review (nothing when none
/// waits). As a live approval does, an approval leaves plan mode for ask
/// mode.
pub(super) fn review_waiting_plan(
    state: &mut LoopState,
    approved: bool,
    feedback: &str,
    effects: &mut Vec<Effect>,
) {
    let event = if approved {
        state.workflow.approve_submitted()
    } else {
        state.workflow.reject_submitted(feedback)
    };
    let Some(event) = event else { return };
    effects.push(Effect::Record(event));
    leave_plan_mode(state, effects);
}

/// The user's answer on the call waiting for approval. An approved
/// "always" prefix is persisted first ([`Effect::PersistRule`]).
pub(super) fn on_approval(
    state: &mut LoopState,
    call_id: &str,
    approved: bool,
    note: Option<String>,
    scope: ApprovalScope,
    effects: &mut Vec<Effect>,
) -> Next {
    match state.pending.front() {
        Some(Batch::Harness { call }) if call.call_id == call_id => {
            let answer = PlanAnswer { approved, note, edited_text: None, then_mode: None };
            return review_plan(state, answer, true, effects);
        }
        Some(Batch::Ask { call, .. }) if call.call_id == call_id => {}
        Some(
            Batch::Harness { .. } | Batch::Ask { .. } | Batch::Run { .. } | Batch::Deny { .. },
        )
        | None => return Next::Wait,
    }
    let scope = match scope {
        rule @ (ApprovalScope::AlwaysPrefix(_) | ApprovalScope::AlwaysTool(_)) if approved => {
            let call_id = call_id.to_owned();
            effects.push(Effect::PersistRule { call_id, rule, note });
            return Next::Wait;
        }
        // A declined "always" remembers nothing.
        ApprovalScope::AlwaysPrefix(_) | ApprovalScope::AlwaysTool(_) => ApprovalScope::Once,
        scope @ (ApprovalScope::Once | ApprovalScope::SessionFile(_)) => scope,
    };
    settle(state, call_id, approved, note, scope, true, effects)
}

/// The rule file holds the approved rule (a command prefix, an MCP tool)
/// now, or could not (then the approval counts once).
pub(super) fn on_rule_persisted(
    state: &mut LoopState,
    call_id: &str,
    rule: ApprovalScope,
    note: Option<String>,
    saved: bool,
    effects: &mut Vec<Effect>,
) -> Next {
    let scope = if saved { rule } else { ApprovalScope::Once };
    settle(state, call_id, true, note, scope, true, effects)
}

/// A hook declined the call waiting for approval: it is refused (a plan,
/// rejected) with the hook's reason; the hook's own line records it.
pub(super) fn on_approval_blocked(
    state: &mut LoopState,
    call_id: &str,
    reason: &str,
    effects: &mut Vec<Effect>,
) -> Next {
    let note = Some(format!("blocked by a hook: {reason}"));
    match state.pending.front() {
        Some(Batch::Harness { call }) if call.call_id == call_id => {
            let answer = PlanAnswer { approved: false, note, edited_text: None, then_mode: None };
            review_plan(state, answer, false, effects)
        }
        Some(
            Batch::Harness { .. } | Batch::Ask { .. } | Batch::Run { .. } | Batch::Deny { .. },
        )
        | None => settle(state, call_id, false, note, ApprovalScope::Once, false, effects),
    }
}

/// The user's answer on the plan waiting for review.
pub(super) fn on_plan_reviewed(
    state: &mut LoopState,
    call_id: &str,
    answer: PlanAnswer,
    effects: &mut Vec<Effect>,
) -> Next {
    match state.pending.front() {
        Some(Batch::Harness { call }) if call.call_id == call_id => {
            review_plan(state, answer, true, effects)
        }
        Some(
            Batch::Harness { .. } | Batch::Ask { .. } | Batch::Run { .. } | Batch::Deny { .. },
        )
        | None => Next::Wait,
    }
}

/// Answers the `Ask` batch at the front for `call_id` (recording the
/// approval when `recorded`), then goes on.
fn settle(
    state: &mut LoopState,
    call_id: &str,
    approved: bool,
    note: Option<String>,
    scope: ApprovalScope,
    recorded: bool,
    effects: &mut Vec<Effect>,
) -> Next {
    let Some(Batch::Ask { call, reason }) = state.pending.front().cloned() else {
        return Next::Wait;
    };
    if call.call_id != call_id {
        return Next::Wait;
    }
    // An approval's lasting scope reaches the allowlist through its line
    // (`LoopState::apply`); a call is approved only by an answer, which is
    // always recorded.
    if recorded {
        emit(state, approval_event(call_id, approved, note.clone(), &scope), effects);
    }
    state.pending.pop_front();
    if approved {
        state.pending.push_front(Batch::Run { calls: vec![call], concurrent: false });
    } else {
        let why = note.unwrap_or_else(|| format!("the user declined it ({reason})"));
        state.pending.push_front(Batch::Deny { call, reason: why });
    }
    Next::Advance
}

/// Answers the plan review at the front of `pending`: the plan as the
/// user left its file, the approval (once in scope), the review, plan
/// mode left, the result, then the mode chosen for the implementation.
fn review_plan(
    state: &mut LoopState,
    answer: PlanAnswer,
    recorded: bool,
    effects: &mut Vec<Effect>,
) -> Next {
    let Some(Batch::Harness { call }) = state.pending.pop_front() else { return Next::Wait };
    let PlanAnswer { approved, note, edited_text, then_mode } = answer;
    if approved {
        adopt_edited_text(state, edited_text);
    }
    if recorded {
        let once = ApprovalScope::Once;
        effects.push(Effect::Record(approval_event(&call.call_id, approved, note.clone(), &once)));
    }
    let (event, result) = harness::review(&mut state.workflow, &call.call_id, approved, note);
    effects.push(Effect::Record(event));
    leave_plan_mode(state, effects);
    record_result(state, result, crate::protocol::ToolMeta::harness(), effects);
    if let Some(mode) = then_mode.filter(|_| state.workflow.flow.plan_approved()) {
        set_mode(state, mode, effects);
    }
    Next::Advance
}

/// The plan as approved is the plan file's text: the user may have edited
/// it during the review, so the state (and the approval's `plan_updated`
/// line, compactions and resumes after it) takes the file's text when it
/// differs and is not empty.
fn adopt_edited_text(state: &mut LoopState, edited_text: Option<String>) {
    let Some(plan) = state.workflow.flow.plan.as_mut() else { return };
    let Some(text) = edited_text else { return };
    if !plan.path.is_empty() && !text.trim().is_empty() && text != plan.text {
        plan.text = text;
    }
}

/// When `outcome` submits a plan that has no file yet, asks for it to be
/// saved first ([`Effect::SavePlan`]) and keeps the outcome until then;
/// the outcome back when there is nothing to save.
pub(super) fn save_plan_first(
    state: &mut LoopState,
    call: &ToolCall,
    outcome: HarnessOutcome,
    effects: &mut Vec<Effect>,
) -> Option<HarnessOutcome> {
    let submitted_unsaved = events_of(&outcome).iter().any(|event| {
        matches!(event, SessionEvent::PlanUpdated { plan }
            if plan["status"] == "submitted" && plan["path"].as_str().is_none_or(str::is_empty))
    });
    let Some(plan) = state.workflow.flow.plan.as_ref().filter(|_| submitted_unsaved) else {
        return Some(outcome);
    };
    effects.push(Effect::SavePlan { revision: plan.revision, text: plan.text.clone() });
    state.phase = LoopPhase::SavePlan(Box::new(SavingPlan { call: call.clone(), outcome }));
    None
}

/// The plan is saved at `path` (or could not be: its lines carry no
/// path): the harness call's outcome is recorded and the loop goes on.
pub(super) fn on_plan_saved(state: &mut LoopState, path: Option<String>) -> Next {
    let Some(SavingPlan { call, mut outcome }) = take_saving(state) else { return Next::Wait };
    if let Some(path) = path {
        if let Some(plan) = state.workflow.flow.plan.as_mut() {
            plan.path = path.clone();
        }
        for event in events_of_mut(&mut outcome) {
            if let SessionEvent::PlanUpdated { plan } = event
                && plan["path"].as_str().is_none_or(str::is_empty)
            {
                plan["path"] = serde_json::Value::from(path.clone());
            }
        }
    }
    Next::FinishHarness(Box::new((call, outcome)))
}

/// Plan mode is read-only by policy; once its plan is approved the
/// implementation runs in ask mode (the user can switch to auto).
pub(super) fn leave_plan_mode(state: &mut LoopState, effects: &mut Vec<Effect>) {
    if state.config.policy.mode == ApprovalMode::Plan && state.workflow.flow.plan_approved() {
        emit(state, SessionEvent::ModeChanged { mode: ApprovalMode::Ask }, effects);
    }
}

/// The user interrupted while the plan was being saved: what the call
/// changed is recorded (no path), and the call stays pending, to be
/// answered "interrupted" with the rest.
pub(super) fn on_plan_save_interrupted(state: &mut LoopState, effects: &mut Vec<Effect>) {
    let Some(SavingPlan { outcome, .. }) = take_saving(state) else { return };
    effects.extend(events_of(&outcome).iter().cloned().map(Effect::Record));
}

/// The harness call whose plan was being saved, taken out of its phase
/// (the loop works through its pending batches afterwards, or the turn
/// ends); `None`, and nothing changed, when no plan was being saved.
fn take_saving(state: &mut LoopState) -> Option<SavingPlan> {
    match std::mem::replace(&mut state.phase, LoopPhase::Execute(Running::default())) {
        LoopPhase::SavePlan(saving) => Some(*saving),
        other => {
            state.phase = other;
            None
        }
    }
}

fn events_of(outcome: &HarnessOutcome) -> &[SessionEvent] {
    match outcome {
        HarnessOutcome::Answered { events, .. }
        | HarnessOutcome::Review { events, .. }
        | HarnessOutcome::Stop { events, .. }
        | HarnessOutcome::Ask { events, .. } => events,
    }
}

fn events_of_mut(outcome: &mut HarnessOutcome) -> &mut Vec<SessionEvent> {
    match outcome {
        HarnessOutcome::Answered { events, .. }
        | HarnessOutcome::Review { events, .. }
        | HarnessOutcome::Stop { events, .. }
        | HarnessOutcome::Ask { events, .. } => events,
    }
}
