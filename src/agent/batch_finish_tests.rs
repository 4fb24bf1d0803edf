//! What follows a batch's run through [`step`]: the unsandboxed re-run
//! offered in ask mode (its answer an `approval` line from `step`), the
//! PostToolUse hooks' verdicts added to the results, and no effect at all
//! for a batch no hook listens to.

use super::test_support::step_checked as step;
use super::test_support::{approvals, call_with, config};
use super::*;
use crate::policy::ApprovalMode;
use crate::protocol::{
    Item, ModelResponse, ResultKind, SessionEvent, StopReason, ToolCall, ToolMeta, ToolResult,
    TurnOutcome, Usage,
};

fn respond(calls: Vec<ToolCall>) -> Input {
    Input::ModelResponded(ModelResponse {
        items: calls.into_iter().map(Item::ToolCall).collect(),
        usage: Usage::default(),
        stop_reason: StopReason::EndTurn,
        response_id: None,
    })
}

fn shell(id: &str) -> ToolCall {
    call_with(id, "shell", r#"{"command":"make install"}"#)
}

fn blocked(id: &str) -> (ToolResult, ToolMeta) {
    let meta = ToolMeta::command(Some(1), None).with_kind(ResultKind::SandboxViolation);
    (ToolResult::error(id, "Permission denied"), meta)
}

/// A session in `mode` whose shell call `c1` ran (approved first in ask
/// mode) and came back as `result`; the effects of the batch's end.
fn ran(
    mode: ApprovalMode,
    post_hooks: bool,
    result: (ToolResult, ToolMeta),
) -> (LoopState, Vec<Effect>) {
    let mut config = config(mode, 10);
    config.post_tool_hooks = post_hooks;
    let mut state = LoopState::open(config, Opening::default());
    step(&mut state, Input::UserTurn { text: "install".into(), images: Vec::new() });
    let effects = step(&mut state, respond(vec![shell("c1")]));
    if let Some(Effect::AskApproval { .. }) = effects.last() {
        let scope = crate::policy::ApprovalScope::Once;
        let input =
            Input::ApprovalDecided { call_id: "c1".into(), approved: true, note: None, scope };
        step(&mut state, input);
    }
    assert!(matches!(state.phase, LoopPhase::Execute(_)), "{:?}", state.phase);
    let effects = step(&mut state, Input::BatchFinished { results: vec![result] });
    (state, effects)
}

fn finished(effects: &[Effect]) -> Vec<&ToolResult> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Record(SessionEvent::ToolCallFinished { result, .. }) => Some(result),
            _ => None,
        })
        .collect()
}

#[test]
fn a_command_the_sandbox_blocked_is_offered_a_rerun_and_the_answer_is_recorded() {
    let (mut state, effects) = ran(ApprovalMode::Ask, false, blocked("c1"));
    assert!(matches!(state.phase, LoopPhase::Finish(_)), "{:?}", state.phase);
    assert!(finished(&effects).is_empty(), "the result waits for the answer");
    let Some(Effect::ConfirmCall { call, reason }) = effects.last() else {
        panic!("no re-run offer: {effects:?}")
    };
    assert_eq!((call.call_id.as_str(), reason.as_str()), ("c1", RERUN_QUESTION));

    let effects =
        step(&mut state, Input::CallConfirmed { call_id: "c1".into(), approved: true, note: None });
    assert_eq!(approvals(&effects), [("c1".to_owned(), true)]);
    assert!(matches!(effects.last(), Some(Effect::RerunUnsandboxed { call, concurrent: false })
        if call.call_id == "c1"));

    let mut meta = ToolMeta::command(Some(0), None);
    meta.set_unsandboxed_rerun();
    let result = ToolResult::ok("c1", "installed");
    let effects = step(&mut state, Input::RerunFinished { result, meta });
    assert_eq!(finished(&effects).len(), 1);
    assert_eq!(finished(&effects)[0].output, "installed", "the re-run's result replaces it");
    assert!(matches!(effects.last(), Some(Effect::CallModel(_))));
}

