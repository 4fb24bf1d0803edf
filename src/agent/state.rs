//! The loop's state: configuration fixed for a session, the conversation,
//! counters, and where in the cycle the loop is.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::context::Pricing;
use crate::context::tokens::TokenScale;
use crate::policy::{Allowlist, ApprovalMode, Policy};
use crate::protocol::{
    Item, ModelRequest, PrefixSections, QueuedInput, ToolCall, ToolClass, ToolSpec, Usage,
    entry_names,
};

use super::limits::{Delegated, Limits, SpendLimits, Unreported};
use super::phase::LoopPhase;
use super::runaway::RunawayState;
use super::schedule::Batch;
use super::verdicts::PreToolVerdict;
use super::workflow::{AGENT_TOOL, WorkflowSetup, WorkflowState};

/// What stays fixed while a session runs.
#[derive(Debug, Clone, PartialEq)]
pub struct LoopConfig {
    pub model: String,
    /// The instructions every request starts with (core rules, AGENTS.md,
    /// memory index, skills index), fixed for the session: what changes
    /// later is announced in the history (`agent::announce`).
    pub prefix: PrefixSections,
    pub tools: Vec<ToolSpec>,
    /// Access class per tool name; unknown names count as read-only (they
    /// never run, they only produce an error result).
    pub tool_classes: BTreeMap<String, ToolClass>,
    /// Access class per agent type: an `agent` call has its type's class,
    /// so read-only subagents run side by side and writers one at a time.
    pub agent_classes: BTreeMap<String, ToolClass>,
    /// The tools this loop may call, when narrowed (a subagent's type): a
    /// call to any other tool is refused before policy judges it. `None`:
    /// every tool offered.
    pub tool_scope: Option<ToolScope>,
    /// Compiled rules, mode, paths and trust: what `policy::evaluate` needs.
    pub policy: Policy,
    /// Steps per turn, spend per session, runaway guards. The spend
    /// limits change only when the user raises them (logged).
    pub limits: Limits,
    /// The prices of `model` (table and `[context]`), for the spend
    /// limits: each response is charged at them as it arrives.
    pub pricing: Pricing,
    /// The model the session was configured with, and its resolved prices
    /// (`[context]` overrides included): a switch back to it restores them
    /// ([`LoopConfig::pricing_for`]).
    pub configured: ConfiguredModel,
    /// The model's context window in tokens (`None`: unknown, so only a
    /// provider's context-length error triggers compaction).
    pub context_window: Option<u64>,
    /// `[provider] max_output_tokens`; without it each request's output
    /// limit is derived from `context_window`
    /// ([`crate::context::models::output_limit`]).
    pub max_output_tokens: Option<u32>,
    /// Fraction of the window at which the history is compacted before a
    /// request (`context.compact_threshold`, default 0.85).
    pub compact_threshold: f64,
    /// How the server's tokenizer counts against keel's estimate, learnt
    /// once before the session opened (`runtime::server_window`): every
    /// token estimate of the loop goes through it (compaction, the prompt
    /// check), so it stays fixed for the session.
    pub token_scale: TokenScale,
    /// A PostToolUse or PostToolUseFailure hook listens: every batch's
    /// results go through [`Effect::RunPostToolHooks`] before they are
    /// recorded (without one, a call gains no effect).
    ///
    /// [`Effect::RunPostToolHooks`]: super::Effect::RunPostToolHooks
    pub post_tool_hooks: bool,
    /// A PreToolUse hook listens: a harness call goes through
    /// [`Effect::CheckCalls`] (`CheckHooks::Harness`) before it is
    /// answered (`agent::harness_hooks`); other calls always do.
    ///
    /// [`Effect::CheckCalls`]: super::Effect::CheckCalls
    pub pre_tool_hooks: bool,
    /// What the sandbox around commands lets them do, as the model is told
    /// (filled by the runtime from the session's confinement; shown only
    /// when `policy.sandboxed`).
    pub walls: crate::prompts::Walls,
    /// The strict subset tool schemas are sent in (`[provider]
    /// strict_tools` on the session's protocol), for the sizes keel logs
    /// (`protocol::spec_bytes`); `None`: sent as built.
    pub strict_tools: Option<crate::protocol::strict_schema::StrictDialect>,
}

