//! The workflow through [`step`]: harness tools answered by the loop,
//! phase enforcement, the plan review and the verification gate.

use std::collections::BTreeMap;

use super::*;
use crate::plan::PlanStatus;
use crate::policy::{ApprovalMode, ApprovalScope, PathContext, Policy, RuleSet};
use crate::protocol::{
    Item, ModelResponse, PrefixSections, SessionEvent, StopReason, ToolCall, ToolClass, ToolMeta,
    ToolResult, TurnOutcome, Usage,
};

/// Every plan submitted in these tests is saved (see
/// `decisions_tests` for the save itself).
fn step(state: &mut LoopState, input: Input) -> Vec<Effect> {
    super::test_support::step_saving_plans(state, input)
}

fn state(approval: ApprovalMode) -> LoopState {
    let mut tool_classes = BTreeMap::from([
        ("read_file".to_owned(), ToolClass::ReadOnly),
        ("write_file".to_owned(), ToolClass::Mutating),
        ("edit_file".to_owned(), ToolClass::Mutating),
        ("shell".to_owned(), ToolClass::Mutating),
    ]);
    for tool in crate::protocol::HarnessTool::ALL {
        tool_classes.insert(tool.name().to_owned(), tool.class());
    }
    let paths = PathContext::new("/home/u", "/home/u/ws", "/home/u/ws");
    let mut policy = Policy::new(RuleSet::default(), approval, paths);
    // As if commands run confined, so auto mode lets them run.
    policy.sandboxed = true;
    LoopState::open(
        LoopConfig {
            model: "m".into(),
            prefix: PrefixSections { core: "be helpful".into(), ..PrefixSections::default() },
            tools: harness_specs(&shipped_rules()),
            tool_classes,
            policy,
            limits: super::Limits::with_max_steps(30),
            pricing: crate::context::Pricing::default(),
            configured: crate::agent::ConfiguredModel {
                model: "m".into(),
                pricing: crate::context::Pricing::default(),
                one_hour_cache: false,
            },
            context_window: None,
            max_output_tokens: None,
            compact_threshold: 0.85,
            token_scale: crate::context::tokens::TokenScale::IDENTITY,
            post_tool_hooks: false,
            pre_tool_hooks: false,
            agent_classes: BTreeMap::new(),
            tool_scope: None,
            walls: crate::prompts::Walls::default(),
            strict_tools: None,
        },
        Opening::default(),
    )
}

fn call(id: &str, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall {
        call_id: id.into(),
        name: name.into(),
        arguments: args.to_string(),
        item_id: None,
        provider_data: None,
    }
}

fn respond(calls: Vec<ToolCall>) -> Input {
    let items: Vec<Item> = if calls.is_empty() {
        vec![Item::Assistant { text: "done".into() }]
    } else {
        calls.into_iter().map(Item::ToolCall).collect()
    };
    Input::ModelResponded(ModelResponse {
        items,
        usage: Usage::default(),
        stop_reason: StopReason::EndTurn,
        response_id: None,
    })
}

fn result_of<'a>(state: &'a LoopState, id: &str) -> &'a ToolResult {
    state
        .items
        .iter()
        .find_map(|item| match item {
            Item::ToolResult(result) if result.call_id == id => Some(result),
            Item::User { .. }
            | Item::Assistant { .. }
            | Item::Reasoning(_)
            | Item::ToolCall(_)
            | Item::ToolResult(_)
            | Item::Context { .. } => None,
        })
        .unwrap_or_else(|| panic!("no result for {id}"))
}

fn runs(effects: &[Effect]) -> Vec<String> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::RunBatch { calls, .. } => Some(calls.iter().map(|c| c.call_id.clone())),
            _ => None,
        })
        .flatten()
        .collect()
}

fn phase_moves(effects: &[Effect]) -> Vec<(String, String)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Record(SessionEvent::PhaseChanged { from, to }) => {
                Some((from.clone(), to.clone()))
            }
            _ => None,
        })
        .collect()
}

fn set_phase(id: &str, phase: &str) -> ToolCall {
    call(id, "set_phase", serde_json::json!({ "phase": phase, "note": "n" }))
}

fn shell(id: &str, command: &str) -> ToolCall {
    call(id, "shell", serde_json::json!({ "command": command }))
}

fn finished(id: &str, exit_code: i64, changed: bool) -> Input {
    let meta = ToolMeta::details(serde_json::json!({ "exit_code": exit_code, "changed": changed }));
    Input::BatchFinished { results: vec![(ToolResult::ok(id, "out"), meta)] }
}

