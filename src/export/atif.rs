//! `keel export --format atif`: a session log as a Harbor trajectory, the
//! Agent Trajectory Interchange Format (ATIF, Harbor's RFC 0001, v1.7):
//! a root with `schema_version`, `session_id`, `agent` (keel, its version,
//! the model the session started with) and `final_metrics`, and `steps`
//! numbered from 1: a `user` step per prompt, an `agent` step per model
//! response (one inference each: its text as `message`, reasoning the
//! model let keel see as `reasoning_content`, its `tool_calls` with their
//! JSON arguments, the results keel sent back as `observation.results`
//! naming each call's `tool_call_id`, its tokens and cost as `metrics`).
//!
//! What ATIF has no field for stays out (policy decisions, approvals, mode
//! and phase changes, compactions, rewinds: the other formats show them);
//! a subagent's steps are in its own log. Arguments that are not a JSON
//! object (ATIF requires one) are kept as `{"input": …}`; a result whose
//! call no step holds is a `system` step's observation.
//!
//! Invariants: pure, one pass over the records, never fails on what a log
//! holds; every string is masked by the caller (`super::export`) before
//! it is written.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Map, Value};

use super::transcript::reasoning_text;
use crate::protocol::{EventRecord, Item, SessionEvent, ToolResult, Usage};

/// The ATIF version these trajectories follow.
pub const ATIF_VERSION: &str = "ATIF-v1.7";

#[derive(Debug, Default, Serialize)]
pub struct Trajectory {
    schema_version: &'static str,
    session_id: String,
    agent: Agent,
    steps: Vec<Step>,
    final_metrics: FinalMetrics,
}

#[derive(Debug, Default, Serialize)]
struct Agent {
    name: &'static str,
    version: String,
    model_name: String,
}

#[derive(Debug, Serialize)]
struct Step {
    step_id: usize,
    timestamp: String,
    source: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    model_name: Option<String>,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<AtifCall>,
    #[serde(skip_serializing_if = "Option::is_none")]
    observation: Option<Observation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metrics: Option<Metrics>,
}

#[derive(Debug, Serialize)]
struct AtifCall {
    tool_call_id: String,
    function_name: String,
    arguments: Value,
}

#[derive(Debug, Default, Serialize)]
struct Observation {
    results: Vec<ObservationResult>,
}

#[derive(Debug, Serialize)]
struct ObservationResult {
    #[serde(skip_serializing_if = "Option::is_none")]
    source_call_id: Option<String>,
    content: String,
}

#[derive(Debug, Serialize)]
struct Metrics {
    prompt_tokens: u64,
    completion_tokens: u64,
    cached_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    cost_usd: Option<f64>,
}

#[derive(Debug, Default, Serialize)]
struct FinalMetrics {
    total_prompt_tokens: u64,
    total_completion_tokens: u64,
    total_cached_tokens: u64,
    /// None when a response's price was unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    total_cost_usd: Option<f64>,
    total_steps: usize,
}

/// The trajectory of `records`.
pub fn trajectory(records: &[EventRecord]) -> Trajectory {
    let mut fold = Fold { cost_known: true, ..Fold::default() };
    fold.out.schema_version = ATIF_VERSION;
    fold.out.agent.name = "keel";
    for record in records {
        fold.record(record);
    }
    let mut out = fold.out;
    out.final_metrics.total_cost_usd = fold.cost_known.then_some(fold.cost);
    out.final_metrics.total_steps = out.steps.len();
    out
}

#[derive(Default)]
struct Fold {
    out: Trajectory,
    /// The model answering now (a `model_changed` line switches it).
    model: String,
    /// The step (index) holding each call.
    calls: HashMap<String, usize>,
    cost: f64,
    cost_known: bool,
}

