//! Calls the harness declined because nobody could be asked (a headless
//! run), and what the user could change so they run: the narrowest of
//! `--full-auto`, `--yolo`, an allow rule, or nothing short of approving
//! it in an interactive session. Front ends report these so a run never
//! claims work it was not allowed to do (issue 17, item 1).
//!
//! Invariant: the remedy is computed by the same `policy::evaluate` the
//! loop used, under the other modes, so it names a flag only when that
//! flag really lets the call run.

use std::path::Path;

use crate::agent::LoopState;
use crate::policy::{self, ApprovalMode, CallFacts, Decision, amend};
use crate::protocol::ToolCall;

/// One call declined for want of an approval.
#[derive(Debug, Clone, PartialEq)]
pub struct DeclinedCall {
    pub call: ToolCall,
    /// Why the call needed approval (policy's reason).
    pub reason: String,
    /// What would let it run, in words a user can act on (a flag, a
    /// rule to add, or how to approve it interactively).
    pub allow_with: String,
}

/// What would let `call` run without a person's approval.
pub fn allow_with(state: &LoopState, keel_home: &Path, call: &ToolCall) -> String {
    if call.name == "submit_plan" {
        return "--approve-plan (or --plan-only to stop for a review)".to_owned();
    }
    let class = state.class_of(&call.name);
    let facts = || CallFacts { tool: &call.name, class, arguments: &call.arguments };
    let judged = |mode: ApprovalMode| {
        let mut policy = state.config.policy.clone();
        policy.mode = mode;
        policy::evaluate(&policy, &state.allowlist, facts())
    };
    let asked = judged(state.config.policy.mode);
    let rule =
        asked.suggested_prefix.filter(|prefix| amend::check_prefix(prefix).is_ok()).map(|prefix| {
            let file = keel_home.join("rules").join("allow.rules");
            format!("the rule `{}` in {}", amend::rule_line(&prefix), file.display())
        });
    let flag = [(ApprovalMode::Auto, "--full-auto"), (ApprovalMode::Yolo, "--yolo")]
        .into_iter()
        .filter(|(mode, _)| *mode != state.config.policy.mode)
        .find(|(mode, _)| judged(*mode).decision == Decision::Allow)
        .map(|(_, flag)| flag);
    match (flag, rule) {
        (Some(flag), Some(rule)) => format!("{flag}, or {rule}"),
        (Some(flag), None) => flag.to_owned(),
        (None, Some(rule)) => rule,
        (None, None) => "an approval in an interactive session (`keel resume ID`): it asks in \
                         every mode"
            .to_owned(),
    }
}
