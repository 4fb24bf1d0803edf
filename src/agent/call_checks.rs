//! What is decided about each call of a batch right before it runs, once
//! the driver has looked ([`Effect::CheckCalls`]: PreToolUse hooks run,
//! the symlinks on the call's paths gathered): a hook's deny refuses the
//! call; a hook's "ask" asks the user; a hook's rewritten input is judged
//! by policy again (forbidden refuses, prompt asks, allow hands the
//! rewrite to keel's native hooks: deny refuses, ask asks); and a call
//! whose paths lead elsewhere through a symlink is judged again there
//! (forbidden refuses, a new prompt asks). Every question is an
//! [`Effect::ConfirmCall`] and its answer an `approval` line (once);
//! every judgement again a second `policy_decision` line whose reason
//! starts with [`REWRITE_NOTE`] or [`LINKS_NOTE`].
//!
//! Invariants: pure. A rewrite never runs on the strength of the
//! original call's verdict or approval; hooks and rewrites never loosen
//! policy. Calls are settled in call order, one question at a time; the
//! ones that may run go to [`Effect::RunBatch`] (as rewritten), the
//! refused ones wait in [`Checking`] and join the batch's
//! results in call order.

use serde_json::Value;

use crate::policy::{ApprovalScope, CallFacts, Decision, PathLinks, RuleMatch, Verdict};
use crate::protocol::{ResultKind, SessionEvent, ToolCall, ToolMeta, ToolResult};

use super::decisions::approval_event;
use super::next::{INTERRUPTED, Next};
use super::phase::{Checking, LoopPhase, Open, Outcome, Running};
use super::record::{record_observed, record_result};
use super::runaway::Ran;
use super::state::LoopState;
use super::step_io::Effect;
use super::verdicts::{CallCheck, CheckHooks, HookPermission, PreToolVerdict};

/// How the `policy_decision` of a rewrite starts its reason (then the
/// rewritten input, then policy's reason when it is not allow).
pub const REWRITE_NOTE: &str = "judged again: a PreToolUse hook rewrote the input to";

/// How the `policy_decision` of a judgement with symlinks starts its
/// reason (then the links, then policy's reason when it is not allow).
pub const LINKS_NOTE: &str = "judged again with the symlinks on its paths resolved:";

/// Where one call's settling got to.
enum Flow {
    Done(Outcome),
    /// What it waits for, and the effect that asks for it.
    Wait(Box<(Open, Effect)>),
}

fn wait(open: Open, effect: Effect) -> Flow {
    Flow::Wait(Box::new((open, effect)))
}

/// The batch at the front of `pending` is about to run: the driver looks
/// at its calls first.
pub(super) fn start(
    state: &mut LoopState,
    calls: Vec<ToolCall>,
    concurrent: bool,
    effects: &mut Vec<Effect>,
) {
    let checking = Checking {
        calls: calls.iter().cloned().map(|call| (call, None)).collect(),
        concurrent,
        checks: Vec::new(),
        cursor: 0,
        open: Some(Open::Checks),
        prejudged: None,
    };
    // Judged before its approval: the hooks do not run again. Any other
    // batch drops a kept verdict (it was a declined call's).
    let judged = match calls.as_slice() {
        [call] => state.take_prejudged(&call.call_id),
        _ => None,
    };
    let hooks = if judged.is_some() { CheckHooks::Judged } else { CheckHooks::PreToolUse };
    state.phase = LoopPhase::Check(Checking { prejudged: judged, ..checking });
    effects.push(Effect::CheckCalls { calls, hooks, concurrent });
}

/// The driver's look at the batch (or at a rewrite's native hooks).
pub(super) fn on_checked(
    state: &mut LoopState,
    checks: Vec<CallCheck>,
    effects: &mut Vec<Effect>,
) -> Next {
    let Some(checking) = checking_mut(state) else { return Next::Wait };
    match checking.open.take() {
        Some(Open::Checks) => {
            checking.checks = checks;
            if let Some(judged) = checking.prejudged.take() {
                for check in &mut checking.checks {
                    check.hooks = Some(judged.clone());
                }
            }
            proceed(state, effects)
        }
        Some(Open::Natives { rewritten }) => {
            let check = checks.into_iter().find(|check| check.call_id == rewritten.call_id);
            let check = check.unwrap_or_default();
            let flow =
                natives(state, rewritten, check.hooks.unwrap_or_default(), check.links, effects);
            settle(state, flow, effects)
        }
        open => {
            checking.open = open;
            Next::Wait
        }
    }
}

