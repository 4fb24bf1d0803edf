//! Subagents (issue 20): an `agent` call runs as a child [`Session`] with
//! its own log, driven by the same `step` loop and driver as any session,
//! and its final answer (with a line saying what it read, ran and changed)
//! becomes the call's result.
//!
//! A child gets its type's system prompt, the project's AGENTS.md, the task
//! as its one user message and nothing of the parent's history; its own
//! model (the parent's unless the type asks for another), step limit and
//! token budget (`[agents]`). Its powers are narrowed, never widened: its
//! mode is the parent's, or `explore` (read-only) for a read-only type or a
//! read-only parent; it is offered only its type's tools and a call to any
//! other is refused ([`ToolScope`]); policy, sandbox, trust and its own
//! tool hooks apply to every call as in any session; its approvals go to
//! the parent's approver (`subagent_link.rs`); it offers `agent` itself only
//! while `[agents] max_depth` allows.
//!
//! Invariants: the parent's `subagent_started` line (child id, log, type)
//! is on disk before the child runs, so a crash mid-child can be resumed
//! (`subagent_resume.rs`); the child's session log is written like any
//! other (write-ahead, synced at its turn's end); the parent records
//! `subagent_finished` (outcome, usage, cost) before the call's result.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::agent::{
    Input, Limits, LoopConfig, LoopState, SpendLimits, ToolScope, WorkflowSetup, step,
};
use crate::config::Settings;
use crate::config::agents::{AgentCatalog, AgentDefinition, AgentModel};
use crate::config::commands::CommandCatalog;
use crate::context::Pricing;
use crate::hooks::HookEvent;
use crate::plan::{PhaseRules, SUBAGENT_PHASE_RULES, ToolKind, tool_kind};
use crate::policy::ApprovalMode;
use crate::protocol::{
    HarnessTool, Item, ParentLink, SessionEvent, ToolCall, ToolMeta, ToolResult, TurnOutcome, Usage,
};
use crate::session::{SessionLog, new_session_id, sessions_dir};
use crate::tools::{AGENT_TOOL, AgentArgs, BoxFuture, FileStates, ToolRegistry};

use super::assembly::{
    Found, agent_classes, describe_agent_types, environment, named_checks, project_instructions,
    session_tools, subagent_prefix, tools_digest,
};
use super::hooks_glue::MAX_STOP_CONTINUATIONS;
use super::subagent_link::{ApprovalRequest, LinkApprover, LinkSink, Uplink};
use super::subagent_resume::SubagentLinks;
use super::{DeclinedCall, RuntimeError, RuntimeEvent, Session, SessionOptions, TurnSummary};

/// Entries of each kind listed in a result's activity line.
const ACTIVITY_ITEMS: usize = 6;

/// A session's subagent bookkeeping.
pub(super) struct Subagents {
    /// The agent types this session may start.
    pub(super) catalog: Arc<AgentCatalog>,
    /// Set in a subagent's own session: who started it.
    pub(super) role: Option<ChildRole>,
    /// What this session's subagents spent on their tasks.
    pub(super) usage: Usage,
    /// Their cost in US dollars, as far as their prices are known.
    pub(super) cost_usd: f64,
    /// Calls its subagents declined for want of an approval, reported
    /// with the running turn's summary.
    pub(super) declined: Vec<DeclinedCall>,
    /// The children the log names, by call id (for a resume).
    pub(super) links: SubagentLinks,
}

impl Subagents {
    pub(super) fn new(catalog: AgentCatalog) -> Self {
        Self {
            catalog: Arc::new(catalog),
            role: None,
            usage: Usage::default(),
            cost_usd: 0.0,
            declined: Vec::new(),
            links: SubagentLinks::default(),
        }
    }

    /// What a resumed log says: its children and what they spent.
    pub(super) fn resumed(&mut self, links: SubagentLinks, (usage, cost_usd): (Usage, f64)) {
        self.links = links;
        self.usage = usage;
        self.cost_usd = cost_usd;
    }

    /// How deep this session is (0: the user's own).
    pub(super) fn depth(&self) -> u32 {
        self.role.as_ref().map_or(0, |role| role.link.depth)
    }
}

/// Who started a subagent's session.
#[derive(Debug, Clone)]
pub(super) struct ChildRole {
    pub(super) link: ParentLink,
    pub(super) parent_log: PathBuf,
}

