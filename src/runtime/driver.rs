//! [`Session`]: one session's adapters and the loop that drives `step`.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::agent::{
    Effect, Input, LoopState, OpenTurn, Opening as LoopOpening, TurnApprovals, step,
};
use crate::config::Settings;
use crate::config::commands::CommandCatalog;
use crate::llm::LlmClient;
use crate::policy::ApprovalMode;
use crate::protocol::{ModelRequest, SessionEvent, TurnOutcome, Usage};
use crate::session::{SessionLog, new_session_id, sessions_dir};
use crate::tools::{FileStates, ToolRegistry};

pub(super) use super::assembly::{
    Found, discover_context, environment, loop_config, session_tools, tools_digest, workflow_setup,
};
use super::files::git_head;
pub(super) use super::sandboxing::{SessionSandbox, setup_sandbox};
use super::subagent::Subagents;
use super::undo::Checkpoints;
use super::{Approver, DeclinedCall, EventSink, RuntimeError, RuntimeEvent};

/// Per-session choices made by the front end.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    pub approval: ApprovalMode,
    /// Where the user started keel (inside the workspace).
    pub cwd: PathBuf,
    /// Today's date for the prompt (the driver's caller owns the clock).
    pub date: String,
    /// Nobody can answer questions or approvals (`keel exec`); the model
    /// is told so.
    pub headless: bool,
    /// Headless, but the approver answers `ask_user` questions (a script
    /// on stdin, `keel exec --answer-from-stdin`): the tool is offered and
    /// the model told so. No effect on an interactive session.
    pub script_answers: bool,
}

/// How a turn ended, for front ends and exit codes.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnSummary {
    pub outcome: TurnOutcome,
    pub final_text: Option<String>,
    pub usage: Usage,
    /// The error that failed the turn, if one did.
    pub error: Option<String>,
    /// Calls declined because nobody could be asked (headless runs), in
    /// order, each with what would let it run.
    pub declined: Vec<DeclinedCall>,
    /// Tool calls the model made in the turn's responses (run or not).
    pub tool_calls: usize,
}

/// What opening a session (new or resumed) produced; the rest of a
/// [`Session`] is derived the same way either way ([`Session::assemble`]).
pub(super) struct Opening {
    pub(super) id: String,
    pub(super) log: SessionLog,
    pub(super) state: LoopState,
    pub(super) open_turn: Option<OpenTurn>,
    /// The last turn the undo checkpoints already covered.
    pub(super) checkpointed_turn: u32,
    pub(super) files: FileStates,
    pub(super) found: Found,
    /// SessionStart hooks' source: `startup` or `resume`.
    pub(super) start_source: &'static str,
    /// What its commands run under.
    pub(super) sandbox: SessionSandbox,
    /// The OpenTelemetry exporter its log is tapped by (`telemetry_glue.rs`).
    pub(super) telemetry: Option<crate::telemetry::Telemetry>,
    /// The sessions it was forked from, whose kept outputs its history
    /// names (`session::KeptOutputs`, read-only).
    pub(super) forked_from: Vec<String>,
}

/// A running session.
pub struct Session {
    pub(super) id: String,
    pub(super) log: SessionLog,
    pub(super) state: LoopState,
    /// The provider, the model in use, how full the context was.
    pub(super) model: super::model_client::ModelClient,
    /// The tools and what they share for the session.
    pub(super) tools: super::tool_runner::ToolRunner,
    pub(super) workspace_root: PathBuf,
    pub(super) cwd: PathBuf,
    pub(super) sink: Box<dyn EventSink>,
    pub(super) approver: Box<dyn Approver>,
    /// A turn rebuilt from the log that still has to be finished.
    pub(super) open_turn: Option<OpenTurn>,
    pub(super) checkpoints: Checkpoints,
    /// The hook bus and what it remembers between runs.
    pub(super) hooks: super::session_hooks::SessionHooks,
    /// What the instructions are rebuilt from after a compaction (the
    /// AGENTS.md files are read again).
    pub(super) settings: Arc<Settings>,
    pub(super) date: String,
    pub(super) headless: bool,
    /// `SessionOptions::script_answers`, for the environment announced again.
    pub(super) script_answers: bool,
    /// The OpenTelemetry exporter (`None`: off); subagents share it.
    pub(super) telemetry: Option<crate::telemetry::Telemetry>,
    /// The workspace has more files than a fingerprint covers: commands
    /// are not fingerprinted (see `files.rs`).
    pub(super) tree_too_big: bool,
    /// MCP servers and the tools they offer (`mcp_glue.rs`).
    pub(super) mcp: super::mcp_glue::McpState,
    /// The agent types it may start, what its subagents spent, and, in a
    /// subagent's own session, who started it (`subagent.rs`).
    pub(super) subagents: Subagents,
    /// What the user types during a turn (`inbox.rs`).
    pub(super) inbox: super::inbox::Inbox,
    /// `ask_user` questions no one answered (`question.rs`).
    pub(super) unanswered: Vec<String>,
    /// Saved prompts `/name args` runs (`custom_commands.rs`).
    pub(super) commands: Arc<CommandCatalog>,
    /// Where submitted plans are written and read back.
    pub(super) plans: super::plan_store::PlanStore,
    /// Attached images, the image store, the bytes requests need (`images.rs`).
    pub(super) images: super::images::SessionImages,
}

