//! Rebuild and reconciliation, with no I/O: a live run through [`step`]
//! records events; rebuilding from every prefix of them must give the live
//! state back, and continuing must never re-run an answered call.

use super::test_support::{self, call};
use super::*;
use crate::policy::ApprovalMode;
use crate::protocol::{
    EventRecord, Item, ModelResponse, SessionEvent, StopReason, ToolCall, ToolResult, TurnOutcome,
    Usage,
};

fn config(approval: ApprovalMode) -> LoopConfig {
    test_support::config(approval, 10)
}

fn response(items: Vec<Item>) -> Input {
    Input::ModelResponded(ModelResponse {
        items,
        usage: Usage { input_tokens: 7, output_tokens: 3, ..Usage::default() },
        stop_reason: StopReason::EndTurn,
        response_id: None,
    })
}

/// Collects the records of `effects` as log lines.
fn record(effects: &[Effect], log: &mut Vec<EventRecord>) {
    for effect in effects {
        if let Effect::Record(event) = effect {
            let seq = log.len() as u64;
            log.push(EventRecord { v: 1, seq, ts: String::new(), event: event.clone() });
        }
    }
}

/// A full two-turn session: read, write, answer; then a plain answer.
fn live_session() -> (LoopState, Vec<EventRecord>) {
    let mut state = LoopState::new(config(ApprovalMode::Auto));
    let mut log = Vec::new();
    let inputs = vec![
        Input::UserTurn { text: "go".into() },
        response(vec![Item::ToolCall(call("a", "read_file"))]),
        Input::BatchFinished {
            results: vec![(ToolResult::ok("a", "text"), serde_json::Value::Null)],
        },
        response(vec![Item::ToolCall(call("b", "write_file"))]),
        Input::BatchFinished {
            results: vec![(ToolResult::ok("b", "written"), serde_json::Value::Null)],
        },
        response(vec![Item::Assistant { text: "done".into() }]),
        Input::UserTurn { text: "again".into() },
        response(vec![Item::Assistant { text: "ok".into() }]),
    ];
    for input in inputs {
        let effects = step(&mut state, input);
        record(&effects, &mut log);
    }
    (state, log)
}

fn rebuild(records: &[EventRecord]) -> Rebuilt {
    let mut rebuilder = Rebuilder::new(config(ApprovalMode::Auto));
    for record in records {
        rebuilder.apply(record.clone());
    }
    rebuilder.finish()
}

struct Unchanged;
impl FileProbe for Unchanged {
    fn hash(&self, _path: &str) -> Option<String> {
        Some("h0".into())
    }
}

#[test]
fn rebuilding_a_finished_log_gives_the_live_state() {
    let (live, log) = live_session();
    let rebuilt = rebuild(&log);
    assert_eq!(rebuilt.state.items, live.items);
    assert_eq!(rebuilt.state.turn, live.turn);
    assert_eq!(rebuilt.state.session_usage, live.session_usage);
    assert_eq!(rebuilt.open_turn, None);
    assert_eq!(rebuilt.facts.next_seq, log.len() as u64);
}

/// Every prefix, continued with the same scripted outcomes, ends in the
/// live state's conversation shape and never answers a call twice.
#[test]
fn every_prefix_continues_without_answering_a_call_twice() {
    let (_, log) = live_session();
    for cut in 1..log.len() {
        let rebuilt = rebuild(&log[..cut]);
        let mut state = rebuilt.state;
        let Some(open) = rebuilt.open_turn else { continue };
        let effects = reconcile(&mut state, &open, &Unchanged);
        let mut answered: Vec<String> = log[..cut]
            .iter()
            .filter_map(|r| match &r.event {
                SessionEvent::ToolCallFinished { result, .. } => Some(result.call_id.clone()),
                _ => None,
            })
            .collect();
        for effect in &effects {
            match effect {
                Effect::Record(SessionEvent::ToolCallFinished { result, .. }) => {
                    assert!(!answered.contains(&result.call_id), "cut {cut}: answered twice");
                    answered.push(result.call_id.clone());
                }
                Effect::RunBatch { calls, .. } => {
                    for call in calls {
                        assert!(!answered.contains(&call.call_id), "cut {cut}: re-run");
                    }
                }
                _ => {}
            }
        }
        assert!(
            effects.iter().any(|e| matches!(e, Effect::CallModel(_) | Effect::RunBatch { .. })),
            "cut {cut}: the turn goes on: {effects:?}"
        );
    }
}