#[test]
fn a_typo_fix_goes_orient_implement_verify_deliver_without_a_plan() {
    let mut state = state(ApprovalMode::Auto);
    step(&mut state, Input::UserTurn { text: "fix the typo".into(), images: Vec::new() });
    let effects = step(&mut state, respond(vec![set_phase("p1", "implement")]));
    assert_eq!(phase_moves(&effects), vec![("orient".into(), "implement".into())]);
    assert!(!result_of(&state, "p1").is_error);
    let write = call("w", "edit_file", serde_json::json!({ "path": "README.md" }));
    let effects = step(&mut state, respond(vec![write]));
    assert_eq!(runs(&effects), vec!["w"]);
    step(&mut state, finished("w", 0, true));
    let effects = step(&mut state, respond(vec![set_phase("p2", "deliver")]));
    assert!(phase_moves(&effects).is_empty());
    assert!(result_of(&state, "p2").is_error, "deliver needs verification first");
    step(&mut state, respond(vec![set_phase("p3", "verify"), shell("t", "cargo test")]));
    step(&mut state, finished("t", 0, false));
    step(&mut state, respond(vec![set_phase("p4", "deliver")]));
    assert!(!result_of(&state, "p4").is_error, "{:?}", result_of(&state, "p4"));
    assert_eq!(state.workflow.flow.phase, "deliver");
    assert!(!state.workflow.flow.delivers_unverified());
    let effects = step(&mut state, respond(vec![]));
    assert!(matches!(
        effects.last(),
        Some(Effect::TurnEnded { outcome: TurnOutcome::Completed, .. })
    ));
}

#[test]
fn a_first_write_enters_implement_and_a_new_turn_after_deliver_starts_over() {
    let mut state = state(ApprovalMode::Auto);
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    let write = call("w", "write_file", serde_json::json!({ "path": "a.txt" }));
    let effects = step(&mut state, respond(vec![write]));
    assert_eq!(phase_moves(&effects), vec![("orient".into(), "implement".into())]);
    assert_eq!(runs(&effects), vec!["w"]);
    step(&mut state, finished("w", 0, true));
    step(&mut state, respond(vec![]));
    assert!(state.workflow.flow.delivers_unverified(), "changed and never verified");
    state.workflow.flow.phase = "deliver".into();
    let effects = step(&mut state, Input::UserTurn { text: "next".into(), images: Vec::new() });
    assert_eq!(phase_moves(&effects), vec![("deliver".into(), "orient".into())]);
    assert_eq!(state.workflow.flow.changes, 0);
}

#[test]
fn in_plan_mode_a_write_before_approval_is_refused_and_never_run() {
    let mut state = state(ApprovalMode::Auto);
    state.workflow.flow.plan_required = true;
    step(&mut state, Input::UserTurn { text: "refactor".into(), images: Vec::new() });
    let write = call("w", "write_file", serde_json::json!({ "path": "a.rs" }));
    let effects = step(&mut state, respond(vec![write]));
    assert!(runs(&effects).is_empty());
    let refusal = result_of(&state, "w");
    assert!(refusal.is_error && refusal.output.contains("plan"), "{refusal:?}");
    assert_eq!(state.workflow.flow.phase, "orient");
}

#[test]
fn in_the_plan_phase_a_write_is_refused_even_without_a_required_plan() {
    let mut state = state(ApprovalMode::Auto);
    step(&mut state, Input::UserTurn { text: "plan it".into(), images: Vec::new() });
    step(&mut state, respond(vec![set_phase("p", "plan")]));
    let write = call("w", "write_file", serde_json::json!({ "path": "a.rs" }));
    let effects = step(&mut state, respond(vec![write, shell("s", "touch b")]));
    assert!(runs(&effects).is_empty(), "nothing ran");
    assert!(phase_moves(&effects).is_empty(), "no implicit move out of plan");
    for id in ["w", "s"] {
        let refusal = result_of(&state, id);
        assert!(refusal.is_error && refusal.output.contains("plan phase"), "{refusal:?}");
        assert!(refusal.output.contains("set_phase to one of: implement"), "{refusal:?}");
    }
    assert_eq!(state.workflow.flow.phase, "plan");
}

