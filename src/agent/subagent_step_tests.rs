//! The loop's side of subagents and custom commands: an `agent` call has
//! its type's class (read-only children share a concurrent batch, writers
//! run alone), a narrowed loop refuses tools outside its scope before
//! policy judges them, and a custom command's pre-approvals hold for its
//! turn.

use std::collections::{BTreeMap, BTreeSet};

use super::test_support::step_checked as step;
use super::test_support::{call_with, config};
use super::*;
use crate::policy::ApprovalMode;
use crate::protocol::{Item, ModelResponse, SessionEvent, StopReason, ToolClass, Usage};

fn respond(calls: Vec<crate::protocol::ToolCall>) -> Input {
    Input::ModelResponded(ModelResponse {
        items: calls.into_iter().map(Item::ToolCall).collect(),
        usage: Usage::default(),
        stop_reason: StopReason::ToolUse,
        response_id: None,
    })
}

fn agent(id: &str, agent: &str) -> crate::protocol::ToolCall {
    let args = serde_json::json!({"agent": agent, "description": "d", "prompt": "p"});
    call_with(id, AGENT_TOOL, &args.to_string())
}

fn batches_of(effects: &[Effect]) -> Vec<(Vec<String>, bool)> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::RunBatch { calls, concurrent } => {
                Some((calls.iter().map(|c| c.call_id.clone()).collect(), *concurrent))
            }
            Effect::Record(_)
            | Effect::CallModel(_)
            | Effect::AskApproval { .. }
            | Effect::AskUser { .. }
            | Effect::PersistRule { .. }
            | Effect::SavePlan { .. }
            | Effect::Summarize { .. }
            | Effect::Compacted { .. }
            | Effect::AskRaiseLimit(_)
            | Effect::ConfirmCall { .. }
            | Effect::CheckCalls { .. }
            | Effect::Warn(_)
            | Effect::RerunUnsandboxed { .. }
            | Effect::RunPostToolHooks { .. }
            | Effect::TurnEnded { .. } => None,
        })
        .collect()
}

#[test]
fn read_only_subagents_run_together_and_writers_alone() {
    let mut config = config(ApprovalMode::Auto, 10);
    config.tool_classes.insert(AGENT_TOOL.into(), ToolClass::ReadOnly);
    config.agent_classes = BTreeMap::from([
        ("explore".to_owned(), ToolClass::ReadOnly),
        ("verify".to_owned(), ToolClass::Mutating),
    ]);
    let mut state = LoopState::open(config, Opening::default());
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    let effects = step(
        &mut state,
        respond(vec![agent("a", "explore"), agent("b", "explore"), agent("c", "verify")]),
    );
    assert_eq!(batches_of(&effects), [(vec!["a".to_owned(), "b".to_owned()], true)]);
    let started: Vec<ToolClass> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::Record(SessionEvent::ToolCallStarted { class, .. }) => Some(*class),
            _ => None,
        })
        .collect();
    assert_eq!(started, [ToolClass::ReadOnly, ToolClass::ReadOnly]);
    let results = ["a", "b"]
        .iter()
        .map(|id| (crate::protocol::ToolResult::ok(*id, "x"), crate::protocol::ToolMeta::new()))
        .collect();
    let effects = step(&mut state, Input::BatchFinished { results });
    assert_eq!(batches_of(&effects), [(vec!["c".to_owned()], false)], "a writer runs alone");
    // An unknown type never runs: read-only as far as the schedule goes.
    assert_eq!(state.class_of_call(&agent("d", "nope")), ToolClass::ReadOnly);
}

