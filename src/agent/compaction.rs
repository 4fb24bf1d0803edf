//! When and how `step` compacts the history.
//!
//! Triggers: the estimate before a request crosses the threshold
//! ([`before_request`]), the provider refuses a request as too long
//! ([`on_overflow`]), or the user asks ([`on_compact_requested`]). The cheap
//! step comes first (old tool outputs elided, `context::compact`); when it
//! is not enough, the model writes a summary (`context::summary`) through
//! [`Effect::Summarize`], answered by [`Input::Summarized`] or
//! [`Input::SummaryFailed`] (then the history is still replaced, with the
//! preserved facts and no summary, so the session goes on).
//!
//! Invariants: at most one cheap and one summary compaction per step, so
//! nothing loops; every compaction is recorded (`compaction`, with the new
//! history) before the next request uses it; the goal, the latest request
//! and the preserved facts survive every compaction verbatim.

use crate::context::compact::elide_old_tool_outputs;
use crate::context::summary::{
    CHECK_CHARS, Preserved, clip, compacted_history, fit_for_summary, summary_request,
};
use crate::context::tokens::{items_upper_bound, upper_bound};
use crate::context::window::{summary_output_limit, window_from_overflow};
use crate::plan::{PlanStatus, is_verification_command};
use crate::protocol::{Item, ModelRequest, SessionEvent, ToolCall, Usage};
use crate::tasks::TaskStatus;

use super::apply::emit;
use super::next::Next;
use super::phase::{CompactionReason, LoopPhase, PendingCompaction};
use super::state::{CompactionDepth, LoopState};
use super::step_io::Effect;
use crate::protocol::TurnOutcome;
use crate::protocol::tool_facts::names;

/// Share of the window the summary request may fill with history.
const SUMMARY_INPUT_SHARE: f64 = 0.7;
/// Share of the window the current turn's items may keep after a summary.
const TAIL_SHARE: f64 = 0.25;
/// Tail budget when the window is unknown.
const UNKNOWN_WINDOW_TAIL: u64 = 20_000;

/// The estimated input tokens of `request`: the provider's figure for the
/// latest request plus the items added since, else a full count; keel's
/// counts in the server's tokens (`LoopConfig::token_scale`).
pub(super) fn estimate(state: &LoopState, request: &ModelRequest) -> u64 {
    let scale = state.config.token_scale;
    match state.reported_context {
        Some((tokens, counted)) if counted <= request.items.len() => {
            tokens + scale.apply(crate::context::tokens::estimate_items(&request.items[counted..]))
        }
        Some(_) | None => estimate_request(state, request),
    }
}

/// `request`'s estimated tokens as the session's server counts them.
fn estimate_request(state: &LoopState, request: &ModelRequest) -> u64 {
    state
        .config
        .token_scale
        .apply(crate::context::tokens::estimate_request(request, state.config.strict_tools))
}

/// [`estimate`] with bytes standing in for tokens: never below it. With a
/// reported figure only the new items are looked at (no request is built:
/// this runs before every request).
fn upper_estimate(state: &LoopState) -> u64 {
    match state.reported_context {
        Some((tokens, counted)) if counted <= state.items.len() => {
            tokens + items_upper_bound(&state.items[counted..])
        }
        Some(_) | None => upper_bound(&state.request(), state.config.strict_tools),
    }
}

/// The token limit the threshold sets, if the window is known.
fn limit(state: &LoopState) -> Option<u64> {
    let window = state.config.context_window?;
    Some((window as f64 * state.config.compact_threshold) as u64)
}

fn depth_this_step(state: &LoopState) -> Option<CompactionDepth> {
    state.compacted_at_step.filter(|(step, _)| *step == state.step).map(|(_, depth)| depth)
}

