//! Rebuild and reconciliation, with no I/O: a live run through [`step`]
//! records events; rebuilding from every prefix of them must give the live
//! state back, and continuing must never re-run an answered call.

use super::test_support::step_checked as step;
use super::test_support::{self, call};
use super::*;
use crate::policy::ApprovalMode;
use crate::protocol::{
    EventRecord, Item, ModelResponse, SessionEvent, StopReason, ToolCall, ToolResult, TurnOutcome,
    Usage,
};

pub(super) fn config(approval: ApprovalMode) -> LoopConfig {
    test_support::config(approval, 10)
}

fn response(items: Vec<Item>) -> Input {
    response_with(items, Usage { input_tokens: 7, output_tokens: 3, ..Usage::default() })
}

pub(super) fn response_with(items: Vec<Item>, usage: Usage) -> Input {
    Input::ModelResponded(ModelResponse {
        items,
        usage,
        stop_reason: StopReason::EndTurn,
        response_id: None,
    })
}

/// Collects the records of `effects` as log lines.
pub(super) fn record(effects: &[Effect], log: &mut Vec<EventRecord>) {
    for effect in effects {
        if let Effect::Record(event) = effect {
            let seq = log.len() as u64;
            log.push(EventRecord { v: 1, seq, ts: String::new(), event: event.clone() });
        }
    }
}

/// A full two-turn session: read, write, answer; then a plain answer.
fn live_session() -> (LoopState, Vec<EventRecord>) {
    let mut state = LoopState::open(config(ApprovalMode::Auto), Opening::default());
    let mut log = Vec::new();
    let inputs = vec![
        Input::UserTurn { text: "go".into(), images: Vec::new() },
        response(vec![Item::ToolCall(call("a", "read_file"))]),
        Input::BatchFinished {
            results: vec![(ToolResult::ok("a", "text"), crate::protocol::ToolMeta::new())],
        },
        response(vec![Item::ToolCall(call("b", "write_file"))]),
        Input::BatchFinished {
            results: vec![(ToolResult::ok("b", "written"), crate::protocol::ToolMeta::new())],
        },
        response(vec![Item::Assistant { text: "done".into() }]),
        Input::UserTurn { text: "again".into(), images: Vec::new() },
        response(vec![Item::Assistant { text: "ok".into() }]),
    ];
    for input in inputs {
        let effects = step(&mut state, input);
        record(&effects, &mut log);
    }
    (state, log)
}

pub(super) fn rebuild(records: &[EventRecord]) -> Rebuilt {
    let mut rebuilder = Rebuilder::new(config(ApprovalMode::Auto));
    for record in records {
        rebuilder.apply(record.clone());
    }
    rebuilder.finish()
}

pub(super) struct Unchanged;
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
        let mut effects = reconcile(&mut state, &open, &Unchanged);
        let checked = test_support::answer_checks(&mut state, &effects);
        effects.extend(checked);
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
    let mut state = LoopState::open(config(ApprovalMode::Ask), Opening::default());
    let mut log = Vec::new();
    for input in [
        Input::UserTurn { text: "go".into(), images: Vec::new() },
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
    let mut effects = reconcile(&mut state, &open, &Unchanged);
    let checked = test_support::answer_checks(&mut state, &effects);
    effects.extend(checked);
    assert!(
        matches!(&effects[..], [
            Effect::Record(SessionEvent::PolicyDecision { call_id, decision, .. }),
            Effect::CheckCalls { hooks: CheckHooks::BeforeApproval { .. }, .. },
            Effect::AskApproval { call, .. },
        ] if call.call_id == "w" && call_id == "w" && decision == "prompt"),
        "judged again, recorded, then asked: {effects:?}"
    );
}

