//! What a hook run means: its exit code, stdout JSON and stderr turned into
//! an outcome; the outcomes of one event folded into a verdict; and the
//! guard that lets a verdict tighten a policy decision but never loosen it.

use serde_json::Value;

use crate::policy::Decision;

/// Claude Code's "block" exit code.
const BLOCK_EXIT_CODE: i32 = 2;

/// What one hook run said.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HookOutcome {
    /// `Some(false)` to deny/block, `Some(true)` to allow, `None` for no say.
    pub permission: Option<Permission>,
    pub reason: Option<String>,
    pub additional_context: Option<String>,
    pub updated_input: Option<Value>,
    /// `continue: false`: stop the session after this event.
    pub stop: Option<String>,
    pub system_message: Option<String>,
    /// A non-blocking failure to show the user (bad exit, timeout, …).
    pub error: Option<String>,
}

/// A hook's say on a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permission {
    Allow,
    Ask,
    Deny,
}

/// Interprets one finished hook: exit 2 blocks with stderr as the reason;
/// exit 0 may carry a JSON decision on stdout; other codes and timeouts are
/// non-blocking errors.
pub fn interpret(
    exit_code: Option<i32>,
    timed_out: bool,
    stdout: &str,
    stderr: &str,
) -> HookOutcome {
    if timed_out {
        return HookOutcome {
            error: Some("timed out and was killed".into()),
            ..HookOutcome::default()
        };
    }
    match exit_code {
        Some(0) => from_stdout(stdout),
        Some(BLOCK_EXIT_CODE) => HookOutcome {
            permission: Some(Permission::Deny),
            reason: Some(non_empty(stderr).unwrap_or_else(|| "blocked by a hook".into())),
            ..HookOutcome::default()
        },
        Some(code) => HookOutcome {
            error: Some(format!("exited with {code}: {}", stderr.trim())),
            ..HookOutcome::default()
        },
        None => {
            HookOutcome { error: Some("was killed by a signal".into()), ..HookOutcome::default() }
        }
    }
}

fn non_empty(text: &str) -> Option<String> {
    let trimmed = text.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

/// Reads the JSON output fields; plain text stdout carries no decision.
fn from_stdout(stdout: &str) -> HookOutcome {
    let Ok(Value::Object(json)) = serde_json::from_str::<Value>(stdout.trim()) else {
        return HookOutcome::default();
    };
    let text = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_owned);
    let specific = json.get("hookSpecificOutput");
    let field = |key: &str| specific.and_then(|s| s.get(key));
    let mut outcome = HookOutcome {
        additional_context: text(field("additionalContext")),
        updated_input: field("updatedInput").cloned(),
        system_message: text(json.get("systemMessage")),
        ..HookOutcome::default()
    };
    let (permission, reason) = match text(field("permissionDecision")).as_deref() {
        Some("allow") => (Some(Permission::Allow), text(field("permissionDecisionReason"))),
        Some("ask") => (Some(Permission::Ask), text(field("permissionDecisionReason"))),
        Some("deny") => (Some(Permission::Deny), text(field("permissionDecisionReason"))),
        _ => match text(json.get("decision")).as_deref() {
            Some("block") => (Some(Permission::Deny), text(json.get("reason"))),
            Some("approve") => (Some(Permission::Allow), text(json.get("reason"))),
            _ => (None, None),
        },
    };
    outcome.permission = permission;
    outcome.reason = reason;
    if json.get("continue").and_then(Value::as_bool) == Some(false) {
        outcome.stop =
            Some(text(json.get("stopReason")).unwrap_or_else(|| "stopped by a hook".into()));
    }
    outcome
}

/// The combined say of every hook of one event: the strictest permission
/// wins, contexts and messages are kept in order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HookVerdict {
    pub permission: Option<Permission>,
    pub reasons: Vec<String>,
    pub additional_context: Vec<String>,
    pub updated_input: Option<Value>,
    pub stop: Option<String>,
    pub messages: Vec<String>,
}

impl HookVerdict {
    pub fn fold(outcomes: &[HookOutcome]) -> Self {
        let mut verdict = Self::default();
        for outcome in outcomes {
            verdict.permission = strictest(verdict.permission, outcome.permission);
            if outcome.permission.is_some_and(|p| p != Permission::Allow) {
                verdict.reasons.extend(outcome.reason.clone());
            }
            verdict
                .additional_context
                .extend(outcome.additional_context.clone().filter(|c| !c.is_empty()));
            verdict.updated_input = outcome.updated_input.clone().or(verdict.updated_input.take());
            verdict.stop = verdict.stop.take().or(outcome.stop.clone());
            verdict.messages.extend(outcome.system_message.clone());
            verdict.messages.extend(outcome.error.clone());
        }
        verdict
    }

