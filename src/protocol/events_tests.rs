//! Tests of the session-log events: every variant is listed in `TYPES`,
//! round-trips through JSON, and older lines still parse.

use super::events::*;
use super::*;

fn type_of(event: &SessionEvent) -> String {
    serde_json::to_value(event).unwrap()["type"].as_str().unwrap().to_owned()
}

/// One sample per variant; the match makes a new variant fail to
/// compile here until it has a sample (and so a listed type).
fn samples() -> Vec<SessionEvent> {
    let s = String::new;
    let call =
        ToolCall { call_id: s(), name: s(), arguments: s(), item_id: None, provider_data: None };
    let usage = Usage::default();
    let all = vec![
        SessionEvent::SessionStarted {
            session_id: s(),
            cwd: s(),
            provider: s(),
            model: s(),
            keel_version: s(),
            git_head: None,
            mode: None,
            parent: Some(ParentLink { session_id: s(), call_id: s(), agent: s(), depth: 1 }),
        },
        SessionEvent::SessionResumed {
            provider: s(),
            model: s(),
            keel_version: s(),
            skipped_lines: 0,
            interrupted_calls: 0,
        },
        SessionEvent::PromptPrefix {
            reason: s(),
            sections: super::context::PrefixSections::default(),
            tools_digest: s(),
            tool_bytes: [(s(), 120)].into(),
        },
        SessionEvent::ContextUpdated { parts: Vec::new() },
        SessionEvent::UserMessage { text: s(), images: Vec::new(), queued: Some(2) },
        SessionEvent::InputQueued {
            id: 2,
            text: s(),
            mode: super::queued_input::Delivery::Steer,
            images: Vec::new(),
        },
        SessionEvent::TurnStarted { turn: 1 },
        SessionEvent::ModelResponse {
            step: 1,
            response: ModelResponse {
                items: Vec::new(),
                usage,
                stop_reason: super::model::StopReason::EndTurn,
                response_id: None,
            },
            cost_usd: Some(0.25),
            estimated_tokens: Some(4_000),
            estimated_cost_usd: Some(0.01),
        },
        SessionEvent::PolicyDecision {
            call_id: s(),
            decision: s(),
            matched_rules: Vec::new(),
            reason: None,
        },
        SessionEvent::Approval {
            call_id: s(),
            approved: true,
            scope: ApprovalScope::Once,
            note: None,
            prefix: None,
            path: None,
            tool: None,
        },
        SessionEvent::AlwaysRemoved { prefix: None, path: None, tool: None, file: None },
        SessionEvent::ToolCallStarted { call, class: ToolClass::Mutating },
        SessionEvent::FileBefore { call_id: s(), path: s(), before: None },
        SessionEvent::FileChanged { call_id: s(), path: s(), before: None, after: None },
        SessionEvent::ToolCallFinished { result: ToolResult::ok("c", "o"), meta: ToolMeta::new() },
        SessionEvent::Checkpoint { turn: 1, commit: s() },
        SessionEvent::Undo { turn: 1, commit: s() },
        SessionEvent::Rewound {
            to_prompt: 2,
            to_seq: 7,
            scope: RewindScope::Both,
            items: Some(Vec::new()),
            checkpoint_before: Some(s()),
            restored: None,
            kept: vec![s()],
            undoes: Some(3),
        },
        SessionEvent::Forked {
            parent_session: s(),
            parent_log: s(),
            prompt: Some(2),
            parent_seq: 9,
        },
        SessionEvent::ModeChanged { mode: ApprovalMode::Auto },
        SessionEvent::ModelChanged { model: s(), after_turn: Some(s()) },
        SessionEvent::TurnScope {
            owner: s(),
            tools: Vec::new(),
            prefixes: vec![vec![s()]],
            commands: vec![vec![s()]],
            mcp_tools: vec![s()],
        },
        SessionEvent::PhaseChanged { from: s(), to: s() },
        SessionEvent::PlanUpdated { plan: serde_json::Value::Null },
        SessionEvent::TaskUpdated { task: serde_json::Value::Null },
        SessionEvent::Compaction {
            items: Vec::new(),
            reason: s(),
            method: s(),
            tokens_before: 0,
            tokens_after: 0,
            failed_check: None,
            usage: Some(Usage { input_tokens: 5, ..Usage::default() }),
            cost_usd: Some(0.5),
        },
        SessionEvent::LimitsSet {
            max_cost_usd: Some(1.5),
            max_tokens: None,
            reason: "start".into(),
        },
        SessionEvent::BudgetExceeded {
            limit: "cost".into(),
            max_cost_usd: Some(1.5),
            max_tokens: None,
            spent_usd: Some(1.25),
            spent_tokens: 9,
            next_usd: Some(0.5),
            next_tokens: 3,
        },
        SessionEvent::ModelError { message: s() },
        SessionEvent::Error { message: s() },
        SessionEvent::InternalError { source: s(), name: s(), call_id: Some(s()), message: s() },
        SessionEvent::HookRan {
            event: s(),
            command: s(),
            source: s(),
            duration_ms: 1,
            exit_code: Some(2),
            decision: Some("deny".into()),
            reason: Some(s()),
            error: None,
            skipped: None,
            refused: None,
        },
        SessionEvent::NetworkAccess {
            call_id: s(),
            host: "pkgs.example.test".into(),
            port: 443,
            allowed: false,
            reason: s(),
        },
        SessionEvent::SubagentStarted {
            call_id: s(),
            session_id: s(),
            log_path: s(),
            agent: s(),
            description: s(),
        },
        SessionEvent::SubagentFinished {
            call_id: s(),
            session_id: s(),
            outcome: TurnOutcome::Completed,
            usage,
            cost_usd: Some(0.5),
            estimated_tokens: Some(6_000),
            estimated_cost_usd: Some(0.02),
        },
        SessionEvent::TurnCompleted { turn: 1, outcome: TurnOutcome::Completed, usage },
        SessionEvent::SessionEnded { reason: s() },
        SessionEvent::McpServerStatus { server: s(), status: s(), tools: vec![s()], error: None },
        SessionEvent::ToolsChanged {
            reason: s(),
            added: vec![s()],
            removed: Vec::new(),
            tool_bytes: [(s(), 80)].into(),
        },
    ];
    for event in &all {
        match event {
            SessionEvent::SessionStarted { .. }
            | SessionEvent::SessionResumed { .. }
            | SessionEvent::PromptPrefix { .. }
            | SessionEvent::ContextUpdated { .. }
            | SessionEvent::UserMessage { .. }
            | SessionEvent::InputQueued { .. }
            | SessionEvent::TurnStarted { .. }
            | SessionEvent::ModelResponse { .. }
            | SessionEvent::PolicyDecision { .. }
            | SessionEvent::Approval { .. }
            | SessionEvent::AlwaysRemoved { .. }
            | SessionEvent::ToolCallStarted { .. }
            | SessionEvent::FileBefore { .. }
            | SessionEvent::FileChanged { .. }
            | SessionEvent::ToolCallFinished { .. }
            | SessionEvent::Checkpoint { .. }
            | SessionEvent::Undo { .. }
            | SessionEvent::Rewound { .. }
            | SessionEvent::Forked { .. }
            | SessionEvent::ModeChanged { .. }
            | SessionEvent::ModelChanged { .. }
            | SessionEvent::TurnScope { .. }
            | SessionEvent::PhaseChanged { .. }
            | SessionEvent::PlanUpdated { .. }
            | SessionEvent::TaskUpdated { .. }
            | SessionEvent::Compaction { .. }
            | SessionEvent::LimitsSet { .. }
            | SessionEvent::BudgetExceeded { .. }
            | SessionEvent::ModelError { .. }
            | SessionEvent::Error { .. }
            | SessionEvent::InternalError { .. }
            | SessionEvent::HookRan { .. }
            | SessionEvent::NetworkAccess { .. }
            | SessionEvent::SubagentStarted { .. }
            | SessionEvent::SubagentFinished { .. }
            | SessionEvent::TurnCompleted { .. }
            | SessionEvent::SessionEnded { .. }
            | SessionEvent::McpServerStatus { .. }
            | SessionEvent::ToolsChanged { .. } => {}
        }
    }
    all
}