impl Session {
    /// Opens a new session log and announces the session.
    pub fn start(
        settings: &Settings,
        options: SessionOptions,
        mut sink: Box<dyn EventSink>,
        approver: Box<dyn Approver>,
    ) -> Result<Self, RuntimeError> {
        let llm = LlmClient::new(settings.provider.clone()).map_err(RuntimeError::Client)?;
        let workspace_root = settings.workspace_root.clone();
        let found = discover_context(settings, &options.cwd);
        let tools = session_tools(settings, &found, 0);
        let opening = LoopOpening {
            workflow: Some(workflow_setup(settings, &found)),
            environment: environment(
                settings,
                &options.cwd,
                &options.date,
                options.headless,
                options.script_answers,
            ),
            allowlist: Default::default(),
        };
        let mut state = LoopState::open(loop_config(settings, &options, &tools, &found), opening);

        let id = new_session_id();
        let mut log = SessionLog::create(&sessions_dir(&settings.keel_home), &id)?;
        let telemetry = super::telemetry_glue::start(settings, sink.as_mut());
        super::telemetry_glue::tap(telemetry.as_ref(), &mut log, &id);
        let provider = settings.provider.kind.cli_name().to_owned();
        log.append(SessionEvent::SessionStarted {
            session_id: id.clone(),
            cwd: options.cwd.display().to_string(),
            provider: provider.clone(),
            model: settings.model.clone(),
            keel_version: env!("CARGO_PKG_VERSION").to_owned(),
            git_head: git_head(&workspace_root),
            mode: Some(options.approval),
            parent: None,
        })?;
        log.append(SessionEvent::PromptPrefix {
            reason: "session start".to_owned(),
            sections: state.config().prefix.clone(),
            tools_digest: tools_digest(&state.config().tools),
            tool_bytes: crate::protocol::spec_bytes(
                &state.config().tools,
                state.config().strict_tools,
            ),
        })?;
        let (sandbox, sandbox_warning) = setup_sandbox(settings, state.config_mut());
        for message in settings.warnings.iter().chain(&sandbox_warning) {
            sink.emit(RuntimeEvent::Warning { message: message.clone() });
        }
        for message in &found.warnings {
            sink.emit(RuntimeEvent::Warning { message: message.clone() });
        }
        sink.emit(RuntimeEvent::SessionStarted {
            session_id: id.clone(),
            log_path: log.path().to_owned(),
            provider,
            model: settings.model.clone(),
            workspace_root: workspace_root.clone(),
            sandbox: super::sandboxing::sandbox_state(settings, &state.config().policy),
            mode: state.config().policy.mode,
            pricing: settings.pricing,
            limits: state.config().limits.spend,
        });
        sink.emit(super::workflow::workflow_event(state.workflow()));
        let opening = Opening {
            id,
            log,
            state,
            open_turn: None,
            checkpointed_turn: 0,
            files: FileStates::new(),
            found,
            start_source: "startup",
            sandbox,
            telemetry,
            forked_from: Vec::new(),
        };
        Ok(Self::assemble(settings, options, opening, llm, tools, sink, approver))
    }