/// The model a session was configured with and its resolved prices.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfiguredModel {
    pub model: String,
    pub pricing: Pricing,
    /// The provider writes one-hour cache entries (`provider.cache_ttl`),
    /// priced so for any model switched to.
    pub one_hour_cache: bool,
}

impl LoopConfig {
    /// The prices of `model`: the configured ones (with `[context]`
    /// overrides, which are set for that model) for the configured model,
    /// keel's table for any other.
    pub fn pricing_for(&self, model: &str) -> Pricing {
        if model == self.configured.model {
            self.configured.pricing
        } else if self.configured.one_hour_cache {
            Pricing::for_model(model).with_one_hour_cache()
        } else {
            Pricing::for_model(model)
        }
    }

    /// Requests from here on go to `model`, charged at its prices, within
    /// its window.
    pub fn switch_model(&mut self, model: String) {
        self.pricing = self.pricing_for(&model);
        self.context_window = self.pricing.context_window;
        self.model = model;
    }
}

/// The tools a loop is narrowed to, and who narrowed it (for the refusal
/// the model reads).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolScope {
    /// `the explore agent`, `the /fix command`.
    pub owner: String,
    pub tools: BTreeSet<String>,
}

impl ToolScope {
    /// Whether `tool` is in scope: named, or one of a server's tools the
    /// scope names whole (`mcp__server`).
    pub fn allows(&self, tool: &str) -> bool {
        self.tools.contains(tool) || self.tools.iter().any(|entry| entry_names(entry, tool))
    }

    /// Why `tool` may not be called, or `None` when it may.
    pub fn refusal(&self, tool: &str) -> Option<String> {
        if self.allows(tool) {
            return None;
        }
        let allowed: Vec<&str> = self.tools.iter().map(String::as_str).collect();
        Some(format!(
            "`{tool}` is not one of {}'s tools (it may use: {})",
            self.owner,
            if allowed.is_empty() { "none".to_owned() } else { allowed.join(", ") }
        ))
    }
}

/// What the running turn may do without asking on top of the session's
/// "always" answers (a `/command`'s `allowed-tools`), and whose they are.
/// Judged like those answers: forbidden rules, read-only modes, the
/// sandbox and the egress check still decide first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnApprovals {
    /// `the /commit command`.
    pub owner: String,
    /// Prefixes, exact commands and MCP tools (`files` stays empty).
    pub allowlist: Allowlist,
}