/// A child session ready to run its task.
pub(super) struct Child {
    pub(super) session: Session,
    pub(super) call: ToolCall,
    pub(super) agent: String,
    /// The task; `None` when resuming a child whose task already started.
    pub(super) prompt: Option<String>,
    /// Cancelled with the parent's turn, or when the budget is spent.
    pub(super) cancel: CancellationToken,
    pub(super) budget_spent: Arc<AtomicBool>,
}

/// What a child's task came to, for the parent.
pub(super) struct ChildOutcome {
    pub(super) call: ToolCall,
    pub(super) session_id: String,
    pub(super) outcome: TurnOutcome,
    pub(super) result: ToolResult,
    pub(super) meta: ToolMeta,
    /// The whole child session's spend, its own children included.
    pub(super) usage: Usage,
    pub(super) cost_usd: Option<f64>,
    pub(super) declined: Vec<DeclinedCall>,
}

/// The channels a batch's children talk to the parent through.
pub(super) struct Links {
    pub(super) events: UnboundedSender<Uplink>,
    pub(super) asks: UnboundedSender<ApprovalRequest>,
}

impl Session {
    /// Opens the child session for the `agent` call `call` (its log, and
    /// the parent's `subagent_started` line, synced). `Ok(Err(..))` is a
    /// result for the model: bad arguments or an unknown type.
    pub(super) fn open_child(
        &mut self,
        call: &ToolCall,
        links: &Links,
        cancel: &CancellationToken,
    ) -> Result<Result<Child, (ToolResult, ToolMeta)>, RuntimeError> {
        let refuse = |message: String| {
            Ok(Err((
                ToolResult::error(&call.call_id, message),
                ToolMeta::new().with_kind(crate::protocol::ResultKind::named("invalid")),
            )))
        };
        let args = match AgentArgs::parse(&call.arguments) {
            Ok(args) => args,
            Err(error) => return refuse(error.to_string()),
        };
        let Some(definition) = self.subagents.catalog.get(&args.agent) else {
            let known: Vec<&str> =
                self.subagents.catalog.agents.iter().map(|a| a.name.as_str()).collect();
            return refuse(format!(
                "there is no agent type `{}`; use one of: {}",
                args.agent,
                known.join(", ")
            ));
        };
        let definition = self.narrowed_type(definition);
        let depth = self.subagents.depth() + 1;
        let id = new_session_id();
        let settings = child_settings(&self.settings, &definition);
        let mode = child_mode(self.state.config.policy.mode, definition.read_only);
        let link = ParentLink {
            session_id: self.id.clone(),
            call_id: call.call_id.clone(),
            agent: definition.name.clone(),
            depth,
        };
        let mut log = SessionLog::create(&sessions_dir(&settings.keel_home), &id)?;
        log.append(SessionEvent::SessionStarted {
            session_id: id.clone(),
            cwd: self.cwd.display().to_string(),
            provider: settings.provider.kind.cli_name().to_owned(),
            model: settings.model.clone(),
            keel_version: env!("CARGO_PKG_VERSION").to_owned(),
            git_head: None,
            mode: Some(mode),
            parent: Some(link.clone()),
        })?;
        let state = self.child_state(&settings, &definition, mode, depth);
        // Recorded like a session's prefix: a resumed child sends it again.
        log.append(SessionEvent::PromptPrefix {
            reason: "session start".to_owned(),
            sections: state.config.prefix.clone(),
            tools_digest: tools_digest(&state.config.tools),
        })?;
        self.log.append(SessionEvent::SubagentStarted {
            call_id: call.call_id.clone(),
            session_id: id.clone(),
            log_path: log.path().display().to_string(),
            agent: definition.name.clone(),
            description: args.description.clone(),
        })?;
        let child = self.child_session(ChildParts {
            id,
            log,
            state,
            settings,
            definition,
            link,
            links,
            cancel,
            resumed: None,
        });
        Ok(Ok(Child { prompt: Some(args.prompt), call: call.clone(), ..child }))
    }

