//! Who answers approval requests: the TUI asks the user; `exec` cannot.

use futures_util::future::BoxFuture;

use crate::agent::{BudgetHit, PLAN_NOT_REVIEWABLE, SpendLimits};
use crate::policy::{ApprovalMode, ApprovalScope};
use crate::protocol::{HarnessTool, ToolCall};

/// The answer to one approval request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalAnswer {
    pub approved: bool,
    /// Why, in words the model reads when the call is not run.
    pub note: Option<String>,
    /// How far a "yes" reaches: once, always for a command prefix (the
    /// driver persists it as a rule), or for one file this session.
    pub scope: ApprovalScope,
}

/// Decides whether a call that needs approval may run.
pub trait Approver: Send {
    fn decide<'a>(
        &'a mut self,
        call: &'a ToolCall,
        reason: &'a str,
    ) -> BoxFuture<'a, ApprovalAnswer>;

    /// Asks about `call` anew: no answer remembered from an earlier
    /// "always" stands for it (a PreToolUse hook asked; a question about a
    /// call's rewrite, symlinks or unsandboxed re-run). `always`: whether
    /// the user may answer "always" (remembered for later [`Self::decide`]
    /// questions). Approvers that remember nothing just decide.
    fn ask_anew<'a>(
        &'a mut self,
        call: &'a ToolCall,
        reason: &'a str,
        always: bool,
    ) -> BoxFuture<'a, ApprovalAnswer> {
        let _ = always;
        self.decide(call, reason)
    }

    /// The mode the user chose for the implementation when approving the
    /// latest plan (`submit_plan`), taken once with the answer; `step`
    /// switches to it right after the plan's result is recorded.
    fn take_plan_mode(&mut self) -> Option<ApprovalMode> {
        None
    }

    /// Whether a person answers: a "no" from an approver that cannot ask
    /// is the harness declining for want of an approval, reported as
    /// [`crate::runtime::DeclinedCall`] so the run does not claim success.
    fn can_ask(&self) -> bool {
        true
    }

    /// The model's `ask_user` question: the user's answer (a choice or
    /// their own words), or `None` when nobody can answer (the default:
    /// headless front ends) or the user dismissed it.
    fn ask_user<'a>(
        &'a mut self,
        _question: &'a str,
        _choices: &'a [String],
    ) -> BoxFuture<'a, Option<String>> {
        Box::pin(async { None })
    }

    /// The next model request would cross a spend limit: the limits to go
    /// on with, or `None` to end the turn (`budget_exceeded`). Front ends
    /// that cannot ask keep the default: the turn ends.
    fn raise_limit<'a>(&'a mut self, _hit: &'a BudgetHit) -> BoxFuture<'a, Option<SpendLimits>> {
        Box::pin(async { None })
    }

    /// The user removed an "always" answer (`Session::remove_always`): an
    /// approver that remembers answers itself forgets the ones it covered,
    /// so the next such call asks again.
    fn forget_always(&mut self, _scope: &crate::policy::ApprovalScope) {}

    /// The question about `call_id` was answered in an attached terminal
    /// (`attach_host.rs`) while this approver asked: a front end closes
    /// its dialog. The answer itself reaches `step` as usual.
    fn answered_elsewhere(&mut self, _call_id: &str) {}
}

/// For headless runs: nobody can be asked, so everything that would ask is
/// declined, and the model is told how the user could allow it.
#[derive(Debug, Clone, Default)]
pub struct NonInteractiveApprover;

impl Approver for NonInteractiveApprover {
    fn can_ask(&self) -> bool {
        false
    }

    fn decide<'a>(
        &'a mut self,
        call: &'a ToolCall,
        reason: &'a str,
    ) -> BoxFuture<'a, ApprovalAnswer> {
        // What would let the call run is computed by the session from the
        // policy (`declined::allow_with`) and added to this note there.
        let note = if call.harness_tool() == Some(HarnessTool::SubmitPlan) {
            format!("{PLAN_NOT_REVIEWABLE}: stop here and report the plan in your answer")
        } else {
            format!(
                "`{}` needs approval ({reason}) and this headless run cannot ask for it; \
                 continue without it if you can",
                call.name
            )
        };
        Box::pin(async move {
            ApprovalAnswer { approved: false, note: Some(note), scope: ApprovalScope::Once }
        })
    }
}
