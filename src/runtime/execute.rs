//! Carrying out what `step` asks around a batch of tool calls: the
//! batch itself (`Effect::RunBatch`: the file bookkeeping of mutating
//! calls, hashes and "did it change", internal errors recorded, sandbox
//! violations marked on the results, the session's secret values masked
//! in them: `secrets.rs`), the questions `step` asks about a
//! call (`Effect::ConfirmCall`) and the unsandboxed re-run it may offer
//! (`Effect::RerunUnsandboxed`). What to do about hooks, rewrites,
//! symlinks and violations is decided in `agent::call_checks` and
//! `agent::batch_finish`; the checks before a batch are `hooks_glue.rs`.
//!
//! A concurrent batch holds only calls judged reads (`agent::schedule`):
//! they run together, at most the tool runner's `max_parallel` at once, each with a
//! read-only context (a command's jail has nothing writable), and need no
//! file bookkeeping.
//!
//! Invariants: results come back in call order, one per call run; every
//! result of a batch or a re-run, MCP tools' and subagents' included,
//! passes the secret mask here, before `step` logs it or sends it.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::agent::Input;
use crate::policy;
use crate::protocol::{ResultKind, SessionEvent, ToolCall, ToolMeta, ToolResult};
use crate::tools::AGENT_TOOL;

use super::sandboxing::mark_sandbox_violation;
use super::{ApprovalAnswer, RuntimeError, RuntimeEvent, Session};

impl Session {
    /// Carries out an `Effect::RunBatch` (its calls already checked and
    /// the undo checkpoint taken by `Effect::CheckCalls`), then reports
    /// what MCP servers said meanwhile.
    pub(super) async fn carry_out_batch(
        &mut self,
        calls: &[ToolCall],
        concurrent: bool,
        cancel: &CancellationToken,
    ) -> Result<Input, RuntimeError> {
        let results = self.run_batch(calls, concurrent, cancel).await?;
        self.mcp_reports()?;
        Ok(Input::BatchFinished { results })
    }

    /// Runs `calls`, with the file bookkeeping of mutating ones; internal
    /// errors are recorded and sandbox violations marked on the results.
    pub(super) async fn run_batch(
        &mut self,
        calls: &[ToolCall],
        concurrent: bool,
        cancel: &CancellationToken,
    ) -> Result<Vec<(ToolResult, ToolMeta)>, RuntimeError> {
        let (progress, mut progress_events) = tokio::sync::mpsc::unbounded_channel();
        let offered = self.state.callable_tools().map(|spec| spec.name.clone()).collect();
        let takes_images = self.takes_images();
        let ctx = self
            .tools
            .context(&self.workspace_root, &self.cwd, cancel, concurrent)
            .with_progress(progress)
            .with_offered(offered);
        let mut results = if calls.iter().any(|call| call.name == AGENT_TOOL) {
            self.run_batch_with_subagents(calls, concurrent, &ctx, cancel).await?
        } else if concurrent {
            let batch = self.tools.run_reads(calls, &ctx);
            let mask = self.tools.mask().clone();
            let mut typed = super::inbox::Typed {
                inbox: &mut self.inbox,
                state: &mut self.state,
                log: &mut self.log,
                sink: &mut self.sink,
                images: &mut self.images,
                takes_images,
            };
            forward_progress(batch, &mut progress_events, &mut typed, &mask).await?
        } else {
            let mut results = Vec::with_capacity(calls.len());
            for call in calls {
                let touched = self.before_mutation(call)?;
                let run = self.tools.run_call(call, &ctx);
                let mask = self.tools.mask().clone();
                let mut typed = super::inbox::Typed {
                    inbox: &mut self.inbox,
                    state: &mut self.state,
                    log: &mut self.log,
                    sink: &mut self.sink,
                    images: &mut self.images,
                    takes_images,
                };
                let (result, mut meta) =
                    forward_progress(run, &mut progress_events, &mut typed, &mask).await?;
                let observed = self.after_mutation(call, touched)?;
                observed.add_to(&mut meta);
                results.push((result, meta));
            }
            results
        };
        for (call, (result, meta)) in calls.iter().zip(results.iter_mut()) {
            super::secrets::mask_result(self.tools.mask(), result, meta);
            if meta.kind() == Some(ResultKind::Internal) {
                self.record_internal_error(
                    "tool",
                    &call.name,
                    Some(&call.call_id),
                    &result.output,
                )?;
            }
            // Said to the model and `step` (which may offer a re-run).
            if self.state.config().policy.sandboxed {
                mark_sandbox_violation(&call.name, result, meta, self.tools.jail());
            }
        }
        Ok(results)
    }