/// Compacts before a request whose estimate crosses the threshold.
/// Returns whether a summary is now being written (the request waits).
pub(super) fn before_request(state: &mut LoopState, effects: &mut Vec<Effect>) -> bool {
    let Some(limit) = limit(state) else { return false };
    if depth_this_step(state).is_some() {
        return false;
    }
    // Counting tokens needs the encoder (most of a second to build), so a
    // byte bound rules out most requests first.
    if upper_estimate(state) <= limit {
        return false;
    }
    let request = state.request();
    let tokens_before = estimate(state, &request);
    if tokens_before <= limit {
        return false;
    }
    if let Some(elided) = elide_old_tool_outputs(&state.items) {
        let after = estimate_request(state, &ModelRequest { items: elided.clone(), ..request });
        if after <= limit {
            let how = Applied::elided(state, CompactionReason::Threshold);
            apply(state, elided, how, tokens_before, effects);
            return false;
        }
    }
    begin_summary(state, CompactionReason::Threshold, None, tokens_before, true, effects);
    true
}

/// The provider refused the request as too long: elide, then summarize,
/// then give up (the turn fails with the provider's message).
pub(super) fn on_overflow(
    state: &mut LoopState,
    message: String,
    effects: &mut Vec<Effect>,
) -> Next {
    learn_window(state, &message, effects);
    let request = state.request();
    let tokens_before = estimate(state, &request);
    let depth = depth_this_step(state);
    if depth.is_none() {
        if let Some(elided) = elide_old_tool_outputs(&state.items) {
            effects.push(Effect::Warn(format!(
                "{message}; compacting old tool outputs and asking again"
            )));
            let how = Applied::elided(state, CompactionReason::Overflow);
            apply(state, elided, how, tokens_before, effects);
            return Next::Request;
        }
    }
    if depth != Some(CompactionDepth::Summarized) && !state.items.is_empty() {
        effects.push(Effect::Warn(format!(
            "{message}; summarizing the conversation and asking again"
        )));
        begin_summary(state, CompactionReason::Overflow, None, tokens_before, true, effects);
        return Next::Wait;
    }
    // Compaction cannot make the request fit: the turn fails with the
    // provider's reason and what is left to do about it.
    let needs = match state.config.context_window {
        Some(window) => format!(
            " (the window is {window} tokens; keel's instructions and tools alone are about {} \
             tokens)",
            fixed_tokens(state, &request)
        ),
        None => String::new(),
    };
    let message = format!(
        "{message} (keel compacted the conversation and it still does not fit: the instructions, \
         tools and the last messages alone are too long for this window{needs}; use a model or \
         server with a larger context window, e.g. llama.cpp's --ctx-size / -c, vLLM's \
         --max-model-len, Ollama's num_ctx)"
    );
    effects.push(Effect::Record(SessionEvent::ModelError { message }));
    Next::EndTurn(TurnOutcome::Failed)
}

/// The tokens of `request`'s instructions and tools: what every request
/// of the session carries.
fn fixed_tokens(state: &LoopState, request: &ModelRequest) -> u64 {
    estimate_request(state, &ModelRequest { items: Vec::new(), ..request.clone() })
}

/// A window the server's overflow error names, smaller than the one keel
/// knew (or the first it knows), is the session's window from here on:
/// compaction, the output limit and the prompt check use it. Not logged
/// (a resume learns it again from the server); said once.
fn learn_window(state: &mut LoopState, message: &str, effects: &mut Vec<Effect>) {
    let Some(window) = window_from_overflow(message) else { return };
    if state.config.context_window.is_some_and(|known| known <= window) {
        return;
    }
    state.config.context_window = Some(window);
    state.config.pricing.context_window = Some(window);
    effects.push(Effect::Warn(format!(
        "the server says its context window is {window} tokens: keel keeps this session's \
         requests and answers within it"
    )));
}

/// `/compact [focus]` while idle: always a summary (the user asked).
pub(super) fn on_compact_requested(
    state: &mut LoopState,
    focus: Option<String>,
    effects: &mut Vec<Effect>,
) {
    if state.items.is_empty() {
        return;
    }
    let tokens_before = estimate(state, &state.request());
    begin_summary(state, CompactionReason::Manual, focus, tokens_before, false, effects);
}

