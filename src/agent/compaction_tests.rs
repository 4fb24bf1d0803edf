//! Compaction through [`step`]: when it fires, what it keeps, and that it
//! never loops or loses a call's answer.

use super::test_support::step_checked as step;
use super::test_support::{self, call_with};
use super::*;
use crate::context::summary::{SUMMARY_MARKER, is_summary_block};
use crate::policy::ApprovalMode;
use crate::protocol::{
    Item, ModelRequest, ModelResponse, SessionEvent, StopReason, ToolResult, TurnOutcome, Usage,
};

fn config(window: Option<u64>) -> LoopConfig {
    // Commands run without asking, and the same read may come back the
    // same many times: these tests are about context.
    let mut config =
        LoopConfig { context_window: window, ..test_support::config(ApprovalMode::Yolo, 50) };
    config.limits.runaway = RunawayLimits { repeated_calls: None, failing_calls: None };
    config
}

fn respond(items: Vec<Item>, input_tokens: u64) -> Input {
    Input::ModelResponded(ModelResponse {
        items,
        usage: Usage { input_tokens, output_tokens: 5, ..Usage::default() },
        stop_reason: StopReason::ToolUse,
        response_id: None,
    })
}

/// Answers a summary request and lets the loop go on, as the driver does.
fn summarized(state: &mut LoopState, text: &str) -> Vec<Effect> {
    let usage = Usage { input_tokens: 1_000, output_tokens: 200, ..Usage::default() };
    let mut effects = step(state, Input::Summarized { text: text.into(), usage });
    assert!(last_request(&effects).is_none(), "no request before the instructions are fresh");
    let observed = state.config.prefix.clone();
    effects.extend(step(state, Input::CompactionApplied { observed }));
    effects
}

/// Runs one read of `size` characters: the model asks, the tool answers.
fn read_step(state: &mut LoopState, id: &str, size: usize, reported: u64) -> Vec<Effect> {
    step(state, respond(vec![Item::ToolCall(call_with(id, "read_file", "{}"))], reported));
    let result = (ToolResult::ok(id, "word ".repeat(size / 5)), crate::protocol::ToolMeta::new());
    step(state, Input::BatchFinished { results: vec![result] })
}

fn compactions(effects: &[Effect]) -> Vec<(String, String)> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Record(SessionEvent::Compaction { reason, method, .. }) => {
                Some((reason.clone(), method.clone()))
            }
            _ => None,
        })
        .collect()
}

fn last_request(effects: &[Effect]) -> Option<&ModelRequest> {
    effects.iter().rev().find_map(|effect| match effect {
        Effect::CallModel(request) => Some(request),
        _ => None,
    })
}

fn summarize_request(effects: &[Effect]) -> Option<(&ModelRequest, &'static str)> {
    effects.iter().find_map(|effect| match effect {
        Effect::Summarize { request, trigger, .. } => Some((request, *trigger)),
        _ => None,
    })
}

