//! The checks right before a batch runs, through [`step`]: PreToolUse
//! hooks' deny and "ask", a rewrite judged by policy again (forbidden,
//! asked, allowed then the native hooks), a symlink leading elsewhere;
//! each question an `approval` line from `step`, each judgement again a
//! second `policy_decision`, and the refused calls' results in call order.

use serde_json::json;

use super::test_support::{approvals, call_with, config};
use super::*;
use crate::policy::{ApprovalMode, PathLinks};
use crate::protocol::{
    Item, ModelResponse, ResultKind, SessionEvent, StopReason, ToolCall, ToolClass, ToolMeta,
    ToolResult, TurnOutcome, Usage,
};

fn respond(calls: Vec<ToolCall>) -> Input {
    Input::ModelResponded(ModelResponse {
        items: calls.into_iter().map(Item::ToolCall).collect(),
        usage: Usage::default(),
        stop_reason: StopReason::EndTurn,
        response_id: None,
    })
}

fn read(id: &str, path: &str) -> ToolCall {
    call_with(id, "read_file", &json!({ "path": path }).to_string())
}

fn write(id: &str, path: &str) -> ToolCall {
    call_with(id, "write_file", &json!({ "path": path, "content": "x" }).to_string())
}

/// A turn in `mode` whose response is `calls`; the loop waits for the
/// driver's look at the first batch.
fn checking(mode: ApprovalMode, calls: Vec<ToolCall>) -> LoopState {
    let mut state = LoopState::open(config(mode, 10), Opening::default());
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    let effects = step(&mut state, respond(calls));
    assert!(matches!(
        effects.last(),
        Some(Effect::CheckCalls { hooks: CheckHooks::PreToolUse, .. })
    ));
    assert!(matches!(state.phase, LoopPhase::Check(_)), "{:?}", state.phase);
    state
}

fn hooks(permission: Option<HookPermission>, updated: Option<serde_json::Value>) -> PreToolVerdict {
    PreToolVerdict { permission, reason: "the hook says so".into(), updated_input: updated }
}

fn check(id: &str, hooks: Option<PreToolVerdict>, links: PathLinks) -> CallCheck {
    CallCheck { call_id: id.into(), hooks, links }
}

fn checked(state: &mut LoopState, checks: Vec<CallCheck>) -> Vec<Effect> {
    step(state, Input::CallsChecked { checks })
}

fn answer(state: &mut LoopState, id: &str, approved: bool) -> Vec<Effect> {
    let note = (!approved).then(|| "not now".to_owned());
    step(state, Input::CallConfirmed { call_id: id.into(), approved, note })
}

/// The second `policy_decision` lines: decision and reason.
fn judged_again(effects: &[Effect]) -> Vec<(String, String)> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Record(SessionEvent::PolicyDecision { decision, reason, .. }) => {
                Some((decision.clone(), reason.clone().unwrap_or_default()))
            }
            _ => None,
        })
        .collect()
}

fn run_calls(effects: &[Effect]) -> Option<Vec<ToolCall>> {
    match effects.last() {
        Some(Effect::RunBatch { calls, .. }) => Some(calls.clone()),
        _ => None,
    }
}

fn finished(effects: &[Effect]) -> Vec<(String, String)> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Record(SessionEvent::ToolCallFinished { result, .. }) => {
                Some((result.call_id.clone(), result.output.clone()))
            }
            _ => None,
        })
        .collect()
}

fn question(effects: &[Effect]) -> (String, String, String) {
    match effects.last() {
        Some(Effect::ConfirmCall { call, reason }) => {
            (call.call_id.clone(), call.arguments.clone(), reason.clone())
        }
        other => panic!("no question: {other:?}"),
    }
}

#[test]
fn without_hooks_or_links_the_batch_runs_as_judged() {
    let mut state = checking(ApprovalMode::Auto, vec![read("a", "x"), read("b", "y")]);
    let effects = checked(
        &mut state,
        vec![check("a", None, PathLinks::default()), check("b", None, PathLinks::default())],
    );
    assert_eq!(effects.len(), 1, "{effects:?}");
    assert_eq!(run_calls(&effects).unwrap(), vec![read("a", "x"), read("b", "y")]);
    assert!(matches!(effects.last(), Some(Effect::RunBatch { concurrent: true, .. })));
    assert!(matches!(state.phase, LoopPhase::Execute(_)), "{:?}", state.phase);
}

