//! Calls the harness declined because nobody could be asked (a headless
//! run), and what the user could change so they run: the narrowest of
//! `--full-auto`, `--yolo`, an allow rule, or nothing short of approving
//! it in an interactive session. Front ends report these so a run never
//! claims work it was not allowed to do.
//!
//! Invariant: the remedy is computed by the same `policy::evaluate` the
//! loop used, under the other modes, so it names a flag only when that
//! flag really lets the call run.

use std::path::Path;

use crate::agent::LoopState;
use crate::policy::{self, ApprovalMode, CallFacts, Decision, amend};
use crate::protocol::{HarnessTool, ToolCall};

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
    if call.harness_tool() == Some(HarnessTool::SubmitPlan) {
        return "--approve-plan (or --plan-only to stop for a review)".to_owned();
    }
    let class = state.class_of_call(call);
    let facts = || CallFacts { tool: &call.name, class, arguments: &call.arguments };
    let judged = |mode: ApprovalMode| {
        let mut policy = state.config().policy.clone();
        policy.mode = mode;
        policy::evaluate(&policy, state.allowlist(), facts())
    };
    let asked = judged(state.config().policy.mode);
    let untainted_allows = asked.decision == Decision::Allow;
    let file = keel_home.join("rules").join("allow.rules");
    let rule = if policy::tool_rules::is_external(&call.name) {
        let line = policy::tool_rules::allow_rule_text(&call.name);
        Some(format!("the rule `{}` in {}", line.trim_end(), file.display()))
    } else {
        asked
            .suggested_prefix
            .filter(|prefix| amend::check_prefix(prefix).is_ok())
            .map(|prefix| format!("the rule `{}` in {}", amend::rule_line(&prefix), file.display()))
    };
    let flag = [(ApprovalMode::Auto, "--full-auto"), (ApprovalMode::Yolo, "--yolo")]
        .into_iter()
        .filter(|(mode, _)| *mode != state.config().policy.mode)
        .find(|(mode, _)| judged(*mode).decision == Decision::Allow)
        .map(|(_, flag)| flag);
    // A call asked about for the untrusted content in the history: the
    // setting that switches that check off lets it run too.
    let tainted = state.taint().is_tainted()
        && policy::egress::outbound(&state.config().policy, state.taint(), facts()).is_some()
        && untainted_allows;
    let rule = match (rule, tainted) {
        (Some(rule), true) => Some(format!("{rule}, or `[security] taint = \"off\"`")),
        (None, true) => Some("`[security] taint = \"off\"`".to_owned()),
        (rule, false) => rule,
    };
    match (flag, rule) {
        (Some(flag), Some(rule)) => format!("{flag}, or {rule}"),
        (Some(flag), None) => flag.to_owned(),
        (None, Some(rule)) => rule,
        (None, None) => "an approval in an interactive session (`keel resume ID`): it asks in \
                         every mode"
            .to_owned(),
    }
}