#[test]
fn a_submitted_plan_goes_through_the_approval_path() {
    let mut state = state(ApprovalMode::Auto);
    state.workflow.flow.plan_required = true;
    step(&mut state, Input::UserTurn { text: "refactor".into(), images: Vec::new() });
    let plan = call("s1", "submit_plan", serde_json::json!({ "plan_markdown": "1. do it" }));
    let effects = step(&mut state, respond(vec![plan]));
    assert_eq!(phase_moves(&effects), vec![("orient".into(), "plan".into())]);
    let Some(Effect::AskApproval { reason, .. }) = effects.last() else {
        panic!("expected a review: {effects:?}")
    };
    assert!(reason.contains("1. do it"));
    let decided = |approved: bool, id: &str, note: Option<&str>| Input::ApprovalDecided {
        call_id: id.into(),
        approved,
        note: note.map(str::to_owned),
        scope: ApprovalScope::Once,
    };
    step(&mut state, decided(false, "s1", Some("smaller")));
    assert!(result_of(&state, "s1").output.contains("smaller"));
    let plan = call("s2", "submit_plan", serde_json::json!({ "plan_markdown": "1. smaller" }));
    step(&mut state, respond(vec![plan]));
    step(&mut state, decided(true, "s2", None));
    let flow = &state.workflow.flow;
    assert_eq!(
        flow.plan.as_ref().map(|p| (&p.status, p.revision)),
        Some((&PlanStatus::Approved, 2))
    );
    let write = call("w", "write_file", serde_json::json!({ "path": "a.rs" }));
    let effects = step(&mut state, respond(vec![set_phase("p", "implement"), write]));
    assert_eq!(runs(&effects), vec!["w"]);
}

#[test]
fn plan_only_stops_the_turn_after_the_plan() {
    let mut state = state(ApprovalMode::Ask);
    state.workflow.flow.plan_required = true;
    state.workflow.review = PlanReview::StopAfterSubmit;
    step(&mut state, Input::UserTurn { text: "plan it".into(), images: Vec::new() });
    let plan = call("s", "submit_plan", serde_json::json!({ "plan_markdown": "the plan" }));
    let effects =
        step(&mut state, respond(vec![plan, call("r", "read_file", serde_json::json!({}))]));
    assert!(matches!(
        effects.last(),
        Some(Effect::TurnEnded { outcome: TurnOutcome::Completed, .. })
    ));
    assert!(result_of(&state, "r").is_error, "calls after the plan are not run");
    assert_eq!(state.workflow.flow.plan.as_ref().map(|p| &p.status), Some(&PlanStatus::Submitted));
}

#[test]
fn failed_verifications_send_back_until_the_limit_then_delivery_is_unverified() {
    let mut state = state(ApprovalMode::Auto);
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    step(&mut state, respond(vec![call("w", "write_file", serde_json::json!({ "path": "a" }))]));
    step(&mut state, finished("w", 0, true));
    step(&mut state, respond(vec![set_phase("v", "verify")]));
    for attempt in 0..3 {
        let id = format!("t{attempt}");
        step(&mut state, respond(vec![shell(&id, "cargo test")]));
        let refused = format!("d{attempt}");
        step(&mut state, finished(&id, 101, false));
        step(&mut state, respond(vec![set_phase(&refused, "deliver")]));
        let deliver = result_of(&state, &refused);
        assert_eq!(deliver.is_error, attempt < 2, "attempt {attempt}: {deliver:?}");
    }
    assert!(state.workflow.flow.delivers_unverified());
    assert!(result_of(&state, "d2").output.contains("NOT verified"));
}

#[test]
fn bad_harness_arguments_and_task_lists_are_refused_not_panics() {
    let mut state = state(ApprovalMode::Auto);
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    let broken = ToolCall {
        call_id: "b".into(),
        name: "set_phase".into(),
        arguments: "{not json".into(),
        item_id: None,
        provider_data: None,
    };
    let two_running = serde_json::json!({ "todos": [
        { "id": "1", "text": "a", "status": "in_progress" },
        { "id": "2", "text": "b", "status": "in_progress" },
    ]});
    let good =
        serde_json::json!({ "todos": [{ "id": "1", "text": "a", "status": "in_progress" }] });
    step(
        &mut state,
        respond(vec![
            broken,
            call("t1", "todo_write", two_running),
            call("t2", "todo_write", good),
        ]),
    );
    assert!(result_of(&state, "b").is_error);
    assert!(result_of(&state, "t1").is_error);
    assert!(!result_of(&state, "t2").is_error);
    assert_eq!(state.workflow.tasks.len(), 1);
}