    /// What is left of this session's spend limits (`--max-cost`,
    /// `--max-tokens`, its subagents' spend counted): a child's own limits,
    /// so delegating cannot spend past them. Children running side by side
    /// each get the whole rest.
    pub(super) fn spend_left(&self) -> SpendLimits {
        let limits = self.state.config.limits.spend;
        SpendLimits {
            max_cost_usd: limits
                .max_cost_usd
                .map(|max| (max - self.cost_usd().unwrap_or(0.0)).max(0.0)),
            max_tokens: limits
                .max_tokens
                .map(|max| max.saturating_sub(self.session_usage().total_tokens())),
        }
    }

    /// `definition` as this session may delegate it now: within the loop's
    /// scope and the running turn's (a `/command`'s `allowed-tools`).
    pub(super) fn narrowed_type(&self, definition: &AgentDefinition) -> AgentDefinition {
        let definition = within_scope(definition, self.state.config.tool_scope.as_ref());
        within_scope(&definition, self.state.turn_scope.as_ref())
    }

    /// The loop state of a new child: its config, the one-phase workflow,
    /// and the parent's lasting approvals (no more than the parent has).
    pub(super) fn child_state(
        &self,
        settings: &Settings,
        definition: &AgentDefinition,
        mode: ApprovalMode,
        depth: u32,
    ) -> LoopState {
        let agents_md = project_instructions(settings, &self.cwd);
        let found = self.child_found(definition, depth, agents_md);
        let mut state =
            LoopState::new(self.child_config(settings, definition, mode, depth, &found));
        child_workflow(settings, &found).apply(&mut state.workflow);
        state.allowlist = self.state.allowlist.clone();
        // Announced in its history before its first request, like a
        // session's.
        state.environment = environment(settings, &self.cwd, &self.date, self.headless);
        state
    }

    /// A child's fixed loop configuration.
    pub(super) fn child_config(
        &self,
        settings: &Settings,
        definition: &AgentDefinition,
        mode: ApprovalMode,
        depth: u32,
        found: &Found,
    ) -> LoopConfig {
        let tools = child_tools(settings, definition, found, depth);
        let mut specs = tools.specs();
        describe_agent_types(&mut specs, &found.agents);
        let tool_classes =
            specs.iter().map(|s| (s.name.clone(), tools.class_of(&s.name))).collect();
        let access = if definition.read_only { "read-only " } else { "" };
        let scope = ToolScope {
            owner: format!("the {access}{} agent", definition.name),
            tools: specs.iter().map(|spec| spec.name.clone()).collect::<BTreeSet<_>>(),
        };
        let mut policy = self.state.config.policy.clone();
        policy.mode = mode;
        LoopConfig {
            model: settings.model.clone(),
            prefix: subagent_prefix(&definition.prompt, found),
            tools: specs,
            tool_classes,
            agent_classes: agent_classes(&found.agents),
            tool_scope: Some(scope),
            policy,
            limits: Limits { spend: self.spend_left(), ..settings.limits },
            pricing: settings.pricing,
            context_window: settings.context_window,
            compact_threshold: settings.compact_threshold,
        }
    }

    /// What a child finds: `agents_md` (read for its prefix, empty where
    /// only its tools are wanted), the parent's skills (for `load_skill`),
    /// the agent types while it may nest, no memory notes and no commands.
    pub(super) fn child_found(
        &self,
        definition: &AgentDefinition,
        depth: u32,
        agents_md: Vec<(String, String)>,
    ) -> Found {
        let nests = depth < self.settings.agents.max_depth;
        let may_use = |tool: &str| definition.may_use(tool);
        Found {
            agents_md,
            skills: if may_use("load_skill") { self.tools.skills().to_vec() } else { Vec::new() },
            memory: Vec::new(),
            agents: if nests && may_use(AGENT_TOOL) {
                (*self.subagents.catalog).clone()
            } else {
                AgentCatalog::default()
            },
            commands: CommandCatalog::default(),
            warnings: Vec::new(),
        }
    }