/// The user's answer on the question about the call being settled.
pub(super) fn on_answer(
    state: &mut LoopState,
    call_id: &str,
    approved: bool,
    note: Option<String>,
    effects: &mut Vec<Effect>,
) -> Next {
    let Some(checking) = checking_mut(state) else { return Next::Wait };
    let Some((call, _)) = checking.calls.get(checking.cursor) else { return Next::Wait };
    let call = call.clone();
    let asked = matches!(
        checking.open,
        Some(
            Open::HookAsked { .. }
                | Open::RewriteAsked { .. }
                | Open::NativeAsked { .. }
                | Open::LinksAsked { .. }
        )
    );
    if call.call_id != call_id || !asked {
        return Next::Wait;
    }
    let open = checking.open.take();
    effects.push(Effect::Record(approval_event(
        call_id,
        approved,
        note.clone(),
        &ApprovalScope::Once,
    )));
    let declined = |note: Option<String>| note.unwrap_or_else(|| "the user declined it".to_owned());
    let flow = match open {
        Some(Open::HookAsked { reason, updated, links }) => {
            if approved {
                rewrite(state, call, updated, links, effects)
            } else {
                Flow::Done(hook_denied(&call, &note.unwrap_or(reason)))
            }
        }
        Some(Open::RewriteAsked { rewritten }) => {
            if approved {
                check_natives(rewritten)
            } else {
                Flow::Done(rewrite_declined(&call, &declined(note)))
            }
        }
        Some(Open::NativeAsked { rewritten, links }) => {
            if approved {
                judge_links(state, rewritten, links, effects)
            } else {
                Flow::Done(rewrite_declined(&call, &declined(note)))
            }
        }
        Some(Open::LinksAsked { call, question }) => {
            if approved {
                Flow::Done(Outcome::Run(call))
            } else {
                let text = format!("not run: {question}; {}", declined(note));
                Flow::Done(refused(&call, text, ToolMeta::new().with_kind(ResultKind::Denied)))
            }
        }
        Some(Open::Checks | Open::Natives { .. }) | None => return Next::Wait,
    };
    settle(state, flow, effects)
}

/// Interrupted while the batch is settled: the calls already refused get
/// their results, the others are answered "interrupted" (with the rest of
/// the turn's pending calls by the caller).
pub(super) fn on_interrupted(state: &mut LoopState, effects: &mut Vec<Effect>) {
    let Some(checking) = take_checking(state, LoopPhase::Idle) else { return };
    state.pending.pop_front();
    for (call, outcome) in checking.calls {
        match outcome {
            Some(Outcome::Refused(result, meta)) => {
                state.workflow.observe(&call, &result, &meta);
                record_observed(state, &call, result, meta, Ran::Yes, effects);
            }
            Some(Outcome::Run(_)) | None => {
                record_result(
                    state,
                    ToolResult::error(&call.call_id, INTERRUPTED),
                    ToolMeta::new(),
                    effects,
                );
            }
        }
    }
}

/// What the running batch's checks came to, for its results (taken
/// once): the refused calls' results, and the calls that ran as they ran
/// (a hook may have rewritten them).
pub(super) fn take_checked(state: &mut LoopState) -> Running {
    match &mut state.phase {
        LoopPhase::Execute(running) => std::mem::take(running),
        _ => Running::default(),
    }
}

/// The batch being settled, taken out of its phase (the loop is in `then`
/// afterwards); `None`, and nothing changed, when no batch is.
fn take_checking(state: &mut LoopState, then: LoopPhase) -> Option<Checking> {
    match std::mem::replace(&mut state.phase, then) {
        LoopPhase::Check(checking) => Some(checking),
        other => {
            state.phase = other;
            None
        }
    }
}

/// The batch being settled, while it is.
fn checking_mut(state: &mut LoopState) -> Option<&mut Checking> {
    match &mut state.phase {
        LoopPhase::Check(checking) => Some(checking),
        _ => None,
    }
}

/// Ends the settling of the call at the cursor with `flow`, or waits.
fn settle(state: &mut LoopState, flow: Flow, effects: &mut Vec<Effect>) -> Next {
    let Some(checking) = checking_mut(state) else { return Next::Wait };
    match flow {
        Flow::Done(outcome) => {
            if let Some(slot) = checking.calls.get_mut(checking.cursor) {
                slot.1 = Some(outcome);
            }
            checking.cursor += 1;
            proceed(state, effects)
        }
        Flow::Wait(waiting) => {
            let (open, effect) = *waiting;
            checking.open = Some(open);
            effects.push(effect);
            Next::Wait
        }
    }
}