#[test]
fn a_started_call_without_result_is_reported_interrupted_with_landing() {
    let (_, log) = live_session();
    // Cut right after the write_file call was recorded as started.
    let cut = log
        .iter()
        .position(|r| matches!(&r.event, SessionEvent::ToolCallStarted { call, .. } if call.call_id == "b"))
        .unwrap()
        + 1;
    let mut records = log[..cut].to_vec();
    records.push(EventRecord {
        v: 1,
        seq: cut as u64,
        ts: String::new(),
        event: SessionEvent::FileBefore {
            call_id: "b".into(),
            path: "x.txt".into(),
            before: Some("h0".into()),
        },
    });
    let rebuilt = rebuild(&records);
    let open = rebuilt.open_turn.clone().unwrap();
    assert!(open.calls[0].started);
    let mut state = rebuilt.state;
    let effects = reconcile(&mut state, &open, &Unchanged);
    let Effect::Record(SessionEvent::ToolCallFinished { result, .. }) = &effects[0] else {
        panic!("{effects:?}");
    };
    assert!(result.is_error);
    assert!(result.output.contains("did not land"), "{}", result.output);
    assert!(matches!(effects[1], Effect::CallModel(_)), "then the model is asked again");

    struct Changed;
    impl FileProbe for Changed {
        fn hash(&self, _path: &str) -> Option<String> {
            Some("h1".into())
        }
    }
    let mut state = rebuild(&records).state;
    let effects = reconcile(&mut state, &open, &Changed);
    let Effect::Record(SessionEvent::ToolCallFinished { result, .. }) = &effects[0] else {
        panic!("{effects:?}");
    };
    assert!(result.output.contains("The change landed"), "{}", result.output);
}

#[test]
fn a_call_that_never_started_asks_for_approval_again() {
    let mut state = LoopState::new(config(ApprovalMode::Ask));
    let mut log = Vec::new();
    for input in [
        Input::UserTurn { text: "go".into() },
        response(vec![Item::ToolCall(call("w", "write_file"))]),
    ] {
        let effects = step(&mut state, input);
        record(&effects, &mut log);
    }
    let mut rebuilder = Rebuilder::new(config(ApprovalMode::Ask));
    for r in log {
        rebuilder.apply(r);
    }
    let rebuilt = rebuilder.finish();
    let open = rebuilt.open_turn.unwrap();
    assert!(!open.calls[0].started);
    let mut state = rebuilt.state;
    let effects = reconcile(&mut state, &open, &Unchanged);
    assert!(
        matches!(&effects[..], [
            Effect::Record(SessionEvent::PolicyDecision { call_id, decision, .. }),
            Effect::AskApproval { call, .. },
        ] if call.call_id == "w" && call_id == "w" && decision == "prompt"),
        "judged again, recorded, then asked: {effects:?}"
    );
}

#[test]
fn a_turn_without_its_prompt_is_dropped() {
    let events = [
        SessionEvent::TurnStarted { turn: 1 },
        SessionEvent::UserMessage { text: "a".into() },
        SessionEvent::TurnCompleted {
            turn: 1,
            outcome: TurnOutcome::Completed,
            usage: Usage::default(),
        },
        SessionEvent::TurnStarted { turn: 2 },
    ];
    let records: Vec<EventRecord> = events
        .into_iter()
        .enumerate()
        .map(|(i, event)| EventRecord { v: 1, seq: i as u64, ts: String::new(), event })
        .collect();
    let rebuilt = rebuild(&records);
    assert!(rebuilt.dropped_empty_turn);
    assert_eq!(rebuilt.open_turn, None);
    assert_eq!(rebuilt.state.turn, 1);
}

fn records(events: Vec<SessionEvent>) -> Vec<EventRecord> {
    events
        .into_iter()
        .enumerate()
        .map(|(i, event)| EventRecord { v: 1, seq: i as u64, ts: String::new(), event })
        .collect()
}

fn started(mode: Option<&str>) -> SessionEvent {
    SessionEvent::SessionStarted {
        session_id: "s".into(),
        cwd: "/home/u/ws".into(),
        provider: "p".into(),
        model: "m".into(),
        keel_version: "0".into(),
        git_head: None,
        mode: mode.map(str::to_owned),
    }
}

