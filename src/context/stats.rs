//! Usage across sessions (`keel stats`): one [`SessionStats`] per log,
//! folded from its records, and a [`Report`] summing many.
//!
//! A session counts only its own requests (`model_response`, compaction
//! summaries), never its children's `subagent_finished` figures: a
//! subagent's session is a session of its own in the folder, so the sum
//! over all sessions counts every request once. Costs are the logged ones
//! (a line without one: keel's table prices; a model the table does not
//! know leaves that request's cost out, counted in `unpriced_requests`).
//!
//! Invariants: pure; a [`SessionStats`] is what the stats index stores
//! (`session::stats_index`), so its fields only grow, each with
//! `#[serde(default)]`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::context::cost_usd;
use crate::protocol::{EventRecord, SessionEvent, TurnOutcome, Usage};

/// One model's share of one or many sessions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Bucket {
    #[serde(default)]
    pub requests: u64,
    #[serde(default)]
    pub usage: Usage,
    /// The cost of the requests whose cost is known.
    #[serde(default)]
    pub cost_usd: f64,
    /// Requests whose cost is unknown (no prices for their model).
    #[serde(default)]
    pub unpriced_requests: u64,
}

impl Bucket {
    fn add(&mut self, other: &Bucket) {
        self.requests += other.requests;
        self.usage.add(&other.usage);
        self.cost_usd += other.cost_usd;
        self.unpriced_requests += other.unpriced_requests;
    }
}

/// What one session log says about its own spend and work.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionStats {
    #[serde(default)]
    pub session_id: String,
    /// The first record's timestamp (RFC 3339).
    #[serde(default)]
    pub started: String,
    /// Where it ran (`session_started.cwd`): the project.
    #[serde(default)]
    pub project: String,
    #[serde(default)]
    pub subagent: bool,
    #[serde(default)]
    pub turns: u64,
    /// Turns that ended other than `completed`.
    #[serde(default)]
    pub failed_turns: u64,
    #[serde(default)]
    pub tool_calls: u64,
    /// Calls whose result was an error (refused, failed, interrupted).
    #[serde(default)]
    pub tool_failures: u64,
    /// By model.
    #[serde(default)]
    pub models: BTreeMap<String, Bucket>,
}

impl SessionStats {
    /// The stats of one log's records, in log order.
    pub fn from_records(records: impl IntoIterator<Item = EventRecord>) -> SessionStats {
        let mut stats = SessionStats::default();
        let mut model = String::new();
        for record in records {
            if stats.started.is_empty() {
                stats.started = record.ts;
            }
            stats.note(&mut model, record.event);
        }
        stats
    }

    fn note(&mut self, model: &mut String, event: SessionEvent) {
        match event {
            SessionEvent::SessionStarted { session_id, cwd, model: first, parent, .. } => {
                self.session_id = session_id;
                self.project = cwd;
                self.subagent = parent.is_some();
                *model = first;
            }
            SessionEvent::SessionResumed { model: next, .. }
            | SessionEvent::ModelChanged { model: next, .. } => *model = next,
            SessionEvent::ModelResponse { response, cost_usd, .. } => {
                self.charge(model, &response.usage, cost_usd);
            }
            SessionEvent::Compaction { usage: Some(usage), cost_usd, .. } => {
                self.charge(model, &usage, cost_usd);
            }
            SessionEvent::ToolCallFinished { result, .. } => {
                self.tool_calls += 1;
                self.tool_failures += u64::from(result.is_error);
            }
            SessionEvent::TurnCompleted { outcome, .. } => {
                self.turns += 1;
                self.failed_turns += u64::from(outcome != TurnOutcome::Completed);
            }
            SessionEvent::Compaction { usage: None, .. }
            | SessionEvent::Rewound { .. }
            | SessionEvent::InputQueued { .. }
            | SessionEvent::Forked { .. }
            | SessionEvent::PromptPrefix { .. }
            | SessionEvent::ContextUpdated { .. }
            | SessionEvent::UserMessage { .. }
            | SessionEvent::TurnStarted { .. }
            | SessionEvent::PolicyDecision { .. }
            | SessionEvent::Approval { .. }
            | SessionEvent::AlwaysRemoved { .. }
            | SessionEvent::ToolCallStarted { .. }
            | SessionEvent::FileBefore { .. }
            | SessionEvent::FileChanged { .. }
            | SessionEvent::Checkpoint { .. }
            | SessionEvent::Undo { .. }
            | SessionEvent::ModeChanged { .. }
            | SessionEvent::TurnScope { .. }
            | SessionEvent::PhaseChanged { .. }
            | SessionEvent::PlanUpdated { .. }
            | SessionEvent::TaskUpdated { .. }
            | SessionEvent::LimitsSet { .. }
            | SessionEvent::BudgetExceeded { .. }
            | SessionEvent::ModelError { .. }
            | SessionEvent::Error { .. }
            | SessionEvent::InternalError { .. }
            | SessionEvent::HookRan { .. }
            | SessionEvent::NetworkAccess { .. }
            | SessionEvent::SubagentStarted { .. }
            | SessionEvent::SubagentFinished { .. }
            | SessionEvent::SessionEnded { .. }
            | SessionEvent::McpServerStatus { .. }
            | SessionEvent::ToolsChanged { .. } => {}
        }
    }

    fn charge(&mut self, model: &str, usage: &Usage, logged: Option<f64>) {
        let bucket = self.models.entry(model.to_owned()).or_default();
        bucket.requests += 1;
        bucket.usage.add(usage);
        match logged.or_else(|| cost_usd(model, usage)) {
            Some(cost) => bucket.cost_usd += cost,
            None => bucket.unpriced_requests += 1,
        }
    }