    /// Builds a session from what `start` or `resume` opened; every other
    /// field comes from `settings` and `options` the same way for both.
    pub(super) fn assemble(
        settings: &Settings,
        options: SessionOptions,
        opening: Opening,
        llm: LlmClient,
        tools: ToolRegistry,
        mut sink: Box<dyn EventSink>,
        approver: Box<dyn Approver>,
    ) -> Self {
        let Opening {
            id,
            log,
            mut state,
            open_turn,
            checkpointed_turn,
            files,
            found,
            start_source,
            sandbox,
            telemetry,
            forked_from,
        } = opening;
        let hooks = super::session_hooks::SessionHooks::new(settings, start_source);
        state.config_mut().post_tool_hooks = hooks.listens(crate::hooks::HookEvent::PostToolUse)
            || hooks.listens(crate::hooks::HookEvent::PostToolUseFailure);
        state.config_mut().pre_tool_hooks = hooks.listens(crate::hooks::HookEvent::PreToolUse);
        let mcp = super::mcp_glue::McpState::start(settings, &id);
        let (mask, mask_warnings) = super::secrets::session_mask(settings, &options.cwd);
        for message in mask_warnings {
            sink.emit(RuntimeEvent::Warning { message });
        }
        let web = crate::web::WebAccess {
            rules: state.config().policy.rules.web_rules.clone(),
            project_trusted: state.config().policy.project_trusted,
            hosts: settings.sandbox.hosts.clone(),
            net_log: sandbox.jail.net_log().clone(),
        };
        let outputs_of = id.clone();
        Self {
            model: super::model_client::ModelClient::new(llm, &id),
            plans: super::plan_store::PlanStore::new(&settings.workspace_root, &id),
            images: super::images::SessionImages::new(&settings.keel_home),
            id,
            log,
            state,
            tools: super::tool_runner::ToolRunner::new(
                tools,
                files,
                found.skills,
                found.memory,
                settings.max_parallel,
                sandbox.jail,
            )
            .with_mask(mask)
            .keeping_outputs(&settings.keel_home, &outputs_of, &forked_from)
            .with_web(web),
            workspace_root: settings.workspace_root.clone(),
            cwd: options.cwd.clone(),
            sink,
            approver,
            open_turn,
            checkpoints: Checkpoints::new(
                &settings.keel_home,
                &settings.workspace_root,
                checkpointed_turn,
                settings.undo.into(),
            )
            .with_offered_watch(sandbox.offered_watch),
            hooks,
            subagents: Subagents::new(found.agents),
            inbox: Default::default(),
            unanswered: Vec::new(),
            commands: Arc::new(found.commands),
            settings: Arc::new(settings.clone()),
            date: options.date,
            headless: options.headless,
            script_answers: options.script_answers,
            tree_too_big: false,
            telemetry,
            mcp,
        }
    }

    /// Runs one user turn to its end. Cancelling `cancel` interrupts it.
    /// `/name args` naming a custom command runs its prompt (with its
    /// model and tools, `custom_commands.rs`); naming a skill, the skill's.
    pub async fn run_turn(
        &mut self,
        prompt: String,
        cancel: &CancellationToken,
    ) -> Result<TurnSummary, RuntimeError> {
        match self.custom_command(&prompt)? {
            Some(command) => self.run_command_turn(command, cancel).await,
            None => self.run_prompt_turn(prompt, None, cancel).await,
        }
    }

    /// [`Session::run_turn`] for a prompt that is not a custom command;
    /// `approvals` hold for its first turn (a command's `allowed-tools`),
    /// once it starts: a prompt refused before pre-approves nothing.
    pub(super) async fn run_prompt_turn(
        &mut self,
        prompt: String,
        approvals: Option<TurnApprovals>,
        cancel: &CancellationToken,
    ) -> Result<TurnSummary, RuntimeError> {
        self.run_prompt_as(prompt, approvals, None, cancel).await
    }