    /// A bug caught at the tool or hook boundary: logged as an
    /// `internal_error` line and shown to the user; the call already has
    /// its error result and the session goes on.
    pub(super) fn record_internal_error(
        &mut self,
        source: &str,
        name: &str,
        call_id: Option<&str>,
        message: &str,
    ) -> Result<(), RuntimeError> {
        self.log.append(SessionEvent::InternalError {
            source: source.to_owned(),
            name: name.to_owned(),
            call_id: call_id.map(str::to_owned),
            message: message.to_owned(),
        })?;
        let message = format!("internal error in the {name} {source} (a keel bug): {message}");
        self.sink.emit(RuntimeEvent::Warning { message });
        Ok(())
    }

    /// Asks the approver about `call` for `step` (an `Effect::ConfirmCall`:
    /// a hook's "ask", a rewrite or a symlink needing approval, an
    /// unsandboxed re-run); an interrupt answers "no".
    pub(super) async fn confirm(
        &mut self,
        call: ToolCall,
        reason: &str,
        cancel: &CancellationToken,
    ) -> Input {
        let answer = tokio::select! {
            // A hook's ask, a rewrite, a symlink, a re-run outside the
            // sandbox: put to the user every time, never "always".
            answer = self.approver.ask_anew(&call, reason, false) => answer,
            () = cancel.cancelled() => ApprovalAnswer {
                approved: false,
                note: Some("interrupted by the user before it was approved".to_owned()),
                scope: policy::ApprovalScope::Once,
            },
        };
        Input::CallConfirmed { call_id: call.call_id, approved: answer.approved, note: answer.note }
    }

    /// Runs `call` once more outside the sandbox (an
    /// `Effect::RerunUnsandboxed`): a context whose jail has no
    /// confinement, the session's environment filter kept. Only this call
    /// runs there; the session's jail is untouched.
    pub(super) async fn rerun_unsandboxed(
        &mut self,
        call: &ToolCall,
        concurrent: bool,
        cancel: &CancellationToken,
    ) -> Input {
        let unconfined = Arc::new(self.tools.jail().without_confinement());
        let ctx = self
            .tools
            .context(&self.workspace_root, &self.cwd, cancel, concurrent)
            .with_jail(unconfined);
        let (mut result, mut meta) = self.tools.run_call(call, &ctx).await;
        super::secrets::mask_result(self.tools.mask(), &mut result, &mut meta);
        meta.set_unsandboxed_rerun();
        Input::RerunFinished { result, meta }
    }
}

/// Awaits `work`, telling the front end about the progress its tools
/// report meanwhile (MCP servers' `notifications/progress`), its messages
/// masked like results, and recording what the user types meanwhile
/// (`inbox.rs`).
async fn forward_progress<T>(
    work: impl std::future::Future<Output = T>,
    events: &mut tokio::sync::mpsc::UnboundedReceiver<crate::tools::ToolProgress>,
    typed: &mut super::inbox::Typed<'_>,
    mask: &crate::display::SecretMask,
) -> Result<T, RuntimeError> {
    tokio::pin!(work);
    loop {
        tokio::select! {
            output = &mut work => return Ok(output),
            Some(progress) = events.recv() => typed.sink.emit(RuntimeEvent::ToolProgress {
                call_id: progress.call_id,
                progress: progress.progress,
                total: progress.total,
                message: progress.message.map(|message| mask.mask(&message).into_owned()),
            }),
            Some(input) = typed.inbox.recv() => typed.record(input)?,
        }
    }
}
