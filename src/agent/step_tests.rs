//! Drives [`step`] through whole turns with no I/O: the effects it asks for
//! and the history it builds.

use proptest::prelude::*;

use super::test_support::step_checked as step;
use super::test_support::{call, call_with, config};
use super::*;
use crate::policy::{ApprovalMode, ApprovalScope};
use crate::protocol::{
    Item, ModelResponse, SessionEvent, StopReason, ToolCall, ToolClass, ToolResult, TurnOutcome,
    Usage,
};

fn respond(items: Vec<Item>) -> Input {
    let stop_reason = if items.iter().any(|i| matches!(i, Item::ToolCall(_))) {
        StopReason::ToolUse
    } else {
        StopReason::EndTurn
    };
    Input::ModelResponded(ModelResponse {
        items,
        usage: Usage { input_tokens: 10, output_tokens: 2, ..Usage::default() },
        stop_reason,
        response_id: None,
    })
}

fn ok(id: &str) -> (ToolResult, crate::protocol::ToolMeta) {
    (ToolResult::ok(id, format!("out-{id}")), crate::protocol::ToolMeta::new())
}

fn non_record(effects: &[Effect]) -> Vec<&Effect> {
    effects.iter().filter(|e| !matches!(e, Effect::Record(_))).collect()
}

#[test]
fn plain_answer_ends_the_turn_with_its_text() {
    let mut state = LoopState::open(config(ApprovalMode::Ask, 10), Opening::default());
    let effects = step(&mut state, Input::UserTurn { text: "hi".into(), images: Vec::new() });
    assert!(matches!(non_record(&effects)[..], [Effect::CallModel(_)]));
    let effects = step(&mut state, respond(vec![Item::Assistant { text: "hello".into() }]));
    let Some(Effect::TurnEnded { outcome, final_text, usage }) = effects.last() else {
        panic!("turn did not end: {effects:?}");
    };
    assert_eq!(*outcome, TurnOutcome::Completed);
    assert_eq!(final_text.as_deref(), Some("hello"));
    assert_eq!(usage.input_tokens, 10);
    assert_eq!(state.phase, LoopPhase::Idle);
}