#[test]
fn a_hook_deny_refuses_the_call_and_its_result_keeps_its_place() {
    let mut state = checking(ApprovalMode::Auto, vec![read("a", "x"), read("b", "y")]);
    let deny = hooks(Some(HookPermission::Deny), None);
    let effects = checked(
        &mut state,
        vec![check("a", Some(deny), PathLinks::default()), check("b", None, PathLinks::default())],
    );
    assert_eq!(run_calls(&effects).unwrap(), vec![read("b", "y")]);
    let results = vec![(ToolResult::ok("b", "y text"), ToolMeta::new())];
    let effects = step(&mut state, Input::BatchFinished { results });
    assert_eq!(
        finished(&effects),
        [
            ("a".to_owned(), "blocked by a hook: the hook says so".to_owned()),
            ("b".to_owned(), "y text".to_owned()),
        ]
    );
}

#[test]
fn a_hook_ask_is_a_question_whose_answer_step_records() {
    for approved in [true, false] {
        let mut state = checking(ApprovalMode::Auto, vec![read("a", "x")]);
        let ask = hooks(Some(HookPermission::Ask), None);
        let effects = checked(&mut state, vec![check("a", Some(ask), PathLinks::default())]);
        assert_eq!(question(&effects).2, "the hook says so");
        let effects = answer(&mut state, "a", approved);
        assert_eq!(approvals(&effects), [("a".to_owned(), approved)]);
        if approved {
            assert_eq!(run_calls(&effects).unwrap(), vec![read("a", "x")]);
        } else {
            assert_eq!(
                finished(&effects),
                [("a".to_owned(), "blocked by a hook: not now".to_owned())]
            );
            assert!(matches!(effects.last(), Some(Effect::CallModel(_))), "nothing left to run");
        }
    }
}

