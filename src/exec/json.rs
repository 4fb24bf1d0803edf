//! The `--json` printer: one JSON object per line on stdout, flushed per
//! line. The wire format is a contract for scripts, documented in README
//! ("`keel exec --json`"), versioned by [`SCHEMA_VERSION`] on every line;
//! change it only deliberately, README in the same commit. It is not the
//! session log's schema (`protocol/events.rs`).

use std::io::Write;
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::exit::ExitStatus;
use crate::protocol::{StreamEvent, TurnOutcome, Usage};
use crate::runtime::{EventSink, RuntimeEvent};

use super::json_items::{Ending, Items, subagent_source};
use super::usage_json;
use crate::runtime::DeclinedCall;

/// `schema_version` of every line; raised when a field changes meaning or
/// goes away (new fields and event types do not raise it).
pub const SCHEMA_VERSION: u32 = 1;

/// Writes runtime events as JSON lines to stdout.
#[derive(Debug, Default)]
pub struct JsonPrinter {
    /// The open items and their ids (`json_items`: every start completes).
    items: Items,
}

impl JsonPrinter {
    pub fn stdout() -> Self {
        Self::default()
    }

    /// One line of the stream, stamped with its `schema_version`.
    fn write(&self, value: &Value) {
        let mut value = value.clone();
        if let Some(object) = value.as_object_mut() {
            object.insert("schema_version".into(), json!(SCHEMA_VERSION));
        }
        super::result_gate::write(&value);
    }
}

