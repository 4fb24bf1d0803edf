use super::*;
use crate::protocol::{
    EventRecord, ModelResponse, PrefixSections, StopReason, ToolCall, ToolClass, ToolResult,
    TurnOutcome,
};

fn records(events: Vec<SessionEvent>) -> Vec<EventRecord> {
    let record = |(seq, event)| EventRecord { v: 1, seq: seq as u64, ts: String::new(), event };
    events.into_iter().enumerate().map(record).collect()
}

fn response(items: Vec<Item>, usage: Usage, cost_usd: Option<f64>) -> SessionEvent {
    let stop_reason = StopReason::EndTurn;
    SessionEvent::ModelResponse {
        step: 1,
        response: ModelResponse { items, usage, stop_reason, response_id: None },
        cost_usd,
        estimated_tokens: None,
        estimated_cost_usd: None,
    }
}

fn started(model: &str) -> SessionEvent {
    SessionEvent::SessionStarted {
        session_id: "s1".into(),
        cwd: "/w".into(),
        provider: "anthropic".into(),
        model: model.into(),
        keel_version: "0".into(),
        git_head: None,
        mode: None,
        parent: None,
    }
}

fn prefix() -> SessionEvent {
    SessionEvent::PromptPrefix {
        reason: "session start".into(),
        sections: PrefixSections {
            core: "You are keel. ".repeat(200),
            ..PrefixSections::default()
        },
        tools_digest: "d".into(),
        tool_bytes: [("read_file".to_owned(), 800), ("mcp__docs__fetch".to_owned(), 400)].into(),
    }
}

fn call(id: &str, name: &str) -> SessionEvent {
    SessionEvent::ToolCallStarted {
        call: ToolCall::new(id, name, "{}"),
        class: ToolClass::ReadOnly,
    }
}

fn finished(id: &str, output: String) -> SessionEvent {
    SessionEvent::ToolCallFinished { result: ToolResult::ok(id, output), meta: Default::default() }
}

fn usage(input: u64, cached: u64, written: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        cached_input_tokens: cached,
        cache_write_tokens: written,
        output_tokens: output,
        reasoning_tokens: 0,
    }
}

/// A session in which one MCP server's 40 KiB output is re-sent.
fn mcp_heavy() -> Vec<EventRecord> {
    let model = "claude-sonnet-4-5";
    let first = usage(3_000, 0, 2_900, 40);
    let second = usage(14_000, 2_900, 11_000, 60);
    let big = "the docs say: lorem ipsum dolor sit amet\n".repeat(1_000);
    records(vec![
        started(model),
        prefix(),
        SessionEvent::TurnStarted { turn: 1 },
        SessionEvent::UserMessage {
            text: "read the docs".into(),
            images: Vec::new(),
            queued: None,
        },
        response(
            vec![Item::ToolCall(ToolCall::new("c1", "mcp__docs__fetch", "{}"))],
            first,
            crate::context::cost_usd(model, &first),
        ),
        call("c1", "mcp__docs__fetch"),
        finished("c1", big),
        response(
            vec![Item::Assistant { text: "done".into() }],
            second,
            crate::context::cost_usd(model, &second),
        ),
        SessionEvent::TurnCompleted { turn: 1, outcome: TurnOutcome::Completed, usage: first },
    ])
}

#[test]
fn the_parts_sum_to_the_reported_usage_and_cost() {
    let ledger = Ledger::from_records(&mcp_heavy());
    let total = ledger.total();
    assert_eq!(total.input_tokens, 17_000);
    assert_eq!(total.cached_input_tokens, 2_900);
    assert_eq!(total.cache_write_tokens, 13_900);
    assert_eq!(total.output_tokens, 100);
    assert_eq!(ledger.usage.total_tokens(), total.tokens());
    let cost = ledger.cost_usd.unwrap();
    assert!((cost - total.cost_usd).abs() < 1e-9, "{cost} vs {}", total.cost_usd);
    assert_eq!(ledger.requests.len(), 2);
    assert_eq!(ledger.prices[0].input, Some(3.0));
}

#[test]
fn a_dominating_mcp_server_is_named_first() {
    let ledger = Ledger::from_records(&mcp_heavy());
    assert_eq!(ledger.parts[0].source, Source::Mcp { server: "docs".into() }, "{:?}", ledger.parts);
    assert_eq!(ledger.parts[0].label, "mcp docs");
    let lines = ledger.summary_lines();
    assert!(lines[1].trim_start().starts_with("mcp docs"), "{lines:#?}");
}

#[test]
fn subagents_and_compactions_are_parts_of_their_own() {
    let model = "gpt-5";
    let mut events = vec![started(model), prefix(), SessionEvent::TurnStarted { turn: 1 }];
    let one = usage(1_000, 0, 0, 10);
    events.push(response(Vec::new(), one, crate::context::cost_usd(model, &one)));
    events.push(SessionEvent::SubagentStarted {
        call_id: "a1".into(),
        session_id: "child".into(),
        log_path: "/logs/child.jsonl".into(),
        agent: "explore".into(),
        description: "look".into(),
    });
    let finished = SessionEvent::SubagentFinished {
        call_id: "a1".into(),
        session_id: "child".into(),
        outcome: TurnOutcome::Completed,
        usage: usage(500, 0, 0, 5),
        cost_usd: Some(0.25),
        estimated_tokens: None,
        estimated_cost_usd: None,
    };
    // A resume may leave the line twice: the child counts once.
    events.push(finished.clone());
    events.push(finished);
    events.push(SessionEvent::Compaction {
        items: vec![Item::User { text: "summary".into(), images: Vec::new() }],
        reason: "threshold".into(),
        method: "summary".into(),
        tokens_before: 0,
        tokens_after: 0,
        failed_check: None,
        usage: Some(usage(800, 0, 0, 100)),
        cost_usd: Some(0.125),
    });
    let ledger = Ledger::from_records(&records(events));
    assert_eq!(ledger.child_logs(), [("child".to_owned(), "/logs/child.jsonl".to_owned())]);
    assert_eq!(ledger.usage.total_tokens(), 1_010 + 505 + 900);
    let expected = crate::context::cost_usd(model, &one).unwrap() + 0.25 + 0.125;
    assert!((ledger.cost_usd.unwrap() - expected).abs() < 1e-12);
    assert!((ledger.total().cost_usd - expected).abs() < 1e-12);
    let child = Source::Subagent { session_id: "child".into(), agent: "explore".into() };
    assert_eq!(ledger.parts[0].source, child);
    assert_eq!(ledger.parts[1].source, Source::Compaction);
}

#[test]
fn an_unknown_model_without_logged_costs_has_no_cost() {
    let mut events = vec![started("mock-model"), prefix()];
    events.push(response(Vec::new(), usage(100, 0, 0, 1), None));
    let ledger = Ledger::from_records(&records(events));
    assert_eq!(ledger.cost_usd, None);
    assert_eq!(ledger.total().input_tokens, 100);
}

#[test]
fn records_at_or_below_the_last_seq_are_skipped() {
    let mut log = mcp_heavy();
    let again = log[4].clone();
    log.push(again);
    assert_eq!(Ledger::from_records(&log).requests.len(), 2);
}
