//! Carrying out a batch of tool calls for the loop: PreToolUse hooks
//! around each call, policy again with the symlinks on its paths resolved
//! (`path_facts.rs`), the file bookkeeping of mutating calls (hashes,
//! undo checkpoints' "did it change"), sandbox violations and the offer of
//! one unsandboxed re-run, PostToolUse hooks; and the approvals asked
//! outside the loop's own (recorded like the loop's).
//!
//! A concurrent batch holds only calls judged reads (`agent::schedule`):
//! they run together, at most the tool runner's `max_parallel` at once, each with a
//! read-only context (a command's jail has nothing writable), and need no
//! file bookkeeping.
//!
//! Invariant: results come back in call order, one per call, whatever the
//! hooks decided.

use tokio_util::sync::CancellationToken;

use crate::agent::Input;
use crate::policy;
use crate::protocol::{ResultKind, SessionEvent, ToolCall, ToolMeta, ToolResult};
use crate::sandbox;
use crate::tools::AGENT_TOOL;

use super::hooks_glue::PreToolDecision;
use super::sandboxing::mark_sandbox_violation;
use super::{ApprovalAnswer, RuntimeError, RuntimeEvent, Session};

impl Session {
    /// Carries out an `Effect::RunBatch`: an undo checkpoint first when the
    /// batch may write (reads change nothing), the batch, then what MCP
    /// servers reported meanwhile.
    pub(super) async fn carry_out_batch(
        &mut self,
        calls: &[ToolCall],
        concurrent: bool,
        cancel: &CancellationToken,
    ) -> Result<Input, RuntimeError> {
        if !concurrent {
            self.checkpoint_before(calls).await?;
        }
        let results = self.run_batch(calls, concurrent, cancel).await?;
        self.mcp_reports()?;
        Ok(Input::BatchFinished { results })
    }

    pub(super) async fn run_batch(
        &mut self,
        calls: &[ToolCall],
        concurrent: bool,
        cancel: &CancellationToken,
    ) -> Result<Vec<(ToolResult, ToolMeta)>, RuntimeError> {
        let (progress, mut progress_events) = tokio::sync::mpsc::unbounded_channel();
        let ctx = self
            .tools
            .context(&self.workspace_root, &self.cwd, cancel, concurrent)
            .with_progress(progress);
        let mut answers: Vec<Option<(ToolResult, ToolMeta)>> = vec![None; calls.len()];
        let mut runnable: Vec<(usize, ToolCall)> = Vec::with_capacity(calls.len());
        for (index, call) in calls.iter().enumerate() {
            let call = match self.pre_tool_hooks(call, cancel).await? {
                PreToolDecision::Run(call) => call,
                PreToolDecision::Blocked(result, meta) => {
                    answers[index] = Some((result, meta));
                    continue;
                }
            };
            // Judged again where its paths really lead (symlinks), as
            // close to running as possible.
            match self.judge_with_links(&call).await? {
                None => runnable.push((index, call)),
                Some(refused) => answers[index] = Some(refused),
            }
        }
        let to_run: Vec<ToolCall> = runnable.iter().map(|(_, call)| call.clone()).collect();
        let results = if to_run.iter().any(|call| call.name == AGENT_TOOL) {
            self.run_batch_with_subagents(&to_run, concurrent, &ctx, cancel).await?
        } else if concurrent {
            let batch = self.tools.run_reads(&to_run, &ctx);
            forward_progress(batch, &mut progress_events, &mut self.sink).await
        } else {
            let mut results = Vec::with_capacity(to_run.len());
            for call in &to_run {
                let touched = self.before_mutation(call)?;
                let run = self.tools.run_call(call, &ctx);
                let (result, mut meta) =
                    forward_progress(run, &mut progress_events, &mut self.sink).await;
                let observed = self.after_mutation(call, touched)?;
                observed.add_to(&mut meta);
                results.push((result, meta));
            }
            results
        };
        for ((index, call), (mut result, mut meta)) in runnable.into_iter().zip(results) {
            if meta.kind() == Some(ResultKind::Internal) {
                self.record_internal_error(
                    "tool",
                    &call.name,
                    Some(&call.call_id),
                    &result.output,
                )?;
            }
            // Said to the model and `step` (which may offer a re-run).
            if self.state.config.policy.sandboxed {
                mark_sandbox_violation(&call.name, &mut result, &mut meta);
            }
            answers[index] = Some((result, meta));
        }
        Ok(answers.into_iter().flatten().collect())
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
    /// an unsandboxed re-run); an interrupt answers "no".
    pub(super) async fn confirm(
        &mut self,
        call: ToolCall,
        reason: &str,
        cancel: &CancellationToken,
    ) -> Input {
        let answer = tokio::select! {
            answer = self.approver.decide(&call, reason) => answer,
            () = cancel.cancelled() => ApprovalAnswer {
                approved: false,
                note: Some("interrupted by the user before it was approved".to_owned()),
                scope: policy::ApprovalScope::Once,
            },
        };
        Input::CallConfirmed { call_id: call.call_id, approved: answer.approved, note: answer.note }
    }

    /// Runs `call` once more outside the sandbox (an
    /// `Effect::RerunUnsandboxed`, after its whole batch ended, so lifting
    /// the session confinement affects no other command).
    pub(super) async fn rerun_unsandboxed(
        &mut self,
        call: &ToolCall,
        concurrent: bool,
        cancel: &CancellationToken,
    ) -> Input {
        let ctx = self.tools.context(&self.workspace_root, &self.cwd, cancel, concurrent);
        let saved = sandbox::session_confinement();
        sandbox::set_session_confinement(None);
        let (result, mut meta) = self.tools.run_call(call, &ctx).await;
        sandbox::set_session_confinement(saved);
        meta.set_unsandboxed_rerun();
        Input::RerunFinished { result, meta }
    }

    /// Asks the user about `call` of the running batch (a hook asked, a
    /// hook's rewrite or a symlink needs approval); `step` records the
    /// answer as an `approval` line, once in scope.
    pub(super) async fn decide_recorded(
        &mut self,
        call: &ToolCall,
        reason: &str,
    ) -> Result<ApprovalAnswer, RuntimeError> {
        let answer = self.approver.decide(call, reason).await;
        self.apply_outside_loop(Input::AnsweredInBatch {
            call_id: call.call_id.clone(),
            approved: answer.approved,
            note: answer.note.clone(),
        })?;
        Ok(answer)
    }
}

/// Awaits `work`, telling the front end about the progress its tools
/// report meanwhile (MCP servers' `notifications/progress`).
async fn forward_progress<T>(
    work: impl std::future::Future<Output = T>,
    events: &mut tokio::sync::mpsc::UnboundedReceiver<crate::tools::ToolProgress>,
    sink: &mut Box<dyn super::EventSink>,
) -> T {
    tokio::pin!(work);
    loop {
        tokio::select! {
            output = &mut work => return output,
            Some(progress) = events.recv() => sink.emit(RuntimeEvent::ToolProgress {
                call_id: progress.call_id,
                progress: progress.progress,
                total: progress.total,
                message: progress.message,
            }),
        }
    }
}