/// Writes one line and flushes. A closed stdout is not an error worth
/// stopping the session for: the log still has everything.
pub(crate) fn write_line(out: &mut impl Write, value: &Value) {
    let _ = serde_json::to_writer(&mut *out, value);
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

/// The safety net of the pairing contract: a session that ends without
/// its turn's end (a runtime error: the log could not be written, …)
/// drops its sink before the `result` line is written, and every item
/// still open completes here, as `failed`.
impl Drop for JsonPrinter {
    fn drop(&mut self) {
        for line in self.items.close_within("", Ending::Failed) {
            self.write(&line);
        }
    }
}

impl EventSink for JsonPrinter {
    fn emit(&mut self, event: RuntimeEvent) {
        if let RuntimeEvent::SessionStarted { session_id, log_path, .. } = &event {
            super::result_gate::note_session(session_id, log_path);
        }
        for line in self.lines("", event) {
            self.write(&line);
        }
    }
}

impl JsonPrinter {
    /// The lines for one event of `source` (`""`: this session; else the
    /// `agent` call whose subagent it comes from). A subagent's lines
    /// carry `parent`: that call's id.
    fn lines(&mut self, source: &str, event: RuntimeEvent) -> Vec<Value> {
        let mut out = Vec::new();
        match event {
            RuntimeEvent::SessionStarted {
                session_id,
                log_path,
                provider,
                model,
                workspace_root,
                sandbox,
                mode,
                pricing: _,
                limits: _,
            } => {
                out.push(json!({"type": "session_started", "session_id": session_id,
                    "log_path": log_path, "provider": provider, "model": model,
                    "workspace_root": workspace_root, "sandbox": sandbox.as_str(),
                    "approval_mode": mode.as_str(), "keel_version": env!("CARGO_PKG_VERSION")}));
            }
            // Mode and workflow changes are not lines of their own: the
            // `result` line carries the plan path and tasks.
            RuntimeEvent::ModeChanged { .. }
            | RuntimeEvent::ModelChanged { .. }
            | RuntimeEvent::WorkflowChanged { .. } => {}
            RuntimeEvent::TurnStarted { turn } => {
                out.push(json!({"type": "turn_started", "turn": turn}));
            }
            RuntimeEvent::InputQueued { id, text, mode } => {
                out.push(json!({"type": "input_queued", "id": id, "text": text,
                    "mode": mode.name()}));
            }
            RuntimeEvent::InputDelivered { id, .. } => {
                out.push(json!({"type": "input_delivered", "id": id}));
            }
            RuntimeEvent::Stream(StreamEvent::TextDelta { delta }) => {
                out.extend(self.items.delta(source, false, &delta));
            }
            RuntimeEvent::Stream(StreamEvent::ReasoningDelta { delta }) => {
                out.extend(self.items.delta(source, true, &delta));
            }
            RuntimeEvent::Stream(
                StreamEvent::ToolCallStarted { .. }
                | StreamEvent::ToolCallArgumentsDelta { .. }
                | StreamEvent::Retrying { .. },
            ) => {}
            RuntimeEvent::ModelResponse(response) => {
                out.extend(self.items.response(source, &response.items));
            }
            RuntimeEvent::ToolCallStarted { call, .. } => {
                out.push(self.items.call_started(source, &call));
            }
            RuntimeEvent::ToolCallFinished { call, result, meta } => {
                out.extend(self.items.call_finished(source, &call, &result, &meta));
            }
            RuntimeEvent::Compacting { trigger } => {
                // No response streams across a compaction.
                out.extend(self.items.close_streams(source, Ending::Failed));
                out.push(json!({"type": "compacting", "trigger": trigger}));
            }
            RuntimeEvent::Compacted { reason, tokens_before, tokens_after } => {
                out.push(json!({"type": "compacted", "reason": reason,
                    "tokens_before": tokens_before, "tokens_after": tokens_after}));
            }
            RuntimeEvent::Retrying { attempt, max_attempts, reason, delay } => {
                out.extend(self.items.close_streams(source, Ending::Failed));
                out.push(json!({"type": "retrying", "attempt": attempt,
                    "max_attempts": max_attempts, "reason": reason,
                    "delay_ms": u64::try_from(delay.as_millis()).unwrap_or(u64::MAX)}));
            }
            RuntimeEvent::ApprovalDeclined(declined) => {
                let mut line = declined_json(&declined);
                line["type"] = json!("approval_declined");
                out.push(line);
            }
            RuntimeEvent::Progress { message } => {
                self.write(&json!({"type": "progress", "message": message}));
            }
            RuntimeEvent::Warning { message } => {
                out.push(json!({"type": "warning", "message": message}));
            }
            RuntimeEvent::Error { message } => {
                out.extend(self.items.close_streams(source, Ending::Failed));
                out.push(json!({"type": "error", "message": message}));
            }
            RuntimeEvent::McpServerStatus { server, status, tools, error, log, prompts: _ } => {
                self.write(&json!({"type": "mcp_server_status", "server": server,
                    "status": status, "tools": tools, "error": error, "log": log}));
            }
            RuntimeEvent::ToolProgress { call_id, progress, total, message } => {
                self.write(&json!({"type": "tool_progress", "call_id": call_id,
                    "progress": progress, "total": total, "message": message}));
            }
            RuntimeEvent::TurnCompleted { turn, outcome, usage, .. } => {
                let ending = match outcome {
                    TurnOutcome::Interrupted => Ending::Interrupted,
                    TurnOutcome::Completed
                    | TurnOutcome::Failed
                    | TurnOutcome::MaxSteps
                    | TurnOutcome::BudgetExceeded
                    | TurnOutcome::Stuck
                    | TurnOutcome::Cut => Ending::Failed,
                };
                out.extend(self.items.close_within(source, ending));
                out.push(json!({"type": "turn_completed", "turn": turn,
                    "outcome": outcome, "usage": usage_json(&usage)}));
            }
            RuntimeEvent::Subagent { call_id, event } => {
                for mut line in self.lines(&subagent_source(source, &call_id), *event) {
                    if let Some(object) = line.as_object_mut() {
                        object.entry("parent").or_insert_with(|| json!(call_id));
                    }
                    out.push(line);
                }
            }
        }
        out
    }
}
fn declined_json(declined: &DeclinedCall) -> Value {
    json!({"call_id": declined.call.call_id, "name": declined.call.name,
        "arguments": declined.call.arguments, "reason": declined.reason,
        "allow_with": declined.allow_with})
}

/// The `status` of the closing `result` line: how the run ended, for
/// scripts (README "`keel exec --json`"). The names are the wire contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExecStatus {
    /// The model finished and any change was verified (or none was made).
    Completed,
    /// The model, the step limit, the log or the run itself failed.
    Failed,
    /// The user interrupted the run.
    Interrupted,
    /// Files changed after the last passing verification.
    Unverified,
    /// `--plan-only` stopped at a submitted plan (the plan is the final text).
    PlanReady,
    /// Calls the model wanted were declined: this run could not ask.
    NeedsApproval,
    /// The next model request would have crossed `--max-cost` or
    /// `--max-tokens`; it was not sent.
    BudgetExceeded,
    /// The model kept repeating itself after keel pointed it out.
    Stuck,
    /// The command line or the configuration was wrong (exit 2): nothing
    /// was asked of the model, so a script can tell this from `failed`.
    UsageError,
    /// The model's answer stopped at the output limit: the final text is
    /// incomplete.
    Cut,
    /// A task prompt to a server on this machine was answered without one
    /// tool call (exit 0, with a warning): nothing was read or changed
    /// (`exec/tool_use.rs` says when).
    NoToolCall,
    /// `--output-schema`: the model's final answer still did not validate
    /// against the schema after it was asked again (exit 1).
    SchemaInvalid,
}