    /// Assembles a child session around its opened log and state.
    pub(super) fn child_session(&self, parts: ChildParts<'_>) -> Child {
        let ChildParts { id, log, state, settings, definition, link, links, cancel, resumed } =
            parts;
        let (files, open_turn, spent) = match resumed {
            Some(Resumed { files, open_turn, spent }) => (files, open_turn, spent),
            None => (FileStates::new(), None, 0),
        };
        let depth = link.depth;
        let found = self.child_found(&definition, depth, Vec::new());
        let tools = child_tools(&settings, &definition, &found, depth);
        let child_cancel = cancel.child_token();
        let budget_spent = Arc::new(AtomicBool::new(false));
        let sink = LinkSink::new(link.call_id.clone(), links.events.clone()).with_budget(
            settings.agents.max_tokens,
            spent,
            child_cancel.clone(),
            budget_spent.clone(),
        );
        let approver =
            LinkApprover::new(links.asks.clone(), self.approver.can_ask(), definition.name.clone());
        let options = SessionOptions {
            approval: state.config.policy.mode,
            cwd: self.cwd.clone(),
            date: self.date.clone(),
            headless: self.headless,
        };
        let opening = super::driver::Opening {
            id,
            log,
            state,
            open_turn,
            checkpointed_turn: 0,
            files,
            found,
            start_source: "startup",
        };
        let llm = self.model.connection().clone();
        let mut session = Session::assemble(
            &settings,
            options,
            opening,
            llm,
            tools,
            Box::new(sink),
            Box::new(approver),
        );
        // SubagentStart replaces SessionStart; the parent's checkpoint
        // before this call covers what the child changes.
        session.hooks.take_session_start();
        session.checkpoints.disable();
        session.subagents.role =
            Some(ChildRole { link: link.clone(), parent_log: self.log.path().to_owned() });
        session.sink.emit(RuntimeEvent::SessionStarted {
            session_id: session.id.clone(),
            log_path: session.log.path().to_owned(),
            provider: settings.provider.kind.cli_name().to_owned(),
            model: settings.model.clone(),
            workspace_root: settings.workspace_root.clone(),
            sandbox: super::sandboxing::sandbox_state(&settings, &session.state.config.policy),
            mode: session.state.config.policy.mode,
            pricing: settings.pricing,
            limits: session.state.config.limits.spend,
        });
        Child {
            session,
            call: ToolCall {
                call_id: link.call_id,
                name: AGENT_TOOL.to_owned(),
                arguments: String::new(),
                item_id: None,
                provider_data: None,
            },
            agent: definition.name,
            prompt: None,
            cancel: child_cancel,
            budget_spent,
        }
    }

    /// A child's task: SubagentStart hooks (their context joins its
    /// instructions), the task as its one turn, then SubagentStop hooks (a
    /// block sends it back to work with the reason, a few times at most).
    pub(super) async fn run_task(
        &mut self,
        prompt: String,
        cancel: &CancellationToken,
    ) -> Result<TurnSummary, RuntimeError> {
        self.subagent_start_hooks(cancel).await?;
        let mut prompt = prompt;
        let mut continuations = 0;
        loop {
            let queue = step(&mut self.state, Input::UserTurn { text: prompt });
            self.sink.emit(RuntimeEvent::TurnStarted { turn: self.state.turn });
            let summary = self.drive(queue.into(), cancel).await?;
            if summary.outcome != TurnOutcome::Completed || cancel.is_cancelled() {
                return Ok(summary);
            }
            let last = summary.final_text.clone().unwrap_or_default();
            match self.subagent_stop_hooks(continuations, &last, cancel).await? {
                Some(reason) => {
                    continuations += 1;
                    prompt = format!("A SubagentStop hook asked you to keep going: {reason}");
                }
                None => return Ok(summary),
            }
        }
    }

    /// The payload fields Claude Code gives subagent hooks: the parent's
    /// session and transcript, the subagent's id, type and transcript.
    fn subagent_payload(
        &self,
        mut extra: serde_json::Map<String, Value>,
    ) -> crate::hooks::HookPayload {
        let role = self.subagents.role.as_ref();
        extra.insert("agent_id".into(), json!(self.id));
        extra.insert("agent_type".into(), json!(role.map(|r| r.link.agent.clone())));
        extra.insert("agent_transcript_path".into(), json!(self.log.path()));
        let mut payload = self.hook_payload(extra);
        if let Some(role) = role {
            payload.session_id = role.link.session_id.clone();
            payload.transcript_path = role.parent_log.display().to_string();
        }
        payload
    }