#[test]
fn a_narrowed_loop_refuses_other_tools_before_policy() {
    let mut config = config(ApprovalMode::Yolo, 10);
    config.tool_scope = Some(ToolScope {
        owner: "the read-only explore agent".into(),
        tools: BTreeSet::from(["read_file".to_owned(), "grep".to_owned()]),
    });
    let mut state = LoopState::open(config, Opening::default());
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    let write = call_with("w", "write_file", r#"{"path":"a.txt","content":"x"}"#);
    let read = call_with("r", "read_file", r#"{"path":"a.txt"}"#);
    let submit = call_with("s", "submit_plan", r#"{"plan_markdown":"x"}"#);
    let effects = step(&mut state, respond(vec![write, read, submit]));
    // Only the read runs, even in yolo mode.
    assert_eq!(batches_of(&effects), [(vec!["r".to_owned()], true)]);
    let decisions: Vec<(&str, &str)> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::Record(SessionEvent::PolicyDecision { call_id, decision, .. }) => {
                Some((call_id.as_str(), decision.as_str()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(decisions, [("w", "forbidden"), ("r", "allow"), ("s", "forbidden")]);
    let refusal = state
        .items
        .iter()
        .find_map(|item| match item {
            Item::ToolResult(result) if result.call_id == "w" => Some(result.output.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        refusal,
        "not run: `write_file` is not one of the read-only explore agent's tools \
         (it may use: grep, read_file)"
    );
}

/// Policy's decision on each call `effects` judged, by call id.
fn decisions(effects: &[Effect]) -> Vec<(String, String)> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Record(SessionEvent::PolicyDecision { call_id, decision, .. }) => {
                Some((call_id.clone(), decision.clone()))
            }
            _ => None,
        })
        .collect()
}

fn shell(id: &str, command: &str) -> crate::protocol::ToolCall {
    call_with(id, "shell", &serde_json::json!({ "command": command }).to_string())
}

fn commit_approvals() -> TurnApprovals {
    let words = |list: &[&str]| list.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
    let mut allowlist = crate::policy::Allowlist::default();
    allowlist.prefixes.insert(words(&["git", "add"]));
    allowlist.commands.insert(words(&["make", "test"]));
    allowlist.tools.insert("mcp__docs__*".to_owned());
    TurnApprovals { owner: "the /commit command".into(), allowlist }
}

/// Issue 36: a command's `allowed-tools` pre-approve its turn's commands
/// (a prefix, an exact command) and a server's MCP tools, as an "always"
/// answer would; an unlisted tool is judged as usual (asked, not
/// refused). The turn's end clears them, and a rebuild of the open turn
/// keeps them. Failed before: the turn was narrowed instead (`write_file`
/// "is not one of the /look command's tools", `git add` asked).
#[test]
fn a_commands_preapprovals_hold_for_its_turn_only_and_come_back_on_a_rebuild() {
    let mut config = config(ApprovalMode::Ask, 10);
    for tool in ["mcp__docs__write", "mcp__web__post"] {
        config.tool_classes.insert(tool.into(), ToolClass::Mutating);
    }
    let mut state = LoopState::open(config.clone(), Opening::default());
    let mut log = Vec::new();
    let run = |state: &mut LoopState, input: Input, log: &mut Vec<SessionEvent>| {
        let effects = step(state, input);
        log.extend(effects.iter().filter_map(|e| match e {
            Effect::Record(event) => Some(event.clone()),
            _ => None,
        }));
        effects
    };
    run(&mut state, Input::PreapproveTurn { approvals: commit_approvals() }, &mut log);
    assert!(matches!(log.as_slice(), [SessionEvent::TurnScope { .. }]), "recorded: {log:?}");
    run(&mut state, Input::UserTurn { text: "commit".into(), images: Vec::new() }, &mut log);
    let write = call_with("w", "write_file", r#"{"path":"a.txt","content":"x"}"#);
    let calls = vec![
        shell("add", "git add a.txt"),
        shell("make", "make test"),
        shell("more", "make test install"),
        call_with("docs", "mcp__docs__write", "{}"),
        call_with("web", "mcp__web__post", "{}"),
        write.clone(),
    ];
    let effects = run(&mut state, respond(calls), &mut log);
    let judged = |id: &str, decision: &str| (id.to_owned(), decision.to_owned());
    assert_eq!(
        decisions(&effects),
        [
            judged("add", "allow"),
            judged("make", "allow"),
            judged("more", "prompt"),
            judged("docs", "allow"),
            judged("web", "prompt"),
            judged("w", "prompt"),
        ],
        "the unlisted write is asked about, not refused"
    );

    // A crash here: the rebuilt open turn keeps its pre-approvals.
    let records: Vec<crate::protocol::EventRecord> = log
        .iter()
        .enumerate()
        .map(|(i, event)| crate::protocol::EventRecord {
            v: 1,
            seq: i as u64,
            ts: String::new(),
            event: event.clone(),
        })
        .collect();
    let mut rebuilder = Rebuilder::new(config);
    for record in records {
        rebuilder.apply(record);
    }
    let rebuilt = rebuilder.finish();
    assert!(rebuilt.open_turn.is_some());
    assert_eq!(rebuilt.state.turn_approvals, Some(commit_approvals()));

    // The turn's end clears them: the next turn's `git add` is asked again.
    let mut state =
        LoopState::open(super::test_support::config(ApprovalMode::Ask, 10), Opening::default());
    run(&mut state, Input::PreapproveTurn { approvals: commit_approvals() }, &mut log);
    run(&mut state, Input::UserTurn { text: "commit".into(), images: Vec::new() }, &mut log);
    let answer = Input::ModelResponded(ModelResponse {
        items: vec![Item::Assistant { text: "done".into() }],
        usage: Usage::default(),
        stop_reason: StopReason::EndTurn,
        response_id: None,
    });
    run(&mut state, answer, &mut log);
    assert_eq!(state.turn_approvals, None);
    run(&mut state, Input::UserTurn { text: "again".into(), images: Vec::new() }, &mut log);
    let effects = run(&mut state, respond(vec![shell("add2", "git add b.txt")]), &mut log);
    assert_eq!(decisions(&effects), [judged("add2", "prompt")]);
}

/// A pre-approval is an "always" answer, not a mode: a read-only mode
/// still refuses what it covers.
#[test]
fn a_preapproved_command_is_still_refused_in_a_read_only_mode() {
    let mut state = LoopState::open(config(ApprovalMode::Explore, 10), Opening::default());
    step(&mut state, Input::PreapproveTurn { approvals: commit_approvals() });
    step(&mut state, Input::UserTurn { text: "commit".into(), images: Vec::new() });
    let effects = step(&mut state, respond(vec![shell("add", "git add a.txt")]));
    assert_eq!(decisions(&effects), [("add".to_owned(), "forbidden".to_owned())]);
}

/// Drives a session with a 1 000-token limit through a child that spent
/// `usage` (as reported) and `estimated` (at keel's estimate), then asks
/// for the next request: whether it was stopped, the state, and the log.
fn delegate(usage: Usage, estimated: Unreported) -> (bool, LoopState, Vec<SessionEvent>) {
    let mut config = config(ApprovalMode::Auto, 10);
    config.limits.spend.max_tokens = Some(1_000);
    let mut state = LoopState::open(config, Opening::default());
    let opened = SubagentOpened {
        call_id: "a".into(),
        session_id: "child".into(),
        log_path: "/tmp/child.jsonl".into(),
        agent: "explore".into(),
        description: "look".into(),
    };
    let mut log: Vec<SessionEvent> = Vec::new();
    let mut run = |state: &mut LoopState, input: Input| {
        let effects = step(state, input);
        log.extend(effects.iter().filter_map(|e| match e {
            Effect::Record(event) => Some(event.clone()),
            _ => None,
        }));
        effects
    };
    run(&mut state, Input::SubagentStarted(opened));
    let done = SubagentDone {
        call_id: "a".into(),
        session_id: "child".into(),
        outcome: crate::protocol::TurnOutcome::Completed,
        usage,
        cost_usd: Some(0.5),
        estimated,
    };
    run(&mut state, Input::SubagentFinished(done));
    let effects = run(&mut state, Input::UserTurn { text: "go on".into(), images: Vec::new() });
    let stopped = effects.iter().any(|e| matches!(e, Effect::AskRaiseLimit(_)));
    (stopped, state, log)
}

fn rebuilt(log: Vec<SessionEvent>) -> LoopState {
    let mut rebuilder = Rebuilder::new(super::test_support::config(ApprovalMode::Auto, 10));
    for (seq, event) in log.into_iter().enumerate() {
        rebuilder.apply(crate::protocol::EventRecord {
            v: 1,
            seq: seq as u64,
            ts: String::new(),
            event,
        });
    }
    rebuilder.finish().state
}

#[test]
fn a_subagents_spend_counts_against_the_limits_and_comes_back_on_a_rebuild() {
    let usage = Usage { input_tokens: 900, output_tokens: 200, ..Usage::default() };
    let (stopped, state, log) = delegate(usage, Unreported::default());
    assert_eq!(state.delegated.usage, usage);
    // The child spent past the limit: the next request is not sent.
    assert!(stopped, "the child's spend counts");
    assert_eq!(rebuilt(log).delegated, state.delegated);
}

/// A child whose server reported no usage passes its estimates up: they
/// count in the parent's spend (before, only its reported usage did, so
/// a parent delegating to children on such a server never stopped), are
/// logged apart from its usage and come back on a rebuild.
#[test]
fn a_subagents_estimated_spend_counts_against_the_limits_and_comes_back_on_a_rebuild() {
    let estimated = Unreported { tokens: 1_100, cost_usd: 0.02 };
    let (stopped, state, log) = delegate(Usage::default(), estimated);
    assert!(stopped, "the child's estimates count");
    assert_eq!(state.spent().tokens, 1_100);
    assert_eq!(state.delegated.usage, Usage::default(), "estimates are not usage");
    let finished = log.iter().find_map(|event| match event {
        SessionEvent::SubagentFinished { usage, estimated_tokens, estimated_cost_usd, .. } => {
            Some((*usage, *estimated_tokens, *estimated_cost_usd))
        }
        _ => None,
    });
    assert_eq!(finished, Some((Usage::default(), Some(1_100), Some(0.02))));
    let rebuilt = rebuilt(log);
    assert_eq!(rebuilt.delegated, state.delegated);
    assert_eq!(rebuilt.spent(), state.spent());
}

/// An older keel's `turn_scope` line named the only tools its turn could
/// call: a resume reads it as no pre-approval and narrows nothing.
#[test]
fn an_older_logs_narrowing_is_read_as_nothing_pre_approved() {
    let line = r#"{"type":"turn_scope","owner":"the /look command","tools":["read_file"]}"#;
    let event: SessionEvent = serde_json::from_str(line).unwrap();
    let mut state = LoopState::open(config(ApprovalMode::Ask, 10), Opening::default());
    state.apply(&event);
    assert_eq!(state.scope_refusal("write_file"), None);
    let approvals = state.turn_approvals().unwrap();
    assert_eq!(approvals.allowlist, crate::policy::Allowlist::default());
}
