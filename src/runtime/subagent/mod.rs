//! Subagents: an `agent` call runs as a child [`Session`] with
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
//! while `[agents] max_depth` allows; it calls the MCP tools its type may
//! use through the parent's running servers (`subagent_mcp.rs`).
//!
//! This file opens a child (its settings, mode, tools, loop state and
//! session); `subagent_run.rs` runs its task and turns what it did into
//! the call's result; `subagent_link.rs` connects it to the parent.
//!
//! Invariants: the parent's `subagent_started` line (child id, log, type)
//! is on disk (synced) before the child's log is created, so no child log
//! is ever left that no parent line names, and before the child runs, so a crash mid-child can be resumed
//! (`subagent_resume.rs`); the child's session log is written like any
//! other (write-ahead, synced at its turn's end); the parent records
//! `subagent_finished` (outcome, usage, cost) before the call's result.
//!
//! # How a child runs
//!
//! An `agent` call (`tools/agent.rs`: args `agent`, `description`, `prompt`) runs as a child
//! `Session`: the same `step` loop and driver, its own log in `$KEEL_HOME/sessions/` (its
//! `session_started` carries `parent`: session, call, type, depth). `execute.rs` sends a batch with
//! `agent` calls to `Session::run_batch_with_subagents` (`subagent_link.rs`): each child is opened
//! first (`Session::open_child` here: the parent's `subagent_started` line through `step`,
//! synced, then its log, before it runs), then the batch runs as any other (read-only children side by
//! side, since `LoopConfig::agent_classes` gives an `agent` call its type's class; writers alone,
//! with the tree fingerprint around them like a shell call), while `subagent_link::serve` forwards
//! the children's events (`LinkSink` → `RuntimeEvent::Subagent { call_id, event }`, nested for
//! grandchildren) and their approvals (`LinkApprover` → the parent's own `Approver`, one at a time,
//! the batch still polled). After each child the parent feeds `Input::SubagentFinished` to `step`,
//! which adds its spend to `LoopState::delegated` (so the session's usage, cost and spend checks
//! include children, their estimates for responses without usage too) and records
//! `subagent_finished` (outcome, usage, cost, estimates); its declined calls join the turn's
//! summary. `Child::run` returns a named `BoxFuture`: a child runs sessions that run children, and
//! a named type keeps the async recursion out of the compiler's auto-trait cycle.
//!
//! # Its prefix and context
//!
//! A child's request prefix is built like a session's (`assembly::subagent_prefix`): its type's
//! prompt and `prompts/subagent.md` in place of the core rules, the project's AGENTS.md, the skills
//! index when it may load skills, no memory index; recorded as the child's `prompt_prefix` line
//! right after its `session_started`, so its requests share those bytes and a reopened child sends
//! them again (`resume::prefix_break` decides as for a session). Its environment is announced in
//! its own history (a `<keel_context>` message before its first request), as is SubagentStart's
//! `additionalContext`; after a compaction only its AGENTS.md is read again. Its workflow
//! (`child_workflow`) is the one-phase `rules/subagent_phases.toml` with the project's checks, the
//! ones AGENTS.md names included.
//!
//! # Its powers only narrow
//!
//! `child_mode` (the parent's mode, `explore` for a read-only type or under a read-only parent),
//! `LoopConfig::tool_scope` (its type's tools only; `step::batches` refuses any other call before
//! policy, as a `policy_decision` forbidden), the parent's policy and allowlist, its own `HookBus`
//! (tool hooks run in it; SubagentStart/SubagentStop replace SessionStart/Stop, with the parent's
//! session id and the child's transcript), no checkpoints (the parent's before the batch covers
//! it), and `agent` offered only while `depth < [agents] max_depth`. Its token budget (`[agents]
//! max_tokens`) is one of its loop's spend limits, so it is projected before each of its requests
//! like the session's (a request that would cross it is not sent; the call's result names the
//! budget). The session's spend limits hold over its children: a child's `LoopConfig::limits.spend`
//! is what is left of the parent's (`Session::spend_left`), an equal share of it for each of the
//! children opened for one batch (`SpendLimits::shared`, so together they stay within it),
//! tightened by its token budget. The shares are fixed when the children open: a share one child
//! leaves unspent is not passed to its siblings (a live shared budget would change a child's limits
//! outside its `step`). Its step limit is `[agents] max_steps`; it cannot raise a limit (its
//! approver keeps the default).
//!
//! # MCP tools
//!
//! A child starts none of the session's MCP servers (`child_settings` clears `Settings::mcp`): it
//! shares the parent's running hub (`subagent_mcp.rs`; `McpState::shared` never re-lists, reports
//! or stops a server, so closing the child leaves the parent's running; a grandchild shares the
//! same hub). Which of the parent's MCP tools it gets is `subagent_mcp::mcp_for_type`: those its
//! type names (`mcp__server__tool`, or a whole server as `mcp__server`/`mcp__server__*`:
//! `config::agents`, also in `disallowedTools` and in `within_scope`), all of them for a type
//! without a `tools` list, and for a read-only type only `McpToolDef::read_only` ones (trusted
//! `readOnlyHint`); the built-in types name none. A listed MCP tool never makes a type read-only
//! (`agents::only_reads`: the file cannot know whether it writes), so such a type is read-only only
//! with `permissionMode: plan`. The selection depends on the type and the parent's tools, not the
//! mode, so a resumed child is offered the same. The names join the child's `ToolScope` in
//! `child_config`, and the specs reach its loop as `Input::ToolsOffered` (no line, like a session's
//! first offer); `step` drops any offered tool outside a loop's `tool_scope`. Entries of a type's
//! list that give a child nothing (no such tool, a writer for a read-only type) are one `Warning`
//! when it opens.
//!
//! # Resume
//!
//! `Session::resume` collects `subagent_started` lines (`SubagentLinks`); `continue_turn` first
//! runs `recover_subagent_calls` (`subagent_resume.rs`): a started `agent` call without a result
//! reopens its child from the child's log (under the parent's current mode, within the scopes in
//! force: `Session::narrowed_type`) and finishes it: `continue_turn` of the child if its turn is
//! open (its recorded calls never run again), its last answer if it had ended, its task if it never
//! started. The result is fed to the parent's `step` (`SubagentFinished`, then `CallRecovered`) and
//! only then are the other open calls reconciled. A call whose child cannot be reopened (log or
//! type gone) is left to the ordinary "interrupted" reconciliation. `keel sessions` lists a child
//! under its parent; `--last` and the resume picker skip children.