    async fn subagent_start_hooks(
        &mut self,
        cancel: &CancellationToken,
    ) -> Result<(), RuntimeError> {
        if !self.hooks.listens(HookEvent::SubagentStart) {
            return Ok(());
        }
        let agent = self.subagents.role.as_ref().map(|r| r.link.agent.clone());
        let payload = self.subagent_payload(serde_json::Map::new());
        let verdict = self
            .dispatch_hooks(HookEvent::SubagentStart, payload, agent.as_deref(), cancel)
            .await?;
        // Announced in the history with the task, like SessionStart's: the
        // prefix stays as recorded.
        self.state.hook_context.extend(verdict.additional_context);
        Ok(())
    }

    /// `Some(reason)` sends the child back to work.
    async fn subagent_stop_hooks(
        &mut self,
        continuations: u32,
        last_message: &str,
        cancel: &CancellationToken,
    ) -> Result<Option<String>, RuntimeError> {
        if !self.hooks.listens(HookEvent::SubagentStop) {
            return Ok(None);
        }
        let agent = self.subagents.role.as_ref().map(|r| r.link.agent.clone());
        let extra = serde_json::Map::from_iter([
            ("stop_hook_active".to_owned(), json!(continuations > 0)),
            ("last_assistant_message".to_owned(), json!(last_message)),
        ]);
        let payload = self.subagent_payload(extra);
        let verdict =
            self.dispatch_hooks(HookEvent::SubagentStop, payload, agent.as_deref(), cancel).await?;
        let again = verdict.permission == Some(crate::hooks::Permission::Deny)
            && continuations < MAX_STOP_CONTINUATIONS;
        Ok(again.then(|| verdict.reason()))
    }

    /// Records what a child's task came to in this (the parent's) log and
    /// totals; the call's result is recorded by the loop after this.
    pub(super) fn note_child_outcome(
        &mut self,
        outcome: &mut ChildOutcome,
    ) -> Result<(), RuntimeError> {
        self.log.append(SessionEvent::SubagentFinished {
            call_id: outcome.call.call_id.clone(),
            session_id: outcome.session_id.clone(),
            outcome: outcome.outcome,
            usage: outcome.usage,
            cost_usd: outcome.cost_usd,
        })?;
        self.subagents.usage.add(&outcome.usage);
        self.subagents.cost_usd += outcome.cost_usd.unwrap_or(0.0);
        // The parent's spend limits count it from its next request on.
        self.state.delegated.usage.add(&outcome.usage);
        self.state.delegated.cost_usd += outcome.cost_usd.unwrap_or(0.0);
        self.subagents.declined.append(&mut outcome.declined);
        Ok(())
    }
}

/// What [`Session::child_session`] is assembled from.
pub(super) struct ChildParts<'a> {
    pub(super) id: String,
    pub(super) log: SessionLog,
    pub(super) state: LoopState,
    pub(super) settings: Settings,
    pub(super) definition: AgentDefinition,
    pub(super) link: ParentLink,
    pub(super) links: &'a Links,
    pub(super) cancel: &'a CancellationToken,
    /// What a resumed child's log holds.
    pub(super) resumed: Option<Resumed>,
}

/// What a resumed child's log holds besides its state.
pub(super) struct Resumed {
    pub(super) files: FileStates,
    pub(super) open_turn: Option<crate::agent::OpenTurn>,
    /// Tokens it spent before (toward its budget).
    pub(super) spent: u64,
}

