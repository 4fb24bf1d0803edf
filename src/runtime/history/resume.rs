//! [`Session::resume`]: a session rebuilt from its log, appending to the
//! same file, and [`Session::continue_turn`], which finishes a turn the log
//! left open.
//!
//! Invariants: the log is read once, streaming, into the pure
//! [`Rebuilder`]; nothing is appended before the rebuild succeeded; every
//! skipped line is reported to the front end as a warning; a call whose
//! result is in the log is never run again (see [`crate::agent::reconcile`]).
//!
//! # How a resume goes
//!
//! `Session::resume(settings, log_path, options, sink, approver)` streams the log through
//! `agent::Rebuilder` (pure), opens the same file for appending (a torn last line is closed with a
//! newline so it stays a skipped line) and records `session_resumed`. If the log left a turn open,
//! `continue_turn` first finishes subagent calls from their children's logs (`subagent_resume.rs`),
//! then carries out `agent::reconcile`'s effects with the ordinary driver: calls started without a
//! result get an "interrupted" result (with "the change landed / did not land" from `file_before`
//! hashes; for shell calls the "file" is the workspace root and the hash a tree fingerprint); calls
//! never started are judged again by policy (so a pending approval is asked again); then the model
//! is asked for the next step. `reconcile` is not an `Input` to `step`: it sets the rebuilt state's
//! pending batches (the interrupted calls as one synthetic batch, then the re-judged ones) and its
//! phase itself, and hands the synthetic results to `batch_finish::on_reconciled`, the same code
//! that records a finished batch; from there on the driver runs `step` as in a live turn.
//!
//! Reconciliation is keyed by call id, not line order (`agent/turn_calls.rs`): a result counts
//! wherever it is (also before its `model_response`, also in another turn), the n-th result of an
//! id answers its n-th call (servers reuse ids), and a `file_before`/`file_changed` line proves a
//! start when `tool_call_started` is unreadable. The reader hands unreadable lines to the rebuild
//! in place (`session::for_each_entry`); one that follows a call's response without any start of it
//! makes the call `CallProgress::Unknown` (it could have been its start or its result), and
//! `Session::resume` refuses (`RuntimeError::AmbiguousLog`, exit 1) before appending anything. Not
//! ambiguous: a torn last line (nothing ran after it: the writer died there) and damage followed by
//! a `session_resumed` (that resume already decided). A closed turn keeps one result per call (a
//! lost result line becomes a "lost" result; a result whose call is unreadable is left out), each
//! repair a warning (`Rebuilt::notes`). The rebuild and `file_memory.rs` are linear in the log
//! (`cargo bench --bench resume`).
//!
//! The approval mode is in `session_started` and every change is a `mode_changed` line; the rebuild
//! keeps the last one, so a resume without a mode flag runs in the logged mode. Lasting approvals
//! log what they allow (`prefix`, `path`, `tool`) and are folded back into the allowlist.
//!
//! One writer per session (`session/lock.rs`): `Session::resume` and `runtime::undo` take the log's
//! lock before reading it (`SessionLock::acquire`, then `SessionLog::append_to`); a busy lock is
//! `SessionError::Locked`, naming the holder's pid and host. Tests that list `$KEEL_HOME/sessions`
//! must filter `.jsonl` (a killed keel leaves its `<id>.owner` sidecar).
//!
//! Crash tests use `KEEL_TEST_CRASH_AFTER_SEQ`, `KEEL_TEST_CRASH_IN_SEQ`,
//! `KEEL_TEST_FAIL_WRITE_AT_SEQ`, `KEEL_TEST_TERM_AFTER_SEQ` (read only in `session/faults.rs`) and
//! `KEEL_TEST_PANIC_IN=NAME` (`support/panic_guard.rs`); all are inert unless set.

use std::path::Path;

use tokio_util::sync::CancellationToken;

use crate::agent::{
    CallProgress::NotStarted, CallProgress::Unknown, Rebuilder, Rebuilt, SpendLimits, reconcile,
};
use crate::config::Settings;
use crate::llm::LlmClient;
use crate::protocol::SessionEvent;
use crate::session::{LogEntry, SessionLock, SessionLog, for_each_entry};
use crate::tools::processes::LeftRunning;

use super::file_memory::remembered_files;
use crate::runtime::driver::{
    Opening, environment, loop_config, session_tools, setup_sandbox, tools_digest, workflow_setup,
};
use crate::runtime::files::DiskProbe;
use crate::runtime::subagent::resume::SubagentLinks;
use crate::runtime::{
    Approver, EventSink, RuntimeError, RuntimeEvent, Session, SessionOptions, TurnSummary,
};