/// Settles the calls from the cursor on until one waits; then runs the
/// batch (what may run of it).
fn proceed(state: &mut LoopState, effects: &mut Vec<Effect>) -> Next {
    loop {
        let LoopPhase::Check(checking) = &state.phase else { return Next::Wait };
        let Some((call, _)) = checking.calls.get(checking.cursor) else { break };
        let call = call.clone();
        let check = checking.checks.iter().find(|check| check.call_id == call.call_id);
        let check = check.cloned().unwrap_or_default();
        let flow = after_hooks(state, call, check.hooks, check.links, effects);
        match flow {
            Flow::Done(outcome) => {
                let Some(checking) = checking_mut(state) else { return Next::Wait };
                if let Some(slot) = checking.calls.get_mut(checking.cursor) {
                    slot.1 = Some(outcome);
                }
                checking.cursor += 1;
            }
            wait @ Flow::Wait(..) => return settle(state, wait, effects),
        }
    }
    run(state, effects)
}

/// Every call is settled: the ones that may run go to the driver; with
/// none, the batch is finished with the refusals.
fn run(state: &mut LoopState, effects: &mut Vec<Effect>) -> Next {
    let Some(checking) = take_checking(state, LoopPhase::Execute(Running::default())) else {
        return Next::Wait;
    };
    let concurrent = checking.concurrent;
    let mut running = Running::default();
    for (_, outcome) in checking.calls {
        match outcome {
            Some(Outcome::Refused(result, meta)) => running.refused.push((result, meta)),
            Some(Outcome::Run(call)) => running.run_as.push(call),
            None => {}
        }
    }
    let calls = running.run_as.clone();
    state.phase = LoopPhase::Execute(running);
    if calls.is_empty() {
        return Next::BatchFinished(Vec::new());
    }
    effects.push(Effect::RunBatch { calls, concurrent });
    Next::Wait
}

/// The PreToolUse hooks' verdict on `call`.
fn after_hooks(
    state: &LoopState,
    call: ToolCall,
    hooks: Option<PreToolVerdict>,
    links: PathLinks,
    effects: &mut Vec<Effect>,
) -> Flow {
    let Some(verdict) = hooks else { return judge_links(state, call, links, effects) };
    match verdict.permission {
        Some(HookPermission::Deny) => Flow::Done(hook_denied(&call, &verdict.reason)),
        Some(HookPermission::Ask) => {
            let reason = verdict.reason.clone();
            let open =
                Open::HookAsked { reason: verdict.reason, updated: verdict.updated_input, links };
            wait(open, Effect::ConfirmCall { call, reason })
        }
        Some(HookPermission::Allow) | None => {
            rewrite(state, call, verdict.updated_input, links, effects)
        }
    }
}

/// A hook's rewrite of `call`, judged by policy again (recorded).
fn rewrite(
    state: &LoopState,
    call: ToolCall,
    updated: Option<Value>,
    links: PathLinks,
    effects: &mut Vec<Effect>,
) -> Flow {
    let Some(input) = updated else { return judge_links(state, call, links, effects) };
    let mut rewritten = call.clone();
    rewritten.arguments = input.to_string();
    if same_input(&call.arguments, &input) {
        return judge_links(state, rewritten, links, effects);
    }
    let verdict = judge(state, &rewritten, None);
    effects.push(Effect::Record(again(
        &call.call_id,
        &verdict,
        &format!("{REWRITE_NOTE} {input}"),
    )));
    match verdict.decision {
        Decision::Allow => check_natives(rewritten),
        Decision::Forbidden { reason } => {
            let text = format!("a hook rewrote this call and policy forbids the rewrite: {reason}");
            effects.push(Effect::Warn(format!("hook: {text}")));
            Flow::Done(refused(&call, text, ToolMeta::tool_error("hook_rewrite_forbidden")))
        }
        Decision::Prompt { reason } => {
            let question =
                format!("a hook rewrote this call; the rewrite needs approval: {reason}");
            effects.push(Effect::Warn(format!("hook: {question}")));
            let open = Open::RewriteAsked { rewritten: rewritten.clone() };
            wait(open, Effect::ConfirmCall { call: rewritten, reason: question })
        }
    }
}

fn check_natives(rewritten: ToolCall) -> Flow {
    let effect = Effect::CheckCalls {
        calls: vec![rewritten.clone()],
        hooks: CheckHooks::Natives,
        concurrent: false,
    };
    wait(Open::Natives { rewritten }, effect)
}