impl Child {
    /// Runs the task (or finishes a resumed one) and closes the child's
    /// log; never fails: a failure is the call's error result. Boxed with
    /// its type named: a child runs sessions that run children.
    pub(super) fn run(mut self) -> BoxFuture<'static, ChildOutcome> {
        Box::pin(async move {
            let summary = match self.prompt.take() {
                Some(prompt) => self.session.run_task(prompt, &self.cancel).await.map(Some),
                None => self.session.continue_turn(&self.cancel).await,
            };
            let closed = self.session.log.append(SessionEvent::SessionEnded {
                reason: "the subagent's task ended".to_owned(),
            });
            let summary = summary.and_then(|summary| closed.map(|_| summary).map_err(Into::into));
            self.outcome(summary)
        })
    }

    fn outcome(self, summary: Result<Option<TurnSummary>, RuntimeError>) -> ChildOutcome {
        let session = &self.session;
        let budget_spent = self.budget_spent.load(Ordering::SeqCst);
        let (outcome, text, declined) = match summary {
            Ok(Some(summary)) => {
                let text = match (summary.outcome, &summary.error) {
                    (_, _) if budget_spent => ending_text(
                        &summary.final_text,
                        &format!(
                            "the subagent stopped: it spent its token budget ({} tokens, \
                             [agents] max_tokens)",
                            session.settings.agents.max_tokens.unwrap_or_default()
                        ),
                    ),
                    (TurnOutcome::Completed, _) => summary
                        .final_text
                        .clone()
                        .unwrap_or_else(|| "(the subagent gave no answer)".to_owned()),
                    (TurnOutcome::MaxSteps, _) => ending_text(
                        &summary.final_text,
                        &format!(
                            "the subagent stopped at its step limit of {} before finishing \
                             ([agents] max_steps)",
                            session.state.config.limits.max_steps
                        ),
                    ),
                    (TurnOutcome::Interrupted, _) => {
                        ending_text(&summary.final_text, "the subagent was interrupted")
                    }
                    (TurnOutcome::BudgetExceeded, _) => ending_text(
                        &summary.final_text,
                        "the subagent stopped: its next request would have crossed the \
                         session's spend limit (--max-cost, --max-tokens)",
                    ),
                    (TurnOutcome::Stuck, _) => ending_text(
                        &summary.final_text,
                        "the subagent stopped: it kept repeating a call or failing with one tool",
                    ),
                    (TurnOutcome::Failed, error) => ending_text(
                        &summary.final_text,
                        &format!(
                            "the subagent failed: {}",
                            error.as_deref().unwrap_or("its turn ended with an error")
                        ),
                    ),
                };
                (summary.outcome, text, summary.declined)
            }
            // A resumed child whose task had ended: its answer stands.
            Ok(None) => (
                TurnOutcome::Completed,
                session.last_assistant_text().unwrap_or_else(|| "(no answer)".to_owned()),
                Vec::new(),
            ),
            Err(error) => {
                (TurnOutcome::Failed, format!("the subagent failed: {error}"), Vec::new())
            }
        };
        // The parent's summary lists them with its own: say whose they are.
        let declined = declined
            .into_iter()
            .map(|mut entry| {
                entry.reason = format!("{} (asked by the {} subagent)", entry.reason, self.agent);
                entry
            })
            .collect();
        let usage = session.session_usage();
        let cost_usd = session.cost_usd();
        let mut text = text;
        text.push_str(&format!("\n\n{}", activity_line(&self.agent, session, &usage)));
        let failed = outcome != TurnOutcome::Completed || budget_spent;
        let result = if failed {
            ToolResult::error(&self.call.call_id, text)
        } else {
            ToolResult::ok(&self.call.call_id, text)
        };
        let mut meta = ToolMeta::new()
            .with("agent", json!(self.agent))
            .with("session_id", json!(session.id))
            .with("log_path", json!(session.log.path()))
            .with("outcome", json!(outcome))
            .with("steps", json!(session.state.step))
            .with("tokens", json!(usage.total_tokens()));
        if let Some(passed) = last_verification(&session.state) {
            meta.insert("verified", json!(passed));
        }
        ChildOutcome {
            session_id: session.id.clone(),
            call: self.call,
            outcome,
            result,
            meta,
            usage,
            cost_usd,
            declined,
        }
    }
}

/// The child's last words with why it stopped.
fn ending_text(final_text: &Option<String>, why: &str) -> String {
    match final_text {
        Some(text) if !text.trim().is_empty() => format!("{text}\n\n[{why}]"),
        Some(_) | None => format!("[{why}]"),
    }
}

/// Whether the checks a child ran last passed (`None`: it ran none): the
/// parent's workflow counts it as a verification.
fn last_verification(state: &LoopState) -> Option<bool> {
    let flow = &state.workflow.flow;
    let ran = flow.verified_at.is_some() || flow.failed_verifications > 0;
    ran.then(|| flow.verified_at == Some(flow.changes) && flow.failed_verifications == 0)
}

