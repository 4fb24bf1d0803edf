//! Harness calls through their hooks (`harness_hooks.rs`, issue 36): a
//! PreToolUse deny keeps the task list, a hook's question is asked once,
//! PostToolUse speaks before the result is recorded, a plan under review
//! runs its hooks once, an interrupt during PostToolUse records the change,
//! and without hooks a harness call gains no effect.

use super::test_support::{approvals, call_with, config};
use super::*;
use crate::policy::ApprovalMode;
use crate::protocol::{
    Item, ModelResponse, SessionEvent, StopReason, ToolCall, ToolResult, TurnOutcome, Usage,
};

fn respond(calls: Vec<ToolCall>) -> Input {
    Input::ModelResponded(ModelResponse {
        items: calls.into_iter().map(Item::ToolCall).collect(),
        usage: Usage::default(),
        stop_reason: StopReason::EndTurn,
        response_id: None,
    })
}

fn todo(id: &str) -> ToolCall {
    call_with(id, "todo_write", r#"{"todos":[{"text":"parse","status":"in_progress"}]}"#)
}

/// A session with the hooks that listen, whose model called `call`; the
/// effects of the response.
fn called(pre: bool, post: bool, call: ToolCall) -> (LoopState, Vec<Effect>) {
    let mut config = config(ApprovalMode::Auto, 10);
    config.pre_tool_hooks = pre;
    config.post_tool_hooks = post;
    let mut state = LoopState::open(config, Opening::default());
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    let effects = step(&mut state, respond(vec![call]));
    (state, effects)
}

fn verdict(call_id: &str, permission: Option<HookPermission>, reason: &str) -> Input {
    let hooks = Some(PreToolVerdict { permission, reason: reason.into(), updated_input: None });
    Input::CallsChecked {
        checks: vec![CallCheck { call_id: call_id.into(), hooks, ..Default::default() }],
    }
}

fn results(effects: &[Effect]) -> Vec<&ToolResult> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Record(SessionEvent::ToolCallFinished { result, .. }) => Some(result),
            _ => None,
        })
        .collect()
}

fn tasks_updated(effects: &[Effect]) -> usize {
    let updated = |e: &&Effect| matches!(e, Effect::Record(SessionEvent::TaskUpdated { .. }));
    effects.iter().filter(updated).count()
}

#[test]
fn a_pre_tool_use_deny_keeps_the_task_list_and_the_model_reads_why() {
    let (mut state, effects) = called(true, true, todo("t1"));
    assert!(
        matches!(effects.last(), Some(Effect::CheckCalls { hooks: CheckHooks::Harness, .. })),
        "{effects:?}"
    );
    let effects = step(&mut state, verdict("t1", Some(HookPermission::Deny), "NO-TODOS"));
    assert_eq!(tasks_updated(&effects), 0);
    assert!(state.workflow.tasks.is_empty());
    let results = results(&effects);
    assert!(results[0].is_error && results[0].output.contains("NO-TODOS"), "{results:?}");
    // No PostToolUse for a blocked call; the next request goes out.
    assert!(!effects.iter().any(|e| matches!(e, Effect::RunPostToolHooks { .. })));
    assert!(matches!(effects.last(), Some(Effect::CallModel(_))), "{effects:?}");
}

#[test]
fn post_tool_use_speaks_before_the_result_is_recorded() {
    let (mut state, _) = called(true, true, todo("t1"));
    let effects = step(&mut state, verdict("t1", None, ""));
    let Some(Effect::RunPostToolHooks { ran }) = effects.last() else { panic!("{effects:?}") };
    assert_eq!(ran[0].0.name, "todo_write");
    assert!(ran[0].1.output.contains("parse"), "{ran:?}");
    assert!(results(&effects).is_empty(), "recorded before the hooks spoke");
    let heard =
        PostToolVerdict { call_id: "t1".into(), blocked: None, context: vec!["CTX-1".into()] };
    let effects = step(&mut state, Input::PostToolHooksDone { verdicts: vec![heard] });
    assert_eq!(tasks_updated(&effects), 1);
    assert!(results(&effects)[0].output.ends_with("[hook context] CTX-1"));
    assert_eq!(state.workflow.tasks.len(), 1);
}

#[test]
fn a_hooks_question_is_asked_once_and_a_no_refuses() {
    let (mut state, _) = called(true, false, todo("t1"));
    let effects = step(&mut state, verdict("t1", Some(HookPermission::Ask), "sure?"));
    assert!(matches!(effects.last(), Some(Effect::ConfirmCall { .. })), "{effects:?}");
    let input = Input::CallConfirmed { call_id: "t1".into(), approved: false, note: None };
    let effects = step(&mut state, input);
    assert_eq!(approvals(&effects), [("t1".to_owned(), false)]);
    assert_eq!(tasks_updated(&effects), 0);
    assert!(results(&effects)[0].output.contains("sure?"));
}

#[test]
fn a_plan_under_review_runs_its_pre_tool_hooks_once() {
    let mut config = config(ApprovalMode::Auto, 10);
    config.pre_tool_hooks = true;
    let mut state = LoopState::open(config, Opening::default());
    step(&mut state, Input::SetPlanReview { review: PlanReview::Ask });
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    let plan = call_with("p1", "submit_plan", r#"{"plan_markdown":"1. do it"}"#);
    let effects = step(&mut state, respond(vec![plan]));
    assert!(matches!(effects.last(), Some(Effect::CheckCalls { hooks: CheckHooks::Harness, .. })));
    let mut effects = step(&mut state, verdict("p1", None, ""));
    while let Some(Effect::SavePlan { .. }) = effects.last() {
        effects = step(&mut state, Input::PlanSaved { path: Some(".keel/plans/p.md".into()) });
    }
    assert!(matches!(effects.last(), Some(Effect::AskApproval { .. })), "{effects:?}");
    assert!(!effects.iter().any(|e| matches!(e, Effect::CheckCalls { .. })), "{effects:?}");
}

#[test]
fn an_interrupt_during_post_tool_use_records_the_task_list() {
    let (mut state, effects) = called(false, true, todo("t1"));
    assert!(matches!(effects.last(), Some(Effect::RunPostToolHooks { .. })), "{effects:?}");
    let effects = step(&mut state, Input::Interrupted);
    assert_eq!(tasks_updated(&effects), 1);
    assert_eq!(results(&effects).len(), 1);
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::TurnEnded { outcome: TurnOutcome::Interrupted, .. }))
    );
}

#[test]
fn without_hooks_a_harness_call_gains_no_effect() {
    let (state, effects) = called(false, false, todo("t1"));
    assert_eq!(tasks_updated(&effects), 1);
    assert!(
        !effects
            .iter()
            .any(|e| matches!(e, Effect::CheckCalls { .. } | Effect::RunPostToolHooks { .. }))
    );
    assert_eq!(state.workflow.tasks.len(), 1);
}