/// The text of the newest context item of `state`'s history.
fn latest_context(state: &LoopState) -> String {
    state
        .items
        .iter()
        .rev()
        .find_map(|item| match item {
            Item::Context { text, .. } => Some(text.clone()),
            Item::User { .. }
            | Item::Assistant { .. }
            | Item::Reasoning(_)
            | Item::ToolCall(_)
            | Item::ToolResult(_) => None,
        })
        .unwrap_or_default()
}

#[test]
fn the_phase_guidance_is_announced_in_the_history_and_the_instructions_stay() {
    let mut state = state(ApprovalMode::Auto);
    let effects = step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    let Some(Effect::CallModel(first)) = effects.last() else { panic!("{effects:?}") };
    assert_eq!(first.instructions, "be helpful", "nothing is added to the instructions");
    let context = latest_context(&state);
    assert!(context.contains("Phase: orient. Understand the request"), "{context}");
    assert!(!context.contains("Tool classes") && !context.contains("Read, Tasks"), "{context}");
    assert!(context.contains("Tools here: todo_write and set_phase."), "{context}");
    assert!(context.contains("# Mode and permissions\n\nMode: auto."), "{context}");
    let todo = call(
        "t",
        "todo_write",
        serde_json::json!({ "todos": [{ "id": "1", "text": "parse", "status": "pending" }] }),
    );
    let effects = step(&mut state, respond(vec![todo, set_phase("p", "explore")]));
    let Some(Effect::CallModel(second)) = effects.last() else { panic!("{effects:?}") };
    assert_eq!(second.instructions, first.instructions);
    assert_eq!(&second.items[..first.items.len()], &first.items[..], "the history only grows");
    assert!(result_of(&state, "t").output.contains("[ ] 1 parse"), "the result shows the list");
    assert!(latest_context(&state).contains("Phase: explore."), "the move is announced");
    let effects = step(&mut state, respond(vec![shell("s", "ls")]));
    assert!(
        !effects.iter().any(|e| matches!(e, Effect::Record(SessionEvent::ContextUpdated { .. }))),
        "nothing changed, nothing announced"
    );
}

#[test]
fn rebuilding_the_log_restores_phase_plan_tasks_and_the_gate() {
    use crate::protocol::EventRecord;
    let mut live = state(ApprovalMode::Auto);
    live.workflow.flow.plan_required = true;
    live.workflow.review = PlanReview::Approve;
    let todos =
        serde_json::json!({ "todos": [{ "id": "1", "text": "fix", "status": "in_progress" }] });
    let plan = serde_json::json!({ "plan_markdown": "1. fix" });
    let inputs = vec![
        Input::UserTurn { text: "go".into(), images: Vec::new() },
        respond(vec![call("t", "todo_write", todos), call("s", "submit_plan", plan)]),
        respond(vec![
            set_phase("p", "implement"),
            call("w", "write_file", serde_json::json!({ "path": "a" })),
        ]),
        finished("w", 0, true),
        respond(vec![set_phase("v", "verify"), shell("c", "cargo test")]),
        finished("c", 1, false),
        respond(vec![]),
    ];
    let mut log = Vec::new();
    for input in inputs {
        for effect in step(&mut live, input) {
            if let Effect::Record(event) = effect {
                let seq = log.len() as u64;
                log.push(EventRecord { v: 1, seq, ts: String::new(), event });
            }
        }
    }
    assert_eq!(live.workflow.flow.phase, "verify");
    assert_eq!(live.workflow.flow.failed_verifications, 1);
    let mut rebuilder = Rebuilder::new(live.config.clone());
    for record in log {
        rebuilder.apply(record);
    }
    let mut rebuilt = rebuilder.finish().state;
    // The plan requirement and review come from the front end's flags.
    rebuilt.workflow.flow.plan_required = true;
    rebuilt.workflow.review = PlanReview::Approve;
    assert_eq!(rebuilt.workflow, live.workflow);
}

