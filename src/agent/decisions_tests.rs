//! The user's and hooks' decisions through [`step`]: approvals recorded
//! once complete, "always" rules persisted before their line, plans saved
//! before their line, reviewed live (edited file, then-mode) and later,
//! and mode changes.

use super::test_support::step_checked as step;
use super::test_support::{call_with, config};
use super::*;
use crate::policy::{ApprovalMode, ApprovalScope};
use crate::protocol::{Item, ModelResponse, SessionEvent, StopReason, ToolCall, Usage};

fn respond(calls: Vec<ToolCall>) -> Input {
    Input::ModelResponded(ModelResponse {
        items: calls.into_iter().map(Item::ToolCall).collect(),
        usage: Usage::default(),
        stop_reason: StopReason::EndTurn,
        response_id: None,
    })
}

fn records(effects: &[Effect]) -> Vec<&SessionEvent> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Record(event) => Some(event),
            _ => None,
        })
        .collect()
}

fn plan_lines(effects: &[Effect]) -> Vec<serde_json::Value> {
    records(effects)
        .into_iter()
        .filter_map(|event| match event {
            SessionEvent::PlanUpdated { plan } => Some(plan.clone()),
            _ => None,
        })
        .collect()
}

fn approvals(effects: &[Effect]) -> Vec<&SessionEvent> {
    records(effects)
        .into_iter()
        .filter(|event| matches!(event, SessionEvent::Approval { .. }))
        .collect()
}

fn modes(effects: &[Effect]) -> Vec<String> {
    records(effects)
        .into_iter()
        .filter_map(|event| match event {
            SessionEvent::ModeChanged { mode } => Some(mode.as_str().to_owned()),
            _ => None,
        })
        .collect()
}

/// The latest result in the history (context updates may follow it).
fn last_result(state: &LoopState) -> crate::protocol::ToolResult {
    let result = state.items.iter().rev().find_map(|item| match item {
        Item::ToolResult(result) => Some(result.clone()),
        _ => None,
    });
    result.expect("a result")
}