#[test]
fn a_turn_without_its_prompt_is_dropped() {
    let events = [
        SessionEvent::TurnStarted { turn: 1 },
        SessionEvent::UserMessage { text: "a".into(), images: Vec::new(), queued: None },
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
    let mut state = LoopState::open(config(ApprovalMode::Plan), Opening::default());
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
        Input::UserTurn { text: "go".into(), images: Vec::new() },
        response(vec![Item::ToolCall(phase)]),
        response(vec![Item::ToolCall(plan)]),
        Input::ApprovalDecided {
            call_id: "p".into(),
            approved: true,
            note: None,
            scope: crate::policy::ApprovalScope::Once,
        },
    ] {
        let effects = super::test_support::step_saving_plans(&mut state, input);
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
            items: vec![Item::user("summary")],
            reason: "manual".into(),
            method: "summary".into(),
            tokens_before: 0,
            tokens_after: 0,
            failed_check: None,
            usage: None,
            cost_usd: None,
        },
    });
    assert_eq!(rebuild(&log).state.items, vec![Item::user("summary")]);
}

/// A damaged copy of `live_session`'s log: the lines from the start of
/// the `write_file` call "b" on, rearranged by `damage`; each entry is a
/// record or an unreadable line (its number, torn or not).
#[allow(clippy::large_enum_variant)]
pub(super) enum Line {
    Record(EventRecord),
    Unreadable(bool),
}

pub(super) fn rebuild_lines(lines: &[Line]) -> Rebuilt {
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
    renumbered(out)
}

/// `records` with the rising seqs of a log written in their order.
fn renumbered(mut records: Vec<EventRecord>) -> Vec<EventRecord> {
    for (seq, record) in records.iter_mut().enumerate() {
        record.seq = seq as u64;
    }
    records
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
    let rebuilt = rebuild(&renumbered(records));
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
    let seq = lines.len() as u64;
    lines.push(Line::Record(EventRecord { v: 1, seq, ts: String::new(), event: resumed }));
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
    let mut state = LoopState::open(config(ApprovalMode::Auto), Opening::default());
    let mut log = Vec::new();
    for input in [
        Input::UserTurn { text: "go".into(), images: Vec::new() },
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
                tool_bytes: Default::default(),
            },
        },
    );
    let log = renumbered(log);
    let rebuilt = rebuild(&log);
    assert_eq!(rebuilt.state.config.prefix, sections, "the logged instructions, not today's");
    assert_eq!(rebuilt.facts.prefix, Some((sections, "d1".to_owned())));
    let contexts =
        |items: &[Item]| items.iter().filter(|item| matches!(item, Item::Context { .. })).count();
    assert!(contexts(&live.items) >= 1, "the live session announced its context");
    assert_eq!(rebuilt.state.items, live.items, "the same bytes, context items included");
}

/// Issue 35: a repeated line (the same seq again) is skipped with a note.
/// Before, a repeated response after a call had started made the call
/// look new, and the resume judged and ran it again.
#[test]
fn a_repeated_line_is_skipped_and_a_started_call_is_not_run_again() {
    let mut records = first_turn_up_to(|e| is_started(e, "a"));
    let response = records.iter().position(|r| is_response_with(&r.event, "a")).unwrap();
    records.push(records[response].clone());
    let rebuilt = rebuild(&records);
    assert!(rebuilt.notes.iter().any(|n| n.contains("skipped")), "{:?}", rebuilt.notes);
    let open = rebuilt.open_turn.clone().unwrap();
    let ids: Vec<(&str, bool)> = open
        .calls
        .iter()
        .map(|o| (o.call.call_id.as_str(), o.progress == CallProgress::NotStarted))
        .collect();
    assert_eq!(ids, [("a", false)], "one call, started");
    let mut state = rebuilt.state;
    for effect in reconcile(&mut state, &open, &Unchanged) {
        if let Effect::RunBatch { calls, .. } | Effect::CheckCalls { calls, .. } = &effect {
            assert!(calls.is_empty(), "ran again: {calls:?}");
        }
    }
    assert_eq!(rebuilt.facts.next_seq, records.len() as u64 - 1);
}