/// Entering deliver at the limit without a phase check passing is
/// "unverified" live, and again after a rebuild.
#[test]
fn a_skipped_phase_check_is_unverified_live_and_rebuilt() {
    use crate::plan::{DEFAULT_PHASE_RULES, PhaseRules};
    use crate::protocol::EventRecord;
    let gate = "requires = [\"verified_after_last_change\"]";
    let text = DEFAULT_PHASE_RULES.replace(gate, &format!("{gate}\nchecks = [\"cargo clippy\"]"));
    let rules = PhaseRules::parse(&text).unwrap();
    let mut live = state(ApprovalMode::Auto);
    live.workflow = WorkflowState::with_rules(rules.clone(), false);
    let mut inputs = vec![
        Input::UserTurn { text: "go".into(), images: Vec::new() },
        respond(vec![call("w", "write_file", serde_json::json!({ "path": "a" }))]),
        finished("w", 0, true),
        respond(vec![set_phase("v", "verify"), shell("t", "cargo test")]),
        finished("t", 0, false),
    ];
    for i in 0..3 {
        let id = format!("c{i}");
        inputs.push(respond(vec![shell(&id, "cargo clippy")]));
        inputs.push(finished(&id, 1, false));
    }
    inputs.push(respond(vec![set_phase("d", "deliver")]));
    let mut log = Vec::new();
    for input in inputs {
        for effect in step(&mut live, input) {
            if let Effect::Record(event) = effect {
                let seq = log.len() as u64;
                log.push(EventRecord { v: 1, seq, ts: String::new(), event });
            }
        }
    }
    assert_eq!(live.workflow.flow.phase, "deliver");
    assert!(live.workflow.flow.delivers_unverified(), "clippy never passed");
    assert!(result_of(&live, "d").output.contains("NOT verified"));
    let mut rebuilder = Rebuilder::new(live.config.clone());
    rebuilder.configure_workflow(WorkflowSetup { rules: Some(rules), ..WorkflowSetup::default() });
    for record in log {
        rebuilder.apply(record);
    }
    assert_eq!(rebuilder.finish().state.workflow, live.workflow);
}

#[test]
fn approving_the_plan_in_plan_mode_leaves_it_for_ask_mode() {
    let mut state = state(ApprovalMode::Plan);
    assert!(state.workflow.flow.plan_required, "plan mode requires a plan");
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    let plan = call("s", "submit_plan", serde_json::json!({ "plan_markdown": "1. x" }));
    step(&mut state, respond(vec![plan]));
    let effects = step(
        &mut state,
        Input::ApprovalDecided {
            call_id: "s".into(),
            approved: true,
            note: None,
            scope: ApprovalScope::Once,
        },
    );
    assert!(
        effects.iter().any(
            |e| matches!(e, Effect::Record(SessionEvent::ModeChanged { mode }) if *mode == ApprovalMode::Ask)
        )
    );
    assert_eq!(state.config.policy.mode, ApprovalMode::Ask);
}

#[test]
fn a_fourth_file_without_a_plan_is_written_when_no_plan_is_required() {
    let mut state = state(ApprovalMode::Auto);
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    for (n, file) in ["a", "b", "c", "d"].iter().enumerate() {
        let id = format!("w{n}");
        let write = call(&id, "write_file", serde_json::json!({ "path": file }));
        let effects = step(&mut state, respond(vec![write]));
        assert_eq!(runs(&effects), vec![id.clone()], "file {file}");
        step(&mut state, finished(&id, 0, true));
    }
}

#[test]
fn detected_checks_are_named_in_implement_and_verify_and_open_the_gate() {
    let mut state = state(ApprovalMode::Auto);
    state.workflow.detected_checks = vec!["go test ./...".into(), "make test".into()];
    state.workflow.verify_commands = vec!["make test".into()];
    assert_eq!(state.workflow.checks(), ["make test", "go test ./..."], "configured first, once");
    assert!(!state.workflow.guidance(&[], true).contains("go test"), "not while orienting");
    state.workflow.flow.phase = "verify".into();
    let guidance = state.workflow.guidance(&[], true);
    assert!(guidance.contains("This project's checks: `make test`, `go test ./...`"), "{guidance}");

    state.workflow.flow.phase = "implement".into();
    state.workflow.flow.record_change(Some("a.go"));
    let run = shell("s", "go test ./pkg/...");
    let meta = ToolMeta::details(serde_json::json!({ "exit_code": 0, "changed": false }));
    state.workflow.observe(&run, &ToolResult::ok("s", "ok"), &meta);
    assert!(!state.workflow.flow.delivers_unverified(), "a detected check verified the change");
}