#[test]
fn the_last_logged_mode_wins_and_plan_mode_requires_a_plan() {
    let mode = |name: &str| SessionEvent::ModeChanged { mode: name.into() };
    let rebuilt = rebuild(&records(vec![started(Some("plan"))]));
    assert_eq!(rebuilt.state.config.policy.mode, ApprovalMode::Plan);
    assert!(rebuilt.state.workflow.flow.plan_required);

    let rebuilt = rebuild(&records(vec![started(Some("plan")), mode("ask"), mode("hologram")]));
    assert_eq!(rebuilt.state.config.policy.mode, ApprovalMode::Ask, "unknown names are skipped");
    assert!(rebuilt.state.workflow.flow.plan_required, "the plan requirement stays, as live");

    let rebuilt = rebuild(&records(vec![started(None)]));
    assert_eq!(rebuilt.state.config.policy.mode, ApprovalMode::Auto, "an older log: the flags'");
}

#[test]
fn lasting_approvals_come_back_and_declined_or_once_ones_do_not() {
    let approval =
        |approved: bool, prefix: Option<&[&str]>, path: Option<&str>| SessionEvent::Approval {
            call_id: "c".into(),
            approved,
            scope: crate::protocol::ApprovalScope::Session,
            note: None,
            prefix: prefix.map(|words| words.iter().map(|w| (*w).to_owned()).collect()),
            path: path.map(str::to_owned),
        };
    let rebuilt = rebuild(&records(vec![
        started(Some("ask")),
        approval(true, Some(&["make", "test"]), None),
        approval(true, None, Some("src/a.rs")),
        approval(false, None, Some("src/b.rs")),
        approval(true, None, None),
    ]));
    let allowlist = &rebuilt.state.allowlist;
    assert!(allowlist.allows(&["make".into(), "test".into(), "-j2".into()]));
    assert_eq!(allowlist.files.iter().collect::<Vec<_>>(), ["src/a.rs"]);
    assert_eq!(allowlist.prefixes.len(), 1);
}

/// A plan left for review (`--plan-only`) keeps requiring approval in a
/// later process, whatever its flags.
#[test]
fn a_plan_waiting_for_review_keeps_the_plan_requirement() {
    let plan = |status: &str| SessionEvent::PlanUpdated {
        plan: serde_json::json!({ "path": "", "text": "1.", "status": status, "revision": 1 }),
    };
    let rebuilt = rebuild(&records(vec![started(Some("auto")), plan("submitted")]));
    assert!(rebuilt.state.workflow.flow.plan_required);
    assert!(rebuilt.state.workflow.flow.plan.is_some());
    let rebuilt = rebuild(&records(vec![started(Some("auto")), plan("approved")]));
    assert!(!rebuilt.state.workflow.flow.plan_required, "an unrequired plan is approved at once");
}

/// Live, approving the plan in plan mode records the switch to ask mode;
/// the rebuild lands on the same mode.
#[test]
fn a_rebuild_after_a_plan_approval_in_plan_mode_is_in_ask_mode() {
    let mut state = LoopState::new(config(ApprovalMode::Plan));
    let mut log = records(vec![started(Some("plan"))]);
    let plan = ToolCall {
        call_id: "p".into(),
        name: "submit_plan".into(),
        arguments: serde_json::json!({ "plan_markdown": "1. do it" }).to_string(),
        item_id: None,
        provider_data: None,
    };
    let phase = ToolCall {
        call_id: "f".into(),
        name: "set_phase".into(),
        arguments: serde_json::json!({ "phase": "plan" }).to_string(),
        item_id: None,
        provider_data: None,
    };
    for input in [
        Input::UserTurn { text: "go".into() },
        response(vec![Item::ToolCall(phase)]),
        response(vec![Item::ToolCall(plan)]),
        Input::ApprovalDecided {
            call_id: "p".into(),
            approved: true,
            note: None,
            scope: crate::policy::ApprovalScope::Once,
        },
    ] {
        let effects = step(&mut state, input);
        record(&effects, &mut log);
    }
    assert_eq!(state.config.policy.mode, ApprovalMode::Ask);
    let mut rebuilder = Rebuilder::new(config(ApprovalMode::Plan));
    for r in log {
        rebuilder.apply(r);
    }
    let rebuilt = rebuilder.finish();
    assert_eq!(rebuilt.state.config.policy.mode, ApprovalMode::Ask);
    assert_eq!(rebuilt.state.workflow.flow, state.workflow.flow);
}

