//! One session's log lines turned into spans, log events and metrics (the
//! table in `mod.rs`). A tap holds only the spans still open; a finished
//! one goes to the queue at once, so a crash loses at most the open ones.
//!
//! Invariants: it never blocks and never fails (a full queue drops);
//! content (prompts, model text, tool arguments and output) is attached
//! only when `log_prompts` / `log_tool_content` allow, masked for secret
//! shapes; every `SessionEvent` variant is matched by name, so a new line
//! type is a decision here.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use crate::protocol::{ApprovalScope, EventRecord, SessionEvent, StopReason, ToolClass};
use crate::session::LogTap;

use super::Shared;
use super::model::{Attrs, Item, LogEvent, SpanId, SpanRecord, TraceId, Value, unix_nanos};

/// Content attached when opted in is cut to this many bytes.
const MAX_CONTENT_BYTES: usize = 8 * 1024;

/// A span still open: where it started and what it will carry.
struct Open {
    span: SpanId,
    start: u64,
    name: String,
    attrs: Attrs,
}

/// The turn being traced.
struct Turn {
    trace: TraceId,
    span: SpanId,
    start: u64,
    number: u32,
    calls: HashMap<String, Open>,
    approvals: HashMap<String, Open>,
    /// Span ids named for `agent` calls before their `tool_call_started`.
    agent_spans: HashMap<String, SpanId>,
}

/// Watches one session's log (`Telemetry::tap`).
pub struct SessionTap {
    shared: Arc<Shared>,
    session_id: String,
    model: String,
    /// A subagent's: the parent's trace and `agent` call span.
    parent: Option<(TraceId, SpanId)>,
    turn: Option<Turn>,
    /// When the previous line was written: a model request or a
    /// compaction starts right after it.
    last_at: u64,
}

impl SessionTap {
    pub(super) fn new(shared: Arc<Shared>, session_id: &str) -> Self {
        Self {
            shared,
            session_id: session_id.to_owned(),
            model: String::new(),
            parent: None,
            turn: None,
            last_at: 0,
        }
    }

    fn log_prompts(&self) -> bool {
        self.shared.settings.log_prompts
    }

    fn log_tool_content(&self) -> bool {
        self.shared.settings.log_tool_content
    }

    /// The turn's trace and span, or a trace of its own for a line
    /// outside a turn (under the parent's call span for a subagent).
    fn context(&self) -> Option<(TraceId, SpanId)> {
        self.turn.as_ref().map(|turn| (turn.trace, turn.span))
    }

    fn emit_span(&self, open: Open, end: u64, error: Option<String>) {
        let Some((trace, parent)) = self.context() else { return };
        self.shared.push(Item::Span(SpanRecord {
            trace,
            span: open.span,
            parent: Some(parent),
            name: open.name,
            start: open.start,
            end,
            attrs: open.attrs,
            error,
        }));
    }

    fn base_attrs(&self) -> Attrs {
        vec![("session.id", Value::from(self.session_id.as_str()))]
    }

    fn open_turn(&mut self, number: u32, at: u64) {
        let (trace, _) = self.parent.unwrap_or((TraceId::random(), SpanId::random()));
        self.turn = Some(Turn {
            trace,
            span: SpanId::random(),
            start: at,
            number,
            calls: HashMap::new(),
            approvals: HashMap::new(),
            agent_spans: HashMap::new(),
        });
    }

    /// Ends the open turn and whatever is still open in it.
    fn close_turn(&mut self, at: u64, outcome: &str, extra: Attrs) {
        let Some(mut turn) = self.turn.take() else { return };
        let approvals: Vec<Open> = turn.approvals.drain().map(|(_, open)| open).collect();
        let calls: Vec<(String, Open)> = turn.calls.drain().collect();
        let (trace, span, start, number) = (turn.trace, turn.span, turn.start, turn.number);
        self.turn = Some(turn);
        for mut open in approvals {
            open.attrs.push(("keel.approval.decision", "unanswered".into()));
            self.emit_span(open, at, None);
        }
        for (call_id, open) in calls {
            self.shared.forget_agent_call(&self.session_id, &call_id);
            self.emit_span(open, at, Some("the call did not finish in its turn".to_owned()));
        }
        self.turn = None;
        let mut attrs = self.base_attrs();
        attrs.push(("keel.turn", number.into()));
        attrs.push(("keel.turn.outcome", outcome.into()));
        attrs.extend(extra);
        let error = (outcome != "completed").then(|| format!("the turn ended: {outcome}"));
        self.shared.push(Item::Span(SpanRecord {
            trace,
            span,
            parent: self.parent.map(|(_, parent)| parent),
            name: "keel.turn".to_owned(),
            start,
            end: at,
            attrs,
            error,
        }));
        self.shared.push(Item::Flush);
    }

