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
    response_with(items, Usage { input_tokens: 7, output_tokens: 3, ..Usage::default() })
}

fn response_with(items: Vec<Item>, usage: Usage) -> Input {
    Input::ModelResponded(ModelResponse {
        items,
        usage,
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
            results: vec![(ToolResult::ok("a", "text"), crate::protocol::ToolMeta::new())],
        },
        response(vec![Item::ToolCall(call("b", "write_file"))]),
        Input::BatchFinished {
            results: vec![(ToolResult::ok("b", "written"), crate::protocol::ToolMeta::new())],
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
    assert_eq!(open.calls[0].progress, CallProgress::Started);
    let mut state = rebuilt.state;
    let effects = reconcile(&mut state, &open, &Unchanged);
    let Effect::Record(SessionEvent::ToolCallFinished { result, .. }) = &effects[0] else {
        panic!("{effects:?}");
    };
    assert!(result.is_error);
    assert!(result.output.contains("did not land"), "{}", result.output);
    let asked = effects[1..].iter().all(|e| {
        matches!(e, Effect::CallModel(_) | Effect::Record(SessionEvent::ContextUpdated { .. }))
    });
    assert!(
        asked && matches!(effects.last(), Some(Effect::CallModel(_))),
        "then the model is asked again"
    );

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
    assert_eq!(open.calls[0].progress, CallProgress::NotStarted);
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
        mode: mode.and_then(ApprovalMode::parse),
        parent: None,
    }
}

#[test]
fn the_last_logged_mode_wins_and_plan_mode_requires_a_plan() {
    let mode = |name: &str| SessionEvent::ModeChanged { mode: ApprovalMode::parse(name).unwrap() };
    let rebuilt = rebuild(&records(vec![started(Some("plan"))]));
    assert_eq!(rebuilt.state.config.policy.mode, ApprovalMode::Plan);
    assert!(rebuilt.state.workflow.flow.plan_required);

    let rebuilt = rebuild(&records(vec![started(Some("plan")), mode("ask")]));
    assert_eq!(rebuilt.state.config.policy.mode, ApprovalMode::Ask);
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
            tool: None,
        };
    let mcp_always = SessionEvent::Approval {
        call_id: "m".into(),
        approved: true,
        scope: crate::protocol::ApprovalScope::Always,
        note: None,
        prefix: None,
        path: None,
        tool: Some("mcp__github__create_issue".into()),
    };
    let rebuilt = rebuild(&records(vec![
        started(Some("ask")),
        approval(true, Some(&["make", "test"]), None),
        approval(true, None, Some("src/a.rs")),
        approval(false, None, Some("src/b.rs")),
        approval(true, None, None),
        mcp_always,
    ]));
    let allowlist = &rebuilt.state.allowlist;
    assert_eq!(allowlist.tools.iter().collect::<Vec<_>>(), ["mcp__github__create_issue"]);
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
            usage: None,
        },
    });
    assert_eq!(rebuild(&log).state.items, vec![Item::User { text: "summary".into() }]);
}

/// A damaged copy of `live_session`'s log: the lines from the start of
/// the `write_file` call "b" on, rearranged by `damage`; each entry is a
/// record or an unreadable line (its number, torn or not).
#[allow(clippy::large_enum_variant)]
enum Line {
    Record(EventRecord),
    Unreadable(bool),
}

fn rebuild_lines(lines: &[Line]) -> Rebuilt {
    let mut rebuilder = Rebuilder::new(config(ApprovalMode::Auto));
    for (number, line) in lines.iter().enumerate() {
        match line {
            Line::Record(record) => rebuilder.apply(record.clone()),
            Line::Unreadable(torn) => rebuilder.unreadable(number as u64 + 1, *torn),
        }
    }
    rebuilder.finish()
}

