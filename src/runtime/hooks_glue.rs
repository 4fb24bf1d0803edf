//! Where the session meets its hooks: building payloads, recording every
//! run in the log, and applying verdicts (block a prompt or a tool call,
//! add context, continue after Stop) without ever loosening policy.
//!
//! Invariants: for an event no hook listens to, nothing here allocates or
//! spawns ([`HookBus::listens`] is checked first); a hook's failure is a warning,
//! never an error of the session; every run is logged as `hook_ran`.

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::agent::{CallCheck, CheckHooks, HookPermission, Input, PostToolVerdict, PreToolVerdict};
use crate::hooks::{HookEvent, HookPayload, HookRun, HookVerdict, Permission, guard};
use crate::policy::{Decision, PathLinks};
use crate::protocol::{SessionEvent, ToolCall, ToolMeta, ToolResult};

use super::{RuntimeError, RuntimeEvent, Session};

/// How often Stop hooks may send the model back to work in one turn.
pub(super) const MAX_STOP_CONTINUATIONS: u32 = 3;

impl Session {
    /// A payload for an event without a tool call.
    pub(super) fn hook_payload(&self, extra: Map<String, Value>) -> HookPayload {
        self.payload(None, extra)
    }

    pub(super) fn payload(
        &self,
        tool: Option<&ToolCall>,
        extra: Map<String, Value>,
    ) -> HookPayload {
        HookPayload {
            session_id: self.id.clone(),
            transcript_path: self.log.path().display().to_string(),
            cwd: self.cwd.display().to_string(),
            permission_mode: self.state.config().policy.mode,
            tool_use_id: tool.map(|call| call.call_id.clone()),
            tool_name: tool.map(|call| call.name.clone()),
            tool_input: tool
                .map(|call| serde_json::from_str(&call.arguments).unwrap_or(Value::Null)),
            tool_response: None,
            extra,
            path_links: tool.map(|call| self.links_for(call)).unwrap_or_default(),
        }
    }

