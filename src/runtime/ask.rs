//! Carrying out the loop's questions to the user: an approval request
//! (a PermissionRequest hook may decline it first, Notification hooks
//! hear it), a plan review (the plan file read back after a yes, the mode
//! chosen for the implementation taken from the approver), and an
//! "always" answer written as a rule. What each answer means (its scope,
//! whether a plan is adopted, which mode follows) is decided by
//! `agent::step`; this file only asks, reads, writes and reports.
//!
//! Invariant: every question ends as exactly one [`Input`] for `step`,
//! also when the user interrupts (a "no" with the reason).

use std::path::Path;

use tokio_util::sync::CancellationToken;

use crate::agent::Input;
use crate::config::rules::{append_local_rule, append_local_tool_rule};
use crate::policy;
use crate::protocol::ToolCall;

use super::{ApprovalAnswer, DeclinedCall, RuntimeError, RuntimeEvent, Session};

/// An `Effect::AskApproval`'s question.
pub(super) struct Question {
    pub call: ToolCall,
    pub reason: String,
    pub plan_review: Option<String>,
    /// A PreToolUse hook asked too: no remembered "always" answers it.
    pub hook_asked: bool,
}

impl Session {
    /// Asks about `call` (an `Effect::AskApproval`); `plan_review` is the
    /// path of the plan under review, if the call submits one. A "no" nobody
    /// could give (headless) is added to `declined` with what would allow
    /// the call.
    pub(super) async fn ask(
        &mut self,
        question: Question,
        cancel: &CancellationToken,
        declined: &mut Vec<DeclinedCall>,
    ) -> Result<Input, RuntimeError> {
        let Question { call, reason, plan_review, hook_asked } = question;
        self.notify_hooks(&format!("keel needs approval for {}: {reason}", call.name), cancel)
            .await?;
        let asking = if hook_asked {
            self.approver.ask_anew(&call, &reason, true)
        } else {
            self.approver.decide(&call, &reason)
        };
        // An interrupt must not wait on an unanswered question.
        let mut answer = tokio::select! {
            answer = asking => answer,
            () = cancel.cancelled() => ApprovalAnswer {
                approved: false,
                note: Some("interrupted by the user before it was approved".to_owned()),
                scope: policy::ApprovalScope::Once,
            },
        };
        if !answer.approved && !self.approver.can_ask() && !cancel.is_cancelled() {
            let allow_with =
                super::declined::allow_with(&self.state, &self.settings.keel_home, &call);
            answer.note = Some(super::declined::model_note(answer.note.as_deref(), &allow_with));
            let entry = DeclinedCall { call: call.clone(), reason, allow_with };
            self.sink.emit(RuntimeEvent::ApprovalDeclined(entry.clone()));
            declined.push(entry);
        }
        let ApprovalAnswer { approved, note, scope } = answer;
        let call_id = call.call_id;
        Ok(match plan_review {
            None => Input::ApprovalDecided { call_id, approved, note, scope },
            Some(path) => {
                // Taken whatever the answer, so a stale choice never applies later.
                let then_mode = self.approver.take_plan_mode();
                let edited_text =
                    if approved && !path.is_empty() { self.read_plan_file(&path) } else { None };
                Input::PlanReviewed { call_id, approved, note, edited_text, then_mode }
            }
        })
    }

    /// The plan file as the user left it (they may have edited it during
    /// the review); a read failure is a warning and the plan stays as
    /// submitted.
    fn read_plan_file(&mut self, path: &str) -> Option<String> {
        match super::plan_store::PlanStore::read(Path::new(path)) {
            Ok(text) => Some(text),
            Err(error) => {
                let message = format!("cannot read the plan file {path}: {error}");
                self.sink.emit(RuntimeEvent::Warning { message });
                None
            }
        }
    }

    /// The next request would cross a spend limit (an
    /// `Effect::AskRaiseLimit`): the limits the user raises it to, or none.
    /// An interrupt must not wait on an unanswered question.
    pub(super) async fn ask_raise_limit(
        &mut self,
        hit: &crate::agent::BudgetHit,
        cancel: &CancellationToken,
    ) -> Input {
        tokio::select! {
            raised = self.approver.raise_limit(hit) => Input::LimitDecided { raised },
            () = cancel.cancelled() => Input::Interrupted,
        }
    }

    /// Writes an approved "always" rule (a command prefix, an MCP tool)
    /// to the project's `.keel/rules/local.rules` (an `Effect::PersistRule`;
    /// it counts in later sessions once the project is trusted). A prefix
    /// too broad to remember, or a failed write, is said loudly; `step`
    /// then counts the approval once.
    pub(super) fn persist_rule(
        &mut self,
        call_id: String,
        rule: policy::ApprovalScope,
        note: Option<String>,
    ) -> Input {
        let written = match &rule {
            policy::ApprovalScope::AlwaysPrefix(prefix) => {
                append_local_rule(&self.workspace_root, prefix).map(|path| {
                    format!("`{}` is now always allowed ({})", prefix.join(" "), path.display())
                })
            }
            policy::ApprovalScope::AlwaysTool(tool) => {
                append_local_tool_rule(&self.workspace_root, tool)
                    .map(|path| format!("`{tool}` is now always allowed ({})", path.display()))
            }
            // Nothing lasting to write: counted once.
            policy::ApprovalScope::Once | policy::ApprovalScope::SessionFile(_) => {
                return Input::RulePersisted { call_id, rule, note, saved: false };
            }
        };
        let saved = written.is_ok();
        let message =
            written.unwrap_or_else(|error| format!("not remembered, approved once: {error}"));
        self.sink.emit(RuntimeEvent::Warning { message });
        Input::RulePersisted { call_id, rule, note, saved }
    }
}