//!
//! # Files
//!
//! This file opens a child and runs the `agent` calls of a batch; `run.rs` one child's task and
//! its report, `link.rs` the channel from children to the parent's front end and approver,
//! `resume.rs` a crash inside subagents resumed from the children's logs, `mcp.rs` the parent's
//! MCP tools lent to a child.

mod child_setup;
pub(super) mod link;
pub(in crate::runtime) mod mcp;
pub(super) mod resume;
mod run;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::agent::{
    ConfiguredModel, Input, Limits, LoopConfig, LoopState, Opening, SpendLimits, SubagentOpened,
    ToolScope,
};
use crate::config::Settings;
use crate::config::agents::{AgentCatalog, AgentDefinition};
use crate::config::commands::CommandCatalog;
use crate::policy::ApprovalMode;
use crate::prompts::catalog::{self, Entry};
use crate::protocol::{ParentLink, SessionEvent, ToolCall, ToolMeta, ToolResult};
use crate::session::{SessionLog, new_session_id, sessions_dir};
use crate::tools::{AGENT_TOOL, AgentArgs, FileStates};

use self::child_setup::{
    child_mode, child_settings, child_tools, child_workflow, foreign_agent_model, within_scope,
};
use self::link::{ApprovalRequest, LinkApprover, LinkSink, Uplink};
use self::resume::SubagentLinks;
use super::assembly::{
    Found, agent_classes, describe_agent_types, environment, one_hour_cache, project_instructions,
    subagent_prefix, tools_digest,
};
use super::{DeclinedCall, RuntimeError, RuntimeEvent, Session, SessionOptions};
use crate::protocol::tool_facts::names;

/// A session's subagent bookkeeping.
pub(super) struct Subagents {
    /// The agent types this session may start.
    pub(super) catalog: Arc<AgentCatalog>,
    /// Set in a subagent's own session: who started it.
    pub(super) role: Option<ChildRole>,
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
            declined: Vec::new(),
            links: SubagentLinks::default(),
        }
    }

    /// The children a resumed log names.
    pub(super) fn resumed(&mut self, links: SubagentLinks) {
        self.links = links;
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
    /// Cancelled with the parent's turn.
    pub(super) cancel: CancellationToken,
}

/// The channels a batch's children talk to the parent through.
pub(super) struct Links {
    pub(super) events: UnboundedSender<Uplink>,
    pub(super) asks: UnboundedSender<ApprovalRequest>,
}

