//! Carrying out a batch of tool calls for the loop: PreToolUse hooks
//! around each call, policy again with the symlinks on its paths resolved
//! (`path_facts.rs`), the file bookkeeping of mutating calls (hashes,
//! undo checkpoints' "did it change"), sandbox violations and the offer of
//! one unsandboxed re-run, PostToolUse hooks; and the approvals asked
//! outside the loop's own (recorded like the loop's) and "always" answers
//! persisted as rules.
//!
//! A concurrent batch holds only calls judged reads (`agent::schedule`):
//! they run together, at most [`max_parallel`] at once, each with a
//! read-only context (a command's jail has nothing writable), and need no
//! file bookkeeping.
//!
//! Invariant: results come back in call order, one per call, whatever the
//! hooks decided.

use tokio_util::sync::CancellationToken;

use crate::config::rules::{append_local_rule, append_local_tool_rule};
use crate::policy::{self, ApprovalMode};
use crate::protocol::{ResultKind, SessionEvent, ToolCall, ToolMeta, ToolResult};
use crate::sandbox;
use crate::tools::{AGENT_TOOL, BatchMode, ToolContext, run_batch};

use super::driver::approval_event;
use super::hooks_glue::PreToolDecision;
use super::sandboxing::mark_sandbox_violation;
use super::{ApprovalAnswer, RuntimeError, RuntimeEvent, Session};

impl Session {
    pub(super) async fn run_batch(
        &mut self,
        calls: &[ToolCall],
        concurrent: bool,
        cancel: &CancellationToken,
    ) -> Result<Vec<(ToolResult, ToolMeta)>, RuntimeError> {
        let (progress, mut progress_events) = tokio::sync::mpsc::unbounded_channel();
        let ctx = ToolContext::new(self.workspace_root.clone(), self.cwd.clone(), cancel.clone())
            .with_files(self.files.clone())
            .with_skills(self.skills.clone())
            .with_memory(self.memory.clone())
            .with_read_only(concurrent)
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
            let mode = BatchMode::Concurrent { limit: self.max_parallel };
            let batch = run_batch(&self.tools, &to_run, mode, &ctx);
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
            if self.state.config.policy.sandboxed
                && mark_sandbox_violation(&call.name, &mut result, &mut meta)
            {
                self.offer_unsandboxed_rerun(&call, &ctx, &mut result, &mut meta).await?;
            }
            self.post_tool_hooks(&call, &mut result, &meta, cancel).await?;
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

    /// In ask mode, a command the sandbox blocked may be re-run once
    /// outside it, if the user approves (headless runs never approve).
    async fn offer_unsandboxed_rerun(
        &mut self,
        call: &ToolCall,
        ctx: &ToolContext,
        result: &mut ToolResult,
        meta: &mut ToolMeta,
    ) -> Result<(), RuntimeError> {
        if self.state.config.policy.mode != ApprovalMode::Ask || ctx.cancel.is_cancelled() {
            return Ok(());
        }
        let reason = "the sandbox blocked this command; run it once more outside the sandbox?";
        if !self.decide_recorded(call, reason).await?.approved {
            return Ok(());
        }
        // The re-run comes after its whole batch has finished, so lifting
        // the session confinement for it affects no other command.
        let saved = sandbox::session_confinement();
        sandbox::set_session_confinement(None);
        let (rerun, mut rerun_meta) = self.tools.run_call(call, ctx).await;
        sandbox::set_session_confinement(saved);
        rerun_meta.set_unsandboxed_rerun();
        *result = rerun;
        *meta = rerun_meta;
        Ok(())
    }

    /// Asks the user about `call` outside the loop's own approvals (a hook
    /// asked, a hook's rewrite needs approval, an unsandboxed re-run) and
    /// records the answer as an `approval` line, once in scope.
    pub(super) async fn decide_recorded(
        &mut self,
        call: &ToolCall,
        reason: &str,
    ) -> Result<ApprovalAnswer, RuntimeError> {
        let answer = self.approver.decide(call, reason).await;
        let once = policy::ApprovalScope::Once;
        self.log.append(approval_event(
            &call.call_id,
            answer.approved,
            answer.note.clone(),
            &once,
        ))?;
        Ok(answer)
    }

    /// Persists an "always" answer as a prefix rule in the project's
    /// `.keel/rules/local.rules`. A prefix too broad to remember (or a
    /// failed write) is said loudly and the approval counts once.
    pub(super) fn persist_scope(
        &mut self,
        approved: bool,
        scope: policy::ApprovalScope,
    ) -> policy::ApprovalScope {
        if let policy::ApprovalScope::AlwaysTool(tool) = &scope {
            return self.persist_tool(approved, tool);
        }
        let policy::ApprovalScope::AlwaysPrefix(prefix) = &scope else { return scope };
        if !approved {
            return policy::ApprovalScope::Once;
        }
        match append_local_rule(&self.workspace_root, prefix) {
            Ok(path) => {
                let message =
                    format!("`{}` is now always allowed ({})", prefix.join(" "), path.display());
                self.sink.emit(RuntimeEvent::Warning { message });
                scope
            }
            Err(error) => {
                let message = format!("not remembered, approved once: {error}");
                self.sink.emit(RuntimeEvent::Warning { message });
                policy::ApprovalScope::Once
            }
        }
    }

    /// Persists an "always" answer for an MCP tool as a `tool_rule` in the
    /// project's `.keel/rules/local.rules` (like prefixes: it counts in
    /// later sessions once the project is trusted).
    fn persist_tool(&mut self, approved: bool, tool: &str) -> policy::ApprovalScope {
        if !approved {
            return policy::ApprovalScope::Once;
        }
        match append_local_tool_rule(&self.workspace_root, tool) {
            Ok(path) => {
                let message = format!("`{tool}` is now always allowed ({})", path.display());
                self.sink.emit(RuntimeEvent::Warning { message });
                policy::ApprovalScope::AlwaysTool(tool.to_owned())
            }
            Err(error) => {
                let message = format!("not remembered, approved once: {error}");
                self.sink.emit(RuntimeEvent::Warning { message });
                policy::ApprovalScope::Once
            }
        }
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

/// How many calls judged reads run at once: `shell.max_parallel`, else
/// twice the machine's cores, at least 8 (reads mostly wait on the disk,
/// the network or a timer, so even two cores run eight together) and at
/// most 32.
pub(super) fn max_parallel(configured: Option<usize>) -> usize {
    configured.unwrap_or_else(|| {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        cores.saturating_mul(2).clamp(8, 32)
    })
}

#[cfg(test)]
mod tests {
    use super::max_parallel;

    #[test]
    fn reads_overlap_by_default_even_on_two_cores() {
        assert_eq!(max_parallel(Some(3)), 3);
        let default = max_parallel(None);
        assert!((8..=32).contains(&default), "{default}");
    }
}
