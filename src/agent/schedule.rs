//! Turns the tool calls of one model response, with their policy
//! decisions, into an ordered list of batches.
//!
//! Consecutive allowed read-only calls share one concurrent batch; every
//! mutating call, denied call and call awaiting approval is a batch of its
//! own. Running batches in order therefore keeps the model's call order for
//! anything that can change state, while reads between writes still see
//! the writes before them.
//!
//! A call is read-only by its tool's class or by judgement
//! ([`effective_class`]): a shell script policy proves read-only is a read
//! when commands run sandboxed, because the driver then runs every call of
//! a concurrent batch in a jail with no write access at all, so a wrong
//! proof fails the command instead of racing a write. Invariant: a
//! concurrent batch holds only calls whose effective class is read-only.
//!
//! [`policy_event`] turns a policy verdict into its `policy_decision` log
//! line, so every judged call's decision and matched rules are on record.

use crate::policy::{Decision, RuleMatch, Verdict};
use crate::protocol::{SessionEvent, ToolCall, ToolClass};

/// One unit of tool execution.
#[derive(Debug, Clone, PartialEq)]
pub enum Batch {
    /// Run these calls (all allowed); concurrently when `concurrent`.
    Run { calls: Vec<ToolCall>, concurrent: bool },
    /// Ask the user first; run the call only if approved.
    Ask { call: ToolCall, reason: String },
    /// Do not run; answer the model with this reason.
    Deny { call: ToolCall, reason: String },
    /// A harness tool (`set_phase`, `submit_plan`, `todo_write`), answered
    /// by the loop itself when its turn comes.
    Harness { call: ToolCall },
}

/// The class a call is scheduled by: its tool's, or read-only when policy
/// proved this call changes nothing ([`Verdict::read_only`]) and commands
/// run in an enforced sandbox (the read-only jail is what makes the proof
/// safe to act on).
pub fn effective_class(tool: ToolClass, verdict: &Verdict, sandboxed: bool) -> ToolClass {
    match tool {
        ToolClass::Mutating if verdict.read_only && sandboxed => ToolClass::ReadOnly,
        ToolClass::ReadOnly | ToolClass::Mutating => tool,
    }
}

/// Groups `calls` (in model order) into batches; `ToolClass` is each
/// call's effective class.
pub fn schedule(calls: Vec<(ToolCall, ToolClass, Decision)>) -> Vec<Batch> {
    let mut batches: Vec<Batch> = Vec::new();
    for (call, class, decision) in calls {
        match decision {
            Decision::Forbidden { reason } => batches.push(Batch::Deny { call, reason }),
            Decision::Prompt { reason } => batches.push(Batch::Ask { call, reason }),
            Decision::Allow => match (class, batches.last_mut()) {
                (ToolClass::ReadOnly, Some(Batch::Run { calls, concurrent: true })) => {
                    calls.push(call);
                }
                (ToolClass::ReadOnly, _) => {
                    batches.push(Batch::Run { calls: vec![call], concurrent: true });
                }
                (ToolClass::Mutating, _) => {
                    batches.push(Batch::Run { calls: vec![call], concurrent: false });
                }
            },
        }
    }
    batches
}

/// The `policy_decision` line for `call_id`: the decision, its reason,
/// and every rule that matched, shaped as `keel policy check --json`
/// reports them.
pub fn policy_event(call_id: &str, verdict: &Verdict) -> SessionEvent {
    let (decision, reason) = match &verdict.decision {
        Decision::Allow => ("allow", None),
        Decision::Prompt { reason } => ("prompt", Some(reason.clone())),
        Decision::Forbidden { reason } => ("forbidden", Some(reason.clone())),
    };
    SessionEvent::PolicyDecision {
        call_id: call_id.to_owned(),
        decision: decision.to_owned(),
        matched_rules: verdict.matched.iter().map(RuleMatch::to_json).collect(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            call_id: id.into(),
            name: "t".into(),
            arguments: "{}".into(),
            item_id: None,
            provider_data: None,
        }
    }

    fn ids(batch: &Batch) -> Vec<String> {
        match batch {
            Batch::Run { calls, .. } => calls.iter().map(|c| c.call_id.clone()).collect(),
            Batch::Ask { call, .. } | Batch::Deny { call, .. } | Batch::Harness { call } => {
                vec![call.call_id.clone()]
            }
        }
    }

    #[test]
    fn reads_between_writes_stay_between_them() {
        let batches = schedule(vec![
            (call("r1"), ToolClass::ReadOnly, Decision::Allow),
            (call("r2"), ToolClass::ReadOnly, Decision::Allow),
            (call("w1"), ToolClass::Mutating, Decision::Allow),
            (call("r3"), ToolClass::ReadOnly, Decision::Allow),
        ]);
        let grouped: Vec<Vec<String>> = batches.iter().map(ids).collect();
        assert_eq!(grouped, vec![vec!["r1", "r2"], vec!["w1"], vec!["r3"]]);
        assert!(matches!(batches[1], Batch::Run { concurrent: false, .. }));
    }

    #[test]
    fn denied_and_prompted_calls_keep_their_place() {
        let batches = schedule(vec![
            (call("r1"), ToolClass::ReadOnly, Decision::Allow),
            (call("w1"), ToolClass::Mutating, Decision::Prompt { reason: "x".into() }),
            (call("r2"), ToolClass::ReadOnly, Decision::Forbidden { reason: "y".into() }),
            (call("r3"), ToolClass::ReadOnly, Decision::Allow),
        ]);
        let grouped: Vec<Vec<String>> = batches.iter().map(ids).collect();
        assert_eq!(grouped, vec![vec!["r1"], vec!["w1"], vec!["r2"], vec!["r3"]]);
        assert!(matches!(batches[1], Batch::Ask { .. }));
        assert!(matches!(batches[2], Batch::Deny { .. }));
    }
}