impl Session {
    /// Opens the child session for the `agent` call `call` (its log, and
    /// the parent's `subagent_started` line, synced), one of `siblings`
    /// opened for the same batch: each gets an equal share of what is left
    /// of the session's spend limits. `Ok(Err(..))` is a result for the
    /// model: bad arguments or an unknown type.
    pub(super) fn open_child(
        &mut self,
        call: &ToolCall,
        siblings: usize,
        links: &Links,
        cancel: &CancellationToken,
    ) -> Result<Result<Child, (ToolResult, ToolMeta)>, RuntimeError> {
        let refuse = |message: String| {
            Ok(Err((
                ToolResult::error(&call.call_id, message),
                ToolMeta::new().with_kind(crate::protocol::ResultKind::named("invalid")),
            )))
        };
        let entries: Vec<Entry<'_>> = self
            .subagents
            .catalog
            .agents
            .iter()
            .map(|a| Entry {
                name: &a.name,
                description: &a.description,
                note: if a.read_only { " (read-only)" } else { "" },
            })
            .collect();
        // A search needs no task: it is answered before the arguments a
        // child needs are checked.
        #[derive(serde::Deserialize)]
        struct Asked {
            agent: String,
        }
        let asked = serde_json::from_str::<Asked>(&call.arguments).ok();
        if let Some(query) = asked.as_ref().and_then(|asked| catalog::search_query(&asked.agent)) {
            let answer = catalog::search(query, &entries, "agent types");
            return Ok(Err((
                ToolResult::ok(&call.call_id, answer),
                ToolMeta::new().with_kind(crate::protocol::ResultKind::named("search")),
            )));
        }
        let args = match AgentArgs::parse(&call.arguments) {
            Ok(args) => args,
            Err(error) => return refuse(error.to_string()),
        };
        let Some(definition) = self.subagents.catalog.get(&args.agent) else {
            return refuse(format!(
                "there is no agent type `{}`; {}",
                args.agent,
                catalog::search(&args.agent, &entries, "agent types")
            ));
        };
        let definition = self.narrowed_type(definition);
        self.warn_unoffered_mcp(&definition);
        let depth = self.subagents.depth() + 1;
        let id = new_session_id();
        // The parent's model now (a `/model` switch, a command's model).
        let mut parent = (*self.settings).clone();
        parent.model.clone_from(&self.state.config().model);
        parent.pricing = self.state.config().pricing;
        parent.context_window = self.state.config().context_window;
        if let Some(message) = foreign_agent_model(&parent, &definition) {
            self.sink.emit(RuntimeEvent::Warning { message });
        }
        let settings = child_settings(&parent, &definition);
        let mode = child_mode(self.state.config().policy.mode, definition.read_only);
        let link = ParentLink {
            session_id: self.id.clone(),
            call_id: call.call_id.clone(),
            agent: definition.name.clone(),
            depth,
        };
        // Named in the parent's log (and synced) before the child's log
        // exists: a crash never leaves a child log no parent line names.
        let dir = sessions_dir(&settings.keel_home);
        self.apply_outside_loop(Input::SubagentStarted(SubagentOpened {
            call_id: call.call_id.clone(),
            session_id: id.clone(),
            log_path: SessionLog::path_in(&dir, &id).display().to_string(),
            agent: definition.name.clone(),
            description: args.description.clone(),
        }))?;
        self.log.sync()?;
        let mut log = SessionLog::create(&dir, &id)?;
        super::telemetry_glue::tap(self.telemetry.as_ref(), &mut log, &id);
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
        let mut state = self.child_state(&settings, &definition, mode, depth);
        let share = self.spend_left().shared(siblings);
        let spend = &mut state.config_mut().limits.spend;
        *spend = spend.tightest(share);
        // Recorded like a session's prefix: a resumed child sends it again.
        log.append(SessionEvent::PromptPrefix {
            reason: "session start".to_owned(),
            sections: state.config().prefix.clone(),
            tools_digest: tools_digest(&state.config().tools),
            tool_bytes: crate::protocol::spec_bytes(
                &state.config().tools,
                state.config().strict_tools,
            ),
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
        })?;
        Ok(Ok(Child { prompt: Some(args.prompt), call: call.clone(), ..child }))
    }

    /// What is left of this session's spend limits (`--max-cost`,
    /// `--max-tokens`, against its spend: its subagents' and the estimates
    /// for responses without usage counted): a child's own limits, so
    /// delegating cannot spend past them. Children running side by side
    /// share it equally (`open_child`); a share one leaves unspent is not
    /// passed to its siblings (the limits are fixed when a child opens).
    pub(super) fn spend_left(&self) -> SpendLimits {
        let limits = self.state.config().limits.spend;
        let spent = self.state.spent();
        SpendLimits {
            max_cost_usd: limits.max_cost_usd.map(|max| (max - spent.usd.unwrap_or(0.0)).max(0.0)),
            max_tokens: limits.max_tokens.map(|max| max.saturating_sub(spent.tokens)),
        }
    }