impl ExecStatus {
    /// The name in the `result` line (what serde writes).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Interrupted => "interrupted",
            Self::Unverified => "unverified",
            Self::PlanReady => "plan_ready",
            Self::NeedsApproval => "needs_approval",
            Self::BudgetExceeded => "budget_exceeded",
            Self::Stuck => "stuck",
            Self::UsageError => "usage_error",
            Self::Cut => "cut",
            Self::NoToolCall => "no_tool_call",
            Self::SchemaInvalid => "schema_invalid",
        }
    }

    /// The status a finished turn has before the workflow has its say.
    pub fn of_turn(outcome: TurnOutcome) -> Self {
        match outcome {
            TurnOutcome::Completed => Self::Completed,
            TurnOutcome::Failed | TurnOutcome::MaxSteps => Self::Failed,
            TurnOutcome::Interrupted => Self::Interrupted,
            TurnOutcome::BudgetExceeded => Self::BudgetExceeded,
            TurnOutcome::Stuck => Self::Stuck,
            TurnOutcome::Cut => Self::Cut,
        }
    }

    /// What the process exits with for this status.
    pub fn exit_status(self) -> ExitStatus {
        match self {
            Self::Completed | Self::Unverified | Self::PlanReady | Self::NoToolCall => {
                ExitStatus::Done
            }
            Self::NeedsApproval => ExitStatus::NeedsApproval,
            Self::Interrupted => ExitStatus::Interrupted,
            Self::Failed | Self::Cut | Self::SchemaInvalid => ExitStatus::Failed,
            Self::BudgetExceeded => ExitStatus::BudgetExceeded,
            Self::Stuck => ExitStatus::Stuck,
            Self::UsageError => ExitStatus::Usage,
        }
    }
}

impl std::fmt::Display for ExecStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The closing `result` line.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultLine {
    pub status: ExecStatus,
    /// Calls declined for want of an approval, with what allows each.
    pub declined: Vec<DeclinedCall>,
    pub final_text: Option<String>,
    pub usage: Usage,
    pub session_id: Option<String>,
    pub log_path: Option<PathBuf>,
    pub error: Option<String>,
    /// Session cost in US dollars, when the model's prices are known.
    pub cost_usd: Option<f64>,
    /// How full the context was at the last request, when the window is known.
    pub context_percent: Option<f64>,
    /// Where the session's plan was saved (`.keel/plans/`), if it has one.
    pub plan_path: Option<String>,
    /// The session's task list (`todo_write`), as the model left it.
    pub tasks: Vec<crate::tasks::Task>,
    /// The session's spend limits and spend, when the session opened.
    pub spend: Option<crate::agent::SpendStatus>,
    /// When `unverified`: the commands run since the last change and why
    /// none counted as a passing check.
    pub verification: Option<String>,
    /// The model's `ask_user` questions no one answered (the model was
    /// told to decide or stop).
    pub unanswered: Vec<String>,
    /// `--output-schema`: the final answer as the JSON that validated.
    pub structured_output: Option<Value>,
}

