use super::*;
use crate::policy::{CallFacts, Origin, PathContext, RuleSet, evaluate};

const RULES: &str = r#"
tool_rule(name = "mcp__github__get_*", decision = "allow")
tool_rule(name = "mcp__github__delete_*", decision = "forbidden", justification = "never delete")
tool_rule(name = "mcp__docs__*", decision = "prompt")
"#;

fn policy(mode: ApprovalMode) -> Policy {
    let mut rules = RuleSet::default();
    rules.load("user.rules", RULES, Origin::User).unwrap();
    let paths = PathContext::new("/home/u", "/ws", "/ws");
    Policy::new(rules, mode, paths)
}

/// `allow`, `prompt` or `forbidden` for one call.
fn judge(mode: ApprovalMode, tool: &str, class: ToolClass, allowlist: &Allowlist) -> &'static str {
    let facts = CallFacts { tool, class, arguments: r#"{"path": "/etc/passwd"}"# };
    match evaluate(&policy(mode), allowlist, facts).decision {
        Decision::Allow => "allow",
        Decision::Prompt { .. } => "prompt",
        Decision::Forbidden { .. } => "forbidden",
    }
}

/// One row: mode, tool, class → decision.
macro_rules! judged {
    ($name:ident, $mode:ident, $tool:literal, $class:ident, $expected:literal) => {
        #[test]
        fn $name() {
            let got = judge(ApprovalMode::$mode, $tool, ToolClass::$class, &Allowlist::default());
            assert_eq!(got, $expected);
        }
    };
}

// No rule (`ReadOnly` is a read-only claim the user trusts, see `mcp::hub`;
// an untrusted claim arrives here as `Mutating`): a read-only tool runs; one that may change things asks in ask
// and auto (the sandbox does not reach it), runs in yolo, and is
// forbidden in the read-only modes.
judged!(ask_read_only_runs, Ask, "mcp__everything__echo", ReadOnly, "allow");
judged!(ask_mutating_asks, Ask, "mcp__everything__add", Mutating, "prompt");
judged!(auto_read_only_runs, Auto, "mcp__everything__echo", ReadOnly, "allow");
judged!(auto_mutating_still_asks, Auto, "mcp__everything__add", Mutating, "prompt");
judged!(yolo_read_only_runs, Yolo, "mcp__everything__echo", ReadOnly, "allow");
judged!(yolo_mutating_runs, Yolo, "mcp__everything__add", Mutating, "allow");
judged!(plan_read_only_runs, Plan, "mcp__everything__echo", ReadOnly, "allow");
judged!(plan_mutating_is_forbidden, Plan, "mcp__everything__add", Mutating, "forbidden");
judged!(explore_mutating_is_forbidden, Explore, "mcp__x__y", Mutating, "forbidden");

// An allow rule lets a tool that may change things run without asking.
judged!(ask_allowed_by_rule, Ask, "mcp__github__get_issue", Mutating, "allow");
judged!(auto_allowed_by_rule, Auto, "mcp__github__get_issue", Mutating, "allow");
judged!(yolo_allowed_by_rule, Yolo, "mcp__github__get_issue", Mutating, "allow");
judged!(
    plan_allow_rule_cannot_make_a_write_read_only,
    Plan,
    "mcp__github__get_x",
    Mutating,
    "forbidden"
);

// A forbidden rule holds in every mode, read-only tools included.
judged!(ask_forbidden_by_rule, Ask, "mcp__github__delete_repo", ReadOnly, "forbidden");
judged!(auto_forbidden_by_rule, Auto, "mcp__github__delete_repo", Mutating, "forbidden");
judged!(yolo_forbidden_by_rule, Yolo, "mcp__github__delete_repo", Mutating, "forbidden");

// A prompt rule asks in every mode, even for a read-only tool.
judged!(ask_prompt_rule_asks_for_reads, Ask, "mcp__docs__search", ReadOnly, "prompt");
judged!(yolo_prompt_rule_still_asks, Yolo, "mcp__docs__search", Mutating, "prompt");