    /// `definition` as this session may delegate it now: within the loop's
    /// scope (a subagent's own type). A `/command`'s `allowed-tools` narrow
    /// nothing: they pre-approve its own turn's calls, not a child's.
    pub(super) fn narrowed_type(&self, definition: &AgentDefinition) -> AgentDefinition {
        within_scope(definition, self.state.config().tool_scope.as_ref())
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
        let opening = Opening {
            workflow: Some(child_workflow(settings, &found)),
            // Announced in its history before its first request, like a
            // session's.
            environment: environment(settings, &self.cwd, &self.date, self.headless, false),
            allowlist: self.state.allowlist().clone(),
        };
        LoopState::open(self.child_config(settings, definition, mode, depth, &found), opening)
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
        // Its MCP tools join the loop with `ToolsOffered` (`child_session`);
        // the scope is settled here, with them.
        let mcp = self.child_mcp_tools(definition);
        let scope = ToolScope {
            owner: format!("the {access}{} agent", definition.name),
            tools: (specs.iter().map(|spec| &spec.name))
                .chain(mcp.iter().map(|def| &def.name))
                .cloned()
                .collect::<BTreeSet<_>>(),
        };
        let mut policy = self.state.config().policy.clone();
        policy.mode = mode;
        LoopConfig {
            model: settings.model.clone(),
            prefix: subagent_prefix(&definition.prompt, found),
            tools: specs,
            tool_classes,
            agent_classes: agent_classes(&found.agents),
            tool_scope: Some(scope),
            policy,
            // Its own token budget (`[agents] max_tokens`) joins what the
            // parent has left: both are checked before each of its requests.
            limits: Limits {
                spend: self.spend_left().tightest(SpendLimits {
                    max_cost_usd: None,
                    max_tokens: settings.agents.max_tokens,
                }),
                ..settings.limits
            },
            pricing: settings.pricing,
            configured: ConfiguredModel {
                model: settings.model.clone(),
                pricing: settings.pricing,
                one_hour_cache: one_hour_cache(settings),
            },
            context_window: settings.context_window,
            max_output_tokens: settings.provider.profile.max_output_tokens,
            compact_threshold: settings.compact_threshold,
            token_scale: settings.token_scale,
            post_tool_hooks: false,
            pre_tool_hooks: false,
            // Its commands run in the parent's jail.
            walls: self.state.config().walls.clone(),
            strict_tools: self.state.config().strict_tools,
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
            skills: if may_use(names::LOAD_SKILL) {
                self.tools.skills().to_vec()
            } else {
                Vec::new()
            },
            memory: Vec::new(),
            agents: if nests && may_use(AGENT_TOOL) {
                (*self.subagents.catalog).clone()
            } else {
                AgentCatalog::default()
            },
            commands: CommandCatalog::default(),
            warnings: Vec::new(),
            details: Vec::new(),
        }
    }

    /// Assembles a child session around its opened log and state, with
    /// its share of this session's MCP tools.
    pub(super) fn child_session(&self, parts: ChildParts<'_>) -> Result<Child, RuntimeError> {
        let ChildParts { id, log, state, settings, definition, link, links, cancel, resumed } =
            parts;
        let (files, open_turn) = match resumed {
            Some(Resumed { files, open_turn }) => (files, open_turn),
            None => (FileStates::new(), None),
        };
        let depth = link.depth;
        let found = self.child_found(&definition, depth, Vec::new());
        let tools = child_tools(&settings, &definition, &found, depth);
        let mcp = self.child_mcp_tools(&definition);
        let child_cancel = cancel.child_token();
        let sink = LinkSink::new(link.call_id.clone(), links.events.clone());
        let approver =
            LinkApprover::new(links.asks.clone(), self.approver.can_ask(), definition.name.clone());
        let options = SessionOptions {
            approval: state.config().policy.mode,
            cwd: self.cwd.clone(),
            date: self.date.clone(),
            headless: self.headless,
            script_answers: false,
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
            sandbox: super::sandboxing::SessionSandbox::shared(self.tools.jail().clone()),
            telemetry: self.telemetry.clone(),
            forked_from: Vec::new(),
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
        self.lend_mcp(&mut session, mcp)?;
        // The editor's files are the child's too (same workspace, same editor).
        if let Some(client) = self.tools.client_files() {
            session.tools.set_client_files(client.clone());
        }
        session.subagents.role =
            Some(ChildRole { link: link.clone(), parent_log: self.log.path().to_owned() });
        session.sink.emit(RuntimeEvent::SessionStarted {
            session_id: session.id.clone(),
            log_path: session.log.path().to_owned(),
            provider: settings.provider.kind.cli_name().to_owned(),
            model: settings.model.clone(),
            workspace_root: settings.workspace_root.clone(),
            sandbox: super::sandboxing::sandbox_state(&settings, &session.state.config().policy),
            mode: session.state.config().policy.mode,
            pricing: settings.pricing,
            limits: session.state.config().limits.spend,
        });
        Ok(Child {
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
        })
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
}