impl ResultLine {
    pub fn failure(error: String) -> Self {
        Self {
            status: ExecStatus::Failed,
            declined: Vec::new(),
            final_text: None,
            usage: Usage::default(),
            session_id: None,
            log_path: None,
            error: Some(error),
            cost_usd: None,
            context_percent: None,
            plan_path: None,
            tasks: Vec::new(),
            spend: None,
            verification: None,
            unanswered: Vec::new(),
            structured_output: None,
        }
    }

    /// The line for a usage or configuration error (exit 2).
    pub fn usage_error(error: String) -> Self {
        Self { status: ExecStatus::UsageError, ..Self::failure(error) }
    }

    pub fn to_json(&self) -> Value {
        json!({"type": "result", "schema_version": SCHEMA_VERSION,
        "status": self.status, "final_text": self.final_text,
        "usage": usage_json(&self.usage), "session_id": self.session_id,
        "log_path": self.log_path, "cost_usd": self.cost_usd,
        "context_percent": self.context_percent.map(|p| (p * 10.0).round() / 10.0),
        "plan_path": self.plan_path, "tasks": self.tasks, "error": self.error,
        "declined": self.declined.iter().map(declined_json).collect::<Vec<_>>(),
        "verification": self.verification,
        "unanswered_questions": self.unanswered,
        "structured_output": self.structured_output,
        "limits": self.spend.map(|spend| json!({
            "max_cost_usd": spend.limits.max_cost_usd,
            "max_tokens": spend.limits.max_tokens,
            "spent_usd": spend.spent_usd,
            "spent_tokens": spend.spent_tokens,
        }))})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names scripts match on, and the exit code each one gives.
    #[test]
    fn exec_status_names_and_exit_codes_are_the_documented_ones() {
        let table = [
            (ExecStatus::Completed, "completed", 0),
            (ExecStatus::Failed, "failed", 1),
            (ExecStatus::Interrupted, "interrupted", 130),
            (ExecStatus::Unverified, "unverified", 0),
            (ExecStatus::PlanReady, "plan_ready", 0),
            (ExecStatus::NeedsApproval, "needs_approval", 3),
            (ExecStatus::BudgetExceeded, "budget_exceeded", 4),
            (ExecStatus::Stuck, "stuck", 5),
            (ExecStatus::UsageError, "usage_error", 2),
            (ExecStatus::Cut, "cut", 1),
            (ExecStatus::NoToolCall, "no_tool_call", 0),
            (ExecStatus::SchemaInvalid, "schema_invalid", 1),
        ];
        for (status, name, code) in table {
            let mut line = ResultLine::failure(String::new());
            line.status = status;
            assert_eq!(line.to_json()["status"], name);
            assert_eq!(status.to_string(), name);
            assert_eq!(status.exit_status().code(), code, "{name}");
        }
        assert_eq!(ExecStatus::of_turn(TurnOutcome::MaxSteps), ExecStatus::Failed);
    }

    #[test]
    fn a_subagents_lines_name_the_call_they_run_for_innermost_first() {
        let mut printer = JsonPrinter::default();
        let delta = || RuntimeEvent::Stream(StreamEvent::TextDelta { delta: "x".into() });
        let grandchild = || RuntimeEvent::Subagent {
            call_id: "outer".into(),
            event: Box::new(RuntimeEvent::Subagent {
                call_id: "inner".into(),
                event: Box::new(delta()),
            }),
        };
        let lines = printer.lines("", grandchild());
        assert_eq!(
            lines,
            [json!({"type": "item_started", "item": {"id": "item_0", "type": "agent_message"},
            "parent": "inner"})]
        );
        // Each source streams on its own: the parent's text starts its item.
        assert_eq!(printer.lines("", delta()).len(), 1);
        assert!(printer.lines("", delta()).is_empty());
        assert!(printer.lines("", grandchild()).is_empty(), "`inner` announced its message");
        // A subagent of another `inner` call (not `outer`'s) is another source.
        let child = RuntimeEvent::Subagent { call_id: "inner".into(), event: Box::new(delta()) };
        assert_eq!(printer.lines("", child).len(), 1);
    }
}