/// What the model reads about a call declined for want of an approval:
/// the approver's `note` and the remedy [`allow_with`] computed, never a
/// fixed flag (a run already in `--full-auto` is not told to use it).
pub fn model_note(note: Option<&str>, allow_with: &str) -> String {
    let note = note.unwrap_or("this headless run cannot ask for an approval");
    format!("{}. The user could let it run with {allow_with}.", note.trim_end_matches('.'))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::agent::{LoopConfig, Opening};
    use crate::policy::{PathContext, Policy, RuleSet};
    use crate::protocol::ToolClass;

    fn state(sandboxed: bool) -> LoopState {
        let paths = PathContext::new("/home/u", "/home/u/ws", "/home/u/ws");
        let mut policy = Policy::new(RuleSet::default(), ApprovalMode::Ask, paths);
        policy.sandboxed = sandboxed;
        LoopState::open(
            LoopConfig {
                model: "m".into(),
                prefix: crate::protocol::PrefixSections::default(),
                tools: Vec::new(),
                tool_classes: BTreeMap::from([
                    ("write_file".to_owned(), ToolClass::Mutating),
                    ("shell".to_owned(), ToolClass::Mutating),
                    ("mcp__github__create_issue".to_owned(), ToolClass::Mutating),
                ]),
                policy,
                limits: crate::agent::Limits::with_max_steps(10),
                pricing: crate::context::Pricing::default(),
                configured: crate::agent::ConfiguredModel {
                    model: "m".into(),
                    pricing: crate::context::Pricing::default(),
                    one_hour_cache: false,
                },
                context_window: None,
                max_output_tokens: None,
                compact_threshold: 0.85,
                token_scale: crate::context::tokens::TokenScale::IDENTITY,
                post_tool_hooks: false,
                pre_tool_hooks: false,
                agent_classes: BTreeMap::new(),
                tool_scope: None,
                walls: crate::prompts::Walls::default(),
                strict_tools: None,
            },
            Opening::default(),
        )
    }

    fn call(name: &str, args: serde_json::Value) -> ToolCall {
        ToolCall {
            call_id: "c".into(),
            name: name.into(),
            arguments: args.to_string(),
            item_id: None,
            provider_data: None,
        }
    }

    fn remedy(sandboxed: bool, call: &ToolCall) -> String {
        allow_with(&state(sandboxed), Path::new("/home/u/.keel"), call)
    }

    #[test]
    fn a_workspace_write_needs_full_auto() {
        let write = call("write_file", serde_json::json!({"path": "a.txt", "content": "x"}));
        assert_eq!(remedy(true, &write), "--full-auto");
    }

    #[test]
    fn a_sandboxed_command_names_full_auto_and_a_narrow_rule() {
        let build = call("shell", serde_json::json!({"command": "npm run build"}));
        assert_eq!(
            remedy(true, &build),
            "--full-auto, or the rule `prefix_rule(pattern=[\"npm\", \"run\", \"build\"], \
             decision=\"allow\")` in /home/u/.keel/rules/allow.rules"
        );
    }

    #[test]
    fn without_the_sandbox_auto_asks_so_only_yolo_or_the_rule_allow() {
        let build = call("shell", serde_json::json!({"command": "npm run build"}));
        assert!(
            remedy(false, &build).starts_with("--yolo, or the rule"),
            "{}",
            remedy(false, &build)
        );
    }

    #[test]
    fn a_protected_path_asks_in_every_mode() {
        let hook = call(
            "write_file",
            serde_json::json!({"path": ".git/hooks/pre-commit", "content": "x"}),
        );
        assert!(remedy(true, &hook).starts_with("an approval in an interactive session"));
    }

    #[test]
    fn an_mcp_tool_needs_yolo_or_its_tool_rule_since_auto_still_asks() {
        let create = call("mcp__github__create_issue", serde_json::json!({"title": "x"}));
        assert_eq!(
            remedy(true, &create),
            "--yolo, or the rule `tool_rule(name=\"mcp__github__create_issue\", \
             decision=\"allow\")` in /home/u/.keel/rules/allow.rules"
        );
    }

    // Issue 32.3: the model reads the remedy computed for the call, not a
    // fixed "--full-auto or --yolo" (useless for a path that asks in every
    // mode, or in a run already in --full-auto).
    #[test]
    fn the_model_reads_the_computed_remedy() {
        let hook = call(
            "write_file",
            serde_json::json!({"path": ".git/hooks/pre-commit", "content": "x"}),
        );
        let note = model_note(Some("`write_file` needs approval (x); go on"), &remedy(true, &hook));
        assert!(
            note.starts_with("`write_file` needs approval (x); go on. The user could"),
            "{note}"
        );
        assert!(note.contains("an approval in an interactive session"), "{note}");
        assert!(!note.contains("--full-auto") && !note.contains("--yolo"), "{note}");
    }

    #[test]
    fn a_plan_needs_a_plan_flag() {
        let plan = call("submit_plan", serde_json::json!({"plan_markdown": "# P"}));
        assert!(remedy(true, &plan).starts_with("--approve-plan"));
    }
}