/// `live_session` up to (and including) the line `upto` finds, with
/// `file_before` of "b" added after its start, as a mutating call logs it.
fn first_turn_up_to(upto: impl Fn(&SessionEvent) -> bool) -> Vec<EventRecord> {
    let (_, log) = live_session();
    let mut out = Vec::new();
    for record in log {
        let stop = upto(&record.event);
        let started_b = matches!(&record.event, SessionEvent::ToolCallStarted { call, .. } if call.call_id == "b");
        out.push(record);
        if started_b {
            let before = SessionEvent::FileBefore {
                call_id: "b".into(),
                path: "x.txt".into(),
                before: Some("h0".into()),
            };
            out.push(EventRecord { v: 1, seq: 0, ts: String::new(), event: before });
        }
        if stop {
            break;
        }
    }
    out
}

fn is_response_with(event: &SessionEvent, id: &str) -> bool {
    matches!(event, SessionEvent::ModelResponse { response, .. }
        if response.tool_calls().any(|call| call.call_id == id))
}

fn is_result_of(event: &SessionEvent, id: &str) -> bool {
    matches!(event, SessionEvent::ToolCallFinished { result, .. } if result.call_id == id)
}

fn is_started(event: &SessionEvent, id: &str) -> bool {
    matches!(event, SessionEvent::ToolCallStarted { call, .. } if call.call_id == id)
}

/// Issue 14: a `model_response` line after its call's result (a log
/// damaged out of order) must not make the call look unanswered.
#[test]
fn a_response_after_its_result_does_not_rerun_the_call() {
    let mut records = first_turn_up_to(|e| is_result_of(e, "b"));
    let response = records.iter().position(|r| is_response_with(&r.event, "b")).unwrap();
    let moved = records.remove(response);
    records.push(moved);
    let rebuilt = rebuild(&records);
    let open = rebuilt.open_turn.clone().unwrap();
    assert!(open.calls.is_empty(), "{:?}", open.calls);
    // The history keeps the result after its call.
    let items = &rebuilt.state.items;
    let call = items.iter().position(|i| matches!(i, Item::ToolCall(c) if c.call_id == "b"));
    let result = items.iter().position(|i| matches!(i, Item::ToolResult(r) if r.call_id == "b"));
    assert!(call.unwrap() < result.unwrap(), "{items:?}");
}

/// Issue 14: a corrupt `tool_call_started` whose `file_before` survived:
/// the call started, so it is answered "interrupted", never run again.
#[test]
fn a_surviving_file_before_proves_the_call_started() {
    // Up to the start of "b", and its `file_before` after it.
    let records = first_turn_up_to(|e| is_started(e, "b"));
    let lines: Vec<Line> = records
        .into_iter()
        .map(|r| if is_started(&r.event, "b") { Line::Unreadable(false) } else { Line::Record(r) })
        .collect();
    let rebuilt = rebuild_lines(&lines);
    assert!(rebuilt.ambiguous().is_empty());
    let open = rebuilt.open_turn.clone().unwrap();
    assert_eq!(open.calls[0].progress, CallProgress::Started);
    let mut state = rebuilt.state;
    let effects = reconcile(&mut state, &open, &Unchanged);
    assert!(!effects.iter().any(|e| matches!(e, Effect::RunBatch { .. })), "{effects:?}");
}

/// An unreadable line after the call's response could have been its start
/// or its result: unknown, never run, and the runtime refuses to guess.
#[test]
fn damage_after_a_call_that_has_no_start_makes_it_unknown() {
    let records = first_turn_up_to(|e| is_started(e, "b"));
    let lines: Vec<Line> = records
        .into_iter()
        .filter(|r| !matches!(r.event, SessionEvent::FileBefore { .. }))
        .map(|r| if is_started(&r.event, "b") { Line::Unreadable(false) } else { Line::Record(r) })
        .collect();
    let damaged = lines.len() as u64;
    let rebuilt = rebuild_lines(&lines);
    assert_eq!(rebuilt.ambiguous().len(), 1);
    let open = rebuilt.open_turn.clone().unwrap();
    assert_eq!(open.calls[0].progress, CallProgress::Unknown { damaged_line: damaged });
    let mut state = rebuilt.state;
    let effects = reconcile(&mut state, &open, &Unchanged);
    assert!(!effects.iter().any(|e| matches!(e, Effect::RunBatch { .. })), "{effects:?}");
    let Effect::Record(SessionEvent::ToolCallFinished { result, .. }) = &effects[0] else {
        panic!("{effects:?}")
    };
    assert!(result.output.contains("unreadable"), "{}", result.output);
}

