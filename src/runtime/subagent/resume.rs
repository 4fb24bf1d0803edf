//! Resuming a session whose turn a crash left inside subagents: an `agent`
//! call that started (its `subagent_started` line names the child's log)
//! but has no result is finished from the child's own log, the child first
//! and then the parent. A child whose task had ended gives its recorded
//! answer (nothing is run again); one left mid-task is resumed like any
//! session (its calls with results are never run again, the rest are
//! reconciled) and finishes its task; one that never got its task gets it
//! now. A child that cannot be reopened (its log or type is gone) leaves
//! the call to the ordinary reconciliation: answered "interrupted".
//!
//! Invariants: a call whose result is in the parent's log is never looked
//! at here (it is not open); the recovered result is recorded in the
//! parent's log (`subagent_finished`, then `tool_call_finished`) before the
//! rest of the turn is reconciled; a child resumed here never gets more
//! powers than a new one would under the parent's current mode; a child
//! whose `subagent_finished` line was written before the crash counts
//! once (`step` neither adds nor records its spend again:
//! `agent::Delegated`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::agent::{CallProgress, Input, OpenCall, OpenTurn, Rebuilder};
use crate::protocol::{ParentLink, SessionEvent, ToolCall};
use crate::session::{LogEntry, SessionLock, SessionLog, for_each_entry};
use crate::tools::{AGENT_TOOL, AgentArgs};

use super::link::serve;
use super::{Child, ChildParts, Links, Resumed, child_mode, child_settings, child_workflow};
use crate::runtime::assembly::{environment, project_instructions, tools_digest};
use crate::runtime::history::file_memory::remembered_files;
use crate::runtime::history::resume::prefix_break;
use crate::runtime::{RuntimeError, RuntimeEvent, Session};

/// The children a log names, by the `agent` call that started each.
#[derive(Debug, Clone, Default)]
pub(in crate::runtime) struct SubagentLinks {
    by_call: BTreeMap<String, ChildLink>,
}

/// Where one child's session is logged.
#[derive(Debug, Clone)]
pub(in crate::runtime) struct ChildLink {
    session_id: String,
    log_path: PathBuf,
    agent: String,
}

impl SubagentLinks {
    /// Remembers a `subagent_started` line. A call started later with the
    /// same id (a server that repeats ids) forgets it: a child belongs to
    /// the call started last before it, never to a later one.
    pub(in crate::runtime) fn note(&mut self, event: &SessionEvent) {
        match event {
            SessionEvent::ToolCallStarted { call, .. } => {
                self.by_call.remove(&call.call_id);
            }
            SessionEvent::SubagentStarted { call_id, session_id, log_path, agent, .. } => {
                let link = ChildLink {
                    session_id: session_id.clone(),
                    log_path: PathBuf::from(log_path),
                    agent: agent.clone(),
                };
                self.by_call.insert(call_id.clone(), link);
            }
            _ => {}
        }
    }
}

/// Whether the log says the call may have run (it was started; an
/// unplaceable call never gets here: the resume refused to guess).
fn may_have_run(open: &OpenCall) -> bool {
    open.progress != CallProgress::NotStarted
}

impl Session {
    /// Finishes the open turn's started `agent` calls from their children's
    /// logs; returns the calls left for the ordinary reconciliation.
    pub(in crate::runtime) async fn recover_subagent_calls(
        &mut self,
        open: OpenTurn,
        cancel: &CancellationToken,
    ) -> Result<OpenTurn, RuntimeError> {
        let mut left = Vec::with_capacity(open.calls.len());
        for open_call in open.calls {
            let link = (open_call.call.name == AGENT_TOOL && may_have_run(&open_call))
                .then(|| self.subagents.links.by_call.get(&open_call.call.call_id).cloned())
                .flatten();
            let answered = match link {
                Some(link) => self.finish_child_call(&open_call.call, &link, cancel).await?,
                None => false,
            };
            if !answered {
                left.push(open_call);
            }
        }
        Ok(OpenTurn { turn: open.turn, calls: left })
    }

    /// Reopens and finishes one child, and records its result as the
    /// call's. `false`: the child could not be reopened.
    async fn finish_child_call(
        &mut self,
        call: &ToolCall,
        link: &ChildLink,
        cancel: &CancellationToken,
    ) -> Result<bool, RuntimeError> {
        let (events, mut inbox) = mpsc::unbounded_channel();
        let (asks, ask_inbox) = mpsc::unbounded_channel();
        let links = Links { events, asks };
        let Some(child) = self.reopen_child(call, link, &links, cancel)? else { return Ok(false) };
        drop(links);
        let work = super::link::guarded(child);
        let mut outcome =
            serve(&mut self.sink, &mut self.approver, &mut inbox, ask_inbox, work).await;
        self.note_child_outcome(&mut outcome)?;
        let (result, meta) = (outcome.result, outcome.meta);
        if meta.get("kind").and_then(serde_json::Value::as_str) == Some("internal") {
            self.record_internal_error("tool", AGENT_TOOL, Some(&call.call_id), &result.output)?;
        }
        // Announced to the front end as it is recorded.
        self.apply_outside_loop(Input::CallRecovered { call: call.clone(), result, meta })?;
        Ok(true)
    }