    /// Every model's figures summed.
    pub fn total(&self) -> Bucket {
        let mut total = Bucket::default();
        for bucket in self.models.values() {
            total.add(bucket);
        }
        total
    }
}

/// Figures summed over sessions.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Totals {
    pub sessions: u64,
    pub subagent_sessions: u64,
    pub turns: u64,
    pub failed_turns: u64,
    pub tool_calls: u64,
    pub tool_failures: u64,
    #[serde(flatten)]
    pub spend: Bucket,
    /// Share of the input read from prompt caches.
    pub cache_hit_rate: Option<f64>,
}

impl Totals {
    fn add(&mut self, session: &SessionStats, spend: &Bucket) {
        if session.subagent {
            self.subagent_sessions += 1;
        } else {
            self.sessions += 1;
        }
        self.turns += session.turns;
        self.failed_turns += session.failed_turns;
        self.tool_calls += session.tool_calls;
        self.tool_failures += session.tool_failures;
        self.spend.add(spend);
        self.cache_hit_rate = self.spend.usage.cache_hit_rate();
    }
}

/// `keel stats`: everything, per model and per project.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    /// Sessions started on or after this day, when given.
    pub since: Option<String>,
    pub total: Totals,
    pub by_model: BTreeMap<String, Totals>,
    pub by_project: BTreeMap<String, Totals>,
}

impl Report {
    /// Sums `sessions`, those started before `since` (a `YYYY-MM-DD`
    /// prefix of RFC 3339) left out.
    pub fn of<'a>(
        sessions: impl IntoIterator<Item = &'a SessionStats>,
        since: Option<&str>,
    ) -> Self {
        let mut report = Report { since: since.map(str::to_owned), ..Report::default() };
        for session in sessions {
            if since.is_some_and(|day| session.started.as_str() < day) {
                continue;
            }
            let total = session.total();
            report.total.add(session, &total);
            report.by_project.entry(session.project.clone()).or_default().add(session, &total);
            for (model, bucket) in &session.models {
                report.by_model.entry(model.clone()).or_default().add(session, bucket);
            }
        }
        report
    }
}

/// Whether `day` is a `YYYY-MM-DD` date (the form `--since` takes).
pub fn is_day(day: &str) -> bool {
    let bytes = day.as_bytes();
    bytes.len() == 10
        && bytes.iter().enumerate().all(|(at, byte)| match at {
            4 | 7 => *byte == b'-',
            _ => byte.is_ascii_digit(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ModelResponse, StopReason, ToolResult};

    fn record(seq: u64, ts: &str, event: SessionEvent) -> EventRecord {
        EventRecord { v: 1, seq, ts: ts.into(), event }
    }

    fn session(id: &str, day: &str, model: &str, parent: bool) -> SessionStats {
        let usage = Usage { input_tokens: 1_000, cached_input_tokens: 500, ..Usage::default() };
        let started = SessionEvent::SessionStarted {
            session_id: id.into(),
            cwd: "/p".into(),
            provider: "openai".into(),
            model: model.into(),
            keel_version: "0".into(),
            git_head: None,
            mode: None,
            parent: parent.then(|| crate::protocol::ParentLink {
                session_id: "x".into(),
                call_id: "c".into(),
                agent: "explore".into(),
                depth: 1,
            }),
        };
        let response = SessionEvent::ModelResponse {
            step: 1,
            response: ModelResponse {
                items: Vec::new(),
                usage,
                stop_reason: StopReason::EndTurn,
                response_id: None,
            },
            cost_usd: None,
            estimated_tokens: None,
            estimated_cost_usd: None,
        };
        let failed = SessionEvent::ToolCallFinished {
            result: ToolResult::error("c", "no"),
            meta: Default::default(),
        };
        let turn = SessionEvent::TurnCompleted { turn: 1, outcome: TurnOutcome::Failed, usage };
        let ts = format!("{day}T10:00:00Z");
        let events = [started, response, failed, turn];
        SessionStats::from_records(
            events.into_iter().enumerate().map(|(seq, event)| record(seq as u64, &ts, event)),
        )
    }

    #[test]
    fn a_report_sums_sessions_by_model_and_project() {
        let all = [
            session("a", "2026-01-01", "gpt-5", false),
            session("b", "2026-02-01", "mock", false),
            session("c", "2026-02-02", "gpt-5", true),
        ];
        let report = Report::of(&all, None);
        assert_eq!((report.total.sessions, report.total.subagent_sessions), (2, 1));
        assert_eq!(report.total.spend.usage.input_tokens, 3_000);
        assert_eq!(report.total.spend.unpriced_requests, 1);
        assert_eq!(report.total.tool_failures, 3);
        assert_eq!(report.total.failed_turns, 3);
        assert_eq!(report.total.cache_hit_rate, Some(0.5));
        let gpt = &report.by_model["gpt-5"];
        let one = cost_usd("gpt-5", &all[0].total().usage).unwrap();
        assert!((gpt.spend.cost_usd - 2.0 * one).abs() < 1e-12);
        assert_eq!(report.by_project["/p"].turns, 3);
        let since = Report::of(&all, Some("2026-02-01"));
        assert_eq!(since.total.sessions + since.total.subagent_sessions, 2);
    }

    #[test]
    fn stats_round_trip_through_the_index_form() {
        let stats = session("a", "2026-01-01", "gpt-5", false);
        let line = serde_json::to_string(&stats).unwrap();
        assert_eq!(serde_json::from_str::<SessionStats>(&line).unwrap(), stats);
        assert!(is_day("2026-12-02") && !is_day("2026-12-2") && !is_day("yesterday"));
    }
}