fn begin_summary(
    state: &mut LoopState,
    reason: CompactionReason,
    focus: Option<String>,
    tokens_before: u64,
    resume_turn: bool,
    effects: &mut Vec<Effect>,
) {
    let base = state.request();
    let budget = match state.config.context_window {
        Some(window) => (window as f64 * SUMMARY_INPUT_SHARE) as u64,
        None => tokens_before / 2,
    };
    let source = elide_old_tool_outputs(&state.items).unwrap_or_else(|| state.items.clone());
    // The summary's budgets are counted by keel's own estimate.
    let history = fit_for_summary(&source, state.config.token_scale.to_reference(budget));
    let mut request = summary_request(&base, history, focus.as_deref());
    // A small window: the summary may not ask for more than is left.
    request.max_output_tokens =
        Some(summary_output_limit(state.config.context_window, estimate_request(state, &request)));
    let trigger = if reason == CompactionReason::Manual { "manual" } else { "auto" };
    state.phase = LoopPhase::Compact(PendingCompaction {
        reason,
        focus: focus.clone(),
        tokens_before,
        resume_turn,
        applied: false,
    });
    effects.push(Effect::Summarize { request, trigger, focus });
}

/// The summary arrived (`Some`) or could not be written (`None`): the
/// history is replaced either way; the loop then waits for
/// [`Input::CompactionApplied`](super::step_io::Input::CompactionApplied).
pub(super) fn on_summary(
    state: &mut LoopState,
    text: Option<String>,
    usage: Usage,
    effects: &mut Vec<Effect>,
) {
    let LoopPhase::Compact(pending) = &mut state.phase else { return };
    if pending.applied {
        return;
    }
    pending.applied = true;
    let pending = pending.clone();
    let preserved = preserved(state, pending.focus.clone());
    let tail_budget = state
        .config
        .context_window
        .map_or(UNKNOWN_WINDOW_TAIL, |window| (window as f64 * TAIL_SHARE) as u64);
    let tail_budget = state.config.token_scale.to_reference(tail_budget);
    let items = compacted_history(&state.items, text.as_deref(), &preserved, tail_budget);
    // The summary request costs like any other: its line charges it.
    let usage = (usage != Usage::default()).then_some(usage);
    let how = Applied {
        reason: pending.reason,
        depth: CompactionDepth::Summarized,
        usage,
        failed_check: preserved.failed_check,
    };
    apply(state, items, how, pending.tokens_before, effects);
}

/// The driver refreshed the instructions after a summary: the turn goes on
/// with a request built from them, or the loop idles (`/compact`).
pub(super) fn on_applied(state: &mut LoopState) -> Next {
    let LoopPhase::Compact(pending) = &state.phase else { return Next::Wait };
    if !pending.applied {
        return Next::Wait;
    }
    if pending.resume_turn {
        state.phase = LoopPhase::Infer;
        Next::Request
    } else {
        state.phase = LoopPhase::Idle;
        Next::Wait
    }
}

/// The user interrupted while the summary was being written: nothing is
/// compacted; a running turn ends interrupted.
pub(super) fn on_interrupted(state: &mut LoopState) -> Next {
    let resume_turn = matches!(&state.phase, LoopPhase::Compact(pending) if pending.resume_turn);
    if resume_turn {
        Next::interrupted()
    } else {
        state.phase = LoopPhase::Idle;
        Next::Wait
    }
}

/// How a compaction was made: why, how far, what its summary request
/// used, and the failing check later compactions keep.
struct Applied {
    reason: CompactionReason,
    depth: CompactionDepth,
    usage: Option<Usage>,
    failed_check: Option<String>,
}

impl Applied {
    fn elided(state: &LoopState, reason: CompactionReason) -> Self {
        let failed_check = state.failed_check.clone();
        Self { reason, depth: CompactionDepth::Elided, usage: None, failed_check }
    }
}

