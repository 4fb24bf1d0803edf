//! How what the runtime reports changes the TUI's model: each
//! [`RuntimeEvent`] and streamed delta becomes transcript cells and status
//! (usage, spend, window fill, mode, workflow), a resumed or rewound
//! conversation is shown as cells, `/diff` as a diff cell.
//!
//! Pure like `app.rs` (no I/O, no clock): [`super::app::update`] routes
//! runtime messages here.

use std::time::Duration;

use crate::protocol::tool_facts::names;
use crate::protocol::{Item, StreamEvent, ToolMeta, TurnOutcome, Usage};
use crate::runtime::RuntimeEvent;

use super::app::{App, Status};
use super::diff;
use super::panels::TaskItem;
use super::transcript::{CellKind, Level, ToolCell, ToolStatus, spinner};

/// A resumed conversation as cells: prompts, answers, and each tool call
/// with its result (reasoning stays hidden, as when it streamed).
pub(super) fn show_history(app: &mut App, items: &[Item]) {
    show_items(app, items);
    // A call still "running" here has no result in the log: the resumed
    // turn answers it (and its cell) next.
    if !items.is_empty() {
        app.notice(Level::Info, "resumed: the conversation so far is above");
    }
}

/// The cells of a conversation (a resumed one, one rewound).
pub(super) fn show_items(app: &mut App, items: &[Item]) {
    for item in items {
        match item {
            Item::User { text, .. } => app.transcript.push(CellKind::User(text.clone())),
            Item::Assistant { text } if !text.trim().is_empty() => {
                app.transcript.push(CellKind::Assistant { text: text.clone(), streaming: false })
            }
            Item::ToolCall(call) => app.transcript.push(CellKind::Tool(ToolCell::running(call))),
            // The log's results carry no meta: a shell call's exit code is
            // read back from its framing.
            Item::ToolResult(result) => {
                app.transcript.update_tool(&result.call_id, |tool| {
                    let code = (tool.name == names::SHELL && !result.is_error)
                        .then(|| crate::display::shell_exit_code(&result.output));
                    let meta = code
                        .flatten()
                        .map_or_else(ToolMeta::new, |code| ToolMeta::command(Some(code), None));
                    tool.finish(&result.output, result.is_error, &meta);
                });
            }
            // keel's notes to the model (environment, mode, phase) are not
            // part of the conversation the user had.
            Item::Assistant { .. } | Item::Reasoning(_) | Item::Context { .. } => {}
        }
    }
}

/// `/diff`'s output as a diff cell (or a notice when nothing changed).
pub(super) fn show_diff(app: &mut App, text: &str) {
    if text.trim().is_empty() {
        app.notice(Level::Info, "no uncommitted changes (git diff is empty)");
        return;
    }
    let diff = diff::contains_diff(text).then(|| diff::parse(text));
    app.transcript.push(CellKind::Tool(ToolCell {
        call_id: String::new(),
        name: "git diff".into(),
        summary: String::new(),
        status: ToolStatus::Succeeded,
        failure: None,
        output: text.to_owned(),
        diff,
        spinner: spinner(Duration::ZERO),
        subagent: None,
    }));
}