#[test]
fn a_path_argument_is_not_taken_for_a_workspace_path() {
    // The filesystem server's `read_file` names paths of its own: keel
    // judges the tool, not `/etc/passwd` as if keel's read_file read it.
    let got =
        judge(ApprovalMode::Ask, "mcp__fs__read_file", ToolClass::ReadOnly, &Allowlist::default());
    assert_eq!(got, "allow");
}

#[test]
fn always_answers_allow_that_tool_only() {
    let mut allowlist = Allowlist::default();
    allowlist.extend(crate::policy::ApprovalScope::AlwaysTool("mcp__everything__add".into()));
    let allowed = |tool| judge(ApprovalMode::Ask, tool, ToolClass::Mutating, &allowlist);
    assert_eq!(allowed("mcp__everything__add"), "allow");
    assert_eq!(allowed("mcp__everything__add2"), "prompt");
    assert_eq!(
        judge(ApprovalMode::Plan, "mcp__everything__add", ToolClass::Mutating, &allowlist),
        "forbidden"
    );
}

#[test]
fn a_projects_allow_counts_only_once_trusted() {
    let mut rules = RuleSet::default();
    let text = "tool_rule(name = \"mcp__x__*\")\ntool_rule(name = \"mcp__y__*\", decision = \"forbidden\")";
    rules.load(".keel/rules/local.rules", text, Origin::Project).unwrap();
    let paths = PathContext::new("/home/u", "/ws", "/ws");
    let mut policy = Policy::new(rules, ApprovalMode::Ask, paths);
    let verdict = |policy: &Policy, tool| {
        evaluate_tool(policy, &Allowlist::default(), tool, ToolClass::Mutating).decision
    };
    assert!(matches!(verdict(&policy, "mcp__x__a"), Decision::Prompt { .. }));
    assert!(matches!(verdict(&policy, "mcp__y__a"), Decision::Forbidden { .. }));
    policy.project_trusted = true;
    assert_eq!(verdict(&policy, "mcp__x__a"), Decision::Allow);
}

#[test]
fn matched_rules_are_reported_with_their_source() {
    let verdict = evaluate_tool(
        &policy(ApprovalMode::Yolo),
        &Allowlist::default(),
        "mcp__github__delete_repo",
        ToolClass::Mutating,
    );
    assert_eq!(verdict.matched.len(), 1);
    assert_eq!(verdict.matched[0].source.to_string(), "user.rules:3");
    let Decision::Forbidden { reason } = verdict.decision else { panic!("forbidden") };
    assert!(reason.contains("never delete"), "{reason}");
}

#[test]
fn bad_tool_rules_name_the_line() {
    for (text, needle) in [
        ("tool_rule(name = \"shell\")", "names MCP tools"),
        ("tool_rule(decision = \"allow\")", "needs a `name`"),
        ("tool_rule(name = \"mcp__a\", decision = \"maybe\")", "unknown decision"),
        ("tool_rule(name = \"mcp__a\", pattern = [\"x\"])", "no argument `pattern`"),
    ] {
        let error = RuleSet::default().load("f.rules", text, Origin::User).unwrap_err();
        let message = error.to_string();
        assert!(message.starts_with("f.rules:1:") && message.contains(needle), "{message}");
    }
}

#[test]
fn the_always_line_loads_back_as_an_allow() {
    let text = allow_rule_text("mcp__everything__add");
    assert_eq!(text, "tool_rule(name=\"mcp__everything__add\", decision=\"allow\")\n");
    let mut rules = RuleSet::default();
    rules.load("local.rules", &text, Origin::User).unwrap();
    assert!(rules.tool_rules[0].matches("mcp__everything__add"));
    assert!(!rules.tool_rules[0].matches("mcp__everything__add_more"));
}

#[test]
fn a_read_only_mode_s_refusal_names_the_setting_that_trusts_a_server_s_claim() {
    for mode in [ApprovalMode::Plan, ApprovalMode::Explore] {
        let verdict = evaluate_tool(
            &policy(mode),
            &Allowlist::default(),
            "mcp__evil__shell",
            ToolClass::Mutating,
        );
        let Decision::Forbidden { reason } = verdict.decision else { panic!("forbidden") };
        assert!(
            reason.contains("read-only") && reason.contains("trust_read_only_hint = true"),
            "{reason}"
        );
    }
}