#[test]
fn a_mode_change_and_a_compaction_are_announced_again_and_nothing_else_is() {
    let mut state = state(ApprovalMode::Ask);
    state.environment = "# Environment\n\n- Git: clean".into();
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    let first = latest_context(&state);
    assert!(first.contains("# Environment") && first.contains("Mode: ask."), "{first}");
    step(&mut state, respond(vec![]));
    state.config.policy.mode = ApprovalMode::Auto;
    step(&mut state, Input::UserTurn { text: "again".into(), images: Vec::new() });
    let second = latest_context(&state);
    assert!(second.contains("Mode: auto.") && !second.contains("# Environment"), "{second}");
    assert!(!second.contains("# Workflow"), "the phase did not change: {second}");
    step(&mut state, respond(vec![]));
    // A summary replaced the history: what was announced is gone with it.
    state.items = vec![Item::user("summary")];
    step(&mut state, Input::UserTurn { text: "more".into(), images: Vec::new() });
    let third = latest_context(&state);
    for heading in ["# Environment", "# Mode and permissions", "# Workflow"] {
        assert!(third.contains(heading), "{heading} announced again: {third}");
    }
}

#[test]
fn a_command_proven_read_only_is_a_read_in_orient_and_one_that_may_write_moves_on() {
    let mut state = state(ApprovalMode::Auto);
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    let effects = step(&mut state, respond(vec![shell("l", "git log --oneline -3")]));
    assert!(phase_moves(&effects).is_empty(), "{effects:?}");
    assert_eq!(runs(&effects), vec!["l"], "it runs in orient");
    assert_eq!(state.workflow.flow.phase, "orient");
    let effects = step(&mut state, finished("l", 0, false));
    assert!(
        !effects.iter().any(|e| matches!(e, Effect::Record(SessionEvent::ContextUpdated { .. }))),
        "no phase change to announce"
    );
    let effects = step(&mut state, respond(vec![shell("t", "touch x")]));
    assert_eq!(phase_moves(&effects), vec![("orient".into(), "explore".into())]);
    assert_eq!(runs(&effects), vec!["t"]);
}

#[test]
fn without_an_enforced_sandbox_a_read_only_command_still_leaves_orient() {
    let mut state = state(ApprovalMode::Auto);
    state.config.policy.sandboxed = false;
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    let effects = step(&mut state, respond(vec![shell("l", "git log --oneline -3")]));
    assert_eq!(phase_moves(&effects), vec![("orient".into(), "explore".into())]);
}

#[test]
fn the_guidance_offers_read_only_commands_where_reads_are_allowed_and_commands_run_sandboxed() {
    let state = state(ApprovalMode::Auto);
    let offered = ["read_file", "shell", "todo_write", "set_phase"];
    let orient = state.workflow.guidance(&offered, true);
    assert!(
        orient.contains(
            "Tools here: read_file, todo_write, shell (read-only commands) and set_phase."
        ),
        "{orient}"
    );
    let unsandboxed = state.workflow.guidance(&offered, false);
    assert!(
        unsandboxed.contains("Tools here: read_file, todo_write and set_phase."),
        "{unsandboxed}"
    );
    let mut explore = state.workflow.clone();
    explore.flow.phase = "explore".into();
    let explore = explore.guidance(&offered, true);
    assert!(
        explore.contains("Tools here: read_file, shell, todo_write and set_phase."),
        "{explore}"
    );
}

// Issue 32.6: the list is what the phase admits among the tools offered:
// `agent` and MCP tools (allowed in every phase) are in it, and set_phase
// only where it is offered (a subagent has none).
#[test]
fn tools_here_lists_agent_and_mcp_tools_and_set_phase_only_when_offered() {
    let state = state(ApprovalMode::Auto);
    let offered = ["read_file", "agent", "mcp__gh__search", "todo_write", "set_phase"];
    let orient = state.workflow.guidance(&offered, false);
    assert!(
        orient.contains("Tools here: read_file, agent, todo_write, the MCP tools and set_phase."),
        "{orient}"
    );
    assert!(orient.contains("Any other tool moves you"), "{orient}");
    let child = state.workflow.guidance(&["read_file", "shell"], false);
    assert!(!child.contains("set_phase"), "a subagent is offered no set_phase: {child}");
}

// Issue 32.9: the checks paragraph names no bench fixture's file as every
// project's example, and says a marked command's failure counts.
#[test]
fn the_checks_paragraph_has_no_fixture_name_and_says_verify_counts_failures() {
    let mut flow = state(ApprovalMode::Auto).workflow.clone();
    flow.flow.phase = "implement".into();
    let text = flow.guidance(&["read_file", "shell", "edit_file"], true);
    assert!(!text.contains("test_calc"), "{text}");
    assert!(text.contains("any command you mark `verify: true`"), "{text}");
    assert!(text.contains("fails otherwise"), "{text}");
}