/// A session in `mode` that asked about `touch a` (shell) and waits.
fn asking_about_a_command(mode: ApprovalMode) -> LoopState {
    let mut state = LoopState::open(config(mode, 10), Opening::default());
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    let effects =
        step(&mut state, respond(vec![call_with("c", "shell", r#"{"command":"touch a"}"#)]));
    assert!(matches!(effects.last(), Some(Effect::AskApproval { plan_review: None, .. })));
    state
}

/// A session where a required plan was submitted; the effects of the
/// response that submitted it.
fn submitting_a_plan(mode: ApprovalMode) -> (LoopState, Vec<Effect>) {
    let mut state = LoopState::open(config(mode, 10), Opening::default());
    step(&mut state, Input::SetPlanReview { review: PlanReview::Ask });
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    let plan = call_with("p", "submit_plan", r#"{"plan_markdown":"1. do it"}"#);
    let effects = step(&mut state, respond(vec![plan]));
    (state, effects)
}

#[test]
fn a_submitted_plan_is_saved_before_its_line_is_recorded_with_the_path() {
    let (mut state, effects) = submitting_a_plan(ApprovalMode::Ask);
    assert!(plan_lines(&effects).is_empty(), "nothing recorded before the save: {effects:?}");
    let Some(Effect::SavePlan { revision: 1, text }) = effects.last() else {
        panic!("expected a save: {effects:?}")
    };
    assert_eq!(text, "1. do it");
    let effects = step(&mut state, Input::PlanSaved { path: Some("plans/s-r1.md".into()) });
    let lines = plan_lines(&effects);
    assert_eq!(lines.len(), 1);
    assert_eq!(
        (&lines[0]["path"], &lines[0]["status"]),
        (&"plans/s-r1.md".into(), &"submitted".into())
    );
    let Some(Effect::AskApproval { plan_review, .. }) = effects.last() else { panic!() };
    assert_eq!(plan_review.as_deref(), Some("plans/s-r1.md"));
}

#[test]
fn a_plan_that_cannot_be_saved_is_recorded_without_a_path_and_still_reviewed() {
    let (mut state, _) = submitting_a_plan(ApprovalMode::Ask);
    let effects = step(&mut state, Input::PlanSaved { path: None });
    assert_eq!(plan_lines(&effects)[0]["path"], "");
    let Some(Effect::AskApproval { plan_review, .. }) = effects.last() else { panic!() };
    assert_eq!(plan_review.as_deref(), Some(""));
}

#[test]
fn an_approved_plan_takes_the_edited_file_and_then_the_chosen_mode() {
    let (mut state, _) = submitting_a_plan(ApprovalMode::Plan);
    step(&mut state, Input::PlanSaved { path: Some("plans/s-r1.md".into()) });
    let effects = step(
        &mut state,
        Input::PlanReviewed {
            call_id: "p".into(),
            approved: true,
            note: None,
            edited_text: Some("1. do it better".into()),
            then_mode: Some(ApprovalMode::Auto),
        },
    );
    let SessionEvent::Approval { scope, prefix, .. } = approvals(&effects)[0] else { panic!() };
    assert_eq!((scope, prefix), (&crate::protocol::ApprovalScope::Once, &None));
    let lines = plan_lines(&effects);
    assert_eq!(
        (&lines[0]["text"], &lines[0]["status"]),
        (&"1. do it better".into(), &"approved".into())
    );
    // Plan mode is left for ask, then the mode chosen with the approval,
    // after the plan's result.
    assert_eq!(modes(&effects), ["ask", "auto"]);
    let finished = records(&effects)
        .iter()
        .position(|e| matches!(e, SessionEvent::ToolCallFinished { .. }))
        .unwrap();
    let auto = records(&effects)
        .iter()
        .position(
            |e| matches!(e, SessionEvent::ModeChanged { mode } if *mode == ApprovalMode::Auto),
        )
        .unwrap();
    assert!(finished < auto);
    assert_eq!(state.config.policy.mode, ApprovalMode::Auto);
    assert_eq!(state.workflow.flow.plan.as_ref().unwrap().text, "1. do it better");
}

#[test]
fn a_rejected_plan_ignores_the_edit_and_the_mode() {
    let (mut state, _) = submitting_a_plan(ApprovalMode::Ask);
    step(&mut state, Input::PlanSaved { path: Some("plans/s-r1.md".into()) });
    let effects = step(
        &mut state,
        Input::PlanReviewed {
            call_id: "p".into(),
            approved: false,
            note: Some("smaller".into()),
            edited_text: Some("other".into()),
            then_mode: Some(ApprovalMode::Auto),
        },
    );
    assert_eq!(plan_lines(&effects)[0]["text"], "1. do it");
    assert!(modes(&effects).is_empty());
    assert_eq!(state.config.policy.mode, ApprovalMode::Ask);
}

#[test]
fn a_plan_review_is_never_remembered_as_a_rule() {
    let (mut state, _) = submitting_a_plan(ApprovalMode::Ask);
    step(&mut state, Input::PlanSaved { path: None });
    let effects = step(
        &mut state,
        Input::ApprovalDecided {
            call_id: "p".into(),
            approved: true,
            note: None,
            scope: ApprovalScope::AlwaysPrefix(vec!["submit_plan".into()]),
        },
    );
    assert!(!effects.iter().any(|e| matches!(e, Effect::PersistRule { .. })));
    let SessionEvent::Approval { scope, .. } = approvals(&effects)[0] else { panic!() };
    assert_eq!(scope, &crate::protocol::ApprovalScope::Once);
    assert!(state.allowlist.prefixes.is_empty());
}

#[test]
fn an_always_answer_is_persisted_before_its_approval_is_recorded() {
    let always = ApprovalScope::AlwaysPrefix(vec!["touch".into()]);
    for saved in [true, false] {
        let mut state = asking_about_a_command(ApprovalMode::Ask);
        let decided = Input::ApprovalDecided {
            call_id: "c".into(),
            approved: true,
            note: None,
            scope: always.clone(),
        };
        let effects = step(&mut state, decided);
        assert!(approvals(&effects).is_empty(), "recorded once the rule is written");
        let Some(Effect::PersistRule { rule, .. }) = effects.last() else { panic!("{effects:?}") };
        assert_eq!(rule, &always);
        let persisted =
            Input::RulePersisted { call_id: "c".into(), rule: rule.clone(), note: None, saved };
        let effects = step(&mut state, persisted);
        let SessionEvent::Approval { approved: true, prefix, .. } = approvals(&effects)[0] else {
            panic!()
        };
        // A rule that could not be written counts once.
        assert_eq!(prefix.is_some(), saved);
        assert_eq!(state.allowlist.prefixes.contains(&vec!["touch".to_owned()]), saved);
        assert!(matches!(effects.last(), Some(Effect::RunBatch { .. })), "it runs either way");
    }
}

#[test]
fn a_declined_always_answer_remembers_nothing() {
    let mut state = asking_about_a_command(ApprovalMode::Ask);
    let scope = ApprovalScope::AlwaysPrefix(vec!["touch".into()]);
    let effects = step(
        &mut state,
        Input::ApprovalDecided { call_id: "c".into(), approved: false, note: None, scope },
    );
    let SessionEvent::Approval { approved: false, prefix: None, .. } = approvals(&effects)[0]
    else {
        panic!("{effects:?}")
    };
    assert!(state.allowlist.prefixes.is_empty());
}

#[test]
fn a_hook_that_blocks_an_approval_declines_the_call_without_an_approval_line() {
    let mut state = asking_about_a_command(ApprovalMode::Ask);
    let effects = step(
        &mut state,
        Input::ApprovalBlocked { call_id: "c".into(), reason: "not on fridays".into() },
    );
    assert!(approvals(&effects).is_empty(), "the hook's own line records it");
    let result = last_result(&state);
    assert!(result.is_error && result.output.contains("blocked by a hook: not on fridays"));
    assert!(matches!(effects.last(), Some(Effect::CallModel(_))));
}

#[test]
fn a_mode_change_is_recorded_once_and_plan_mode_requires_a_plan() {
    let mut state = LoopState::open(config(ApprovalMode::Ask, 10), Opening::default());
    assert!(step(&mut state, Input::SetMode { mode: ApprovalMode::Ask }).is_empty());
    let effects = step(&mut state, Input::SetMode { mode: ApprovalMode::Plan });
    assert_eq!(modes(&effects), ["plan"]);
    assert!(state.workflow.flow.plan_required);
    assert_eq!(state.config.policy.mode, ApprovalMode::Plan);
}

#[test]
fn a_plan_left_waiting_is_approved_or_rejected_in_a_later_run() {
    let mut state = LoopState::open(config(ApprovalMode::Plan, 10), Opening::default());
    step(&mut state, Input::SetPlanReview { review: PlanReview::StopAfterSubmit });
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    step(&mut state, respond(vec![call_with("p", "submit_plan", r#"{"plan_markdown":"x"}"#)]));
    let effects = step(&mut state, Input::PlanSaved { path: Some("p.md".into()) });
    assert!(matches!(effects.last(), Some(Effect::TurnEnded { .. })));
    let mut rejected = state.clone();
    let effects = step(
        &mut rejected,
        Input::ReviewWaitingPlan { approved: false, feedback: "smaller".into() },
    );
    assert_eq!(plan_lines(&effects)[0]["status"], "rejected");
    assert!(modes(&effects).is_empty(), "the model stays in plan mode to revise");
    let effects =
        step(&mut state, Input::ReviewWaitingPlan { approved: true, feedback: String::new() });
    assert_eq!(plan_lines(&effects)[0]["status"], "approved");
    assert_eq!(modes(&effects), ["ask"]);
    assert!(
        step(&mut state, Input::ReviewWaitingPlan { approved: true, feedback: String::new() })
            .is_empty(),
        "no plan waits any more"
    );
}

#[test]
fn an_interrupt_while_the_plan_is_saved_records_it_and_answers_the_call() {
    let (mut state, _) = submitting_a_plan(ApprovalMode::Ask);
    let effects = step(&mut state, Input::Interrupted);
    assert_eq!(plan_lines(&effects)[0]["status"], "submitted");
    let result = last_result(&state);
    assert!(result.is_error && result.output.contains("interrupted"));
    assert!(matches!(effects.last(), Some(Effect::TurnEnded { .. })));
    assert!(!matches!(state.phase, LoopPhase::SavePlan(_)));
}

#[test]
fn a_model_change_is_recorded_once_with_its_window() {
    let mut state = LoopState::open(config(ApprovalMode::Ask, 10), Opening::default());
    let same = Input::SetModel { model: "m".into(), for_turn: false };
    assert!(step(&mut state, same).is_empty(), "the model in use: nothing changes");
    let other = Input::SetModel { model: "claude-opus-4".into(), for_turn: false };
    let effects = step(&mut state, other);
    assert!(matches!(
        records(&effects)[..],
        [SessionEvent::ModelChanged { model, after_turn: None }] if model == "claude-opus-4"
    ));
    assert_eq!(
        (state.config.model.as_str(), state.config.context_window),
        ("claude-opus-4", Some(200_000))
    );
}