/// A torn last line is where the writer died: nothing after it ran, so a
/// call without a start never ran. Damage a later resume read past is
/// settled too.
#[test]
fn a_torn_last_line_or_settled_damage_is_not_ambiguous() {
    let records = first_turn_up_to(|e| is_response_with(e, "b"));
    let mut lines: Vec<Line> = records.into_iter().map(Line::Record).collect();
    lines.push(Line::Unreadable(true));
    let rebuilt = rebuild_lines(&lines);
    assert_eq!(rebuilt.open_turn.unwrap().calls[0].progress, CallProgress::NotStarted);

    let resumed = SessionEvent::SessionResumed {
        provider: "p".into(),
        model: "m".into(),
        keel_version: "0".into(),
        skipped_lines: 1,
        interrupted_calls: 0,
    };
    lines.pop();
    lines.push(Line::Unreadable(false));
    lines.push(Line::Record(EventRecord { v: 1, seq: 0, ts: String::new(), event: resumed }));
    let rebuilt = rebuild_lines(&lines);
    assert!(rebuilt.ambiguous().is_empty());
    assert_eq!(rebuilt.open_turn.unwrap().calls[0].progress, CallProgress::NotStarted);
}

/// A closed turn whose result line is unreadable keeps a well-formed
/// history (a "lost" result), and a result without its call is left out.
#[test]
fn lost_results_and_orphan_results_keep_the_history_well_formed() {
    let (_, log) = live_session();
    let lines: Vec<Line> = log
        .iter()
        .map(|r| {
            if is_result_of(&r.event, "a") || is_response_with(&r.event, "b") {
                Line::Unreadable(false)
            } else {
                Line::Record(r.clone())
            }
        })
        .collect();
    let rebuilt = rebuild_lines(&lines);
    let items = &rebuilt.state.items;
    let results_a: Vec<&ToolResult> = items
        .iter()
        .filter_map(|i| match i {
            Item::ToolResult(r) if r.call_id == "a" => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(results_a.len(), 1);
    assert!(results_a[0].is_error && results_a[0].output.contains("lost"));
    assert!(!items.iter().any(|i| matches!(i, Item::ToolResult(r) if r.call_id == "b")));
    assert_eq!(rebuilt.notes.len(), 2, "{:?}", rebuilt.notes);
}

/// Some servers number calls per response (`call_0`): the n-th result of
/// an id answers its n-th call.
#[test]
fn a_reused_call_id_is_counted_not_collapsed() {
    let mut state = LoopState::new(config(ApprovalMode::Auto));
    let mut log = Vec::new();
    for input in [
        Input::UserTurn { text: "go".into() },
        response(vec![Item::ToolCall(call("call_0", "read_file"))]),
        Input::BatchFinished {
            results: vec![(ToolResult::ok("call_0", "one"), crate::protocol::ToolMeta::new())],
        },
        response(vec![Item::ToolCall(call("call_0", "read_file"))]),
    ] {
        let effects = step(&mut state, input);
        record(&effects, &mut log);
    }
    let rebuilt = rebuild(&log);
    let open = rebuilt.open_turn.unwrap();
    assert_eq!(open.calls.len(), 1, "the second call_0 is still open");
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

    /// Carries out `effects` as a driver would until the loop needs a model
    /// response: batches answered "ok" (the same text for the same call,
    /// so the runaway guard sees repeats), a spend limit raised every
    /// other time it is hit.
    fn drive(state: &mut LoopState, mut effects: Vec<Effect>, log: &mut Vec<EventRecord>) {
        let mut asked = 0;
        loop {
            record(&effects, log);
            match effects.last().cloned() {
                Some(Effect::RunBatch { calls, .. }) => {
                    let results = calls
                        .iter()
                        .map(|c| {
                            (ToolResult::ok(&c.call_id, "ok"), crate::protocol::ToolMeta::new())
                        })
                        .collect();
                    effects = step(state, Input::BatchFinished { results });
                }
                Some(Effect::AskRaiseLimit(hit)) => {
                    asked += 1;
                    let raised = (asked % 2 == 1).then(|| hit.raised());
                    effects = step(state, Input::LimitDecided { raised });
                }
                _ => return,
            }
        }
    }

    /// A random session: each turn is a list of responses, each a list of
    /// calls (see [`random_call`]); an empty response ends the turn. Usage
    /// varies per response; `max_tokens` limits the session's spend.
    fn run(turns: &[Vec<Vec<u8>>], max_tokens: Option<u64>) -> (LoopState, Vec<EventRecord>) {
        let mut config = config(ApprovalMode::Auto);
        config.limits.spend.max_tokens = max_tokens;
        let mut state = LoopState::new(config);
        let mut log = Vec::new();
        let mut n = 0;
        for (t, responses) in turns.iter().enumerate() {
            let effects = step(&mut state, Input::UserTurn { text: format!("turn {t}") });
            drive(&mut state, effects, &mut log);
            for calls in responses.iter().chain(std::iter::once(&Vec::new())) {
                if state.phase == LoopPhase::Idle {
                    break;
                }
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
                let usage = Usage {
                    input_tokens: 40 + 17 * n as u64,
                    cached_input_tokens: 11 * n as u64,
                    output_tokens: 3 + calls.len() as u64 * 29,
                    ..Usage::default()
                };
                let effects = step(&mut state, response_with(items, usage));
                drive(&mut state, effects, &mut log);
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
        fn rebuilding_reproduces_the_live_state(
            turns in sessions(),
            max_tokens in prop::option::of(200u64..3_000),
        ) {
            let (live, log) = run(&turns, max_tokens);
            // Rebuilt with no limits configured: the log carries them.
            let rebuilt = rebuild(&log);
            prop_assert_eq!(&rebuilt.state.items, &live.items);
            prop_assert_eq!(rebuilt.state.turn, live.turn);
            prop_assert_eq!(rebuilt.state.session_usage, live.session_usage);
            prop_assert_eq!(rebuilt.state.largest_output_tokens, live.largest_output_tokens);
            prop_assert_eq!(rebuilt.state.config.limits.spend, live.config.limits.spend);
            prop_assert_eq!(rebuilt.state.logged_limits, live.logged_limits);
            prop_assert_eq!(&rebuilt.state.runaway, &live.runaway);
            prop_assert_eq!(&rebuilt.state.workflow, &live.workflow);
            prop_assert!(rebuilt.open_turn.is_none());
        }

        /// Every prefix rebuilds the spend so far: a resume keeps counting
        /// from what the log holds, and the runaway counts of an open turn.
        #[test]
        fn every_prefix_rebuilds_the_spend_so_far(
            turns in sessions(),
            max_tokens in prop::option::of(200u64..3_000),
            cut in any::<prop::sample::Index>(),
        ) {
            let (_, log) = run(&turns, max_tokens);
            let cut = cut.index(log.len()) + 1;
            let rebuilt = rebuild(&log[..cut]);
            let mut spent = Usage::default();
            for record in &log[..cut] {
                if let SessionEvent::ModelResponse { response, .. } = &record.event {
                    spent.add(&response.usage);
                }
            }
            prop_assert_eq!(rebuilt.state.session_usage, spent);
        }

        #[test]
        fn no_prefix_reruns_an_answered_call(turns in sessions(), cut in any::<prop::sample::Index>()) {
            let (_, log) = run(&turns, None);
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

        /// Fuzz target for the session log's meaning (issue 14): any prefix
        /// of a session, with lines made unreadable and a response moved
        /// after its results, rebuilds without panicking; no call whose
        /// result is readable is run or answered again, no call that may
        /// have started (or that damage hides) is run, and a finished
        /// history has one result per call.
        #[test]
        fn fuzz_damaged_logs_never_rerun_a_recorded_call(
            turns in sessions(),
            cut in any::<prop::sample::Index>(),
            damaged in prop::collection::vec(any::<prop::sample::Index>(), 0..4),
            torn in any::<bool>(),
            moved in any::<Option<prop::sample::Index>>(),
        ) {
            let (_, log) = run(&turns, None);
            let cut = cut.index(log.len()) + 1;
            let mut records: Vec<EventRecord> = log[..cut].to_vec();
            if let Some(moved) = moved {
                let at = moved.index(records.len());
                if matches!(records[at].event, SessionEvent::ModelResponse { .. }) {
                    let response = records.remove(at);
                    records.push(response);
                }
            }
            let damaged: Vec<usize> = damaged.iter().map(|i| i.index(records.len())).collect();
            let last = records.len() - 1;
            let lines: Vec<Line> = records
                .iter()
                .enumerate()
                .map(|(i, r)| if damaged.contains(&i) {
                    Line::Unreadable(torn && i == last)
                } else {
                    Line::Record(r.clone())
                })
                .collect();
            let readable = |pred: &dyn Fn(&SessionEvent) -> Option<String>| -> Vec<String> {
                lines.iter().filter_map(|l| match l {
                    Line::Record(r) => pred(&r.event),
                    Line::Unreadable(_) => None,
                }).collect()
            };
            let answered = readable(&|e| match e {
                SessionEvent::ToolCallFinished { result, .. } => Some(result.call_id.clone()),
                _ => None,
            });
            let started = readable(&|e| match e {
                SessionEvent::ToolCallStarted { call, .. } => Some(call.call_id.clone()),
                _ => None,
            });
            let rebuilt = rebuild_lines(&lines);
            let Some(open) = rebuilt.open_turn.clone() else {
                // Idle: every call has exactly one result after it.
                let mut pending: Vec<&str> = Vec::new();
                for item in &rebuilt.state.items {
                    match item {
                        Item::ToolCall(c) => pending.push(&c.call_id),
                        Item::ToolResult(r) => {
                            let at = pending.iter().position(|id| *id == r.call_id);
                            prop_assert!(at.is_some(), "a result before its call: {}", r.call_id);
                            if let Some(at) = at { pending.remove(at); }
                        }
                        Item::User { .. }
                        | Item::Assistant { .. }
                        | Item::Reasoning(_)
                        | Item::Context { .. } => {}
                    }
                }
                prop_assert!(pending.is_empty(), "calls without a result: {pending:?}");
                return Ok(());
            };
            let mut state = rebuilt.state.clone();
            for effect in reconcile(&mut state, &open, &Unchanged) {
                if let Effect::RunBatch { calls, .. } = &effect {
                    for c in calls {
                        prop_assert!(!answered.contains(&c.call_id), "re-ran {}", c.call_id);
                        prop_assert!(!started.contains(&c.call_id), "ran a started {}", c.call_id);
                        let unknown = open.calls.iter().any(|o| o.call.call_id == c.call_id
                            && matches!(o.progress, CallProgress::Unknown { .. }));
                        prop_assert!(!unknown, "ran an unknown {}", c.call_id);
                    }
                }
                if let Effect::Record(SessionEvent::ToolCallFinished { result, .. }) = effect {
                    prop_assert!(!answered.contains(&result.call_id), "answered {} twice", result.call_id);
                }
            }
        }
    }
}

#[test]
fn a_recorded_prefix_is_what_a_resume_sends_and_context_items_come_back() {
    use crate::protocol::PrefixSections;
    let sections = PrefixSections { core: "recorded core".into(), ..PrefixSections::default() };
    let (live, mut log) = live_session();
    log.insert(
        0,
        EventRecord {
            v: 1,
            seq: 0,
            ts: String::new(),
            event: SessionEvent::PromptPrefix {
                reason: "session start".into(),
                sections: sections.clone(),
                tools_digest: "d1".into(),
            },
        },
    );
    let rebuilt = rebuild(&log);
    assert_eq!(rebuilt.state.config.prefix, sections, "the logged instructions, not today's");
    assert_eq!(rebuilt.facts.prefix, Some((sections, "d1".to_owned())));
    let contexts =
        |items: &[Item]| items.iter().filter(|item| matches!(item, Item::Context { .. })).count();
    assert!(contexts(&live.items) >= 1, "the live session announced its context");
    assert_eq!(rebuilt.state.items, live.items, "the same bytes, context items included");
}