    /// The reason to give the model for a block.
    pub fn reason(&self) -> String {
        if self.reasons.is_empty() { "blocked by a hook".into() } else { self.reasons.join("\n") }
    }
}

fn strictest(a: Option<Permission>, b: Option<Permission>) -> Option<Permission> {
    let rank = |p: Option<Permission>| match p {
        None => 0,
        Some(Permission::Allow) => 1,
        Some(Permission::Ask) => 2,
        Some(Permission::Deny) => 3,
    };
    if rank(b) > rank(a) { b } else { a }
}

/// A policy decision after the hooks had their say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tightened {
    pub decision: Decision,
    /// Set when a hook tried to loosen the decision: recorded, not obeyed.
    pub refused_loosening: Option<String>,
}

/// Applies a hook verdict to a policy decision: deny and ask tighten it;
/// allow can never turn policy's prompt or forbidden into allow.
pub fn guard(policy: Decision, verdict: &HookVerdict) -> Tightened {
    let reason = verdict.reason();
    match (verdict.permission, policy) {
        (Some(Permission::Deny), _) => {
            Tightened { decision: Decision::Forbidden { reason }, refused_loosening: None }
        }
        (Some(Permission::Ask), Decision::Allow) => {
            Tightened { decision: Decision::Prompt { reason }, refused_loosening: None }
        }
        (
            Some(Permission::Allow),
            policy @ (Decision::Prompt { .. } | Decision::Forbidden { .. }),
        ) => Tightened {
            refused_loosening: Some(format!(
                "a hook answered allow, but policy said {policy:?}; hooks cannot loosen policy"
            )),
            decision: policy,
        },
        (Some(Permission::Ask | Permission::Allow) | None, policy) => {
            Tightened { decision: policy, refused_loosening: None }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_two_blocks_with_stderr_as_the_reason() {
        let outcome = interpret(Some(2), false, "", "BLOCKED: nope\n");
        assert_eq!(outcome.permission, Some(Permission::Deny));
        assert_eq!(outcome.reason.as_deref(), Some("BLOCKED: nope"));
    }

    #[test]
    fn exit_zero_with_warning_on_stderr_is_not_a_block() {
        assert_eq!(interpret(Some(0), false, "", "WARNING: hmm").permission, None);
    }

    #[test]
    fn other_exit_codes_and_timeouts_are_non_blocking_errors() {
        assert!(interpret(Some(1), false, "", "boom").error.unwrap().contains("boom"));
        assert!(interpret(None, true, "", "").error.is_some());
        assert_eq!(interpret(Some(1), false, "", "").permission, None);
    }

    #[test]
    fn json_decisions_are_read() {
        let deny = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}"#;
        let outcome = interpret(Some(0), false, deny, "");
        assert_eq!(
            (outcome.permission, outcome.reason.as_deref()),
            (Some(Permission::Deny), Some("no"))
        );
        let legacy = r#"{"decision":"block","reason":"old style"}"#;
        assert_eq!(interpret(Some(0), false, legacy, "").permission, Some(Permission::Deny));
        let stop = r#"{"continue":false,"stopReason":"enough"}"#;
        assert_eq!(interpret(Some(0), false, stop, "").stop.as_deref(), Some("enough"));
        assert_eq!(interpret(Some(0), false, "not json", "").permission, None);
    }

    #[test]
    fn hooks_tighten_but_never_loosen() {
        let allow = HookVerdict { permission: Some(Permission::Allow), ..HookVerdict::default() };
        let forbidden = Decision::Forbidden { reason: "rule".into() };
        let result = guard(forbidden.clone(), &allow);
        assert_eq!(result.decision, forbidden);
        assert!(result.refused_loosening.is_some());
        let deny = HookVerdict::fold(&[
            HookOutcome { permission: Some(Permission::Allow), ..HookOutcome::default() },
            HookOutcome {
                permission: Some(Permission::Deny),
                reason: Some("hook says no".into()),
                ..HookOutcome::default()
            },
        ]);
        let result = guard(Decision::Allow, &deny);
        assert_eq!(result.decision, Decision::Forbidden { reason: "hook says no".into() });
        let ask = HookVerdict { permission: Some(Permission::Ask), ..HookVerdict::default() };
        assert!(matches!(guard(Decision::Allow, &ask).decision, Decision::Prompt { .. }));
    }
}