    /// The child session of `link`, rebuilt from its log and appending to
    /// it, under the parent's current mode; `None` (said as a warning)
    /// when its type or its log is gone.
    fn reopen_child(
        &mut self,
        call: &ToolCall,
        link: &ChildLink,
        links: &Links,
        cancel: &CancellationToken,
    ) -> Result<Option<Child>, RuntimeError> {
        let warn = |session: &mut Session, why: String| {
            let message = format!(
                "the subagent of call {} cannot be resumed ({why}); the call is answered \
                 as interrupted",
                call.call_id
            );
            session.sink.emit(RuntimeEvent::Warning { message });
        };
        let Some(definition) = self.subagents.catalog.get(&link.agent) else {
            warn(self, format!("there is no agent type `{}` any more", link.agent));
            return Ok(None);
        };
        // As narrow as when it started: the resumed turn keeps its scope.
        let definition = self.narrowed_type(definition);
        let settings = child_settings(&self.settings, &definition);
        let depth = self.subagents.depth() + 1;
        let mode = child_mode(self.state.config().policy.mode, definition.read_only);
        let agents_md = project_instructions(&settings, &self.cwd);
        let found = self.child_found(&definition, depth, agents_md);
        let config = self.child_config(&settings, &definition, mode, depth, &found);
        let fresh = config.prefix.clone();
        let digest = tools_digest(&config.tools);
        let tool_bytes = crate::protocol::spec_bytes(&config.tools, config.strict_tools);
        let mut rebuilder = Rebuilder::new(config);
        rebuilder.configure_workflow(child_workflow(&settings, &found));
        let mut grandchildren = SubagentLinks::default();
        // Locked before reading, as any resume: one writer per log.
        let read = SessionLock::acquire(&link.log_path).and_then(|lock| {
            let report = for_each_entry(&link.log_path, |entry| match entry {
                LogEntry::Record(record) => {
                    if rebuilder.admits(record.seq) {
                        grandchildren.note(&record.event);
                    }
                    rebuilder.apply(record);
                }
                LogEntry::Unreadable { line, torn } => rebuilder.unreadable(line, torn),
            })?;
            Ok((lock, report))
        });
        let (lock, report) = match read {
            Ok(read) => read,
            Err(error) => {
                warn(self, error.to_string());
                return Ok(None);
            }
        };
        let rebuilt = rebuilder.finish();
        if !rebuilt.ambiguous().is_empty() {
            warn(self, "its log is damaged where a call may have run".to_owned());
            return Ok(None);
        }
        for message in report.warnings.iter().chain(&rebuilt.notes) {
            self.sink.emit(RuntimeEvent::Warning { message: format!("subagent log: {message}") });
        }
        let mut state = rebuilt.state;
        // Never more than the parent allows now, and its approvals too.
        state.config_mut().policy.mode = mode;
        state.inherit_allowlist(self.state.allowlist());
        let never_started = state.turn() == 0;
        let mut log = SessionLog::append_to(lock, rebuilt.facts.next_seq)?;
        crate::runtime::telemetry_glue::tap(self.telemetry.as_ref(), &mut log, &link.session_id);
        log.append(SessionEvent::SessionResumed {
            provider: settings.provider.kind.cli_name().to_owned(),
            model: settings.model.clone(),
            keel_version: env!("CARGO_PKG_VERSION").to_owned(),
            skipped_lines: report.skipped(),
            interrupted_calls: 0,
        })?;
        // As a session's resume: the recorded prefix is sent again unless
        // it cannot be (the break recorded); the environment is announced.
        match prefix_break(&rebuilt.facts, &fresh, &digest, &settings.model) {
            Some(reason) => {
                state.config_mut().prefix = fresh.clone();
                log.append(SessionEvent::PromptPrefix {
                    reason,
                    sections: fresh,
                    tools_digest: digest,
                    tool_bytes,
                })?;
            }
            None => state.observe_sections(fresh),
        }
        state.set_environment(environment(&settings, &self.cwd, &self.date, self.headless, false));
        let files =
            remembered_files(state.items(), &self.workspace_root, &self.cwd, &link.log_path);
        let parent = ParentLink {
            session_id: self.id.clone(),
            call_id: call.call_id.clone(),
            agent: definition.name.clone(),
            depth,
        };
        let resumed = Resumed { files, open_turn: rebuilt.open_turn };
        let mut child = self.child_session(ChildParts {
            id: link.session_id.clone(),
            log,
            state,
            settings,
            definition,
            link: parent,
            links,
            cancel,
            resumed: Some(resumed),
        })?;
        child.session.subagents.resumed(grandchildren);
        child.call = call.clone();
        if never_started {
            child.prompt = AgentArgs::parse(&call.arguments).ok().map(|args| args.prompt);
        }
        Ok(Some(child))
    }
}
