//! Tests of [`super`]: spans, metrics and log events made from a session's log lines.

use std::time::{Duration, UNIX_EPOCH};

use super::*;
use crate::protocol::{ToolCall, ToolResult, Usage};

fn shared(log_prompts: bool) -> (Arc<Shared>, tokio::sync::mpsc::Receiver<Item>) {
    let (queue, items) = tokio::sync::mpsc::channel(64);
    let settings = crate::config::TelemetrySettings {
        traces_url: "http://127.0.0.1:9/v1/traces".into(),
        metrics_url: "http://127.0.0.1:9/v1/metrics".into(),
        logs_url: "http://127.0.0.1:9/v1/logs".into(),
        headers: Vec::new(),
        service_name: "keel".into(),
        timeout: Duration::from_secs(1),
        log_prompts,
        log_tool_content: false,
    };
    let shared = Shared {
        settings,
        queue,
        queued: Default::default(),
        dropped: Default::default(),
        exported: Default::default(),
        agent_calls: Default::default(),
        metrics: Default::default(),
    };
    (Arc::new(shared), items)
}

fn feed(tap: &mut SessionTap, events: Vec<SessionEvent>) {
    for (seq, event) in events.into_iter().enumerate() {
        let record = EventRecord { v: 1, seq: seq as u64, ts: String::new(), event };
        tap.observe(&record, UNIX_EPOCH + Duration::from_secs(1_000 + seq as u64));
    }
}

fn spans(items: &mut tokio::sync::mpsc::Receiver<Item>) -> (Vec<SpanRecord>, Vec<LogEvent>) {
    let (mut spans, mut logs) = (Vec::new(), Vec::new());
    while let Ok(item) = items.try_recv() {
        match item {
            Item::Span(span) => spans.push(span),
            Item::Log(log) => logs.push(log),
            Item::Flush | Item::Shutdown(_) => {}
        }
    }
    (spans, logs)
}

fn call(id: &str) -> ToolCall {
    ToolCall::new(id, "shell", "{\"command\":\"rm -rf build\"}")
}

#[test]
fn approval_waits_are_spans_of_the_turn_and_an_unanswered_one_ends_with_it() {
    let (shared, mut items) = shared(false);
    let mut tap = SessionTap::new(Arc::clone(&shared), "s1");
    let prompt = |id: &str| SessionEvent::PolicyDecision {
        call_id: id.into(),
        decision: "prompt".into(),
        matched_rules: Vec::new(),
        reason: None,
    };
    feed(
        &mut tap,
        vec![
            SessionEvent::TurnStarted { turn: 1 },
            SessionEvent::UserMessage {
                text: "secret plan".into(),
                images: Vec::new(),
                queued: None,
            },
            prompt("c1"),
            SessionEvent::Approval {
                call_id: "c1".into(),
                approved: true,
                scope: ApprovalScope::Once,
                note: None,
                prefix: None,
                path: None,
                tool: None,
            },
            SessionEvent::ToolCallStarted { call: call("c1"), class: ToolClass::Mutating },
            SessionEvent::ToolCallFinished {
                result: ToolResult {
                    call_id: "c1".into(),
                    output: "gone".into(),
                    is_error: false,
                    images: Vec::new(),
                },
                meta: Default::default(),
            },
            prompt("c2"),
            SessionEvent::TurnCompleted {
                turn: 1,
                outcome: crate::protocol::TurnOutcome::Completed,
                usage: Usage::default(),
            },
        ],
    );
    let (spans, logs) = spans(&mut items);
    let turn = spans.iter().find(|s| s.name == "keel.turn").unwrap();
    assert_eq!(turn.parent, None);
    let waits: Vec<&SpanRecord> = spans.iter().filter(|s| s.name == "keel.approval").collect();
    assert_eq!(waits.len(), 2, "{spans:#?}");
    for wait in &waits {
        assert_eq!((wait.trace, wait.parent), (turn.trace, Some(turn.span)));
    }
    let decided = |span: &SpanRecord| {
        span.attrs.iter().find(|(k, _)| *k == "keel.approval.decision").map(|(_, v)| v.clone())
    };
    assert_eq!(decided(waits[0]), Some(Value::from("approved")));
    assert_eq!(decided(waits[1]), Some(Value::from("unanswered")));
    assert_eq!(waits[0].end - waits[0].start, 1_000_000_000, "policy line to approval line");
    let tool = spans.iter().find(|s| s.name == "execute_tool shell").unwrap();
    assert_eq!(tool.parent, Some(turn.span));
    // Nothing of the prompt or the call's arguments or output leaves.
    let all = format!("{spans:?}{logs:?}");
    for content in ["secret plan", "rm -rf", "gone"] {
        assert!(!all.contains(content), "{content} exported");
    }
    let approvals = shared.metrics(|m| {
        m.sums.get(&("keel.approvals", vec![("decision", "approved".to_owned())])).copied()
    });
    assert_eq!(approvals, Some(Some(1.0)));
}

#[test]
fn prompts_leave_only_when_opted_in() {
    let (shared, mut items) = shared(true);
    let mut tap = SessionTap::new(shared, "s1");
    feed(
        &mut tap,
        vec![
            SessionEvent::TurnStarted { turn: 1 },
            SessionEvent::UserMessage {
                text: "my prompt".into(),
                images: Vec::new(),
                queued: None,
            },
        ],
    );
    let (_, logs) = spans(&mut items);
    let message = logs.iter().find(|l| l.name == "keel.user_message").unwrap();
    assert_eq!(message.body.as_deref(), Some("my prompt"));
}

#[test]
fn type_names_are_the_logged_types() {
    let event = SessionEvent::TurnStarted { turn: 1 };
    let logged = serde_json::to_value(&event).unwrap();
    assert_eq!(logged["type"], type_name(&event));
    let ended = SessionEvent::SessionEnded { reason: "x".into() };
    assert_eq!(serde_json::to_value(&ended).unwrap()["type"], type_name(&ended));
}