#[test]
fn compaction_replaces_the_history() {
    let (_, mut log) = live_session();
    let seq = log.len() as u64;
    log.push(EventRecord {
        v: 1,
        seq,
        ts: String::new(),
        event: SessionEvent::Compaction {
            items: vec![Item::User { text: "summary".into() }],
            reason: "manual".into(),
            method: "summary".into(),
            tokens_before: 0,
            tokens_after: 0,
            failed_check: None,
        },
    });
    assert_eq!(rebuild(&log).state.items, vec![Item::User { text: "summary".into() }]);
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    /// A random call: a read, a write, a `set_phase` (to a phase picked by
    /// the counter) or a `todo_write`.
    fn random_call(kind: u8, n: usize) -> ToolCall {
        let phases = ["explore", "plan", "implement", "verify", "deliver", "orient"];
        let (name, args) = match kind % 4 {
            0 => ("read_file", serde_json::json!({})),
            1 => ("write_file", serde_json::json!({ "path": format!("f{}", n % 5) })),
            2 => ("set_phase", serde_json::json!({ "phase": phases[n % phases.len()] })),
            _ => {
                let status = ["pending", "in_progress", "completed"][n % 3];
                let todos = serde_json::json!([{ "id": "1", "text": "t", "status": status }]);
                ("todo_write", serde_json::json!({ "todos": todos }))
            }
        };
        ToolCall {
            call_id: format!("c{n}"),
            name: name.into(),
            arguments: args.to_string(),
            item_id: None,
            provider_data: None,
        }
    }

    /// A random session: each turn is a list of responses, each a list of
    /// calls (see [`random_call`]); an empty response ends the turn.
    fn run(turns: &[Vec<Vec<u8>>]) -> (LoopState, Vec<EventRecord>) {
        let mut state = LoopState::new(config(ApprovalMode::Auto));
        let mut log = Vec::new();
        let mut n = 0;
        for (t, responses) in turns.iter().enumerate() {
            let effects = step(&mut state, Input::UserTurn { text: format!("turn {t}") });
            record(&effects, &mut log);
            for calls in responses.iter().chain(std::iter::once(&Vec::new())) {
                let items: Vec<Item> = if calls.is_empty() {
                    vec![Item::Assistant { text: "done".into() }]
                } else {
                    calls
                        .iter()
                        .map(|kind| {
                            n += 1;
                            Item::ToolCall(random_call(*kind, n))
                        })
                        .collect()
                };
                let mut effects = step(&mut state, response(items));
                loop {
                    record(&effects, &mut log);
                    let Some(Effect::RunBatch { calls, .. }) =
                        effects.iter().find(|e| matches!(e, Effect::RunBatch { .. })).cloned()
                    else {
                        break;
                    };
                    let results = calls
                        .iter()
                        .map(|c| (ToolResult::ok(&c.call_id, "ok"), serde_json::Value::Null))
                        .collect();
                    effects = step(&mut state, Input::BatchFinished { results });
                }
                if state.phase == LoopPhase::Idle {
                    break;
                }
            }
        }
        (state, log)
    }

    fn sessions() -> impl Strategy<Value = Vec<Vec<Vec<u8>>>> {
        prop::collection::vec(
            prop::collection::vec(prop::collection::vec(any::<u8>(), 1..4), 0..4),
            1..4,
        )
    }

    proptest! {
        #[test]
        fn rebuilding_reproduces_the_live_state(turns in sessions()) {
            let (live, log) = run(&turns);
            let rebuilt = rebuild(&log);
            prop_assert_eq!(&rebuilt.state.items, &live.items);
            prop_assert_eq!(rebuilt.state.turn, live.turn);
            prop_assert_eq!(rebuilt.state.session_usage, live.session_usage);
            prop_assert_eq!(&rebuilt.state.workflow, &live.workflow);
            prop_assert!(rebuilt.open_turn.is_none());
        }

        #[test]
        fn no_prefix_reruns_an_answered_call(turns in sessions(), cut in any::<prop::sample::Index>()) {
            let (_, log) = run(&turns);
            let cut = cut.index(log.len()) + 1;
            let rebuilt = rebuild(&log[..cut]);
            let Some(open) = rebuilt.open_turn else { return Ok(()) };
            let answered: Vec<String> = log[..cut]
                .iter()
                .filter_map(|r| match &r.event {
                    SessionEvent::ToolCallFinished { result, .. } => Some(result.call_id.clone()),
                    _ => None,
                })
                .collect();
            let mut state = rebuilt.state;
            for effect in reconcile(&mut state, &open, &Unchanged) {
                if let Effect::RunBatch { calls, .. } = &effect {
                    for c in calls {
                        prop_assert!(!answered.contains(&c.call_id));
                    }
                }
                if let Effect::Record(SessionEvent::ToolCallFinished { result, .. }) = effect {
                    prop_assert!(!answered.contains(&result.call_id));
                }
            }
        }
    }
}