fn user_texts(items: &[Item]) -> Vec<&str> {
    items
        .iter()
        .filter_map(|item| match item {
            Item::User { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn under_the_threshold_nothing_is_compacted() {
    let mut state = LoopState::open(config(Some(100_000)), Opening::default());
    step(&mut state, Input::UserTurn { text: "fix the parser".into(), images: Vec::new() });
    for i in 0..5 {
        let effects = read_step(&mut state, &format!("c{i}"), 2_000, 1_000);
        assert!(compactions(&effects).is_empty());
        assert!(last_request(&effects).is_some());
    }
}

#[test]
fn crossing_the_threshold_elides_old_outputs_when_that_is_enough() {
    let mut state = LoopState::open(config(Some(20_000)), Opening::default());
    step(&mut state, Input::UserTurn { text: "fix the parser".into(), images: Vec::new() });
    let mut fired = Vec::new();
    for i in 0..12 {
        let effects = read_step(&mut state, &format!("c{i}"), 8_000, 0);
        fired.extend(compactions(&effects));
        assert!(last_request(&effects).is_some(), "every step still asks the model");
    }
    assert_eq!(fired.first(), Some(&("threshold".to_owned(), "elide".to_owned())), "{fired:?}");
}

#[test]
fn a_summary_keeps_goal_latest_request_plan_tasks_and_failing_check() {
    let mut state = LoopState::open(config(Some(4_000)), Opening::default());
    step(
        &mut state,
        Input::UserTurn { text: "GOAL: make the parser accept tabs".into(), images: Vec::new() },
    );
    step(&mut state, respond(vec![Item::Assistant { text: "done?".into() }], 100));
    step(
        &mut state,
        Input::UserTurn { text: "LATEST: also handle CRLF".into(), images: Vec::new() },
    );
    state.workflow.flow.submit_plan(".keel/plans/s-r1.md".into(), "PLAN: edit lexer.rs".into());
    state.workflow.flow.review_plan(true, None);
    state.workflow.tasks = serde_json::from_value(serde_json::json!([
        {"id": "1", "text": "TASK: lexer", "status": "in_progress"},
        {"id": "2", "text": "done one", "status": "completed"}
    ]))
    .unwrap();
    let test = call_with("t1", "shell", r#"{"command":"cargo test"}"#);
    step(&mut state, respond(vec![Item::ToolCall(test)], 500));
    let failing = (
        ToolResult::ok("t1", "exit code: 101\n--- stdout ---\nFAILED: lexer::tabs"),
        crate::protocol::ToolMeta::command(Some(101), None),
    );
    step(&mut state, Input::BatchFinished { results: vec![failing] });
    // Each read is small, so no single output dominates: eliding cannot
    // bring the history under the threshold, a summary must.
    let mut effects = Vec::new();
    for i in 0..40 {
        effects = read_step(&mut state, &format!("r{i}"), 390, 0);
        if summarize_request(&effects).is_some() {
            break;
        }
    }
    let (request, trigger) = summarize_request(&effects).expect("a summary is asked for");
    assert_eq!(trigger, "auto");
    assert!(request.instructions.contains("compacting a coding session"));
    assert!(matches!(state.phase, LoopPhase::Compact(_)), "{:?}", state.phase);

    let items_before = state.items.len();
    let effects = summarized(&mut state, "SUMMARY: lexer half done");
    assert_eq!(compactions(&effects), vec![("threshold".to_owned(), "summary".to_owned())]);
    let request = last_request(&effects).expect("the turn goes on");
    let users = user_texts(&request.items);
    assert_eq!(users[0], "GOAL: make the parser accept tabs");
    assert!(users[1].starts_with(SUMMARY_MARKER));
    for kept in ["SUMMARY: lexer half done", "PLAN: edit lexer.rs", "approved", "TASK: lexer"] {
        assert!(users[1].contains(kept), "{kept} missing from {}", users[1]);
    }
    assert!(users[1].contains("FAILED: lexer::tabs"), "the failing check is kept");
    assert!(!users[1].contains("done one"), "completed tasks are not listed");
    assert_eq!(users[2], "LATEST: also handle CRLF");
    assert!(request.items.len() < items_before / 2, "history shrank: {}", request.items.len());
    let (before, after) = effects
        .iter()
        .find_map(|effect| match effect {
            Effect::Compacted { tokens_before, tokens_after, .. } => {
                Some((*tokens_before, *tokens_after))
            }
            _ => None,
        })
        .unwrap();
    assert!(after < 4_000 * 85 / 100 && after < before, "{before} -> {after}");
}

#[test]
fn overflow_elides_then_summarizes_then_fails_within_one_step() {
    let mut state = LoopState::open(config(None), Opening::default());
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    for i in 0..6 {
        read_step(&mut state, &format!("c{i}"), 5_000, 0);
    }
    let effects = step(&mut state, Input::ContextOverflow { message: "too long".into() });
    assert_eq!(compactions(&effects), vec![("overflow".to_owned(), "elide".to_owned())]);
    assert!(matches!(effects.last(), Some(Effect::CallModel(_))), "asks again");

    let effects = step(&mut state, Input::ContextOverflow { message: "still too long".into() });
    assert!(summarize_request(&effects).is_some(), "then a summary: {effects:?}");
    let effects = summarized(&mut state, "short");
    assert!(matches!(effects.last(), Some(Effect::CallModel(_))));

    let effects = step(&mut state, Input::ContextOverflow { message: "hopeless".into() });
    assert!(matches!(effects.last(), Some(Effect::TurnEnded { outcome: TurnOutcome::Failed, .. })));
}

#[test]
fn a_failed_summary_still_compacts_with_the_preserved_facts() {
    let mut state = LoopState::open(config(None), Opening::default());
    step(&mut state, Input::UserTurn { text: "GOAL".into(), images: Vec::new() });
    let effects = step(&mut state, Input::ContextOverflow { message: "too long".into() });
    assert!(summarize_request(&effects).is_some(), "nothing to elide: straight to a summary");
    let mut effects =
        step(&mut state, Input::SummaryFailed { message: "500".into(), usage: Usage::default() });
    let observed = state.config.prefix.clone();
    effects.extend(step(&mut state, Input::CompactionApplied { observed }));
    let request = last_request(&effects).expect("the turn goes on");
    let users = user_texts(&request.items);
    assert!(users.iter().any(|text| text.contains("No summary could be written")));
    assert_eq!(users.last(), Some(&"GOAL"));
}

#[test]
fn manual_compaction_runs_while_idle_and_stays_idle() {
    let mut state = LoopState::open(config(Some(100_000)), Opening::default());
    assert!(step(&mut state, Input::CompactRequested { focus: None }).is_empty(), "empty: no-op");
    step(&mut state, Input::UserTurn { text: "GOAL".into(), images: Vec::new() });
    step(&mut state, respond(vec![Item::Assistant { text: "answer".into() }], 100));
    let effects = step(&mut state, Input::CompactRequested { focus: Some("the lexer".into()) });
    let (request, trigger) = summarize_request(&effects).expect("summary asked");
    assert_eq!(trigger, "manual");
    let last = user_texts(&request.items).last().map(|text| text.to_string()).unwrap_or_default();
    assert!(last.contains("the lexer"), "the focus reaches the summarizer: {last}");
    let effects = summarized(&mut state, "S");
    assert_eq!(compactions(&effects), vec![("manual".to_owned(), "summary".to_owned())]);
    assert!(last_request(&effects).is_none());
    assert_eq!(state.phase, LoopPhase::Idle);
    assert!(state.items.iter().any(is_summary_block));
    assert!(user_texts(&state.items).iter().any(|text| text.contains("focus on: the lexer")));
}

#[test]
fn an_interrupt_during_the_summary_compacts_nothing_and_answers_every_call_with() {
    let mut state = LoopState::open(config(Some(100_000)), Opening::default());
    step(&mut state, Input::UserTurn { text: "GOAL".into(), images: Vec::new() });
    step(&mut state, respond(vec![Item::Assistant { text: "answer".into() }], 100));
    let before = state.items.clone();
    step(&mut state, Input::CompactRequested { focus: None });
    assert!(step(&mut state, Input::Interrupted).is_empty());
    assert_eq!(state.items, before);
    assert_eq!(state.phase, LoopPhase::Idle);

    step(&mut state, Input::UserTurn { text: "more".into(), images: Vec::new() });
    let effects = step(&mut state, Input::ContextOverflow { message: "too long".into() });
    assert!(summarize_request(&effects).is_some());
    let effects = step(&mut state, Input::Interrupted);
    assert!(matches!(
        effects.last(),
        Some(Effect::TurnEnded { outcome: TurnOutcome::Interrupted, .. })
    ));
    assert!(compactions(&effects).is_empty());
}

#[test]
fn a_second_summary_keeps_the_goal_and_the_carried_failing_check() {
    let mut state = LoopState::open(config(None), Opening::default());
    step(&mut state, Input::UserTurn { text: "GOAL".into(), images: Vec::new() });
    let test = call_with("t1", "shell", r#"{"command":"cargo test"}"#);
    step(&mut state, respond(vec![Item::ToolCall(test)], 100));
    let failing = (ToolResult::ok("t1", "exit code: 1\nBROKEN"), crate::protocol::ToolMeta::new());
    step(&mut state, Input::BatchFinished { results: vec![failing] });
    step(&mut state, respond(vec![Item::Assistant { text: "stuck".into() }], 100));
    step(&mut state, Input::CompactRequested { focus: None });
    summarized(&mut state, "first");
    step(&mut state, Input::UserTurn { text: "LATEST".into(), images: Vec::new() });
    step(&mut state, Input::ContextOverflow { message: "too long".into() });
    let effects = summarized(&mut state, "second");
    let request = last_request(&effects).unwrap_or_else(|| panic!("asks again: {effects:?}"));
    let users = user_texts(&request.items);
    assert_eq!(users.first(), Some(&"GOAL"));
    assert_eq!(users.last(), Some(&"LATEST"));
    let blocks: Vec<&&str> = users.iter().filter(|text| text.starts_with(SUMMARY_MARKER)).collect();
    assert_eq!(blocks.len(), 1, "one summary block, not nested ones");
    assert!(blocks[0].contains("second") && blocks[0].contains("BROKEN"));
}

/// A summary request costs like any other: its usage counts in the
/// session's spend, is logged with the compaction, and comes back on
/// rebuild, so a spend limit sees it.
#[test]
fn a_summary_counts_in_the_spend_and_the_log() {
    let mut state = LoopState::open(config(Some(100_000)), Opening::default());
    let mut log = Vec::new();
    let keep = |effects: &[Effect], log: &mut Vec<crate::protocol::EventRecord>| {
        for effect in effects {
            if let Effect::Record(event) = effect {
                let seq = log.len() as u64;
                log.push(crate::protocol::EventRecord {
                    v: 1,
                    seq,
                    ts: String::new(),
                    event: event.clone(),
                });
            }
        }
    };
    keep(&step(&mut state, Input::UserTurn { text: "GOAL".into(), images: Vec::new() }), &mut log);
    let effects = step(&mut state, respond(vec![Item::Assistant { text: "answer".into() }], 100));
    keep(&effects, &mut log);
    keep(&step(&mut state, Input::CompactRequested { focus: None }), &mut log);
    keep(&summarized(&mut state, "S"), &mut log);
    // 100 in and 5 out for the answer, 1 000 in and 200 out for the summary.
    assert_eq!(state.session_usage.input_tokens, 1_100);
    assert_eq!(state.session_usage.output_tokens, 205);
    let logged = log.iter().find_map(|record| match &record.event {
        SessionEvent::Compaction { usage, .. } => *usage,
        _ => None,
    });
    assert_eq!(logged.map(|usage| usage.output_tokens), Some(200));
    let mut rebuilder = Rebuilder::new(config(Some(100_000)));
    for record in log {
        rebuilder.apply(record);
    }
    assert_eq!(rebuilder.finish().state.session_usage, state.session_usage);
}

#[test]
fn the_server_s_token_scale_moves_the_threshold() {
    use crate::context::tokens::TokenScale;
    // One read of about 6000 of keel's tokens against a limit of 8500.
    let summarizes = |scale: TokenScale| {
        let mut state = LoopState::open(
            LoopConfig { token_scale: scale, ..config(Some(10_000)) },
            Opening::default(),
        );
        step(&mut state, Input::UserTurn { text: "fix the parser".into(), images: Vec::new() });
        let effects = read_step(&mut state, "c0", 30_000, 0);
        summarize_request(&effects).is_some()
    };
    assert!(!summarizes(TokenScale::IDENTITY), "fits by keel's estimate");
    let finer = TokenScale::from_counts(2, 1).unwrap();
    assert!(summarizes(finer), "twice the tokens by the server's count");
}

/// The estimated tokens before a compaction (recorded with it) of a
/// session offering one `grep`-like tool, under `strict`.
fn tokens_before_with(strict: Option<crate::protocol::strict_schema::StrictDialect>) -> u64 {
    let mut config = config(None);
    config.tools = vec![grep_like()];
    config.strict_tools = strict;
    let mut state = LoopState::open(config, Opening::default());
    step(&mut state, Input::UserTurn { text: "GOAL".into(), images: Vec::new() });
    step(&mut state, Input::ContextOverflow { message: "too long".into() });
    let effects = summarized(&mut state, "S");
    effects
        .iter()
        .find_map(|effect| match effect {
            Effect::Compacted { tokens_before, .. } => Some(*tokens_before),
            _ => None,
        })
        .expect("compacted")
}

fn grep_like() -> crate::protocol::ToolSpec {
    crate::protocol::ToolSpec {
        name: "grep".into(),
        description: "Search.".into(),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string"},
                "limit": {"type": "integer", "maximum": 10},
                "mode": {"type": "string", "enum": ["content", "files"]},
            },
            "required": ["pattern"],
        }),
    }
}

// Issue 32: under `strict_tools` the request carries each tool's strict
// schema (closed, optional fields nullable): the estimate that decides
// compaction counts that schema, not the plain one.
#[test]
fn the_estimate_counts_the_strict_schemas_that_are_sent() {
    use crate::context::tokens::count;
    use crate::protocol::strict_schema::{StrictDialect, strict_parameters};
    let plain = tokens_before_with(None);
    let spec = grep_like();
    for dialect in [StrictDialect::OpenAi, StrictDialect::Anthropic] {
        let sent = strict_parameters(&spec, dialect).expect("grep has a strict form");
        let difference =
            count(&sent.to_string()) as i64 - count(&spec.parameters.to_string()) as i64;
        assert_ne!(difference, 0, "{dialect:?}: the strict form differs");
        let strict = tokens_before_with(Some(dialect));
        assert_eq!(strict as i64 - plain as i64, difference, "{dialect:?}");
    }
}