impl Fold {
    fn record(&mut self, record: &EventRecord) {
        match &record.event {
            SessionEvent::SessionStarted { session_id, model, keel_version, .. }
                if self.out.session_id.is_empty() =>
            {
                self.out.session_id.clone_from(session_id);
                self.out.agent.version.clone_from(keel_version);
                self.out.agent.model_name.clone_from(model);
                self.model.clone_from(model);
            }
            SessionEvent::ModelChanged { model, .. } => self.model.clone_from(model),
            SessionEvent::UserMessage { text, .. } => {
                self.push(record, "user", text.clone());
            }
            SessionEvent::ModelResponse { response, cost_usd, .. } => {
                self.response(record, &response.items, &response.usage, *cost_usd);
            }
            SessionEvent::ToolCallFinished { result, .. } => self.result(record, result),
            // No ATIF field for these (the module doc).
            SessionEvent::SessionStarted { .. }
            | SessionEvent::SessionResumed { .. }
            | SessionEvent::PromptPrefix { .. }
            | SessionEvent::ContextUpdated { .. }
            | SessionEvent::InputQueued { .. }
            | SessionEvent::TurnStarted { .. }
            | SessionEvent::PolicyDecision { .. }
            | SessionEvent::Approval { .. }
            | SessionEvent::AlwaysRemoved { .. }
            | SessionEvent::ToolCallStarted { .. }
            | SessionEvent::FileBefore { .. }
            | SessionEvent::FileChanged { .. }
            | SessionEvent::Checkpoint { .. }
            | SessionEvent::Undo { .. }
            | SessionEvent::Rewound { .. }
            | SessionEvent::Forked { .. }
            | SessionEvent::ModeChanged { .. }
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
            | SessionEvent::NetworkAccess { .. }
            | SessionEvent::HookRan { .. }
            | SessionEvent::SubagentStarted { .. }
            | SessionEvent::SubagentFinished { .. }
            | SessionEvent::TurnCompleted { .. }
            | SessionEvent::SessionEnded { .. }
            | SessionEvent::McpServerStatus { .. }
            | SessionEvent::ToolsChanged { .. } => {}
        }
    }

    fn push(&mut self, record: &EventRecord, source: &'static str, message: String) -> usize {
        self.out.steps.push(Step {
            step_id: self.out.steps.len() + 1,
            timestamp: record.ts.clone(),
            source,
            model_name: None,
            message,
            reasoning_content: None,
            tool_calls: Vec::new(),
            observation: None,
            metrics: None,
        });
        self.out.steps.len() - 1
    }

    fn response(&mut self, record: &EventRecord, items: &[Item], usage: &Usage, cost: Option<f64>) {
        let at = self.push(record, "agent", String::new());
        let mut texts = Vec::new();
        let mut reasoning = Vec::new();
        let mut calls = Vec::new();
        for item in items {
            match item {
                Item::Assistant { text } if !text.trim().is_empty() => texts.push(text.clone()),
                Item::Reasoning(item) => reasoning.push(reasoning_text(item)),
                Item::ToolCall(call) => {
                    self.calls.insert(call.call_id.clone(), at);
                    calls.push(AtifCall {
                        tool_call_id: call.call_id.clone(),
                        function_name: call.name.clone(),
                        arguments: object_of(&call.arguments),
                    });
                }
                Item::Assistant { .. }
                | Item::User { .. }
                | Item::ToolResult(_)
                | Item::Context { .. } => {}
            }
        }
        reasoning.retain(|text| !text.trim().is_empty());
        let totals = &mut self.out.final_metrics;
        totals.total_prompt_tokens += usage.input_tokens;
        totals.total_completion_tokens += usage.output_tokens;
        totals.total_cached_tokens += usage.cached_input_tokens;
        match cost {
            Some(cost) => self.cost += cost,
            None => self.cost_known = false,
        }
        let step = &mut self.out.steps[at];
        step.model_name = Some(self.model.clone());
        step.message = texts.join("\n\n");
        step.reasoning_content = (!reasoning.is_empty()).then(|| reasoning.join("\n\n"));
        step.tool_calls = calls;
        step.metrics = Some(Metrics {
            prompt_tokens: usage.input_tokens,
            completion_tokens: usage.output_tokens,
            cached_tokens: usage.cached_input_tokens,
            cost_usd: cost,
        });
    }

    fn result(&mut self, record: &EventRecord, result: &ToolResult) {
        let (at, source_call_id) = match self.calls.get(&result.call_id) {
            Some(at) => (*at, Some(result.call_id.clone())),
            None => (self.push(record, "system", String::new()), None),
        };
        let step = &mut self.out.steps[at];
        let observation = step.observation.get_or_insert_with(Observation::default);
        observation
            .results
            .push(ObservationResult { source_call_id, content: result.output.clone() });
    }
}

/// A call's arguments as the JSON object ATIF requires.
fn object_of(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(map)) => Value::Object(map),
        Ok(other) => Value::Object(Map::from_iter([("input".to_owned(), other)])),
        Err(_) => {
            Value::Object(Map::from_iter([("input".to_owned(), Value::String(arguments.into()))]))
        }
    }
}