/// The whole mutable state of the loop. Built by [`LoopState::open`] (a
/// rebuild opens one and folds the log through [`LoopState::apply`]); its
/// fields are the agent's own: the runtime reads them through accessors
/// and changes only what an opening or a resume settles (the
/// configuration, the environment, notes for the next request). Where the
/// loop is, and what a wait holds, is `phase` alone.
#[derive(Debug, Clone, PartialEq)]
pub struct LoopState {
    pub(super) config: LoopConfig,
    pub(super) phase: LoopPhase,
    /// The conversation, oldest first.
    pub(super) items: Vec<Item>,
    /// Turns started in this session (1-based once a turn starts).
    pub(super) turn: u32,
    /// Model calls made in the current turn.
    pub(super) step: u32,
    /// Usage of the current turn.
    pub(super) turn_usage: Usage,
    /// Usage of the whole session.
    pub(super) session_usage: Usage,
    /// What the session's own requests cost, each charged at the prices
    /// of the model that served it (`model_response` lines carry it, so a
    /// resume rebuilds the same figure); `None` once one was served by a
    /// model without prices.
    pub(super) session_cost_usd: Option<f64>,
    /// What the spend was charged for responses whose server reported no
    /// usage (their estimates, logged on their `model_response` lines),
    /// so a spend limit holds against such a server too.
    pub(super) unreported: Unreported,
    /// The model to go back to when the current turn ends (a custom
    /// command's `model:`); logged with its `model_changed`, so a resume
    /// goes back too.
    pub(super) turn_model: Option<String>,
    /// Batches of the current response still to run; the front one is
    /// running or awaiting approval.
    pub(super) pending: VecDeque<Batch>,
    /// What the user allowed for the rest of the session.
    pub(super) allowlist: Allowlist,
    /// Phase, plan, verification gate and tasks (plan mode requires a plan).
    pub(super) workflow: WorkflowState,
    /// The step at which the history was last compacted and how far
    /// (one cheap and one summary compaction per step at most, so an
    /// overflow cannot loop).
    pub(super) compacted_at_step: Option<(u32, CompactionDepth)>,
    /// The provider's input tokens for the latest request and the number
    /// of items that request carried: later estimates only count the
    /// items added since. `None` after a compaction.
    pub(super) reported_context: Option<(u64, usize)>,
    /// The last failing verification output recorded by a compaction,
    /// for later compactions whose history no longer holds it.
    pub(super) failed_check: Option<String>,
    /// The largest output of the session's responses (the projection's
    /// output estimate).
    pub(super) largest_output_tokens: u64,
    /// The spend limits the log holds last (`limits_set`).
    pub(super) logged_limits: SpendLimits,
    /// Repeated and failing calls of the current turn.
    pub(super) runaway: RunawayState,
    /// The environment block as the driver last saw it (git status, date,
    /// …); announced when it differs from what the model was told.
    pub(super) environment: String,
    /// The AGENTS.md, memory and skills sections as last read again (after
    /// a summary, on resume); announced where they differ from what is in
    /// force. `None`: nothing read since the prefix was built.
    pub(super) observed: Option<PrefixSections>,
    /// Context SessionStart hooks added, waiting for the next request.
    pub(super) hook_context: Vec<String>,
    /// What a resumed session says about the background processes it no
    /// longer has, waiting for the next request.
    pub(super) process_notes: Vec<String>,
    /// Pre-approvals for the current turn only (a `/command`'s
    /// `allowed-tools`); the turn's end clears them (logged as
    /// `turn_scope`, so a resumed turn keeps them).
    pub(super) turn_approvals: Option<TurnApprovals>,
    /// What this session's subagents spent (`subagent_finished`), counted
    /// against the spend limits.
    pub(super) delegated: Delegated,
    /// Tools kept out of the request ([`LoopState::deferred_tools`]).
    pub(super) deferred: Vec<ToolSpec>,
    /// Input typed during a turn, not yet delivered (`queued_input.rs`),
    /// oldest first.
    pub(super) queued: Vec<QueuedInput>,
    /// The largest queued-input id given so far.
    pub(super) queued_ids: u64,
    /// Where the untrusted content in the history came from (a result's
    /// `origin`, applied from `tool_call_finished`, so a resume keeps it):
    /// calls that could send data out are judged again against it.
    pub(super) taint: crate::policy::egress::Taint,
}

/// How far the history was compacted within one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CompactionDepth {
    Elided,
    Summarized,
}

impl LoopState {
    /// The one constructor: a loop about to take its first input (or to
    /// fold a log), idle, set up with `opening`.
    pub fn open(config: LoopConfig, opening: Opening) -> Self {
        let plan_required = config.policy.mode == ApprovalMode::Plan;
        // Unknown from the start on a model without prices (as the cost of
        // its first response will be).
        let session_cost_usd = config.pricing.is_priced().then_some(0.0);
        let mut workflow = WorkflowState::new(plan_required);
        // The rarely used built-ins wait behind `tool_search`/`call_tool`.
        let mut config = config;
        let (offered, deferred) = super::deferred::split_builtins(config.tools);
        config.tools = offered;
        if let Some(setup) = opening.workflow {
            setup.apply(&mut workflow);
        }
        Self {
            workflow,
            config,
            phase: LoopPhase::Idle,
            items: Vec::new(),
            turn: 0,
            step: 0,
            turn_usage: Usage::default(),
            session_usage: Usage::default(),
            session_cost_usd,
            unreported: Unreported::default(),
            turn_model: None,
            pending: VecDeque::new(),
            allowlist: opening.allowlist,
            compacted_at_step: None,
            reported_context: None,
            failed_check: None,
            largest_output_tokens: 0,
            logged_limits: SpendLimits::default(),
            runaway: RunawayState::default(),
            environment: opening.environment,
            observed: None,
            hook_context: Vec::new(),
            process_notes: Vec::new(),
            turn_approvals: None,
            delegated: Delegated::default(),
            deferred,
            queued: Vec::new(),
            queued_ids: 0,
            taint: crate::policy::egress::Taint::default(),
        }
    }

    /// The tools offered through `tool_search`/`call_tool` rather than in
    /// the request (`agent::deferred`: rarely used built-ins, MCP tools past
    /// `[tools] defer_mcp`); their classes are in `config.tool_classes`
    /// like every offered tool's.
    pub fn deferred_tools(&self) -> &[ToolSpec] {
        &self.deferred
    }