pub(super) fn on_runtime(app: &mut App, event: RuntimeEvent) {
    match event {
        RuntimeEvent::SessionStarted {
            provider,
            model,
            session_id,
            sandbox,
            pricing,
            mode,
            limits,
            log_path,
            workspace_root,
        } => {
            app.facts.session_id.clone_from(&session_id);
            app.facts.log_path = log_path.display().to_string();
            app.facts.workspace_root = workspace_root.display().to_string();
            app.status.mode = mode;
            app.status.provider = provider;
            app.status.model = model.clone();
            app.status.sandbox = Some(sandbox);
            app.status.pricing = pricing;
            app.status.limits = limits;
            app.notice(Level::Info, format!("keel · {model} · session {session_id}"));
        }
        // The status line shows the mode; a change the user made is hinted
        // by `keys::set_mode`, one the runtime made (a plan approved
        // "then auto") is said here, once.
        RuntimeEvent::ModeChanged { mode } if mode != app.status.mode => {
            app.status.mode = mode;
            app.hint = Some(format!("mode {}: {}", mode.as_str(), super::keys::mode_meaning(mode)));
        }
        RuntimeEvent::ModeChanged { .. } => {}
        // What was spent stays at the prices it was charged at.
        RuntimeEvent::ModelChanged { model, pricing } => {
            app.status.model = model;
            app.status.pricing = pricing;
        }
        RuntimeEvent::WorkflowChanged { phase, plan_path, plan_status: _, tasks } => {
            app.status.phase = phase;
            app.plan_path = plan_path;
            app.tasks = tasks.iter().map(TaskItem::from_task).collect();
        }
        RuntimeEvent::TurnStarted { .. } => {
            app.status.running = true;
            app.status.elapsed = Duration::ZERO;
            app.status.activity = "thinking".into();
        }
        RuntimeEvent::InputQueued { id, text, mode } => {
            super::queue::on_queued(app, id, text, mode);
        }
        RuntimeEvent::InputDelivered { id, text } => super::queue::on_delivered(app, id, text),
        RuntimeEvent::Stream(event) => on_stream(app, event),
        RuntimeEvent::ModelResponse(response) => {
            let text: String = response.items.iter().filter_map(Item::assistant_text).collect();
            app.transcript.finish_assistant(&text);
            add_usage(&mut app.status.usage, &response.usage);
            charge(&mut app.status, &response.usage);
            app.status.context_percent =
                percent_of_window(&app.status.pricing, response.usage.input_tokens);
            super::budget::after_usage(app);
        }
        RuntimeEvent::ToolCallStarted { call, .. } => {
            let mut cell = ToolCell::running(&call);
            cell.spinner = spinner(app.status.elapsed);
            app.transcript.push(CellKind::Tool(cell));
            app.status.activity = tools_activity(app);
        }
        RuntimeEvent::ToolCallFinished { call, result, meta } => {
            super::processes_view::on_result(app, &meta);
            let finish = |tool: &mut ToolCell| tool.finish(&result.output, result.is_error, &meta);
            if !app.transcript.update_tool(&call.call_id, finish) {
                let mut tool = ToolCell::running(&call);
                tool.finish(&result.output, result.is_error, &meta);
                app.transcript.push(CellKind::Tool(tool));
            }
            app.status.activity = tools_activity(app);
        }
        RuntimeEvent::Compacting { .. } => app.status.activity = "compacting".into(),
        RuntimeEvent::Compacted { reason, tokens_before, tokens_after } => {
            if app.status.activity == "compacting" {
                app.status.activity = "thinking".into();
            }
            app.status.context_percent = percent_of_window(&app.status.pricing, tokens_after);
            app.notice(
                Level::Info,
                format!("context compacted ({reason}): ~{tokens_before} → ~{tokens_after} tokens"),
            );
        }
        RuntimeEvent::Retrying { attempt, max_attempts, reason, .. } => {
            app.transcript.discard_attempt();
            app.status.activity = format!("retrying ({attempt}/{max_attempts}): {reason}");
        }
        // The TUI's approver asks the user, so the harness never declines
        // on its own here; said all the same if it ever does.
        RuntimeEvent::ApprovalDeclined(declined) => app.notice(
            Level::Warning,
            format!("{} was not run: it needs approval ({})", declined.call.name, declined.reason),
        ),
        RuntimeEvent::McpServerStatus { server, status, tools, error, log, prompts } => {
            let line = super::mcp_view::McpLine { server, status, tools, error, log, prompts };
            super::mcp_view::on_status(app, line);
        }
        RuntimeEvent::ToolProgress { call_id, progress, total, message } => {
            super::mcp_view::on_progress(app, &call_id, progress, total, message);
        }
        RuntimeEvent::Progress { message } => app.notice(Level::Info, message),
        RuntimeEvent::Warning { message } => app.notice(Level::Warning, message),
        RuntimeEvent::Error { message } => app.notice(Level::Error, format!("error: {message}")),
        RuntimeEvent::TurnCompleted { outcome, unverified, .. } => {
            match outcome {
                TurnOutcome::Completed => {
                    if let Some(why) = unverified {
                        app.notice(
                            Level::Warning,
                            format!(
                                "unverified: files changed after the last passing check; {why}"
                            ),
                        );
                    }
                }
                TurnOutcome::Failed => {}
                TurnOutcome::Interrupted => app.notice(Level::Warning, "interrupted"),
                TurnOutcome::MaxSteps => {
                    app.notice(Level::Warning, "stopped at the step limit (-c max_steps=N)");
                }
                TurnOutcome::BudgetExceeded => app.notice(
                    Level::Warning,
                    "stopped at the session's spend limit: the next request was not sent",
                ),
                TurnOutcome::Stuck => app.notice(
                    Level::Warning,
                    "stopped: the model kept repeating itself after keel pointed it out",
                ),
                TurnOutcome::Cut => app.notice(
                    Level::Warning,
                    "the answer was cut off at the output limit: it is incomplete",
                ),
            }
            end_turn(app);
            if super::queue::continues_after(app, outcome) {
                // The session starts the next queued input right away.
                app.status.running = true;
                app.status.activity = "next queued input".into();
            }
        }
        RuntimeEvent::Subagent { call_id, event } => {
            super::subagents::on_subagent(app, &call_id, *event);
        }
    }
}

pub(super) fn on_stream(app: &mut App, event: StreamEvent) {
    match event {
        StreamEvent::TextDelta { delta } => app.transcript.append_assistant(&delta),
        StreamEvent::ReasoningDelta { delta } => app.transcript.append_reasoning(&delta),
        StreamEvent::ToolCallStarted { name, .. } => {
            app.status.activity = format!("preparing {name}")
        }
        StreamEvent::ToolCallArgumentsDelta { .. } => {}
        // The runtime turns these into `RuntimeEvent::Retrying`.
        StreamEvent::Retrying { .. } => {}
    }
}

/// What the status line says while tools run: the one running call's
/// tool, "N calls" when reads run together, else "thinking".
pub(super) fn tools_activity(app: &App) -> String {
    match app.transcript.running_tools().as_slice() {
        [] => "thinking".to_owned(),
        [name] => (*name).to_owned(),
        names => format!("{} calls", names.len()),
    }
}

pub(super) fn end_turn(app: &mut App) {
    app.status.running = false;
    app.status.activity.clear();
    app.approval = None;
    app.limit = None;
    app.plan = None;
    app.question = None;
    app.transcript.close_streaming();
    app.transcript.settle_running();
}

/// How full the model's context window is with `tokens`, for the status line.
pub(super) fn percent_of_window(pricing: &crate::context::Pricing, tokens: u64) -> Option<u8> {
    pricing.context_percent(tokens).map(|percent| percent.round().clamp(0.0, 100.0) as u8)
}

/// Adds what a response cost at the prices of the model that served it
/// (the one in force when it arrived) to the session's spend.
pub(super) fn charge(status: &mut Status, usage: &Usage) {
    match status.pricing.cost_usd(usage) {
        Some(cost) => status.spent_usd += cost,
        None => status.unpriced = true,
    }
}

pub(super) fn add_usage(total: &mut Usage, more: &Usage) {
    total.add(more);
}
