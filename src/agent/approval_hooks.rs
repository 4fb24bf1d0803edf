//! PreToolUse hooks before the user is asked about a call (policy's
//! prompt, a plan review): the driver runs them first
//! ([`Effect::CheckCalls`] with [`CheckHooks::BeforeApproval`]), and
//! `step` decides. A hook's deny, or a rewrite policy forbids, refuses
//! the call at once (nobody approves a call that could not run anyway);
//! otherwise the user is asked ([`Effect::AskApproval`]) and the hooks'
//! verdict is kept, so they do not run twice for the call: its rewrite is
//! judged again right before the call runs (`call_checks.rs`).
//!
//! Invariants: pure. A hook's allow never skips the question (the driver
//! records the attempt on the hook's `hook_ran` line); a hook's ask is
//! folded into the question (its reason added, `hook_asked`, so no answer
//! remembered from an earlier "always" stands for it).

use crate::policy::Decision;
use crate::protocol::ToolCall;

use super::call_checks::{judge, same_input};
use super::next::Next;
use super::phase::{Approval, LoopPhase, Question};
use super::state::LoopState;
use super::step_io::Effect;
use super::verdicts::{CallCheck, CheckHooks, HookPermission, PreToolVerdict};

/// Asks about `call` once its PreToolUse hooks have spoken.
pub(super) fn ask(
    state: &mut LoopState,
    call: ToolCall,
    reason: String,
    plan_review: Option<String>,
    effects: &mut Vec<Effect>,
) {
    let hooks = CheckHooks::BeforeApproval { reason: reason.clone() };
    let calls = vec![call.clone()];
    let asking = Some(Question { call, reason, plan_review });
    state.phase = LoopPhase::AwaitApproval(Approval { asking, prejudged: None });
    effects.push(Effect::CheckCalls { calls, hooks, concurrent: false });
}

/// Asks about `call` whose PreToolUse hooks spoke already (a plan
/// submitted through `harness_hooks`): no second run.
pub(super) fn ask_heard(
    state: &mut LoopState,
    call: ToolCall,
    reason: String,
    plan_review: Option<String>,
    effects: &mut Vec<Effect>,
) {
    state.phase = LoopPhase::AwaitApproval(Approval::default());
    effects.push(Effect::AskApproval { call, reason, plan_review, hook_asked: false });
}

/// Whether a question waits for its hooks (answers are not taken yet).
pub(super) fn waiting(state: &LoopState) -> bool {
    matches!(&state.phase, LoopPhase::AwaitApproval(Approval { asking: Some(_), .. }))
}

/// The hooks spoke: refuse the call, or ask the user.
pub(super) fn on_checked(
    state: &mut LoopState,
    checks: Vec<CallCheck>,
    effects: &mut Vec<Effect>,
) -> Next {
    let LoopPhase::AwaitApproval(approval) = &mut state.phase else { return Next::Wait };
    let Some(Question { call, mut reason, plan_review }) = approval.asking.take() else {
        return Next::Wait;
    };
    let hooks = checks.into_iter().find(|check| check.call_id == call.call_id);
    let mut hook_asked = false;
    if let Some(verdict) = hooks.and_then(|check| check.hooks) {
        if let Some(refusal) = forbidden_rewrite(state, &call, &verdict) {
            return Next::ApprovalBlocked { call_id: call.call_id, reason: refusal };
        }
        if verdict.permission == Some(HookPermission::Deny) {
            return Next::ApprovalBlocked { call_id: call.call_id, reason: verdict.reason };
        }
        if verdict.permission == Some(HookPermission::Ask) {
            // One question for both; the user reads the hook's reason too.
            hook_asked = true;
            reason = format!("{reason}; a PreToolUse hook asks too: {}", verdict.reason);
        }
        let updated_input = verdict.updated_input;
        let judged = PreToolVerdict { updated_input, ..PreToolVerdict::default() };
        if let LoopPhase::AwaitApproval(approval) = &mut state.phase {
            approval.prejudged = Some((call.call_id.clone(), judged));
        }
    }
    effects.push(Effect::AskApproval { call, reason, plan_review, hook_asked });
    Next::Wait
}

/// The reason to refuse `call` at once when a hook's rewrite of it is
/// forbidden.
fn forbidden_rewrite(
    state: &LoopState,
    call: &ToolCall,
    verdict: &PreToolVerdict,
) -> Option<String> {
    let input =
        verdict.updated_input.as_ref().filter(|input| !same_input(&call.arguments, input))?;
    let mut rewritten = call.clone();
    rewritten.arguments = input.to_string();
    match judge(state, &rewritten, None).decision {
        Decision::Forbidden { reason } => {
            Some(format!("a hook rewrote this call and policy forbids the rewrite: {reason}"))
        }
        Decision::Allow | Decision::Prompt { .. } => None,
    }
}