    fn content(&self, text: &str) -> String {
        let masked = crate::display::mask_secret_shapes(text);
        let mut cut = masked.len().min(MAX_CONTENT_BYTES);
        while !masked.is_char_boundary(cut) {
            cut -= 1;
        }
        masked[..cut].to_owned()
    }

    fn metric(&self, name: &'static str, attrs: Vec<(&'static str, String)>, value: f64) {
        self.shared.metrics(|metrics| metrics.add(name, attrs, value));
    }

    fn usage_metrics(&self, usage: &crate::protocol::Usage, cost: Option<f64>) {
        let model = self.model.clone();
        for (kind, tokens) in [
            ("input", usage.input_tokens),
            ("output", usage.output_tokens),
            ("cache_read", usage.cached_input_tokens),
            ("cache_write", usage.cache_write_tokens),
        ] {
            let attrs = vec![("model", model.clone()), ("type", kind.to_owned())];
            self.metric("keel.token.usage", attrs, tokens as f64);
        }
        if let Some(cost) = cost {
            self.metric("keel.cost.usage", vec![("model", model)], cost);
        }
    }

    /// Spans and metrics of one line; returns the log event's attributes
    /// and body (content only when opted in).
    fn handle(&mut self, event: &SessionEvent, at: u64) -> (Attrs, Option<String>, bool) {
        let mut attrs = Attrs::new();
        let mut body = None;
        let mut error = false;
        match event {
            SessionEvent::SessionStarted { session_id, model, parent, provider, .. } => {
                session_id.clone_into(&mut self.session_id);
                model.clone_into(&mut self.model);
                if let Some(link) = parent {
                    self.parent = self.shared.agent_call(&link.session_id, &link.call_id);
                    attrs.push(("keel.parent.session.id", link.session_id.as_str().into()));
                    attrs.push(("keel.agent", link.agent.as_str().into()));
                }
                attrs.push(("gen_ai.request.model", model.as_str().into()));
                attrs.push(("gen_ai.provider.name", provider.as_str().into()));
            }
            SessionEvent::SessionResumed { model, .. }
            | SessionEvent::ModelChanged { model, .. } => {
                model.clone_into(&mut self.model);
                attrs.push(("gen_ai.request.model", model.as_str().into()));
            }
            SessionEvent::TurnStarted { turn } => {
                self.close_turn(at, "interrupted", Attrs::new());
                self.open_turn(*turn, at);
                attrs.push(("keel.turn", (*turn).into()));
            }
            SessionEvent::UserMessage { text, .. } | SessionEvent::InputQueued { text, .. } => {
                attrs.push(("keel.prompt.length", (text.len() as u64).into()));
                if self.log_prompts() {
                    body = Some(self.content(text));
                }
            }
            SessionEvent::ModelResponse { step, response, cost_usd, .. } => {
                let usage = &response.usage;
                let mut span_attrs = self.base_attrs();
                span_attrs.extend([
                    ("gen_ai.operation.name", Value::from("chat")),
                    ("gen_ai.request.model", self.model.as_str().into()),
                    ("gen_ai.usage.input_tokens", usage.input_tokens.into()),
                    ("gen_ai.usage.output_tokens", usage.output_tokens.into()),
                    ("gen_ai.usage.cache_read_tokens", usage.cached_input_tokens.into()),
                    ("gen_ai.usage.cache_write_tokens", usage.cache_write_tokens.into()),
                    ("gen_ai.response.finish_reason", stop_reason(&response.stop_reason).into()),
                    ("keel.step", (*step).into()),
                    ("keel.tool_calls", (response.tool_calls().count() as u64).into()),
                ]);
                if let Some(cost) = cost_usd {
                    span_attrs.push(("keel.cost_usd", (*cost).into()));
                }
                attrs.clone_from(&span_attrs);
                let name = format!("chat {}", self.model);
                let open =
                    Open { span: SpanId::random(), start: self.last_at, name, attrs: span_attrs };
                self.emit_span(open, at, None);
                self.usage_metrics(usage, *cost_usd);
                if self.log_prompts() {
                    body = Some(self.content(&response.text()));
                }
            }
            SessionEvent::ModelError { message } => {
                let name = format!("chat {}", self.model);
                let open = Open {
                    span: SpanId::random(),
                    start: self.last_at,
                    name,
                    attrs: self.base_attrs(),
                };
                self.emit_span(open, at, Some(message.clone()));
                error = true;
            }
            SessionEvent::PolicyDecision { call_id, decision, .. } => {
                attrs.push(("keel.policy.decision", decision.as_str().into()));
                if decision == "prompt" {
                    let mut span_attrs = self.base_attrs();
                    span_attrs.push(("gen_ai.tool.call.id", call_id.as_str().into()));
                    let open = Open {
                        span: SpanId::random(),
                        start: at,
                        name: "keel.approval".to_owned(),
                        attrs: span_attrs,
                    };
                    if let Some(turn) = &mut self.turn {
                        turn.approvals.insert(call_id.clone(), open);
                    }
                }
            }
            SessionEvent::Approval { call_id, approved, scope, .. } => {
                let decision = if *approved { "approved" } else { "denied" };
                attrs.push(("keel.approval.decision", decision.into()));
                attrs.push(("keel.approval.scope", scope_name(*scope).into()));
                let open = self.turn.as_mut().and_then(|turn| turn.approvals.remove(call_id));
                if let Some(mut open) = open {
                    open.attrs.extend(attrs.iter().cloned());
                    self.emit_span(open, at, None);
                }
                self.metric("keel.approvals", vec![("decision", decision.to_owned())], 1.0);
            }
            SessionEvent::SubagentStarted { call_id, session_id, agent, .. } => {
                attrs.push(("keel.subagent.session.id", session_id.as_str().into()));
                attrs.push(("keel.agent", agent.as_str().into()));
                // The call's span when it is open already, else the id it
                // will get (the child's log may start before the call).
                if let Some(turn) = &mut self.turn {
                    let span = match turn.calls.get(call_id) {
                        Some(open) => open.span,
                        None => {
                            *turn.agent_spans.entry(call_id.clone()).or_insert_with(SpanId::random)
                        }
                    };
                    self.shared.name_agent_call(&self.session_id, call_id, (turn.trace, span));
                }
            }
            SessionEvent::SubagentFinished {
                call_id,
                session_id,
                outcome,
                usage,
                cost_usd,
                ..
            } => {
                attrs.push(("keel.subagent.session.id", session_id.as_str().into()));
                attrs.push(("keel.subagent.outcome", outcome.as_str().into()));
                attrs.push(("gen_ai.usage.input_tokens", usage.input_tokens.into()));
                attrs.push(("gen_ai.usage.output_tokens", usage.output_tokens.into()));
                if let Some(cost) = cost_usd {
                    attrs.push(("keel.cost_usd", (*cost).into()));
                }
                if let Some(open) = self.turn.as_mut().and_then(|turn| turn.calls.get_mut(call_id))
                {
                    open.attrs.extend(attrs.iter().cloned());
                }
            }
            SessionEvent::ToolCallStarted { call, class } => {
                let mut span_attrs = self.base_attrs();
                span_attrs.extend([
                    ("gen_ai.operation.name", Value::from("execute_tool")),
                    ("gen_ai.tool.name", call.name.as_str().into()),
                    ("gen_ai.tool.call.id", call.call_id.as_str().into()),
                    ("keel.tool.class", class_name(*class).into()),
                ]);
                if self.log_tool_content() {
                    span_attrs
                        .push(("gen_ai.tool.call.arguments", self.content(&call.arguments).into()));
                }
                attrs.clone_from(&span_attrs);
                if let Some(turn) = &mut self.turn {
                    let span =
                        turn.agent_spans.remove(&call.call_id).unwrap_or_else(SpanId::random);
                    let name = format!("execute_tool {}", call.name);
                    turn.calls.insert(
                        call.call_id.clone(),
                        Open { span, start: at, name, attrs: span_attrs },
                    );
                }
            }
            SessionEvent::ToolCallFinished { result, .. } => {
                attrs.push(("gen_ai.tool.call.id", result.call_id.as_str().into()));
                attrs.push(("keel.tool.is_error", result.is_error.into()));
                attrs.push(("keel.tool.output_bytes", (result.output.len() as u64).into()));
                if self.log_tool_content() {
                    body = Some(self.content(&result.output));
                }
                let open = self.turn.as_mut().and_then(|turn| turn.calls.remove(&result.call_id));
                self.shared.forget_agent_call(&self.session_id, &result.call_id);
                if let Some(mut open) = open {
                    let tool = open.name.trim_start_matches("execute_tool ").to_owned();
                    let outcome = if result.is_error { "error" } else { "ok" };
                    let ms = at.saturating_sub(open.start) as f64 / 1e6;
                    self.metric(
                        "keel.tool.calls",
                        vec![("outcome", outcome.to_owned()), ("tool", tool.clone())],
                        1.0,
                    );
                    self.shared
                        .metrics(|m| m.record("keel.tool.duration", vec![("tool", tool)], ms));
                    open.attrs.extend(attrs.iter().skip(1).cloned());
                    if let Some(output) = &body {
                        open.attrs.push(("gen_ai.tool.call.result", output.as_str().into()));
                    }
                    let failed = result.is_error.then(|| "the tool reported an error".to_owned());
                    self.emit_span(open, at, failed);
                }
            }
            SessionEvent::Compaction {
                reason,
                method,
                tokens_before,
                tokens_after,
                usage,
                cost_usd,
                ..
            } => {
                let mut span_attrs = self.base_attrs();
                span_attrs.extend([
                    ("keel.compaction.reason", Value::from(reason.as_str())),
                    ("keel.compaction.method", method.as_str().into()),
                    ("keel.compaction.tokens_before", (*tokens_before).into()),
                    ("keel.compaction.tokens_after", (*tokens_after).into()),
                ]);
                attrs.clone_from(&span_attrs);
                let open = Open {
                    span: SpanId::random(),
                    start: self.last_at,
                    name: "keel.compaction".to_owned(),
                    attrs: span_attrs,
                };
                self.emit_span(open, at, None);
                if let Some(usage) = usage {
                    self.usage_metrics(usage, *cost_usd);
                }
            }
            SessionEvent::TurnCompleted { outcome, usage, .. } => {
                let extra = vec![
                    ("gen_ai.usage.input_tokens", Value::from(usage.input_tokens)),
                    ("gen_ai.usage.output_tokens", usage.output_tokens.into()),
                ];
                attrs.push(("keel.turn.outcome", outcome.as_str().into()));
                self.close_turn(at, outcome.as_str(), extra);
            }
            SessionEvent::SessionEnded { reason } => {
                attrs.push(("keel.reason", reason.as_str().into()));
                self.close_turn(at, "interrupted", Attrs::new());
                self.shared.push(Item::Flush);
            }
            SessionEvent::BudgetExceeded { limit, .. } => {
                attrs.push(("keel.limit", limit.as_str().into()));
                error = true;
            }
            SessionEvent::Error { .. } | SessionEvent::InternalError { .. } => error = true,
            SessionEvent::HookRan { event, duration_ms, decision, .. } => {
                attrs.push(("keel.hook.event", event.as_str().into()));
                attrs.push(("keel.hook.duration_ms", (*duration_ms).into()));
                if let Some(decision) = decision {
                    attrs.push(("keel.hook.decision", decision.as_str().into()));
                }
            }
            SessionEvent::McpServerStatus { server, status, .. } => {
                attrs.push(("keel.mcp.server", server.as_str().into()));
                attrs.push(("keel.mcp.status", status.as_str().into()));
            }
            SessionEvent::NetworkAccess { host, allowed, .. } => {
                attrs.push(("server.address", host.as_str().into()));
                attrs.push(("keel.network.allowed", (*allowed).into()));
            }
            SessionEvent::ModeChanged { mode } => {
                attrs.push(("keel.mode", mode.as_str().into()));
            }
            SessionEvent::PhaseChanged { from, to } => {
                attrs.push(("keel.phase.from", from.as_str().into()));
                attrs.push(("keel.phase.to", to.as_str().into()));
            }
            SessionEvent::PromptPrefix { .. }
            | SessionEvent::ContextUpdated { .. }
            | SessionEvent::AlwaysRemoved { .. }
            | SessionEvent::FileBefore { .. }
            | SessionEvent::FileChanged { .. }
            | SessionEvent::Checkpoint { .. }
            | SessionEvent::Undo { .. }
            | SessionEvent::Rewound { .. }
            | SessionEvent::Forked { .. }
            | SessionEvent::TurnScope { .. }
            | SessionEvent::PlanUpdated { .. }
            | SessionEvent::TaskUpdated { .. }
            | SessionEvent::LimitsSet { .. }
            | SessionEvent::ToolsChanged { .. } => {}
        }
        (attrs, body, error)
    }
}