    /// The call `call` stands for, as it runs: a `call_tool` of a deferred
    /// tool is that tool's call (`agent::deferred`), and a keel tool's
    /// top-level `null` arguments are dropped (strict tool calling sends one
    /// for each optional field left out; to keel's tools it means absent:
    /// `protocol::strict_schema::without_nulls`). Policy, hooks, approvals
    /// and the log see this call; the history keeps the model's own. An MCP
    /// tool's arguments stay as written (a server may read `null`).
    pub fn real_call(&self, call: &ToolCall) -> ToolCall {
        let mut call = super::deferred::unwrap(call, &self.deferred);
        if !call.name.starts_with(crate::protocol::MCP_PREFIX) {
            if let Some(arguments) = crate::protocol::strict_schema::without_nulls(&call.arguments)
            {
                call.arguments = arguments;
            }
        }
        call
    }

    /// Every tool a call may reach: those in the request and the deferred
    /// tools behind `call_tool`.
    pub fn callable_tools(&self) -> impl Iterator<Item = &ToolSpec> {
        self.config.tools.iter().chain(&self.deferred)
    }

    pub(super) fn set_deferred_tools(&mut self, specs: Vec<ToolSpec>) {
        self.deferred = specs;
    }

    /// Requests from here on go to `model` ([`LoopConfig::switch_model`]);
    /// before anything was spent, the spend is known exactly when its
    /// prices are.
    pub fn switch_model(&mut self, model: String) {
        self.config.switch_model(model);
        if self.session_usage == Usage::default() {
            self.session_cost_usd = self.config.pricing.is_priced().then_some(0.0);
        }
    }

    /// Input typed during a turn and not yet delivered, oldest first.
    pub fn queued(&self) -> &[QueuedInput] {
        &self.queued
    }

    /// Why `tool` may not be called in this loop, or `None` when its
    /// scope (a subagent type's tools) allows it.
    pub fn scope_refusal(&self, tool: &str) -> Option<String> {
        self.config.tool_scope.as_ref().and_then(|scope| scope.refusal(tool))
    }

    /// Where the untrusted content in the history came from.
    pub fn taint(&self) -> &crate::policy::egress::Taint {
        &self.taint
    }

    /// `policy`'s verdict on a call, judged again for the untrusted
    /// content in the history (`policy::egress`).
    pub fn judge_call(
        &self,
        policy: &crate::policy::Policy,
        facts: crate::policy::CallFacts<'_>,
    ) -> crate::policy::Verdict {
        let verdict = match &self.turn_approvals {
            Some(turn) => {
                crate::policy::evaluate(policy, &self.allowlist.joined(&turn.allowlist), facts)
            }
            None => crate::policy::evaluate(policy, &self.allowlist, facts),
        };
        crate::policy::egress::tighten(policy, &self.taint, facts, verdict)
    }

    pub fn class_of(&self, tool: &str) -> ToolClass {
        self.config.tool_classes.get(tool).copied().unwrap_or(ToolClass::ReadOnly)
    }

    /// The class of one call: its tool's, except an `agent` call, which
    /// has its agent type's (an unknown type never runs: read-only).
    pub fn class_of_call(&self, call: &ToolCall) -> ToolClass {
        if call.name != AGENT_TOOL {
            return self.class_of(&call.name);
        }
        let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
        let agent = args.get("agent").and_then(serde_json::Value::as_str).unwrap_or_default();
        self.config.agent_classes.get(agent).copied().unwrap_or(ToolClass::ReadOnly)
    }

    /// The request for the current state: every tool, the session's fixed
    /// instructions, then the whole history. Nothing in it but the history
    /// changes during a session (see `agent::announce`).
    pub fn request(&self) -> ModelRequest {
        ModelRequest {
            model: self.config.model.clone(),
            instructions: self.config.prefix.text(),
            items: self.items.clone(),
            tools: self.config.tools.clone(),
            max_output_tokens: crate::context::models::output_limit(
                &self.config.model,
                self.config.max_output_tokens,
                self.config.context_window,
            ),
        }
    }