    /// [`Session::run_prompt_turn`]; `queued`: the queued input the
    /// prompt delivers (`inbox.rs`).
    pub(super) async fn run_prompt_as(
        &mut self,
        prompt: String,
        mut approvals: Option<TurnApprovals>,
        mut queued: Option<u64>,
        cancel: &CancellationToken,
    ) -> Result<TurnSummary, RuntimeError> {
        if let Some(source) = self.hooks.take_session_start() {
            self.session_start_hooks(source, cancel).await?;
        }
        self.mcp_turn_boundary(cancel).await?;
        let expanded = match self.expand_mcp_prompt(prompt).await {
            Ok(prompt) => self.inline_mcp_resources(prompt).await,
            Err(message) => Err(message),
        };
        let prompt = match expanded {
            Ok(prompt) => self.expand_skill_command(prompt),
            Err(message) => {
                self.sink.emit(RuntimeEvent::Error { message: message.clone() });
                return Ok(TurnSummary {
                    outcome: TurnOutcome::Failed,
                    final_text: None,
                    usage: Usage::default(),
                    error: Some(message),
                    declined: Vec::new(),
                    tool_calls: 0,
                });
            }
        };
        let mut prompt = match self.prompt_hooks(prompt, cancel).await? {
            Ok(prompt) => prompt,
            Err(reason) => {
                let message = format!("the prompt was blocked by a hook: {reason}");
                self.sink.emit(RuntimeEvent::Error { message: message.clone() });
                return Ok(TurnSummary {
                    outcome: TurnOutcome::Failed,
                    final_text: None,
                    usage: Usage::default(),
                    error: Some(message),
                    declined: Vec::new(),
                    tool_calls: 0,
                });
            }
        };
        // The git status may have changed since the last turn: the model
        // hears of it with the turn (announced, the prefix stays).
        let environment =
            environment(&self.settings, &self.cwd, &self.date, self.headless, self.script_answers);
        self.apply_outside_loop(Input::EnvironmentRead { environment })?;
        // Refused before anything is recorded or sent.
        super::prompt_fit::check(&self.state, &prompt).map_err(RuntimeError::PromptTooLarge)?;
        let mut continuations = 0;
        loop {
            // Recorded first, so a turn resumed after a crash keeps them.
            let mut queue = match approvals.take() {
                Some(approvals) => step(&mut self.state, Input::PreapproveTurn { approvals }),
                None => Vec::new(),
            };
            let images = self.images.take_attached();
            let start = match queued.take() {
                Some(id) => Input::StartQueued { id, text: prompt },
                None => Input::UserTurn { text: prompt, images },
            };
            queue.extend(step(&mut self.state, start));
            self.sink.emit(RuntimeEvent::TurnStarted { turn: self.state.turn() });
            let summary = self.drive(queue.into(), cancel).await?;
            if summary.outcome != TurnOutcome::Completed || cancel.is_cancelled() {
                return Ok(summary);
            }
            match self.stop_hooks(continuations, cancel).await? {
                Some(reason) => {
                    continuations += 1;
                    prompt = format!("A Stop hook asked you to keep going: {reason}");
                }
                None => return Ok(summary),
            }
        }
    }

