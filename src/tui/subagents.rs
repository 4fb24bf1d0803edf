//! A subagent's events in the TUI: its progress nested in its `agent`
//! call's cell (the tool it runs, its steps and tokens, its calls, shown
//! in full with Ctrl+O), its spend added to the status line's tokens and
//! cost (at its own model's prices), its warnings as notices.
//!
//! Invariants: pure (part of `update`); a grandchild's events count
//! toward the cell of the top-level call they run under and toward the
//! totals, so nothing a subagent spends is left out of the status line.

use crate::protocol::Usage;
use crate::runtime::RuntimeEvent;

use super::app::App;
use super::transcript::{Level, SubagentCall, SubagentView, ToolStatus};

/// Applies `event` of the subagent running for the `agent` call `call_id`.
pub(super) fn on_subagent(app: &mut App, call_id: &str, event: RuntimeEvent) {
    match event {
        RuntimeEvent::Subagent { event, .. } => on_subagent(app, call_id, *event),
        RuntimeEvent::SessionStarted { pricing, .. } => {
            app.subagent_pricing.insert(call_id.to_owned(), pricing);
        }
        RuntimeEvent::ModelResponse(response) => {
            let usage = response.usage;
            add_spend(app, call_id, &usage);
            update(app, call_id, |view| {
                view.steps += 1;
                view.tokens += usage.total_tokens();
                view.current = "thinking".to_owned();
            });
        }
        RuntimeEvent::ToolCallStarted { call, .. } => {
            let entry = SubagentCall {
                summary: crate::display::call_summary(&call),
                call_id: call.call_id,
                name: call.name.clone(),
                status: ToolStatus::Running,
            };
            update(app, call_id, |view| {
                view.current = call.name;
                view.calls.push(entry);
            });
        }
        RuntimeEvent::ToolCallFinished { call, result, meta } => {
            let outcome = crate::display::outcome(result.is_error, &meta);
            let status = if outcome.failed { ToolStatus::Failed } else { ToolStatus::Succeeded };
            update(app, call_id, |view| {
                view.current = "thinking".to_owned();
                match view.calls.iter_mut().rev().find(|c| c.call_id == call.call_id) {
                    Some(known) => known.status = status,
                    // Refused before it started: listed as it ended.
                    None => view.calls.push(SubagentCall {
                        summary: crate::display::call_summary(&call),
                        call_id: call.call_id.clone(),
                        name: call.name.clone(),
                        status,
                    }),
                }
            });
        }
        RuntimeEvent::Warning { message } => {
            app.notice(Level::Warning, format!("subagent: {message}"));
        }
        RuntimeEvent::Error { message } => {
            app.notice(Level::Error, format!("subagent error: {message}"));
        }
        RuntimeEvent::ApprovalDeclined(declined) => app.notice(
            Level::Warning,
            format!(
                "subagent: {} was not run: it needs approval ({})",
                declined.call.name, declined.reason
            ),
        ),
        RuntimeEvent::Retrying { attempt, max_attempts, reason, .. } => {
            update(app, call_id, |view| {
                view.current = format!("retrying ({attempt}/{max_attempts}): {reason}");
            });
        }
        RuntimeEvent::ModeChanged { .. }
        | RuntimeEvent::ModelChanged { .. }
        | RuntimeEvent::WorkflowChanged { .. }
        | RuntimeEvent::TurnStarted { .. }
        | RuntimeEvent::InputQueued { .. }
        | RuntimeEvent::InputDelivered { .. }
        | RuntimeEvent::Stream(_)
        | RuntimeEvent::Compacting { .. }
        | RuntimeEvent::Compacted { .. }
        | RuntimeEvent::McpServerStatus { .. }
        | RuntimeEvent::ToolProgress { .. }
        // A subagent takes no checkpoints, the one slow piece of work.
        | RuntimeEvent::Progress { .. }
        | RuntimeEvent::TurnCompleted { .. } => {}
    }
}

/// Adds a subagent's response to the status line's totals, its cost at
/// its own model's prices.
fn add_spend(app: &mut App, call_id: &str, usage: &Usage) {
    app.status.subagent_usage.add(usage);
    let pricing = app.subagent_pricing.get(call_id).copied().unwrap_or(app.status.pricing);
    if let Some(cost) = pricing.cost_usd(usage) {
        app.status.subagent_cost += cost;
    }
}

fn update(app: &mut App, call_id: &str, change: impl FnOnce(&mut SubagentView)) {
    app.transcript.update_tool(call_id, |tool| {
        if let Some(view) = tool.subagent.as_mut() {
            change(view);
        }
    });
}