impl Session {
    /// Rebuilds the session logged at `log_path` and opens that log for
    /// appending. Model and provider are taken from `settings` (the caller
    /// decides whether the log's or the user's flags win; see
    /// [`crate::session::summarize`]). A turn the log left open is kept for
    /// [`Session::continue_turn`].
    pub fn resume(
        settings: &Settings,
        log_path: &Path,
        options: SessionOptions,
        mut sink: Box<dyn EventSink>,
        approver: Box<dyn Approver>,
    ) -> Result<Self, RuntimeError> {
        let llm = LlmClient::new(settings.provider.clone()).map_err(RuntimeError::Client)?;
        let found = crate::runtime::driver::discover_context(settings, &options.cwd);
        let tools = session_tools(settings, &found, 0);
        let config = loop_config(settings, &options, &tools, &found);
        let fresh = config.prefix.clone();
        let digest = tools_digest(&config.tools);
        let tool_bytes = crate::protocol::spec_bytes(&config.tools, config.strict_tools);
        let mut rebuilder = Rebuilder::new(config);
        rebuilder.configure_workflow(workflow_setup(settings, &found));
        // Before reading: no other process appends while this one rebuilds.
        let lock = SessionLock::acquire(log_path)?;
        let mut links = SubagentLinks::default();
        let mut left_running = LeftRunning::default();
        let report = for_each_entry(log_path, |entry| match entry {
            LogEntry::Record(record) => {
                // A line the rebuild skips (a repeated seq) is skipped here too.
                if rebuilder.admits(record.seq) {
                    links.note(&record.event);
                    left_running.note(&record.event);
                }
                rebuilder.apply(record);
            }
            LogEntry::Unreadable { line, torn } => rebuilder.unreadable(line, torn),
        })?;
        let mut rebuilt = rebuilder.finish();
        refuse_to_guess(&rebuilt, log_path)?;
        // Its background processes did not survive: the next request says so.
        rebuilt.state.note_processes(left_running.gone_note());
        // A resume keeps counting from the logged spend, under the logged
        // limits unless a flag changes them (recorded at the next request).
        let logged = rebuilt.state.logged_limits();
        rebuilt.state.config_mut().limits.spend =
            SpendLimits::for_resume(settings.limit_flags, logged, settings.limits.spend);
        // The model the log left in force (`model_changed`), at its prices.
        let config = rebuilt.state.config();
        if config.limits.spend.max_cost_usd.is_some() && !config.pricing.is_priced() {
            return Err(RuntimeError::UnpricedCostLimit { model: config.model.clone() });
        }
        let (sandbox, sandbox_warning) = setup_sandbox(settings, rebuilt.state.config_mut());
        let warnings = settings.warnings.iter().chain(&found.warnings);
        let notes = report.warnings.iter().chain(&rebuilt.notes);
        for message in warnings.chain(notes).chain(&sandbox_warning) {
            sink.emit(RuntimeEvent::Warning { message: message.clone() });
        }
        let here = options.cwd.display().to_string();
        if !rebuilt.facts.cwd.is_empty() && rebuilt.facts.cwd != here {
            sink.emit(RuntimeEvent::Warning {
                message: format!(
                    "this session was started in {}; its tools now run in {here}",
                    rebuilt.facts.cwd
                ),
            });
        }
        if rebuilt.dropped_empty_turn {
            sink.emit(RuntimeEvent::Warning {
                message: "the last turn's prompt was never recorded; give it again to go on"
                    .to_owned(),
            });
        }
        let id = if rebuilt.facts.session_id.is_empty() {
            log_path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
        } else {
            rebuilt.facts.session_id.clone()
        };
        let mut log = SessionLog::append_to(lock, rebuilt.facts.next_seq)?;
        let telemetry = crate::runtime::telemetry_glue::start(settings, sink.as_mut());
        crate::runtime::telemetry_glue::tap(telemetry.as_ref(), &mut log, &id);
        let provider = settings.provider.kind.cli_name().to_owned();
        let interrupted_calls = rebuilt
            .open_turn
            .as_ref()
            .map_or(0, |open| open.calls.iter().filter(|call| call.progress != NotStarted).count());
        log.append(SessionEvent::SessionResumed {
            provider: provider.clone(),
            model: settings.model.clone(),
            keel_version: env!("CARGO_PKG_VERSION").to_owned(),
            skipped_lines: report.skipped(),
            interrupted_calls: u32::try_from(interrupted_calls).unwrap_or(u32::MAX),
        })?;
        let prefix_break = prefix_break(&rebuilt.facts, &fresh, &digest, &settings.model);
        match prefix_break {
            Some(reason) => {
                rebuilt.state.config_mut().prefix = fresh.clone();
                log.append(SessionEvent::PromptPrefix {
                    reason,
                    sections: fresh,
                    tools_digest: digest,
                    tool_bytes,
                })?;
            }
            // The recorded prefix is sent again; AGENTS.md, memory or
            // skills that changed since are announced.
            None => rebuilt.state.observe_sections(fresh),
        }
        rebuilt.state.set_environment(environment(
            settings,
            &options.cwd,
            &options.date,
            options.headless,
            options.script_answers,
        ));
        sink.emit(RuntimeEvent::SessionStarted {
            session_id: id.clone(),
            log_path: log.path().to_owned(),
            provider,
            model: rebuilt.state.config().model.clone(),
            workspace_root: settings.workspace_root.clone(),
            sandbox: crate::runtime::sandboxing::sandbox_state(
                settings,
                &rebuilt.state.config().policy,
            ),
            mode: rebuilt.state.config().policy.mode,
            pricing: rebuilt.state.config().pricing,
            limits: rebuilt.state.config().limits.spend,
        });
        sink.emit(crate::runtime::workflow::workflow_event(rebuilt.state.workflow()));
        let files = remembered_files(
            rebuilt.state.items(),
            &settings.workspace_root,
            &options.cwd,
            log_path,
        );
        let opening = Opening {
            id,
            log,
            state: rebuilt.state,
            open_turn: rebuilt.open_turn,
            checkpointed_turn: rebuilt.facts.checkpointed_turn,
            files,
            found,
            start_source: "resume",
            sandbox,
            telemetry,
            forked_from: rebuilt.facts.forked_from,
        };
        let mut session = Self::assemble(settings, options, opening, llm, tools, sink, approver);
        session.subagents.resumed(links);
        Ok(session)
    }