fn apply(
    state: &mut LoopState,
    items: Vec<Item>,
    how: Applied,
    tokens_before: u64,
    effects: &mut Vec<Effect>,
) {
    let Applied { reason, depth, usage, failed_check } = how;
    // A per-step guard, not logged: a rebuilt state starts a fresh step.
    state.compacted_at_step = Some((state.step, depth));
    let request = ModelRequest { items, ..state.request() };
    let tokens_after = estimate_request(state, &request);
    let items = request.items;
    let method = match depth {
        CompactionDepth::Elided => "elide",
        CompactionDepth::Summarized => "summary",
    };
    let event = SessionEvent::Compaction {
        items,
        reason: reason.as_str().to_owned(),
        method: method.to_owned(),
        tokens_before,
        tokens_after,
        failed_check,
        cost_usd: usage.as_ref().and_then(|usage| state.config.pricing.cost_usd(usage)),
        usage,
    };
    emit(state, event, effects);
    effects.push(Effect::Compacted {
        reason: reason.as_str().to_owned(),
        method: method.to_owned(),
        tokens_before,
        tokens_after,
    });
}

/// The facts a summary compaction keeps verbatim, from the loop state.
pub(super) fn preserved(state: &LoopState, focus: Option<String>) -> Preserved {
    let flow = &state.workflow.flow;
    let plan = flow.plan.as_ref().map(|plan| {
        let status = match &plan.status {
            PlanStatus::Submitted => "submitted, awaiting review".to_owned(),
            PlanStatus::Approved => "approved".to_owned(),
            PlanStatus::Rejected { feedback } => format!("rejected: {feedback}"),
        };
        (plan.path.clone(), status, plan.text.clone())
    });
    let open_tasks = state
        .workflow
        .tasks
        .iter()
        .filter(|task| task.status != TaskStatus::Completed)
        .map(|task| {
            let mark = if task.status == TaskStatus::InProgress { " (in progress)" } else { "" };
            format!("{}: {}{mark}", task.id, task.text)
        })
        .collect();
    let failed_check = match last_check(&state.items, &state.workflow.checks()) {
        Some(outcome) => outcome,
        None => state.failed_check.clone(),
    };
    Preserved {
        mode: state.config.policy.mode.as_str().to_owned(),
        phase: flow.phase.clone(),
        plan,
        open_tasks,
        changed_files: flow.changed_files.iter().cloned().collect(),
        failed_check,
        focus: focus.filter(|focus| !focus.trim().is_empty()),
    }
}

/// The outcome of the last verification command in `items`: `Some(Some
/// output)` if it failed, `Some(None)` if it passed, `None` if there was none.
fn last_check(items: &[Item], verify_commands: &[String]) -> Option<Option<String>> {
    let checks: Vec<&ToolCall> = items
        .iter()
        .filter_map(|item| match item {
            Item::ToolCall(call) if call.name == names::SHELL => Some(call),
            Item::ToolCall(_)
            | Item::User { .. }
            | Item::Assistant { .. }
            | Item::Reasoning(_)
            | Item::ToolResult(_)
            | Item::Context { .. } => None,
        })
        .filter(|call| {
            let arguments: serde_json::Value =
                serde_json::from_str(&call.arguments).unwrap_or_default();
            arguments["command"]
                .as_str()
                .is_some_and(|command| is_verification_command(command, verify_commands))
        })
        .collect();
    let result = checks.iter().rev().find_map(|call| {
        items.iter().rev().find_map(|item| match item {
            Item::ToolResult(result) if result.call_id == call.call_id => Some(result),
            Item::ToolResult(_)
            | Item::User { .. }
            | Item::Assistant { .. }
            | Item::Reasoning(_)
            | Item::ToolCall(_)
            | Item::Context { .. } => None,
        })
    })?;
    let passed = !result.is_error && crate::display::shell_exit_code(&result.output) == Some(0);
    Some((!passed).then(|| clip(&result.output, CHECK_CHARS)))
}