/// keel's native hooks on an allowed rewrite: deny refuses it, ask asks.
fn natives(
    state: &LoopState,
    rewritten: ToolCall,
    verdict: PreToolVerdict,
    links: PathLinks,
    effects: &mut Vec<Effect>,
) -> Flow {
    match verdict.permission {
        Some(HookPermission::Deny) => {
            let text =
                format!("a hook rewrote this call and the rewrite is blocked: {}", verdict.reason);
            Flow::Done(refused(&rewritten, text, ToolMeta::tool_error("hook_rewrite_forbidden")))
        }
        Some(HookPermission::Ask) => {
            let open = Open::NativeAsked { rewritten: rewritten.clone(), links };
            wait(open, Effect::ConfirmCall { call: rewritten, reason: verdict.reason })
        }
        Some(HookPermission::Allow) | None => judge_links(state, rewritten, links, effects),
    }
}

/// `call` judged again where its paths lead, when a symlink changes the
/// verdict (recorded).
fn judge_links(
    state: &LoopState,
    call: ToolCall,
    links: PathLinks,
    effects: &mut Vec<Effect>,
) -> Flow {
    if links.is_empty() {
        return Flow::Done(Outcome::Run(call));
    }
    let lexical = judge(state, &call, None);
    let verdict = judge(state, &call, Some(&links));
    if verdict.decision == lexical.decision {
        return Flow::Done(Outcome::Run(call));
    }
    let shown: Vec<String> = links
        .iter()
        .map(|(link, target)| format!("{} -> {}", link.display(), target.display()))
        .collect();
    let shown = shown.join(", ");
    effects.push(Effect::Record(again(&call.call_id, &verdict, &format!("{LINKS_NOTE} {shown}"))));
    match verdict.decision {
        Decision::Allow => Flow::Done(Outcome::Run(call)),
        Decision::Forbidden { reason } => {
            let text = format!("not run: {reason} (through a symlink: {shown})");
            effects.push(Effect::Warn(text.clone()));
            Flow::Done(refused(&call, text, ToolMeta::new().with_kind(ResultKind::Denied)))
        }
        Decision::Prompt { reason } => {
            let question = format!("{reason} (through a symlink: {shown})");
            let open = Open::LinksAsked { call: call.clone(), question: question.clone() };
            wait(open, Effect::ConfirmCall { call, reason: question })
        }
    }
}

/// Policy's verdict on `call` in the session's mode, with `links` as
/// facts when given; by the call's own class (an `agent` call's is its
/// agent type's, so a rewrite naming another type is judged as that type).
pub(super) fn judge(state: &LoopState, call: &ToolCall, links: Option<&PathLinks>) -> Verdict {
    let class = state.class_of_call(call);
    let facts = CallFacts { tool: &call.name, class, arguments: &call.arguments };
    match links {
        None => state.judge_call(&state.config.policy, facts),
        Some(links) => {
            let mut linked = state.config.policy.clone();
            linked.paths.links = links.clone();
            state.judge_call(&linked, facts)
        }
    }
}

/// The second `policy_decision` of a call judged again: `note`, then
/// policy's reason when it is not allow.
fn again(call_id: &str, verdict: &Verdict, note: &str) -> SessionEvent {
    let (decision, why) = match &verdict.decision {
        Decision::Allow => ("allow", String::new()),
        Decision::Prompt { reason } => ("prompt", format!(": {reason}")),
        Decision::Forbidden { reason } => ("forbidden", format!(": {reason}")),
    };
    SessionEvent::PolicyDecision {
        call_id: call_id.to_owned(),
        decision: decision.to_owned(),
        matched_rules: verdict.matched.iter().map(RuleMatch::to_json).collect(),
        reason: Some(format!("{note}{why}")),
    }
}

/// Whether a hook's input is the call's own (a hook echoing it back).
pub fn same_input(arguments: &str, input: &Value) -> bool {
    serde_json::from_str::<Value>(arguments).is_ok_and(|original| &original == input)
}

fn hook_denied(call: &ToolCall, reason: &str) -> Outcome {
    refused(call, format!("blocked by a hook: {reason}"), ToolMeta::tool_error("hook_denied"))
}

fn rewrite_declined(call: &ToolCall, note: &str) -> Outcome {
    let text = format!("a hook rewrote this call and the rewrite was not approved: {note}");
    refused(call, text, ToolMeta::tool_error("hook_rewrite_declined"))
}

fn refused(call: &ToolCall, text: String, meta: ToolMeta) -> Outcome {
    Outcome::Refused(ToolResult::error(&call.call_id, text), meta)
}
