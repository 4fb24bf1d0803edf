//! A PreToolUse hook's `updatedInput` seen before the user is asked about
//! a call (`hooks_glue.rs::approval_hooks`): a rewrite policy forbids
//! refuses the call at once, so nobody approves a call that could not run
//! anyway. Once allowed, the rewrite is judged again by `step`
//! (`agent::call_checks`) right before the call runs.

use serde_json::Value;

use crate::policy::{self, CallFacts, Decision, Verdict};
use crate::protocol::ToolCall;

use super::Session;

impl Session {
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
        let input = updated.filter(|input| !crate::agent::same_input(&call.arguments, input))?;
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
