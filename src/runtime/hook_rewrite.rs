//! A PreToolUse hook's `updatedInput` is a new call: policy judges it again
//! (issue 9, "updatedInput is judged by policy again").
//!
//! Invariants: a rewrite never runs on the strength of the original call's
//! verdict or approval. The original was already allowed (by policy or by
//! the user) when this runs, so the rewrite's own verdict is the stricter
//! of the two: forbidden blocks the call with policy's reason; prompt asks
//! the user about the rewritten call (a headless run cannot, so it is
//! declined with the approver's note); allow runs it. Every re-judgement is
//! recorded as a second `policy_decision` for the call whose reason starts
//! with [`REWRITE_NOTE`] and holds the rewritten input, and a verdict other
//! than allow is also said as a warning. keel's native hooks
//! (`protect_secrets`) judge the rewritten input too: their deny blocks it,
//! their ask asks about it.

use serde_json::Value;

use crate::hooks::{HookEvent, Permission};
use crate::policy::{self, CallFacts, Decision, RuleMatch, Verdict};
use crate::protocol::{SessionEvent, ToolCall, ToolMeta, ToolResult};

use super::hooks_glue::PreToolDecision;

/// How the `policy_decision` of a rewrite starts its reason (then the
/// rewritten input, then policy's reason when it is not allow).
pub(super) const REWRITE_NOTE: &str = "judged again: a PreToolUse hook rewrote the input to";
use super::{RuntimeError, RuntimeEvent, Session};

impl Session {
    /// Applies a hook's `updatedInput` to `call`, judged by policy again.
    /// `None` input leaves the call as it was.
    pub(super) async fn apply_rewrite(
        &mut self,
        call: &ToolCall,
        updated: Option<Value>,
    ) -> Result<PreToolDecision, RuntimeError> {
        let Some(input) = updated else { return Ok(PreToolDecision::Run(call.clone())) };
        let mut rewritten = call.clone();
        rewritten.arguments = input.to_string();
        if same_input(&call.arguments, &input) {
            return Ok(PreToolDecision::Run(rewritten));
        }
        let verdict = self.judge(&rewritten);
        let (decision, why) = match &verdict.decision {
            Decision::Allow => ("allow", String::new()),
            Decision::Prompt { reason } => ("prompt", format!(": {reason}")),
            Decision::Forbidden { reason } => ("forbidden", format!(": {reason}")),
        };
        self.log.append(SessionEvent::PolicyDecision {
            call_id: call.call_id.clone(),
            decision: decision.to_owned(),
            matched_rules: verdict.matched.iter().map(RuleMatch::to_json).collect(),
            reason: Some(format!("{REWRITE_NOTE} {input}{why}")),
        })?;
        match verdict.decision {
            Decision::Allow => self.native_rejudge(call, rewritten).await,
            Decision::Forbidden { reason } => {
                let text =
                    format!("a hook rewrote this call and policy forbids the rewrite: {reason}");
                self.sink.emit(RuntimeEvent::Warning { message: format!("hook: {text}") });
                Ok(blocked(call, text, "hook_rewrite_forbidden"))
            }
            Decision::Prompt { reason } => {
                let question =
                    format!("a hook rewrote this call; the rewrite needs approval: {reason}");
                self.sink.emit(RuntimeEvent::Warning { message: format!("hook: {question}") });
                let answer = self.decide_recorded(&rewritten, &question).await?;
                if answer.approved {
                    return self.native_rejudge(call, rewritten).await;
                }
                let note = answer.note.unwrap_or_else(|| "the user declined it".to_owned());
                let text =
                    format!("a hook rewrote this call and the rewrite was not approved: {note}");
                Ok(blocked(call, text, "hook_rewrite_declined"))
            }
        }
    }
}

impl Session {
    /// keel's native hooks on the rewritten call: deny blocks it, ask asks
    /// about it (a headless run declines).
    async fn native_rejudge(
        &mut self,
        call: &ToolCall,
        rewritten: ToolCall,
    ) -> Result<PreToolDecision, RuntimeError> {
        let payload = self.payload(Some(&rewritten), serde_json::Map::new());
        let (verdict, runs) =
            self.hooks.dispatch_natives(HookEvent::PreToolUse, &payload, Some(&rewritten.name));
        for run in runs {
            self.record_hook_run(run, None)?;
        }
        match verdict.permission {
            Some(Permission::Deny) => {
                let text = format!(
                    "a hook rewrote this call and the rewrite is blocked: {}",
                    verdict.reason()
                );
                Ok(blocked(call, text, "hook_rewrite_forbidden"))
            }
            Some(Permission::Ask) => {
                let answer = self.decide_recorded(&rewritten, &verdict.reason()).await?;
                if answer.approved {
                    return Ok(PreToolDecision::Run(rewritten));
                }
                let note = answer.note.unwrap_or_else(|| "the user declined it".to_owned());
                let text =
                    format!("a hook rewrote this call and the rewrite was not approved: {note}");
                Ok(blocked(call, text, "hook_rewrite_declined"))
            }
            Some(Permission::Allow) | None => Ok(PreToolDecision::Run(rewritten)),
        }
    }

    /// Policy's verdict on a (rewritten) call, in the session's mode.
    fn judge(&self, call: &ToolCall) -> Verdict {
        let class = self.state.class_of(&call.name);
        let facts = CallFacts { tool: &call.name, class, arguments: &call.arguments };
        policy::evaluate(&self.state.config.policy, &self.state.allowlist, facts)
    }

    /// Before the user is asked about `call`: the reason to refuse it at
    /// once when a hook's rewrite of it is forbidden (so nobody approves a
    /// call that could not run anyway).
    pub(super) fn forbidden_rewrite(
        &self,
        call: &ToolCall,
        updated: Option<&Value>,
    ) -> Option<String> {
        let input = updated.filter(|input| !same_input(&call.arguments, input))?;
        let mut rewritten = call.clone();
        rewritten.arguments = input.to_string();
        match self.judge(&rewritten).decision {
            Decision::Forbidden { reason } => {
                Some(format!("a hook rewrote this call and policy forbids the rewrite: {reason}"))
            }
            Decision::Allow | Decision::Prompt { .. } => None,
        }
    }
}

/// Whether a hook's input is the call's own (a hook echoing it back).
fn same_input(arguments: &str, input: &Value) -> bool {
    serde_json::from_str::<Value>(arguments).is_ok_and(|original| &original == input)
}

fn blocked(call: &ToolCall, text: String, kind: &str) -> PreToolDecision {
    PreToolDecision::Blocked(ToolResult::error(&call.call_id, text), ToolMeta::tool_error(kind))
}