#[test]
fn every_variant_has_exactly_one_listed_type_and_round_trips() {
    let samples = samples();
    assert_eq!(samples.len(), SessionEvent::TYPES.len());
    let mut seen: Vec<String> = samples.iter().map(type_of).collect();
    for kind in &seen {
        assert!(SessionEvent::TYPES.contains(&kind.as_str()), "{kind} is not listed");
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), SessionEvent::TYPES.len());
    for event in samples {
        let record = EventRecord { v: 1, seq: 0, ts: "t".into(), event };
        let line = serde_json::to_string(&record).unwrap();
        assert_eq!(serde_json::from_str::<EventRecord>(&line).unwrap(), record);
    }
}

#[test]
fn session_started_without_git_head_still_parses() {
    let line = r#"{"v":1,"seq":0,"ts":"t","type":"session_started","session_id":"s","cwd":"/w","provider":"openai","model":"m","keel_version":"0.1.0"}"#;
    let record: EventRecord = serde_json::from_str(line).unwrap();
    assert!(matches!(record.event, SessionEvent::SessionStarted { git_head: None, .. }));
}

/// A log from before children's estimates were passed up still parses:
/// the child's spend is its reported usage only.
#[test]
fn subagent_finished_without_estimates_still_parses() {
    let line = r#"{"v":1,"seq":9,"ts":"t","type":"subagent_finished","call_id":"c","session_id":"s","outcome":"completed","usage":{"input_tokens":5,"output_tokens":1,"cached_input_tokens":0,"reasoning_tokens":0},"cost_usd":0.5}"#;
    let record: EventRecord = serde_json::from_str(line).unwrap();
    assert!(matches!(
        record.event,
        SessionEvent::SubagentFinished { estimated_tokens: None, estimated_cost_usd: None, .. }
    ));
}