/// `[explore subagent · 3 steps · 4200 tokens · read: a.rs, b.rs · ran: git log]`:
/// what the child did, from its history (calls that failed or were
/// refused are left out).
fn activity_line(agent: &str, session: &Session, usage: &Usage) -> String {
    let failed: BTreeSet<&str> = session
        .state
        .items
        .iter()
        .filter_map(|item| match item {
            Item::ToolResult(result) if result.is_error => Some(result.call_id.as_str()),
            Item::ToolResult(_)
            | Item::User { .. }
            | Item::Assistant { .. }
            | Item::Reasoning(_)
            | Item::Context { .. }
            | Item::ToolCall(_) => None,
        })
        .collect();
    let mut read = Vec::new();
    let mut ran = Vec::new();
    let mut changed = Vec::new();
    for item in &session.state.items {
        let Item::ToolCall(call) = item else { continue };
        if failed.contains(call.call_id.as_str()) {
            continue;
        }
        let args: Value = serde_json::from_str(&call.arguments).unwrap_or_default();
        let arg = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
        let (list, entry) = match call.name.as_str() {
            "read_file" | "list_dir" => (&mut read, arg("path")),
            "grep" | "glob" => (&mut read, arg("pattern")),
            "shell" => (&mut ran, arg("command").map(|c| shorten(&c, 40))),
            "write_file" | "edit_file" => (&mut changed, arg("path")),
            "apply_patch" => (&mut changed, Some("a patch".to_owned())),
            AGENT_TOOL => (&mut ran, arg("agent").map(|a| format!("agent {a}"))),
            _ => continue,
        };
        if let Some(entry) = entry.filter(|e| !list.contains(e)) {
            list.push(entry);
        }
    }
    let mut parts = vec![
        format!("{agent} subagent"),
        format!("{} step(s)", session.state.step.max(u32::from(session.state.turn > 0))),
        format!("{} tokens", usage.total_tokens()),
    ];
    for (label, list) in [("read", read), ("ran", ran), ("changed", changed)] {
        if list.is_empty() {
            continue;
        }
        let more = list.len().saturating_sub(ACTIVITY_ITEMS);
        let mut shown = list.into_iter().take(ACTIVITY_ITEMS).collect::<Vec<_>>().join(", ");
        if more > 0 {
            shown.push_str(&format!(" (+{more})"));
        }
        parts.push(format!("{label}: {shown}"));
    }
    format!("[{}; its log: {}]", parts.join(" · "), session.log.path().display())
}

fn shorten(text: &str, chars: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() <= chars && !text.contains('\n') {
        return line.to_owned();
    }
    format!("{}…", line.chars().take(chars).collect::<String>())
}

/// A child's settings: the parent's, with the type's model (and its
/// window and prices) and the subagent step limit.
pub(super) fn child_settings(parent: &Settings, definition: &AgentDefinition) -> Settings {
    let mut settings = parent.clone();
    let model = match &definition.model {
        AgentModel::Inherit => parent.model.clone(),
        AgentModel::Fast => {
            parent.agents.fast_model.clone().unwrap_or_else(|| parent.model.clone())
        }
        AgentModel::Named(model) => model.clone(),
    };
    if model != parent.model {
        let pricing = Pricing::for_model(&model);
        settings.pricing = pricing;
        settings.context_window = pricing.context_window;
    }
    settings.model = model;
    settings.limits.max_steps = parent.agents.max_steps;
    // The session's MCP servers are the parent's: a child starts none of
    // its own (and is offered none of their tools; sharing the parent's
    // servers with a type that lists their tools is for later).
    settings.mcp = Default::default();
    settings.warnings.clear();
    settings
}

/// `definition` as a child of a loop narrowed to `scope` may use it: no
/// tool the loop itself may not call (a `/command`'s `allowed-tools`, or
/// a subagent's own tools for its children), so delegating never widens
/// what the loop may do.
pub(super) fn within_scope(
    definition: &AgentDefinition,
    scope: Option<&ToolScope>,
) -> AgentDefinition {
    let mut definition = definition.clone();
    let Some(scope) = scope else { return definition };
    let tools: Vec<String> = match definition.tools.take() {
        Some(tools) => tools.into_iter().filter(|tool| scope.tools.contains(tool)).collect(),
        None => scope
            .tools
            .iter()
            .filter(|tool| HarnessTool::parse(tool).is_none() && definition.may_use(tool))
            .cloned()
            .collect(),
    };
    definition.read_only |= tools.iter().all(|tool| tool_kind(tool) == ToolKind::Read);
    definition.tools = Some(tools);
    definition
}