    /// The hooks' verdict on `call_id` from before its approval, taken once.
    /// Whatever batch starts next takes the kept verdict away: the approved
    /// call's batch is the one right after its question, so a verdict not
    /// taken then belongs to a call that was declined, blocked or reviewed as
    /// a plan, and must not stand for a later call that reuses its id (a Chat
    /// server sending no ids gets `call_0` for every response's first call).
    pub(super) fn take_prejudged(&mut self, call_id: &str) -> Option<PreToolVerdict> {
        let LoopPhase::AwaitApproval(approval) = &mut self.phase else { return None };
        match approval.prejudged.take() {
            Some((id, verdict)) if id == call_id => Some(verdict),
            Some(_) | None => None,
        }
    }

    /// Drops the hooks' verdict kept from before a question (see
    /// [`LoopState::take_prejudged`]).
    pub(super) fn drop_prejudged(&mut self) {
        if let LoopPhase::AwaitApproval(approval) = &mut self.phase {
            approval.prejudged = None;
        }
    }

    /// The last visible assistant text of the conversation.
    pub fn last_assistant_text(&self) -> Option<&str> {
        self.items.iter().rev().find_map(|item| item.assistant_text())
    }

    /// The session's configuration.
    pub fn config(&self) -> &LoopConfig {
        &self.config
    }

    /// The configuration, for what an opening or a resume settles before
    /// the first input (the sandbox's walls, whether post-tool hooks
    /// listen, resumed spend limits, a fresh prefix); `step` changes the
    /// rest through logged events.
    pub fn config_mut(&mut self) -> &mut LoopConfig {
        &mut self.config
    }

    /// Where the loop is.
    pub fn phase(&self) -> &LoopPhase {
        &self.phase
    }

    /// The conversation, oldest first.
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// Turns started in this session (1-based once a turn starts).
    pub fn turn(&self) -> u32 {
        self.turn
    }

    /// Model calls made in the current turn.
    pub fn step(&self) -> u32 {
        self.step
    }

    /// Usage of the whole session (its subagents' not included).
    pub fn session_usage(&self) -> Usage {
        self.session_usage
    }

    /// What the session's own requests cost (`None`: unknown).
    pub fn session_cost_usd(&self) -> Option<f64> {
        self.session_cost_usd
    }

    /// What this session's subagents spent.
    pub fn delegated(&self) -> &Delegated {
        &self.delegated
    }

    /// What the user allowed for the rest of the session.
    pub fn allowlist(&self) -> &Allowlist {
        &self.allowlist
    }

    /// Adds `parent`'s lasting approvals (a resumed child never has fewer
    /// than its parent).
    pub fn inherit_allowlist(&mut self, parent: &Allowlist) {
        self.allowlist.prefixes.extend(parent.prefixes.iter().cloned());
        self.allowlist.files.extend(parent.files.iter().cloned());
        self.allowlist.tools.extend(parent.tools.iter().cloned());
        self.allowlist.commands.extend(parent.commands.iter().cloned());
    }

    /// Phase, plan, verification gate and tasks.
    pub fn workflow(&self) -> &WorkflowState {
        &self.workflow
    }

    /// The running turn's pre-approvals (a `/command`'s `allowed-tools`).
    pub fn turn_approvals(&self) -> Option<&TurnApprovals> {
        self.turn_approvals.as_ref()
    }

    /// The spend limits the log holds last.
    pub fn logged_limits(&self) -> SpendLimits {
        self.logged_limits
    }

    /// The environment block as the driver sees it now; announced before
    /// the next request where it differs from what the model was told.
    pub fn set_environment(&mut self, environment: String) {
        self.environment = environment;
    }

    /// The AGENTS.md, memory and skills sections as read again (on
    /// resume); announced where they differ from what is in force.
    pub fn observe_sections(&mut self, sections: PrefixSections) {
        self.observed = Some(sections);
    }

    /// Notes about background processes a resumed session no longer has,
    /// for the next request.
    pub fn note_processes(&mut self, notes: impl IntoIterator<Item = String>) {
        self.process_notes.extend(notes);
    }
}

/// What a loop opens with besides its configuration.
#[derive(Debug, Default)]
pub struct Opening {
    /// The project's phase rules and checks (`None`: the default workflow).
    pub workflow: Option<WorkflowSetup>,
    /// The environment block, announced before the first request.
    pub environment: String,
    /// Lasting approvals it starts with (a subagent's parent's).
    pub allowlist: Allowlist,
}