    /// Whether the log left a turn open that [`Session::continue_turn`]
    /// would finish.
    pub fn has_open_turn(&self) -> bool {
        self.open_turn.is_some()
    }

    /// Finishes the turn the log left open, if any: calls that started but
    /// have no result are reported to the model as interrupted (with
    /// whether their file change landed), calls that never started are
    /// judged (and asked about) again, and the model is asked to go on.
    pub async fn continue_turn(
        &mut self,
        cancel: &CancellationToken,
    ) -> Result<Option<TurnSummary>, RuntimeError> {
        let Some(open) = self.open_turn.take() else { return Ok(None) };
        // The MCP tools (and their classes) must be known before calls
        // that never started are judged again.
        self.mcp_turn_boundary(cancel).await?;
        self.sink.emit(RuntimeEvent::TurnStarted { turn: open.turn });
        // A subagent's call is finished from the subagent's own log first.
        let open = self.recover_subagent_calls(open, cancel).await?;
        let effects = reconcile(&mut self.state, &open, &DiskProbe);
        self.drive(effects.into(), cancel).await.map(Some)
    }

    /// The conversation as the model will see it next (after any
    /// compaction): a resumed front end shows it before going on.
    pub fn history(&self) -> &[crate::protocol::Item] {
        self.state.items()
    }

    /// The last visible assistant text of the conversation.
    pub fn last_assistant_text(&self) -> Option<String> {
        self.state.last_assistant_text().map(str::to_owned)
    }

    /// Closes the session: records why, synced.
    pub async fn end(&mut self, reason: &str) -> Result<(), RuntimeError> {
        self.tools.processes().stop_all().await;
        self.mcp_shutdown().await;
        self.session_end_hooks(reason).await?;
        // Sent before the last lines (bounded: a dead collector is not
        // waited for), so what was lost can be recorded.
        if let Some(telemetry) = &self.telemetry {
            telemetry.shutdown().await;
            if let Some(note) = crate::telemetry::drop_note(telemetry) {
                tracing::warn!("{note}");
                self.log.append(SessionEvent::Error { message: note })?;
            }
        }
        self.log.append(SessionEvent::SessionEnded { reason: reason.to_owned() })?;
        // Best effort: `keel stats` reads a log its index misses.
        let _ = crate::session::index_session(&self.settings.keel_home, self.log.path());
        Ok(())
    }
}

/// A damaged log that cannot say whether a call ran stops the resume
/// before anything is appended (issue 14): keel neither runs it again nor
/// tells the model it did not run.
fn refuse_to_guess(rebuilt: &Rebuilt, log_path: &Path) -> Result<(), RuntimeError> {
    let calls: Vec<String> = rebuilt
        .ambiguous()
        .iter()
        .map(|open| {
            let line = match open.progress {
                Unknown { damaged_line } => damaged_line,
                NotStarted | crate::agent::CallProgress::Started => 0,
            };
            format!(
                "line {line} is unreadable and may have been the start or the result of call {} \
                 ({} {})",
                open.call.call_id,
                open.call.name,
                open.call.arguments.chars().take(80).collect::<String>()
            )
        })
        .collect();
    if calls.is_empty() {
        return Ok(());
    }
    Err(RuntimeError::AmbiguousLog { path: log_path.to_owned(), calls: calls.join("; ") })
}

/// Why a resumed session cannot send its recorded prefix again, if it
/// cannot: the log recorded none, this keel's core rules or tools differ
/// (another version), or the model changed (caches are per model; the
/// bytes stay, the break is recorded all the same).
pub(in crate::runtime) fn prefix_break(
    facts: &crate::agent::LogFacts,
    fresh: &crate::protocol::PrefixSections,
    digest: &str,
    model: &str,
) -> Option<String> {
    let Some((recorded, recorded_digest)) = &facts.prefix else {
        return Some("resumed a log that recorded no prompt prefix".to_owned());
    };
    if recorded.core != fresh.core || recorded_digest != digest {
        return Some(
            "keel's core rules or tool set differ from the recorded session's (another keel \
             version, or memory notes appeared or went)"
                .to_owned(),
        );
    }
    (!facts.model.is_empty() && facts.model != model)
        .then(|| format!("model changed from {} to {model}", facts.model))
}