#[test]
fn reads_run_together_and_writes_alone_in_call_order() {
    let mut state = LoopState::open(config(ApprovalMode::Auto, 10), Opening::default());
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    let effects = step(
        &mut state,
        respond(vec![
            Item::ToolCall(call("a", "read_file")),
            Item::ToolCall(call("b", "grep")),
            Item::ToolCall(call("c", "shell")),
        ]),
    );
    let Some(Effect::RunBatch { calls, concurrent: true }) = effects.last() else {
        panic!("expected a concurrent batch: {effects:?}");
    };
    assert_eq!(calls.len(), 2);
    // Write-ahead: both calls are recorded before the batch runs.
    let started = effects
        .iter()
        .filter(|e| matches!(e, Effect::Record(SessionEvent::ToolCallStarted { .. })))
        .count();
    assert_eq!(started, 2);
    // Results may come back in any order; they are recorded in call order.
    let effects = step(&mut state, Input::BatchFinished { results: vec![ok("b"), ok("a")] });
    let Some(Effect::RunBatch { calls, concurrent: false }) = effects.last() else {
        panic!("expected the write next: {effects:?}");
    };
    assert_eq!(calls[0].call_id, "c");
    let effects = step(&mut state, Input::BatchFinished { results: vec![ok("c")] });
    assert!(matches!(effects.last(), Some(Effect::CallModel(_))));
    let answered: Vec<&str> = state
        .items
        .iter()
        .filter_map(|i| match i {
            Item::ToolResult(r) => Some(r.call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(answered, ["a", "b", "c"]);
}

/// The batches a response of `commands` (shell calls `c0`, `c1`, …) makes
/// in auto mode: each batch's call ids, whether it is concurrent, and the
/// class each call was recorded as started with.
fn shell_batches(commands: &[&str], sandboxed: bool) -> Vec<(Vec<String>, bool, Vec<ToolClass>)> {
    let mut config = config(ApprovalMode::Auto, 10);
    config.policy.sandboxed = sandboxed;
    let mut state = LoopState::open(config, Opening::default());
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    let calls = commands.iter().enumerate().map(|(i, command)| {
        let arguments = serde_json::json!({ "command": command }).to_string();
        Item::ToolCall(call_with(&format!("c{i}"), "shell", &arguments))
    });
    let mut effects = step(&mut state, respond(calls.collect()));
    let mut batches = Vec::new();
    while let Some(Effect::RunBatch { calls, concurrent }) = effects.last().cloned() {
        let classes = effects
            .iter()
            .filter_map(|e| match e {
                Effect::Record(SessionEvent::ToolCallStarted { class, .. }) => Some(*class),
                _ => None,
            })
            .collect();
        let ids: Vec<String> = calls.iter().map(|c| c.call_id.clone()).collect();
        let results = ids.iter().map(|id| ok(id)).collect();
        batches.push((ids, concurrent, classes));
        effects = step(&mut state, Input::BatchFinished { results });
    }
    batches
}

#[test]
fn shell_calls_policy_proves_read_only_run_together_as_reads() {
    let commands = ["sleep 1 && cat f1.txt", "git status", "touch x", "ls -la", "rg fn src"];
    let batches = shell_batches(&commands, true);
    let ids = |batch: &(Vec<String>, bool, Vec<ToolClass>)| batch.0.join(" ");
    assert_eq!(batches.iter().map(ids).collect::<Vec<_>>(), ["c0 c1", "c2", "c3 c4"]);
    let (read, write) = (ToolClass::ReadOnly, ToolClass::Mutating);
    assert_eq!((batches[0].1, batches[0].2.clone()), (true, vec![read, read]));
    assert_eq!((batches[1].1, batches[1].2.clone()), (false, vec![write]));
    assert_eq!((batches[2].1, batches[2].2.clone()), (true, vec![read, read]));
}

#[test]
fn shell_reads_stay_serial_without_a_sandbox_to_fail_a_wrong_judgement() {
    let commands = ["sleep 1 && cat f1.txt", "git status", "cat a > b", "ls $(pwd)"];
    // Not proven read-only: a redirection into a file, a substitution.
    let batches = shell_batches(&commands[2..], true);
    assert!(batches.iter().all(|(ids, concurrent, _)| ids.len() == 1 && !concurrent));
    // Proven, but nothing would stop a wrong proof from writing.
    let batches = shell_batches(&commands[..2], false);
    assert!(batches.iter().all(|(ids, concurrent, _)| ids.len() == 1 && !concurrent));
    assert!(batches.iter().all(|(_, _, classes)| classes == &[ToolClass::Mutating]));
}

#[test]
fn declined_call_tells_the_model_why_and_the_loop_goes_on() {
    let mut state = LoopState::open(config(ApprovalMode::Ask, 10), Opening::default());
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    let effects = step(&mut state, respond(vec![Item::ToolCall(call("c", "shell"))]));
    assert!(matches!(effects.last(), Some(Effect::AskApproval { .. })));
    let effects = step(
        &mut state,
        Input::ApprovalDecided {
            call_id: "c".into(),
            approved: false,
            note: Some("approval needed; rerun with --full-auto".into()),
            scope: ApprovalScope::Once,
        },
    );
    assert!(matches!(effects.last(), Some(Effect::CallModel(_))));
    let result = state.items.iter().rev().find_map(|item| match item {
        Item::ToolResult(result) => Some(result),
        Item::User { .. }
        | Item::Assistant { .. }
        | Item::Reasoning(_)
        | Item::ToolCall(_)
        | Item::Context { .. } => None,
    });
    let Some(result) = result else { panic!("no result in {:?}", state.items) };
    assert!(result.is_error);
    assert!(result.output.contains("--full-auto"), "{}", result.output);
}

#[test]
fn approved_call_runs() {
    let mut state = LoopState::open(config(ApprovalMode::Ask, 10), Opening::default());
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    step(&mut state, respond(vec![Item::ToolCall(call("c", "shell"))]));
    let effects = step(
        &mut state,
        Input::ApprovalDecided {
            call_id: "c".into(),
            approved: true,
            note: None,
            scope: ApprovalScope::Once,
        },
    );
    assert!(matches!(effects.last(), Some(Effect::RunBatch { concurrent: false, .. })));
}

#[test]
fn step_limit_answers_open_calls_and_stops() {
    let mut state = LoopState::open(config(ApprovalMode::Auto, 1), Opening::default());
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    let effects = step(&mut state, respond(vec![Item::ToolCall(call("c", "read_file"))]));
    assert!(matches!(
        effects.last(),
        Some(Effect::TurnEnded { outcome: TurnOutcome::MaxSteps, .. })
    ));
    assert!(matches!(state.items.last(), Some(Item::ToolResult(r)) if r.is_error));
}

#[test]
fn interrupt_while_running_answers_every_open_call() {
    let mut state = LoopState::open(config(ApprovalMode::Auto, 10), Opening::default());
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    step(
        &mut state,
        respond(vec![Item::ToolCall(call("a", "shell")), Item::ToolCall(call("b", "shell"))]),
    );
    let effects = step(&mut state, Input::Interrupted);
    assert!(matches!(
        effects.last(),
        Some(Effect::TurnEnded { outcome: TurnOutcome::Interrupted, .. })
    ));
    assert_eq!(state.phase, LoopPhase::Idle);
    assert_eq!(unanswered_calls(&state.items), Vec::<String>::new());
}

#[test]
fn model_failure_fails_the_turn() {
    let mut state = LoopState::open(config(ApprovalMode::Ask, 10), Opening::default());
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    let effects = step(&mut state, Input::ModelFailed { message: "boom".into() });
    assert!(effects.contains(&Effect::Record(SessionEvent::ModelError { message: "boom".into() })));
    assert!(matches!(effects.last(), Some(Effect::TurnEnded { outcome: TurnOutcome::Failed, .. })));
}

#[test]
fn stale_inputs_change_nothing() {
    let mut state = LoopState::open(config(ApprovalMode::Ask, 10), Opening::default());
    let before = state.clone();
    assert!(step(&mut state, Input::BatchFinished { results: vec![] }).is_empty());
    assert!(step(&mut state, Input::Interrupted).is_empty());
    assert_eq!(state, before);
}

fn unanswered_calls(items: &[Item]) -> Vec<String> {
    let mut open: Vec<String> = Vec::new();
    for item in items {
        match item {
            Item::ToolCall(c) => open.push(c.call_id.clone()),
            Item::ToolResult(r) => open.retain(|id| *id != r.call_id),
            Item::User { .. }
            | Item::Assistant { .. }
            | Item::Reasoning(_)
            | Item::Context { .. } => {}
        }
    }
    open
}

#[derive(Debug, Clone)]
enum Move {
    Respond(Vec<(bool, bool)>),
    Approve(bool),
    Finish,
    Interrupt,
    Fail,
}

fn moves() -> impl Strategy<Value = Vec<Move>> {
    let one = prop_oneof![
        prop::collection::vec((any::<bool>(), any::<bool>()), 0..4).prop_map(Move::Respond),
        any::<bool>().prop_map(Move::Approve),
        Just(Move::Finish),
        Just(Move::Interrupt),
        Just(Move::Fail),
    ];
    prop::collection::vec(one, 1..40)
}

proptest! {
    /// Whatever happens, once the loop is idle every call has exactly one
    /// result and the log records the same results the history holds.
    #[test]
    fn every_call_is_answered_once_idle(moves in moves(), full_auto in any::<bool>()) {
        let mode = if full_auto { ApprovalMode::Auto } else { ApprovalMode::Ask };
        let mut state = LoopState::open(config(mode, 3), Opening::default());
        let mut recorded_results = 0usize;
        let mut next_id = 0u32;
        let mut last_effects = step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
        for mv in moves {
            recorded_results += last_effects.iter().filter(|e| matches!(e, Effect::Record(SessionEvent::ToolCallFinished { .. }))).count();
            let input = match mv {
                Move::Respond(calls) => respond(calls.into_iter().map(|(write, _)| {
                    next_id += 1;
                    Item::ToolCall(call(&format!("c{next_id}"), if write { "shell" } else { "read_file" }))
                }).collect()),
                Move::Approve(yes) => match last_effects.last() {
                    Some(Effect::AskApproval { call, .. }) => Input::ApprovalDecided { call_id: call.call_id.clone(), approved: yes, note: None, scope: ApprovalScope::Once },
                    _ => Input::Interrupted,
                },
                Move::Finish => match last_effects.last() {
                    Some(Effect::RunBatch { calls, .. }) => Input::BatchFinished { results: calls.iter().map(|c| ok(&c.call_id)).collect() },
                    _ => respond(vec![Item::Assistant { text: "done".into() }]),
                },
                Move::Interrupt => Input::Interrupted,
                Move::Fail => Input::ModelFailed { message: "x".into() },
            };
            last_effects = step(&mut state, input);
            if state.phase.is_idle() {
                recorded_results += last_effects.iter().filter(|e| matches!(e, Effect::Record(SessionEvent::ToolCallFinished { .. }))).count();
                prop_assert_eq!(unanswered_calls(&state.items), Vec::<String>::new());
                let in_history = state.items.iter().filter(|i| matches!(i, Item::ToolResult(_))).count();
                prop_assert_eq!(in_history, recorded_results);
                last_effects = step(&mut state, Input::UserTurn { text: "again".into(), images: Vec::new() });
            }
        }
    }
}

fn shell_call(id: &str, command: &str) -> ToolCall {
    let arguments = serde_json::json!({ "command": command }).to_string();
    ToolCall {
        call_id: id.into(),
        name: "shell".into(),
        arguments,
        item_id: None,
        provider_data: None,
    }
}

/// Index of the first effect matching `pred`.
fn position(effects: &[Effect], pred: impl Fn(&Effect) -> bool) -> usize {
    effects.iter().position(pred).unwrap_or_else(|| panic!("not found in {effects:?}"))
}

fn decision_of(effects: &[Effect], id: &str) -> usize {
    position(
        effects,
        |e| matches!(e, Effect::Record(SessionEvent::PolicyDecision { call_id, .. }) if call_id == id),
    )
}

#[test]
fn every_judged_call_has_its_policy_decision_recorded_before_it_runs_is_asked_or_refused() {
    let mut config = config(ApprovalMode::Ask, 10);
    let rules = "prefix_rule(pattern=[\"curl\"], decision=\"forbidden\", \
                 justification=\"no network from the agent\")";
    config.policy.rules.load("user.rules", rules, crate::policy::Origin::User).unwrap();
    let mut state = LoopState::open(config, Opening::default());
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    let effects = step(
        &mut state,
        respond(vec![
            Item::ToolCall(call("r", "read_file")),
            Item::ToolCall(shell_call("x", "curl http://example.com")),
            Item::ToolCall(shell_call("w", "touch a")),
        ]),
    );
    let decisions: Vec<(&str, &str)> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::Record(SessionEvent::PolicyDecision { call_id, decision, .. }) => {
                Some((call_id.as_str(), decision.as_str()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(decisions, [("r", "allow"), ("x", "forbidden"), ("w", "prompt")]);
    let Effect::Record(SessionEvent::PolicyDecision { matched_rules, reason, .. }) =
        &effects[decision_of(&effects, "x")]
    else {
        unreachable!()
    };
    assert_eq!(matched_rules.len(), 1, "{matched_rules:?}");
    assert_eq!(matched_rules[0]["decision"], "forbidden");
    assert_eq!(matched_rules[0]["pattern"], serde_json::json!(["curl"]));
    assert_eq!(matched_rules[0]["justification"], "no network from the agent");
    assert!(reason.as_deref().is_some_and(|r| !r.is_empty()), "{reason:?}");
    let ran = position(&effects, |e| matches!(e, Effect::RunBatch { .. }));
    assert!(decision_of(&effects, "r") < ran);
    assert!(decision_of(&effects, "w") < ran, "all decisions come before any call runs");

    let effects = step(&mut state, Input::BatchFinished { results: vec![ok("r")] });
    let refused = position(
        &effects,
        |e| matches!(e, Effect::Record(SessionEvent::ToolCallFinished { result, .. }) if result.call_id == "x"),
    );
    let asked = position(&effects, |e| matches!(e, Effect::AskApproval { .. }));
    assert!(refused < asked, "{effects:?}");
    assert!(
        !effects.iter().any(|e| matches!(e, Effect::Record(SessionEvent::PolicyDecision { .. }))),
        "judged once: {effects:?}"
    );
}

#[test]
fn harness_calls_are_not_judged_by_policy() {
    let mut state = LoopState::open(config(ApprovalMode::Ask, 10), Opening::default());
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    let todo = ToolCall {
        call_id: "t".into(),
        name: "todo_write".into(),
        arguments: serde_json::json!({ "todos": [] }).to_string(),
        item_id: None,
        provider_data: None,
    };
    let effects = step(&mut state, respond(vec![Item::ToolCall(todo)]));
    assert!(
        !effects.iter().any(|e| matches!(e, Effect::Record(SessionEvent::PolicyDecision { .. }))),
        "{effects:?}"
    );
}

// Issue 32: strict tool calling makes the model send `null` for every
// optional field it leaves out, and to keel's tools a `null` is an absent
// field. The call is judged, asked about, hooked and logged without them
// (what the user approves is the call as it runs); the history keeps what
// the model sent (the next request sends it back), and an MCP tool, never
// strict, gets its arguments as written.
#[test]
fn a_strict_calls_nulls_are_dropped_where_it_enters_the_loop() {
    let mut state = LoopState::open(config(ApprovalMode::Ask, 10), Opening::default());
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    let sent = r#"{"command":"touch a","timeout_ms":null,"workdir":null,"background":null}"#;
    let effects = step(&mut state, respond(vec![Item::ToolCall(call_with("c", "shell", sent))]));
    let Some(Effect::AskApproval { call, .. }) = effects.last() else { panic!("{effects:?}") };
    assert_eq!(call.arguments, r#"{"command":"touch a"}"#);
    assert_eq!(crate::display::approval_text(call), "$ touch a");
    let started = effects.iter().any(|effect| {
        matches!(effect, Effect::Record(SessionEvent::PolicyDecision { call_id, .. }) if call_id == "c")
    });
    assert!(started, "the call was judged: {effects:?}");
    let kept =
        state.items().iter().any(|item| matches!(item, Item::ToolCall(c) if c.arguments == sent));
    assert!(kept, "the history keeps the model's own call");
    let mcp = call_with("m", "mcp__srv__tool", r#"{"x":null}"#);
    assert_eq!(state.real_call(&mcp).arguments, r#"{"x":null}"#);
}