impl LogTap for SessionTap {
    fn observe(&mut self, record: &EventRecord, at: SystemTime) {
        let at = unix_nanos(at);
        if self.last_at == 0 {
            self.last_at = at;
            self.shared.metrics(|metrics| {
                if metrics.start == 0 {
                    metrics.start = at;
                }
            });
        }
        let context_before = self.context();
        let (mut attrs, body, error) = self.handle(&record.event, at);
        let mut all = self.base_attrs();
        all.push(("keel.seq", record.seq.into()));
        all.append(&mut attrs);
        self.shared.push(Item::Log(LogEvent {
            time: at,
            name: format!("keel.{}", type_name(&record.event)),
            context: self.context().or(context_before),
            attrs: all,
            body,
            error,
        }));
        self.last_at = at;
    }
}

/// The line's `type` (as serde writes it).
fn type_name(event: &SessionEvent) -> &'static str {
    match event {
        SessionEvent::SessionStarted { .. } => "session_started",
        SessionEvent::SessionResumed { .. } => "session_resumed",
        SessionEvent::PromptPrefix { .. } => "prompt_prefix",
        SessionEvent::ContextUpdated { .. } => "context_updated",
        SessionEvent::UserMessage { .. } => "user_message",
        SessionEvent::InputQueued { .. } => "input_queued",
        SessionEvent::TurnStarted { .. } => "turn_started",
        SessionEvent::ModelResponse { .. } => "model_response",
        SessionEvent::PolicyDecision { .. } => "policy_decision",
        SessionEvent::Approval { .. } => "approval",
        SessionEvent::AlwaysRemoved { .. } => "always_removed",
        SessionEvent::ToolCallStarted { .. } => "tool_call_started",
        SessionEvent::FileBefore { .. } => "file_before",
        SessionEvent::FileChanged { .. } => "file_changed",
        SessionEvent::ToolCallFinished { .. } => "tool_call_finished",
        SessionEvent::Checkpoint { .. } => "checkpoint",
        SessionEvent::Undo { .. } => "undo",
        SessionEvent::Rewound { .. } => "rewound",
        SessionEvent::Forked { .. } => "forked",
        SessionEvent::ModeChanged { .. } => "mode_changed",
        SessionEvent::ModelChanged { .. } => "model_changed",
        SessionEvent::TurnScope { .. } => "turn_scope",
        SessionEvent::PhaseChanged { .. } => "phase_changed",
        SessionEvent::PlanUpdated { .. } => "plan_updated",
        SessionEvent::TaskUpdated { .. } => "task_updated",
        SessionEvent::Compaction { .. } => "compaction",
        SessionEvent::LimitsSet { .. } => "limits_set",
        SessionEvent::BudgetExceeded { .. } => "budget_exceeded",
        SessionEvent::ModelError { .. } => "model_error",
        SessionEvent::Error { .. } => "error",
        SessionEvent::InternalError { .. } => "internal_error",
        SessionEvent::NetworkAccess { .. } => "network_access",
        SessionEvent::HookRan { .. } => "hook_ran",
        SessionEvent::SubagentStarted { .. } => "subagent_started",
        SessionEvent::SubagentFinished { .. } => "subagent_finished",
        SessionEvent::TurnCompleted { .. } => "turn_completed",
        SessionEvent::SessionEnded { .. } => "session_ended",
        SessionEvent::McpServerStatus { .. } => "mcp_server_status",
        SessionEvent::ToolsChanged { .. } => "tools_changed",
    }
}

fn stop_reason(reason: &StopReason) -> &str {
    match reason {
        StopReason::EndTurn => "stop",
        StopReason::ToolUse => "tool_calls",
        StopReason::MaxTokens => "length",
        StopReason::Refusal => "content_filter",
        StopReason::Other(other) => other,
    }
}

fn scope_name(scope: ApprovalScope) -> &'static str {
    match scope {
        ApprovalScope::Once => "once",
        ApprovalScope::Session => "session",
        ApprovalScope::Always => "always",
    }
}

fn class_name(class: ToolClass) -> &'static str {
    match class {
        ToolClass::ReadOnly => "read_only",
        ToolClass::Mutating => "mutating",
    }
}

#[cfg(test)]
#[path = "tap_tests.rs"]
mod tests;