#[test]
fn a_declined_rerun_keeps_the_blocked_result() {
    let (mut state, _) = ran(ApprovalMode::Ask, false, blocked("c1"));
    let note = Some("no".to_owned());
    let effects =
        step(&mut state, Input::CallConfirmed { call_id: "c1".into(), approved: false, note });
    assert_eq!(approvals(&effects), [("c1".to_owned(), false)]);
    assert!(!effects.iter().any(|e| matches!(e, Effect::RerunUnsandboxed { .. })));
    assert_eq!(finished(&effects)[0].output, "Permission denied");
    assert!(matches!(effects.last(), Some(Effect::CallModel(_))));
}

#[test]
fn a_stale_answer_or_rerun_changes_nothing() {
    let (mut state, _) = ran(ApprovalMode::Ask, false, blocked("c1"));
    let before = state.clone();
    let stale = Input::CallConfirmed { call_id: "c9".into(), approved: true, note: None };
    assert!(step(&mut state, stale).is_empty());
    let rerun = Input::RerunFinished { result: ToolResult::ok("c1", "x"), meta: ToolMeta::new() };
    assert!(step(&mut state, rerun).is_empty(), "no re-run was approved");
    assert_eq!(state, before);
}

#[test]
fn only_ask_mode_offers_a_rerun() {
    for mode in [ApprovalMode::Auto, ApprovalMode::Yolo] {
        let (state, effects) = ran(mode, false, blocked("c1"));
        assert!(!effects.iter().any(|e| matches!(e, Effect::ConfirmCall { .. })), "{mode:?}");
        assert_eq!(finished(&effects)[0].output, "Permission denied");
        assert_eq!(state.phase, LoopPhase::Infer);
    }
}

#[test]
fn a_batch_no_hook_listens_to_gains_no_effect() {
    let (_, effects) =
        ran(ApprovalMode::Auto, false, (ToolResult::ok("c1", "ok"), ToolMeta::new()));
    let kinds: Vec<&str> = effects
        .iter()
        .map(|effect| match effect {
            Effect::Record(_) => "record",
            Effect::CallModel(_) => "call_model",
            _ => "other",
        })
        .collect();
    assert!(kinds.iter().all(|kind| *kind != "other"), "{effects:?}");
}

#[test]
fn post_tool_hooks_speak_before_the_result_is_recorded() {
    let (mut state, effects) =
        ran(ApprovalMode::Auto, true, (ToolResult::ok("c1", "ok"), ToolMeta::new()));
    assert!(finished(&effects).is_empty());
    let Some(Effect::RunPostToolHooks { ran }) = effects.last() else {
        panic!("no hooks asked for: {effects:?}")
    };
    assert_eq!(ran.len(), 1);
    assert_eq!(ran[0].1.output, "ok");
    let verdict = PostToolVerdict {
        call_id: "c1".into(),
        blocked: Some("lint failed".into()),
        context: vec!["see docs".into()],
    };
    let effects = step(&mut state, Input::PostToolHooksDone { verdicts: vec![verdict] });
    assert_eq!(finished(&effects)[0].output, "ok\n\n[hook] lint failed\n\n[hook context] see docs");
    assert!(matches!(effects.last(), Some(Effect::CallModel(_))));
}

#[test]
fn post_tool_hooks_see_the_rerun_result() {
    let (mut state, _) = ran(ApprovalMode::Ask, true, blocked("c1"));
    let yes = Input::CallConfirmed { call_id: "c1".into(), approved: true, note: None };
    step(&mut state, yes);
    let rerun =
        Input::RerunFinished { result: ToolResult::ok("c1", "done"), meta: ToolMeta::new() };
    let effects = step(&mut state, rerun);
    let Some(Effect::RunPostToolHooks { ran }) = effects.last() else {
        panic!("no hooks asked for: {effects:?}")
    };
    assert_eq!(ran[0].1.output, "done");
}

#[test]
fn an_interrupt_while_finishing_records_the_results_as_they_are() {
    let (mut state, _) = ran(ApprovalMode::Ask, true, blocked("c1"));
    let effects = step(&mut state, Input::Interrupted);
    assert_eq!(finished(&effects)[0].output, "Permission denied");
    assert!(matches!(
        effects.last(),
        Some(Effect::TurnEnded { outcome: TurnOutcome::Interrupted, .. })
    ));
    assert_eq!(state.phase, LoopPhase::Idle);
    assert!(!matches!(state.phase, LoopPhase::Finish(_)));
}