/// A child's mode: never more than its parent's; read-only for a
/// read-only type, and for any child of a read-only (plan, explore)
/// parent, without plan mode's plan workflow.
pub(super) fn child_mode(parent: ApprovalMode, read_only_type: bool) -> ApprovalMode {
    if read_only_type || parent.read_only() { ApprovalMode::Explore } else { parent }
}

/// A child's tools: the session tools at its depth, narrowed to its type's
/// list (no memory notes: it starts from its task alone).
pub(super) fn child_tools(
    settings: &Settings,
    definition: &AgentDefinition,
    found: &Found,
    depth: u32,
) -> ToolRegistry {
    session_tools(settings, found, depth)
        .retain(|name| name != "read_memory" && definition.may_use(name))
}

/// The one-phase workflow of a subagent, with the project's checks (so a
/// `verify` child's checks count as verification).
pub(super) fn child_workflow(settings: &Settings, found: &Found) -> WorkflowSetup {
    WorkflowSetup {
        rules: PhaseRules::parse(SUBAGENT_PHASE_RULES).ok(),
        verify_commands: settings.verify_commands.clone(),
        detected_checks: settings.detected_checks.clone(),
        named_checks: named_checks(&found.agents_md),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_never_exceeds_its_parents_mode() {
        use ApprovalMode::{Ask, Auto, Explore, Plan, Yolo};
        for (parent, read_only, child) in [
            (Ask, false, Ask),
            (Auto, false, Auto),
            (Yolo, false, Yolo),
            (Ask, true, Explore),
            (Yolo, true, Explore),
            (Plan, false, Explore),
            (Explore, false, Explore),
        ] {
            assert_eq!(child_mode(parent, read_only), child, "{parent:?} {read_only}");
        }
    }

    fn definition(text: &str) -> AgentDefinition {
        let file = crate::config::markdown_file::MarkdownFile::parse(text).unwrap();
        crate::config::agents::definition(&file, crate::config::agents::AgentSource::BuiltIn)
            .unwrap()
    }

    fn scope(tools: &[&str]) -> ToolScope {
        ToolScope {
            owner: "the /look command".into(),
            tools: tools.iter().map(|t| t.to_string()).collect(),
        }
    }

    #[test]
    fn a_child_gets_no_tool_its_narrowed_parent_may_not_call() {
        let verify = definition("---\nname: v\ndescription: d\ntools: Read, Bash\n---\n");
        assert!(!verify.read_only);
        let narrowed = within_scope(&verify, Some(&scope(&["read_file", "agent", "todo_write"])));
        assert_eq!(narrowed.tools.as_deref().unwrap(), ["read_file"]);
        assert!(narrowed.read_only, "left with reads only, it runs read-only");
        assert!(!narrowed.may_use("shell"));
        // A type without a list gets the scope's tools, less its own
        // disallowed ones and the workflow's.
        let general = definition("---\nname: g\ndescription: d\ndisallowedTools: Edit\n---\n");
        let narrowed =
            within_scope(&general, Some(&scope(&["edit_file", "shell", "agent", "set_phase"])));
        assert_eq!(narrowed.tools.as_deref().unwrap(), ["agent", "shell"]);
        assert!(!narrowed.read_only);
        assert_eq!(within_scope(&general, None), general, "no scope: the type as defined");
    }

    #[test]
    fn every_tool_keel_has_is_known_to_agent_definitions() {
        let names: Vec<String> =
            crate::tools::ToolRegistry::builtin().specs().into_iter().map(|s| s.name).collect();
        assert_eq!(names.len(), crate::config::agents::KEEL_TOOLS.len());
        for name in names {
            assert!(crate::config::agents::KEEL_TOOLS.contains(&name.as_str()), "{name}");
        }
    }

    #[test]
    fn the_subagent_workflow_parses() {
        let settings_free = PhaseRules::parse(SUBAGENT_PHASE_RULES).unwrap();
        assert_eq!(settings_free.start, "task");
    }

    #[test]
    fn a_long_command_is_shortened_to_its_first_line() {
        assert_eq!(shorten("git log", 40), "git log");
        assert_eq!(shorten("cargo test\nsecond", 40), "cargo test…");
        assert_eq!(shorten(&"x".repeat(50), 4), "xxxx…");
    }
}
