//! The one definition of how a logged event changes the loop's state:
//! [`LoopState::apply`]. `step`'s handlers compute an event, apply it and
//! record it ([`emit`]); a rebuild folds the log's events through the same
//! function (`rebuild.rs`), so a resumed session holds what the live one
//! held without a second copy of any change (the rebuild property test,
//! `rebuild_properties.rs`, checks the two agree on every field a rebuild
//! restores).
//!
//! What `apply` does not own, and why:
//! - where the loop is: the phase, the pending batches and the data a wait
//!   holds (`phase.rs`) are never logged; a rebuilt state is idle, and an
//!   open turn is reconciled through `step` (`rebuild::reconcile`);
//! - the workflow's own lines (`phase_changed`, `plan_updated`,
//!   `task_updated`): the workflow changes itself and returns the line that
//!   says so (`workflow.rs`, `harness.rs`); the rebuild reads its state
//!   back from them;
//! - what the runaway guard and the workflow observe of a result
//!   (`runaway.rs`, `WorkflowState::observe`): both sides call the same
//!   functions, the rebuild on the result without the guard's note;
//! - the per-step compaction guard (`compacted_at_step`): a rebuilt state
//!   starts a fresh step.
//!
//! Recipe, to add a state change a resume must keep:
//! 1. give it a `SessionEvent` (`protocol/events.rs`) that carries every
//!    figure the change needs (never one a later keel would compute
//!    differently, such as a price);
//! 2. add its arm to [`LoopState::apply`];
//! 3. in the handler, build the event and [`emit`] it; never set the
//!    field directly;
//! 4. if the rebuild must also track something about the log itself
//!    (a call's progress, a fact for the runtime), add that in
//!    `Rebuilder::apply` beside its call to `apply`, not a second copy of
//!    the change.
//!
//! Invariant: `apply` is total and never panics; an event that changes no
//! loop state is named in its match, so a new event is a decision here.

use crate::policy::{Allowlist, ApprovalMode, ApprovalScope};
use crate::prompts::context_message;
use crate::protocol::origin::fence;
use crate::protocol::{ContextPart, Item, Origin, QueuedInput, SessionEvent, Usage};

use super::limits::{ChildSpend, SpendLimits};
use super::state::{LoopState, TurnApprovals};
use super::step_io::Effect;

/// Applies `event` to `state` and records it: the way a handler changes
/// what `apply` owns.
pub(super) fn emit(state: &mut LoopState, event: SessionEvent, effects: &mut Vec<Effect>) {
    state.apply(&event);
    effects.push(Effect::Record(event));
}

/// The context item a logged `context_updated` line stands for.
fn context_item(parts: Vec<ContextPart>) -> Item {
    Item::Context { text: context_message(&parts), parts }
}