    /// Runs the hooks of `event` and records each run.
    pub(super) async fn dispatch_hooks(
        &mut self,
        event: HookEvent,
        payload: HookPayload,
        subject: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<HookVerdict, RuntimeError> {
        let (verdict, runs) =
            self.hooks.dispatch(event, &payload, subject, &self.workspace_root, cancel).await;
        for run in runs {
            self.record_hook_run(run, None)?;
        }
        for message in &verdict.messages {
            self.sink.emit(RuntimeEvent::Warning { message: format!("hook: {message}") });
        }
        Ok(verdict)
    }

    pub(super) fn record_hook_run(
        &mut self,
        run: HookRun,
        refused: Option<String>,
    ) -> Result<(), RuntimeError> {
        if let Some(panic) = &run.panicked {
            self.record_internal_error("hook", &run.command, None, panic)?;
        }
        let decision = run.outcome.permission.map(|p| {
            match p {
                Permission::Allow => "allow",
                Permission::Ask => "ask",
                Permission::Deny => "deny",
            }
            .to_owned()
        });
        self.log.append(SessionEvent::HookRan {
            event: run.event.name().to_owned(),
            command: run.command,
            source: run.source,
            duration_ms: run.duration_ms,
            exit_code: run.exit_code,
            decision,
            reason: run.outcome.reason,
            error: run.outcome.error,
            skipped: run.skipped,
            refused,
        })?;
        Ok(())
    }

    /// SessionStart (`startup` or `resume`): added context joins the
    /// instructions.
    pub(super) async fn session_start_hooks(
        &mut self,
        source: &str,
        cancel: &CancellationToken,
    ) -> Result<(), RuntimeError> {
        if !self.hooks.listens(HookEvent::SessionStart) {
            return Ok(());
        }
        let extra = Map::from_iter([("source".to_owned(), json!(source))]);
        let payload = self.payload(None, extra);
        let verdict =
            self.dispatch_hooks(HookEvent::SessionStart, payload, Some(source), cancel).await?;
        // Announced with the next request, after the fixed instructions.
        self.apply_outside_loop(Input::HookContext { context: verdict.additional_context })?;
        Ok(())
    }

    /// UserPromptSubmit: `Err(reason)` blocks the prompt; otherwise the
    /// prompt with any added context.
    pub(super) async fn prompt_hooks(
        &mut self,
        prompt: String,
        cancel: &CancellationToken,
    ) -> Result<Result<String, String>, RuntimeError> {
        if !self.hooks.listens(HookEvent::UserPromptSubmit) {
            return Ok(Ok(prompt));
        }
        let extra = Map::from_iter([("prompt".to_owned(), json!(prompt))]);
        let payload = self.payload(None, extra);
        let verdict =
            self.dispatch_hooks(HookEvent::UserPromptSubmit, payload, None, cancel).await?;
        if verdict.permission == Some(Permission::Deny) {
            return Ok(Err(verdict.reason()));
        }
        let mut prompt = prompt;
        for context in verdict.additional_context {
            prompt.push_str(&format!("\n\n{context}"));
        }
        Ok(Ok(prompt))
    }

    /// Looks at `calls` for `step` (an `Effect::CheckCalls`): right
    /// before a batch runs, the undo checkpoint of a batch that may write,
    /// then per call its PreToolUse hooks (keel's own only for a rewrite;
    /// none for a call they judged before its approval) and the symlinks
    /// on its paths; before an approval question or a harness call's
    /// answer, the hooks only. What follows is `step`'s
    /// (`agent::call_checks`, `agent::approval_hooks`, `agent::harness_hooks`).
    pub(super) async fn check_calls(
        &mut self,
        calls: &[ToolCall],
        hooks: CheckHooks,
        concurrent: bool,
        cancel: &CancellationToken,
    ) -> Result<Input, RuntimeError> {
        let before_batch = matches!(hooks, CheckHooks::PreToolUse | CheckHooks::Judged);
        if before_batch && !concurrent {
            self.checkpoint_before(calls).await?;
        }
        let mut checks = Vec::with_capacity(calls.len());
        for call in calls {
            let (verdict, links) = match &hooks {
                CheckHooks::PreToolUse => {
                    (self.pre_tool_hooks(call, None, cancel).await?, self.links_for(call))
                }
                CheckHooks::Judged => (None, self.links_for(call)),
                CheckHooks::Natives => (Some(self.native_hooks(call)?), self.links_for(call)),
                CheckHooks::BeforeApproval { reason } => {
                    (self.pre_tool_hooks(call, Some(reason), cancel).await?, PathLinks::default())
                }
                CheckHooks::Harness => {
                    (self.pre_tool_hooks(call, None, cancel).await?, PathLinks::default())
                }
            };
            checks.push(CallCheck { call_id: call.call_id.clone(), hooks: verdict, links });
        }
        Ok(Input::CallsChecked { checks })
    }

    /// PreToolUse for one call: `None` when no hook listens. Before an
    /// approval question (`asked`: policy's reason), a hook's allow cannot
    /// skip it: the attempt is recorded as refused on its `hook_ran` line.
    async fn pre_tool_hooks(
        &mut self,
        call: &ToolCall,
        asked: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<Option<PreToolVerdict>, RuntimeError> {
        if !self.hooks.listens(HookEvent::PreToolUse) {
            return Ok(None);
        }
        let payload = self.payload(Some(call), Map::new());
        let Some(reason) = asked else {
            let verdict = self
                .dispatch_hooks(HookEvent::PreToolUse, payload, Some(&call.name), cancel)
                .await?;
            return Ok(Some(pre_tool_verdict(&verdict)));
        };
        let (verdict, runs) = self
            .hooks
            .dispatch(
                HookEvent::PreToolUse,
                &payload,
                Some(&call.name),
                &self.workspace_root,
                cancel,
            )
            .await;
        let tightened = guard(Decision::Prompt { reason: reason.to_owned() }, &verdict);
        for run in runs {
            let refused = (run.outcome.permission == Some(Permission::Allow))
                .then(|| tightened.refused_loosening.clone())
                .flatten();
            self.record_hook_run(run, refused)?;
        }
        Ok(Some(pre_tool_verdict(&verdict)))
    }

    /// keel's native PreToolUse hooks on a rewritten call.
    fn native_hooks(&mut self, call: &ToolCall) -> Result<PreToolVerdict, RuntimeError> {
        let payload = self.payload(Some(call), Map::new());
        let (verdict, runs) =
            self.hooks.dispatch_natives(HookEvent::PreToolUse, &payload, Some(&call.name));
        for run in runs {
            self.record_hook_run(run, None)?;
        }
        Ok(pre_tool_verdict(&verdict))
    }

    /// PostToolUse / PostToolUseFailure for each call that ran (an
    /// `Effect::RunPostToolHooks`), in call order: what they said, for
    /// `step` to add to the results the model reads.
    pub(super) async fn post_tool_hooks(
        &mut self,
        ran: Vec<(ToolCall, ToolResult, ToolMeta)>,
        cancel: &CancellationToken,
    ) -> Result<Input, RuntimeError> {
        let mut verdicts = Vec::with_capacity(ran.len());
        for (call, result, meta) in ran {
            let event = if result.is_error {
                HookEvent::PostToolUseFailure
            } else {
                HookEvent::PostToolUse
            };
            if !self.hooks.listens(event) {
                continue;
            }
            // Claude Code tells a PostToolUseFailure hook what went wrong.
            let extra = if result.is_error {
                Map::from_iter([("error".to_owned(), json!(result.output))])
            } else {
                Map::new()
            };
            let mut payload = self.payload(Some(&call), extra);
            payload.tool_response =
                Some(json!({"output": result.output, "is_error": result.is_error, "meta": meta}));
            let verdict = self.dispatch_hooks(event, payload, Some(&call.name), cancel).await?;
            let blocked = (verdict.permission == Some(Permission::Deny)).then(|| verdict.reason());
            verdicts.push(PostToolVerdict {
                call_id: call.call_id,
                blocked,
                context: verdict.additional_context,
            });
        }
        Ok(Input::PostToolHooksDone { verdicts })
    }

    /// Stop: `Some(reason)` sends the model back to work with the reason.
    pub(super) async fn stop_hooks(
        &mut self,
        continuations: u32,
        cancel: &CancellationToken,
    ) -> Result<Option<String>, RuntimeError> {
        if !self.hooks.listens(HookEvent::Stop) {
            return Ok(None);
        }
        let extra = Map::from_iter([("stop_hook_active".to_owned(), json!(continuations > 0))]);
        let payload = self.payload(None, extra);
        let verdict = self.dispatch_hooks(HookEvent::Stop, payload, None, cancel).await?;
        let again =
            verdict.permission == Some(Permission::Deny) && continuations < MAX_STOP_CONTINUATIONS;
        Ok(again.then(|| verdict.reason()))
    }

    /// Notification: something needs the user (an approval prompt).
    pub(super) async fn notify_hooks(
        &mut self,
        message: &str,
        cancel: &CancellationToken,
    ) -> Result<(), RuntimeError> {
        if !self.hooks.listens(HookEvent::Notification) {
            return Ok(());
        }
        let extra = Map::from_iter([("message".to_owned(), json!(message))]);
        let payload = self.payload(None, extra);
        self.dispatch_hooks(HookEvent::Notification, payload, None, cancel).await?;
        Ok(())
    }

    /// PhaseChange (keel's own event): the matcher is tested against the
    /// phase entered. Informational: the move already passed the rules.
    pub(super) async fn phase_change_hooks(
        &mut self,
        from: &str,
        to: &str,
        cancel: &CancellationToken,
    ) -> Result<(), RuntimeError> {
        if !self.hooks.listens(HookEvent::PhaseChange) {
            return Ok(());
        }
        let extra =
            Map::from_iter([("from".to_owned(), json!(from)), ("to".to_owned(), json!(to))]);
        let payload = self.payload(None, extra);
        self.dispatch_hooks(HookEvent::PhaseChange, payload, Some(to), cancel).await?;
        Ok(())
    }

    /// SessionEnd.
    pub(super) async fn session_end_hooks(&mut self, reason: &str) -> Result<(), RuntimeError> {
        if !self.hooks.listens(HookEvent::SessionEnd) {
            return Ok(());
        }
        let extra = Map::from_iter([("reason".to_owned(), json!(reason))]);
        let payload = self.payload(None, extra);
        self.dispatch_hooks(HookEvent::SessionEnd, payload, None, &CancellationToken::new())
            .await?;
        Ok(())
    }
}

/// A hook verdict as `step` reads it.
fn pre_tool_verdict(verdict: &HookVerdict) -> PreToolVerdict {
    let permission = verdict.permission.map(|permission| match permission {
        Permission::Allow => HookPermission::Allow,
        Permission::Ask => HookPermission::Ask,
        Permission::Deny => HookPermission::Deny,
    });
    PreToolVerdict {
        permission,
        reason: verdict.reason(),
        updated_input: verdict.updated_input.clone(),
    }
}