    /// Carries out `queue` and whatever it leads to until the turn ends:
    /// each effect goes to the part that owns it, and its outcome back to
    /// `step`. Nothing is decided here: what to do next is `step`'s.
    pub(super) async fn drive(
        &mut self,
        mut queue: VecDeque<Effect>,
        cancel: &CancellationToken,
    ) -> Result<TurnSummary, RuntimeError> {
        let mut error: Option<String> = None;
        let mut declined = Vec::new();
        let mut tool_calls = 0;
        while let Some(effect) = queue.pop_front() {
            if !matches!(effect, Effect::Record(_)) {
                // What the user typed meanwhile, before `step` goes on.
                self.typed().drain()?;
            }
            let input = match effect {
                Effect::Record(event) => {
                    match &event {
                        SessionEvent::ModelResponse { response, .. } => {
                            tool_calls += response.tool_calls().count();
                        }
                        // `step` records the error that fails the turn: a
                        // failed request, or an overflow compaction could
                        // not cure. Shown once, as it happens.
                        SessionEvent::ModelError { message } => {
                            self.sink.emit(RuntimeEvent::Error { message: message.clone() });
                            error = Some(message.clone());
                        }
                        _ => {}
                    }
                    self.record(event, cancel).await?;
                    continue;
                }
                Effect::Warn(message) => {
                    self.sink.emit(RuntimeEvent::Warning { message });
                    continue;
                }
                Effect::Compacted { reason, method, tokens_before, tokens_after } => {
                    match self
                        .after_compaction(reason, &method, tokens_before, tokens_after, cancel)
                        .await?
                    {
                        Some(input) => input,
                        None => continue,
                    }
                }
                Effect::TurnEnded { outcome, final_text, usage } => {
                    declined.append(&mut self.subagents.declined);
                    let unverified = (outcome == TurnOutcome::Completed
                        && self.workflow().delivers_unverified())
                    .then(|| self.workflow().verification_status());
                    self.sink.emit(RuntimeEvent::TurnCompleted {
                        turn: self.state.turn(),
                        outcome,
                        final_text: final_text.clone(),
                        usage,
                        unverified,
                    });
                    return Ok(TurnSummary {
                        outcome,
                        final_text,
                        usage,
                        error,
                        declined,
                        tool_calls,
                    });
                }
                _ if cancel.is_cancelled() => Input::Interrupted,
                Effect::CallModel(request) => self.call_model(&request, cancel).await,
                Effect::AskUser { call_id, question, choices } => {
                    self.ask_user(call_id, question, choices, cancel).await
                }
                Effect::Summarize { request, trigger, focus } => {
                    self.summarize(&request, trigger, focus, cancel).await?
                }
                Effect::AskApproval { call, reason, plan_review, hook_asked } => {
                    let question = super::ask::Question { call, reason, plan_review, hook_asked };
                    self.ask(question, cancel, &mut declined).await?
                }
                Effect::PersistRule { call_id, rule, note } => {
                    self.persist_rule(call_id, rule, note)
                }
                Effect::SavePlan { revision, text } => self.save_plan(revision, &text),
                Effect::AskRaiseLimit(hit) => self.ask_raise_limit(&hit, cancel).await,
                Effect::RunBatch { calls, concurrent } => {
                    self.carry_out_batch(&calls, concurrent, cancel).await?
                }
                Effect::CheckCalls { calls, hooks, concurrent } => {
                    self.check_calls(&calls, hooks, concurrent, cancel).await?
                }
                Effect::ConfirmCall { call, reason } => self.confirm(call, &reason, cancel).await,
                Effect::RerunUnsandboxed { call, concurrent } => {
                    self.rerun_unsandboxed(&call, concurrent, cancel).await
                }
                Effect::RunPostToolHooks { ran } => self.post_tool_hooks(ran, cancel).await?,
            };
            queue.extend(step(&mut self.state, input));
            if cancel.is_cancelled() && !queue.iter().any(|e| matches!(e, Effect::TurnEnded { .. }))
            {
                // Write what the last input produced, then end the turn.
                let records: Vec<Effect> =
                    queue.drain(..).filter(|e| matches!(e, Effect::Record(_))).collect();
                queue.extend(records);
                queue.extend(step(&mut self.state, Input::Interrupted));
            }
        }
        Err(RuntimeError::Stalled)
    }

    /// Appends `event` to the log (write-ahead: before any later effect),
    /// runs the PhaseChange hooks of a phase move, and tells the front end.
    async fn record(
        &mut self,
        event: SessionEvent,
        cancel: &CancellationToken,
    ) -> Result<(), RuntimeError> {
        if let SessionEvent::ToolCallFinished { result, .. } = &event {
            // What keel's network proxy judged for this call's command.
            for access in self.tools.jail().net_log().take(&result.call_id) {
                self.log.append(SessionEvent::NetworkAccess {
                    call_id: access.call_id,
                    host: access.host,
                    port: access.port,
                    allowed: access.allowed,
                    reason: access.reason,
                })?;
            }
        }
        if let Err(error) = self.images.keep(&event) {
            // The line is still written: a resume then tells the model the
            // image is gone rather than losing the turn.
            self.sink.emit(RuntimeEvent::Warning { message: error.to_string() });
        }
        self.log.append(event.clone())?;
        if let SessionEvent::PhaseChanged { from, to } = &event {
            self.phase_change_hooks(from, to, cancel).await?;
        }
        self.announce(event);
        Ok(())
    }

    async fn call_model(&mut self, request: &ModelRequest, cancel: &CancellationToken) -> Input {
        let window = super::model_client::Window {
            tokens: self.state.config().context_window,
            compact_threshold: self.state.config().compact_threshold,
        };
        let request = self.images.loaded(request);
        self.model.call(&request, &mut self.sink, window, cancel).await
    }
}