impl LoopState {
    /// What `event` changes in the loop's state, live and on a rebuild.
    pub fn apply(&mut self, event: &SessionEvent) {
        match event {
            SessionEvent::ModeChanged { mode } => {
                self.config.policy.mode = *mode;
                // Plan mode requires a plan, as it did when it was entered.
                if *mode == ApprovalMode::Plan {
                    self.workflow.flow.plan_required = true;
                }
            }
            SessionEvent::ModelChanged { model, after_turn } => {
                self.switch_model(model.clone());
                self.turn_model.clone_from(after_turn);
            }
            SessionEvent::PromptPrefix { sections, .. } => self.config.prefix = sections.clone(),
            SessionEvent::ContextUpdated { parts } => self.items.push(context_item(parts.clone())),
            // An older line's `tools` narrowed the turn; that is not read.
            SessionEvent::TurnScope { owner, prefixes, commands, mcp_tools, .. } => {
                let mut allowlist = Allowlist::default();
                allowlist.prefixes.extend(prefixes.iter().cloned());
                allowlist.commands.extend(commands.iter().cloned());
                allowlist.tools.extend(mcp_tools.iter().cloned());
                self.turn_approvals = Some(TurnApprovals { owner: owner.clone(), allowlist });
            }
            SessionEvent::TurnStarted { turn } => {
                self.turn = *turn;
                self.step = 0;
                self.turn_usage = Usage::default();
                self.runaway = Default::default();
            }
            SessionEvent::UserMessage { text, images, queued } => {
                self.items.push(Item::User { text: text.clone(), images: images.clone() });
                if let Some(id) = queued {
                    self.queued.retain(|input| input.id != *id);
                }
            }
            SessionEvent::InputQueued { id, text, mode, images } => {
                self.queued_ids = self.queued_ids.max(*id);
                let input = QueuedInput {
                    id: *id,
                    text: text.clone(),
                    mode: *mode,
                    images: images.clone(),
                };
                self.queued.push(input);
            }
            SessionEvent::ModelResponse {
                step,
                response,
                cost_usd,
                estimated_tokens,
                estimated_cost_usd,
            } => {
                self.step = *step;
                let usage = &response.usage;
                if usage.input_tokens > 0 {
                    // The request carried exactly the items held before it.
                    self.reported_context = Some((usage.input_tokens, self.items.len()));
                }
                self.turn_usage.add(usage);
                self.session_usage.add(usage);
                // Older lines carry no cost: charged at the prices in force.
                self.add_cost(cost_usd.or_else(|| self.config.pricing.cost_usd(usage)));
                self.unreported.add(estimated_tokens.unwrap_or(0), *estimated_cost_usd);
                self.largest_output_tokens = self.largest_output_tokens.max(usage.output_tokens);
                self.items.extend(response.items.iter().cloned());
            }
            SessionEvent::ToolCallFinished { result, meta } => {
                // Untrusted text enters the history fenced as data; the
                // log and the front ends keep the text as it came.
                let origin = meta.origin();
                let mut seen = result.clone();
                if let Some(source) = origin.as_ref().and_then(Origin::untrusted_source) {
                    seen.output = fence(&result.output, &source);
                }
                self.items.push(Item::ToolResult(seen));
                if let Some(origin) = origin {
                    self.taint.observe(&origin);
                }
            }
            SessionEvent::Compaction { items, failed_check, usage, cost_usd, .. } => {
                if let Some(usage) = usage {
                    // The summary request costs like any other.
                    self.turn_usage.add(usage);
                    self.session_usage.add(usage);
                    self.add_cost(cost_usd.or_else(|| self.config.pricing.cost_usd(usage)));
                }
                self.items.clone_from(items);
                self.failed_check.clone_from(failed_check);
                self.reported_context = None;
            }
            // The conversation as it was before the prompt rewound to
            // (`rewind.rs`); spend, approvals, mode and the turn count go on.
            SessionEvent::Rewound { items: Some(items), .. } => {
                self.items.clone_from(items);
                self.reported_context = None;
                // Pre-approvals for a command turn that never ran.
                self.turn_approvals = None;
            }
            SessionEvent::LimitsSet { max_cost_usd, max_tokens, .. } => {
                let limits = SpendLimits { max_cost_usd: *max_cost_usd, max_tokens: *max_tokens };
                self.logged_limits = limits;
                self.config.limits.spend = limits;
            }
            SessionEvent::TurnCompleted { .. } => {
                // A command's pre-approvals and model end with its turn.
                self.turn_approvals = None;
                if let Some(model) = self.turn_model.take() {
                    self.switch_model(model);
                }
            }
            SessionEvent::Approval { approved: true, prefix, path, tool, .. } => {
                if let Some(prefix) = prefix.clone().filter(|prefix| !prefix.is_empty()) {
                    self.allowlist.extend(ApprovalScope::AlwaysPrefix(prefix));
                }
                if let Some(path) = path.clone().filter(|path| !path.is_empty()) {
                    self.allowlist.extend(ApprovalScope::SessionFile(path));
                }
                if let Some(tool) = tool.clone().filter(|tool| !tool.is_empty()) {
                    self.allowlist.extend(ApprovalScope::AlwaysTool(tool));
                }
            }
            SessionEvent::AlwaysRemoved { prefix, path, tool, file } => {
                let scopes = [
                    prefix.clone().map(ApprovalScope::AlwaysPrefix),
                    path.clone().map(ApprovalScope::SessionFile),
                    tool.clone().map(ApprovalScope::AlwaysTool),
                ];
                for scope in scopes.into_iter().flatten() {
                    self.allowlist.remove(&scope);
                    // A resume loads the rules from the files, without it.
                    if let Some(file) = file {
                        self.config.policy.rules.remove_always(file, &scope);
                    }
                }
            }
            SessionEvent::SubagentFinished {
                session_id,
                usage,
                cost_usd,
                estimated_tokens,
                estimated_cost_usd,
                ..
            } => {
                // Once per child, whatever lines a crash and a resume left.
                let spend = ChildSpend {
                    usage: *usage,
                    cost_usd: *cost_usd,
                    estimated_tokens: *estimated_tokens,
                    estimated_cost_usd: *estimated_cost_usd,
                };
                self.delegated.add_child(session_id, spend);
            }
            // The workflow's own lines (see the module docs).
            SessionEvent::PhaseChanged { .. }
            | SessionEvent::PlanUpdated { .. }
            | SessionEvent::TaskUpdated { .. }
            // Facts about the session or the log, the runtime's and the
            // rebuild's (`LogFacts`, `TurnCalls`), not the loop's.
            | SessionEvent::SessionStarted { .. }
            | SessionEvent::SessionResumed { .. }
            | SessionEvent::Checkpoint { .. }
            | SessionEvent::ToolCallStarted { .. }
            | SessionEvent::FileBefore { .. }
            | SessionEvent::FileChanged { .. }
            // Said for the reader of the log; nothing in the loop follows.
            | SessionEvent::Approval { .. }
            | SessionEvent::PolicyDecision { .. }
            | SessionEvent::SubagentStarted { .. }
            | SessionEvent::McpServerStatus { .. }
            | SessionEvent::ToolsChanged { .. }
            | SessionEvent::Undo { .. }
            | SessionEvent::Rewound { items: None, .. }
            | SessionEvent::Forked { .. }
            | SessionEvent::BudgetExceeded { .. }
            | SessionEvent::ModelError { .. }
            | SessionEvent::Error { .. }
            | SessionEvent::InternalError { .. }
            | SessionEvent::HookRan { .. }
            | SessionEvent::NetworkAccess { .. }
            | SessionEvent::SessionEnded { .. } => {}
        }
    }

    /// Adds a logged cost to the session's (`None`: it is unknown from
    /// here on).
    fn add_cost(&mut self, cost: Option<f64>) {
        self.session_cost_usd = self.session_cost_usd.zip(cost).map(|(spent, cost)| spent + cost);
    }
}