#[test]
fn a_rewrite_policy_forbids_is_refused_with_a_warning() {
    let mut state =
        checking(ApprovalMode::Yolo, vec![call_with("a", "shell", r#"{"command":"ls"}"#)]);
    let rewrite = hooks(None, Some(json!({ "command": "rm -rf /" })));
    let effects = checked(&mut state, vec![check("a", Some(rewrite), PathLinks::default())]);
    let again = judged_again(&effects);
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].0, "forbidden");
    assert!(
        again[0].1.starts_with(&format!("{REWRITE_NOTE} {{\"command\":\"rm -rf /\"}}: ")),
        "{again:?}"
    );
    assert!(effects.iter().any(|e| matches!(e, Effect::Warn(w) if w.starts_with("hook: a hook rewrote this call and policy forbids"))));
    let (id, text) = &finished(&effects)[0];
    assert_eq!(id, "a");
    assert!(
        text.starts_with("a hook rewrote this call and policy forbids the rewrite: "),
        "{text}"
    );
}

#[test]
fn a_rewrite_policy_asks_about_is_asked_about_as_rewritten() {
    let start = || {
        let mut state =
            checking(ApprovalMode::Ask, vec![call_with("s", "shell", r#"{"command":"ls"}"#)]);
        let rewrite = hooks(None, Some(json!({ "command": "touch made" })));
        let effects = checked(&mut state, vec![check("s", Some(rewrite), PathLinks::default())]);
        assert_eq!(judged_again(&effects)[0].0, "prompt");
        (state, effects)
    };
    let (mut state, effects) = start();
    let (id, arguments, reason) = question(&effects);
    assert_eq!((id.as_str(), arguments.as_str()), ("s", r#"{"command":"touch made"}"#));
    assert!(
        reason.starts_with("a hook rewrote this call; the rewrite needs approval: "),
        "{reason}"
    );
    // A yes hands the rewrite to the native hooks, then it runs rewritten.
    let effects = answer(&mut state, "s", true);
    assert_eq!(approvals(&effects), [("s".to_owned(), true)]);
    let Some(Effect::CheckCalls { calls, hooks: CheckHooks::Natives, .. }) = effects.last() else {
        panic!("no native check: {effects:?}")
    };
    assert_eq!(calls[0].arguments, r#"{"command":"touch made"}"#);
    let said_nothing = Some(PreToolVerdict::default());
    let effects = checked(&mut state, vec![check("s", said_nothing, PathLinks::default())]);
    assert_eq!(run_calls(&effects).unwrap()[0].arguments, r#"{"command":"touch made"}"#);
    // A no refuses it.
    let (mut state, _) = start();
    let effects = answer(&mut state, "s", false);
    let text = "a hook rewrote this call and the rewrite was not approved: not now";
    assert_eq!(finished(&effects), [("s".to_owned(), text.to_owned())]);
}

#[test]
fn the_native_hooks_judge_an_allowed_rewrite() {
    let rewritten = json!({ "command": "cat notes" });
    let start = || {
        let mut state =
            checking(ApprovalMode::Auto, vec![call_with("s", "shell", r#"{"command":"ls"}"#)]);
        let effects = checked(
            &mut state,
            vec![check("s", Some(hooks(None, Some(rewritten.clone()))), PathLinks::default())],
        );
        assert_eq!(judged_again(&effects)[0].0, "allow");
        assert!(matches!(
            effects.last(),
            Some(Effect::CheckCalls { hooks: CheckHooks::Natives, .. })
        ));
        state
    };
    let mut state = start();
    let effects = checked(
        &mut state,
        vec![check("s", Some(hooks(Some(HookPermission::Deny), None)), PathLinks::default())],
    );
    assert_eq!(
        finished(&effects),
        [(
            "s".to_owned(),
            "a hook rewrote this call and the rewrite is blocked: the hook says so".to_owned()
        )]
    );
    let mut state = start();
    let effects = checked(
        &mut state,
        vec![check("s", Some(hooks(Some(HookPermission::Ask), None)), PathLinks::default())],
    );
    assert_eq!(question(&effects).1, rewritten.to_string());
    let effects = answer(&mut state, "s", true);
    assert_eq!(run_calls(&effects).unwrap()[0].arguments, rewritten.to_string());
}

#[test]
fn a_hook_echoing_the_input_back_is_no_rewrite() {
    let mut state = checking(ApprovalMode::Auto, vec![read("a", "x")]);
    let same = hooks(None, Some(json!({ "path": "x" })));
    let effects = checked(&mut state, vec![check("a", Some(same), PathLinks::default())]);
    assert!(judged_again(&effects).is_empty());
    assert_eq!(run_calls(&effects).unwrap().len(), 1);
}

#[test]
fn a_symlink_leading_somewhere_protected_is_judged_again_there() {
    let mut links = PathLinks::default();
    links.insert("/home/u/ws/docs".into(), "/home/u/ws/.git".into());
    let mut state = checking(ApprovalMode::Auto, vec![write("w", "docs/a.txt")]);
    let effects = checked(&mut state, vec![check("w", None, links.clone())]);
    let again = judged_again(&effects);
    assert_eq!(again.len(), 1, "{effects:?}");
    assert_eq!(again[0].0, "prompt");
    assert!(again[0].1.starts_with(&format!("{LINKS_NOTE} /home/u/ws/docs -> /home/u/ws/.git: ")));
    let reason = question(&effects).2;
    assert!(
        reason.ends_with("(through a symlink: /home/u/ws/docs -> /home/u/ws/.git)"),
        "{reason}"
    );
    let effects = answer(&mut state, "w", false);
    assert_eq!(approvals(&effects), [("w".to_owned(), false)]);
    let (_, text) = &finished(&effects)[0];
    assert!(text.starts_with("not run: ") && text.ends_with("; not now"), "{text}");
    // Links that change nothing are not recorded.
    let mut harmless = PathLinks::default();
    harmless.insert("/home/u/ws/docs".into(), "/home/u/ws/src".into());
    let mut state = checking(ApprovalMode::Auto, vec![write("w", "docs/a.txt")]);
    let effects = checked(&mut state, vec![check("w", None, harmless)]);
    assert!(judged_again(&effects).is_empty());
    assert!(run_calls(&effects).is_some());
}

#[test]
fn an_interrupt_while_checking_keeps_refusals_and_answers_the_rest() {
    let mut state = checking(ApprovalMode::Auto, vec![read("a", "x"), read("b", "y")]);
    let deny = hooks(Some(HookPermission::Deny), None);
    let ask = hooks(Some(HookPermission::Ask), None);
    checked(
        &mut state,
        vec![
            check("a", Some(deny), PathLinks::default()),
            check("b", Some(ask), PathLinks::default()),
        ],
    );
    let effects = step(&mut state, Input::Interrupted);
    assert_eq!(
        finished(&effects),
        [
            ("a".to_owned(), "blocked by a hook: the hook says so".to_owned()),
            ("b".to_owned(), "interrupted by the user before it ran".to_owned()),
        ]
    );
    assert!(matches!(
        effects.last(),
        Some(Effect::TurnEnded { outcome: TurnOutcome::Interrupted, .. })
    ));
    assert!(!matches!(state.phase, LoopPhase::Check(_)) && state.pending.is_empty());
}

#[test]
fn stale_answers_change_nothing() {
    let mut state = checking(ApprovalMode::Auto, vec![read("a", "x")]);
    let before = state.clone();
    assert!(answer(&mut state, "a", true).is_empty(), "nothing was asked");
    assert_eq!(state, before);
    let ask = hooks(Some(HookPermission::Ask), None);
    checked(&mut state, vec![check("a", Some(ask), PathLinks::default())]);
    let before = state.clone();
    assert!(answer(&mut state, "zz", true).is_empty());
    assert!(checked(&mut state, Vec::new()).is_empty(), "the checks were answered");
    assert_eq!(state, before);
}

/// A turn in ask mode whose shell call policy prompts for; the loop waits
/// for the hooks before the question.
fn before_approval(command: &str) -> (LoopState, ToolCall) {
    let call = call_with("s", "shell", &json!({ "command": command }).to_string());
    let mut state = LoopState::open(config(ApprovalMode::Ask, 10), Opening::default());
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    let effects = step(&mut state, respond(vec![call.clone()]));
    assert!(
        matches!(
            effects.last(),
            Some(Effect::CheckCalls { hooks: CheckHooks::BeforeApproval { .. }, .. })
        ),
        "{effects:?}"
    );
    assert!(matches!(state.phase, LoopPhase::AwaitApproval(_)), "{:?}", state.phase);
    (state, call)
}

#[test]
fn hooks_run_before_an_approval_question_and_no_answer_counts_before_it() {
    let (mut state, call) = before_approval("touch a");
    let before = state.clone();
    assert!(answer_approval(&mut state, true).is_empty(), "not asked yet");
    assert_eq!(state, before);
    let effects = checked(&mut state, vec![check("s", None, PathLinks::default())]);
    assert!(
        matches!(effects.last(), Some(Effect::AskApproval { call: asked, .. }) if *asked == call)
    );
    let effects = answer_approval(&mut state, true);
    // Nothing judged before: the hooks run before the batch as usual.
    assert!(matches!(
        effects.last(),
        Some(Effect::CheckCalls { hooks: CheckHooks::PreToolUse, .. })
    ));
}

fn answer_approval(state: &mut LoopState, approved: bool) -> Vec<Effect> {
    let scope = crate::policy::ApprovalScope::Once;
    step(state, Input::ApprovalDecided { call_id: "s".into(), approved, note: None, scope })
}

#[test]
fn a_hook_deny_or_a_forbidden_rewrite_before_the_question_refuses_the_call() {
    let (mut state, _) = before_approval("touch a");
    let deny = hooks(Some(HookPermission::Deny), None);
    let effects = checked(&mut state, vec![check("s", Some(deny), PathLinks::default())]);
    assert!(!effects.iter().any(|e| matches!(e, Effect::AskApproval { .. })));
    let text = "not run: blocked by a hook: the hook says so";
    assert_eq!(finished(&effects), [("s".to_owned(), text.to_owned())]);

    let (mut state, _) = before_approval("touch a");
    let rewrite = hooks(Some(HookPermission::Allow), Some(json!({ "command": "rm -rf /" })));
    let effects = checked(&mut state, vec![check("s", Some(rewrite), PathLinks::default())]);
    assert!(!effects.iter().any(|e| matches!(e, Effect::AskApproval { .. })));
    let (_, text) = &finished(&effects)[0];
    assert!(text.contains("a hook rewrote this call and policy forbids the rewrite"), "{text}");
}

#[test]
fn a_rewrite_seen_before_the_question_is_judged_again_when_the_call_runs_without_new_hooks() {
    let (mut state, _) = before_approval("touch a");
    let rewrite = hooks(None, Some(json!({ "command": "touch b" })));
    let effects = checked(&mut state, vec![check("s", Some(rewrite), PathLinks::default())]);
    assert!(matches!(effects.last(), Some(Effect::AskApproval { .. })));
    let effects = answer_approval(&mut state, true);
    assert!(matches!(effects.last(), Some(Effect::CheckCalls { hooks: CheckHooks::Judged, .. })));
    let effects = checked(&mut state, vec![check("s", None, PathLinks::default())]);
    // Judged again by policy: the rewrite needs its own approval.
    assert_eq!(judged_again(&effects)[0].0, "prompt");
    assert_eq!(question(&effects).1, r#"{"command":"touch b"}"#);
}

/// Review S1: once a hook's rewrite ran, what follows the batch is about
/// the rewrite: the unsandboxed re-run offer asks about it and re-runs it
/// (main asked about and re-ran the model's original call, which the hook
/// had replaced), and the PostToolUse hooks see it.
#[test]
fn the_rerun_offer_and_the_post_hooks_are_about_the_rewrite_that_ran() {
    let rewritten = json!({ "command": "cat notes" });
    let mut state =
        checking(ApprovalMode::Ask, vec![call_with("s", "shell", r#"{"command":"ls"}"#)]);
    state.config.post_tool_hooks = true;
    let verdict = hooks(None, Some(rewritten.clone()));
    checked(&mut state, vec![check("s", Some(verdict), PathLinks::default())]);
    let effects = checked(&mut state, vec![check("s", None, PathLinks::default())]);
    assert_eq!(run_calls(&effects).unwrap()[0].arguments, rewritten.to_string());

    let meta = ToolMeta::command(Some(1), None).with_kind(ResultKind::SandboxViolation);
    let results = vec![(ToolResult::error("s", "Permission denied"), meta)];
    let effects = step(&mut state, Input::BatchFinished { results });
    let Some(Effect::ConfirmCall { call, .. }) = effects.last() else {
        panic!("no re-run offer: {effects:?}")
    };
    assert_eq!(call.arguments, rewritten.to_string(), "asked about the replaced call");
    let effects = answer(&mut state, "s", true);
    let Some(Effect::RerunUnsandboxed { call, .. }) = effects.last() else {
        panic!("no re-run: {effects:?}")
    };
    assert_eq!(call.arguments, rewritten.to_string(), "re-ran the replaced call");

    let result = ToolResult::error("s", "Permission denied");
    let meta = ToolMeta::command(Some(1), None);
    let effects = step(&mut state, Input::RerunFinished { result, meta });
    let Some(Effect::RunPostToolHooks { ran }) = effects.last() else {
        panic!("no PostToolUse hooks: {effects:?}")
    };
    assert_eq!(ran[0].0.arguments, rewritten.to_string());
    let effects = step(&mut state, Input::PostToolHooksDone { verdicts: Vec::new() });
    let history = state.items.iter().filter_map(|item| match item {
        Item::ToolCall(call) => Some(call.arguments.clone()),
        _ => None,
    });
    assert_eq!(history.collect::<Vec<_>>(), [r#"{"command":"ls"}"#], "the model's call stays");
    assert!(matches!(effects.last(), Some(Effect::CallModel(_))));
}

/// Review S2: a rewrite of an `agent` call is judged by the class of the
/// agent type it names now (as the model's call was judged by its own):
/// a hook turning a read-only `explore` child into a writing one is
/// asked about in ask mode and refused in plan mode, where main judged
/// the rewrite as the `agent` tool's read-only class and ran it.
#[test]
fn a_rewrite_into_a_writing_agent_type_is_judged_as_a_writer() {
    for (mode, expect) in [(ApprovalMode::Ask, "prompt"), (ApprovalMode::Plan, "forbidden")] {
        let mut config = config(mode, 10);
        config.tool_classes.insert(crate::tools::AGENT_TOOL.into(), ToolClass::ReadOnly);
        config.agent_classes = std::collections::BTreeMap::from([
            ("explore".to_owned(), ToolClass::ReadOnly),
            ("general".to_owned(), ToolClass::Mutating),
        ]);
        let mut state = LoopState::open(config, Opening::default());
        step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
        let args = json!({"agent": "explore", "description": "d", "prompt": "p"});
        let call = call_with("a", crate::tools::AGENT_TOOL, &args.to_string());
        let effects = step(&mut state, respond(vec![call]));
        assert!(matches!(effects.last(), Some(Effect::CheckCalls { .. })), "{mode:?}: {effects:?}");
        let rewritten = json!({"agent": "general", "description": "d", "prompt": "p"});
        let verdict = hooks(None, Some(rewritten));
        let effects = checked(&mut state, vec![check("a", Some(verdict), PathLinks::default())]);
        assert_eq!(judged_again(&effects)[0].0, expect, "{mode:?}: {effects:?}");
        assert!(run_calls(&effects).is_none(), "{mode:?}: the rewrite ran unjudged");
    }
}

/// Review S5: the hooks' verdict kept from before a question the user
/// declined is dropped with it. main kept it, so a later call with the
/// same id (a Chat server that sends no ids gets `call_0` for the first
/// call of every response) ran without its PreToolUse hooks, as the
/// declined call's rewrite.
#[test]
fn a_declined_calls_hook_verdict_is_not_used_for_a_later_call_with_its_id() {
    let (mut state, _) = before_approval("touch a");
    let rewrite = hooks(None, Some(json!({ "command": "echo REWRITE-OF-THE-DECLINED" })));
    checked(&mut state, vec![check("s", Some(rewrite), PathLinks::default())]);
    let effects = answer_approval(&mut state, false);
    assert!(matches!(effects.last(), Some(Effect::CallModel(_))), "{effects:?}");
    let later = call_with("s", "shell", &json!({ "command": "ls" }).to_string());
    let effects = step(&mut state, respond(vec![later]));
    assert!(
        matches!(effects.last(), Some(Effect::CheckCalls { hooks: CheckHooks::PreToolUse, .. })),
        "the later call's hooks do not run: {effects:?}"
    );
    let effects = checked(&mut state, vec![check("s", None, PathLinks::default())]);
    assert_eq!(run_calls(&effects).unwrap()[0].arguments, json!({ "command": "ls" }).to_string());
}

/// Review S7: a hook's ask before a policy question is folded into it:
/// the question carries the hook's reason and says a hook asked, so the
/// front end puts it to the user whatever "always" was answered before.
#[test]
fn a_hooks_ask_before_a_question_is_said_in_it() {
    let (mut state, _) = before_approval("touch a");
    let ask = hooks(Some(HookPermission::Ask), None);
    let effects = checked(&mut state, vec![check("s", Some(ask), PathLinks::default())]);
    let Some(Effect::AskApproval { reason, hook_asked, .. }) = effects.last() else {
        panic!("not asked: {effects:?}")
    };
    assert!(*hook_asked && reason.contains("a PreToolUse hook asks too: the hook says so"));
    let (mut state, _) = before_approval("touch a");
    let effects = checked(&mut state, vec![check("s", None, PathLinks::default())]);
    assert!(matches!(effects.last(), Some(Effect::AskApproval { hook_asked: false, .. })));
}
