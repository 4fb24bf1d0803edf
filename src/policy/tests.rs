//! Engine tests: the decision order on small policies. The conformance
//! suite and the bypass corpus live in `tests/suite/policy_*.rs`.

use super::*;
use std::path::Path;

use crate::protocol::ToolClass;

fn policy(mode: ApprovalMode, text: &str) -> Policy {
    let mut rules = default_rules().unwrap();
    rules.load("test.rules", text, Origin::User).unwrap();
    Policy {
        rules,
        mode,
        paths: PathContext::new("/home/u", "/home/u/ws", "/home/u/ws"),
        project_trusted: false,
        sandboxed: true,
        egress: Default::default(),
    }
}

fn shell(policy: &Policy, command: &str) -> Decision {
    let arguments = serde_json::json!({ "command": command }).to_string();
    let call = CallFacts { tool: "shell", class: ToolClass::Mutating, arguments: &arguments };
    evaluate(policy, &Allowlist::default(), call).decision
}

fn write(policy: &Policy, path: &str) -> Decision {
    let arguments = serde_json::json!({ "path": path, "content": "x" }).to_string();
    let call = CallFacts { tool: "write_file", class: ToolClass::Mutating, arguments: &arguments };
    evaluate(policy, &Allowlist::default(), call).decision
}

fn is_allow(d: &Decision) -> bool {
    matches!(d, Decision::Allow)
}

#[test]
fn default_rules_load() {
    assert!(default_rules().is_ok());
}

#[test]
fn read_only_commands_run_in_ask_mode() {
    let p = policy(ApprovalMode::Ask, "");
    assert!(is_allow(&shell(&p, "ls -la && git status | head")));
    assert!(matches!(shell(&p, "cargo build"), Decision::Prompt { .. }));
}

#[test]
fn modes_order() {
    let auto = policy(ApprovalMode::Auto, "");
    assert!(is_allow(&shell(&auto, "cargo build")));
    assert!(matches!(shell(&auto, "git push"), Decision::Prompt { .. }));
    let plan = policy(ApprovalMode::Plan, "");
    assert!(matches!(shell(&plan, "cargo build"), Decision::Forbidden { .. }));
    assert!(is_allow(&shell(&plan, "rg foo")));
    assert!(matches!(write(&plan, "a.txt"), Decision::Forbidden { .. }));
    let yolo =
        policy(ApprovalMode::Yolo, "prefix_rule(pattern=[\"curl\"], decision=\"forbidden\")");
    assert!(is_allow(&shell(&yolo, "cargo build")));
    assert!(matches!(shell(&yolo, "rm -rf /"), Decision::Forbidden { .. }));
    assert!(matches!(shell(&yolo, "curl x"), Decision::Forbidden { .. }));
    assert!(matches!(write(&yolo, ".git/config"), Decision::Prompt { .. }));
}

#[test]
fn file_writes() {
    let ask = policy(ApprovalMode::Ask, "");
    assert!(matches!(write(&ask, "src/a.rs"), Decision::Prompt { .. }));
    let auto = policy(ApprovalMode::Auto, "");
    assert!(is_allow(&write(&auto, "src/a.rs")));
    assert!(matches!(write(&auto, "config/.env.local"), Decision::Prompt { .. }));
    assert!(matches!(write(&auto, "../../.bashrc"), Decision::Forbidden { .. }));
}

#[test]
fn files_that_run_programs_later_ask_in_every_mode() {
    for mode in [ApprovalMode::Auto, ApprovalMode::Yolo] {
        let p = policy(mode, "");
        for path in [
            ".mcp.json",
            ".vscode/tasks.json",
            ".claude/agents/x.md",
            "lib/.mcp.json",
            ".idea/runConfigurations/serve.xml",
            ".idea/workspace.xml",
        ] {
            assert!(matches!(write(&p, path), Decision::Prompt { .. }), "{mode:?} {path}");
        }
        let planted = shell(&p, "echo '{\"mcpServers\":{}}' > .mcp.json");
        assert!(matches!(planted, Decision::Prompt { .. }), "{mode:?}: {planted:?}");
    }
}

#[test]
fn untrusted_project_allows_do_not_count() {
    let mut p = policy(ApprovalMode::Ask, "");
    p.rules.load("proj.rules", "prefix_rule(pattern=[\"make\"])\nprefix_rule(pattern=[\"npm\"], decision=\"forbidden\")", Origin::Project).unwrap();
    assert!(matches!(shell(&p, "make"), Decision::Prompt { .. }));
    assert!(matches!(shell(&p, "npm test"), Decision::Forbidden { .. }));
    p.project_trusted = true;
    assert!(is_allow(&shell(&p, "make")));
}

#[test]
fn a_verdict_says_when_every_command_is_proven_read_only() {
    let read_only = |command: &str| {
        let arguments = serde_json::json!({ "command": command }).to_string();
        let call = CallFacts { tool: "shell", class: ToolClass::Mutating, arguments: &arguments };
        evaluate(&policy(ApprovalMode::Auto, ""), &Allowlist::default(), call).read_only
    };
    for proven in ["sleep 1 && cat f1.txt", "git status", "rg fn src | head -5 2>/dev/null"] {
        assert!(read_only(proven), "{proven}");
    }
    for unproven in [
        "cat a > b",
        "ls $(pwd)",
        "cat .env",
        "find . -name x | xargs rm",
        "PATH=/tmp ls",
        "cargo build",
        "sed -i s/a/b/ f",
        "ls; rm -rf target",
    ] {
        assert!(!read_only(unproven), "{unproven}");
    }
    let arguments = serde_json::json!({ "path": "a.txt", "content": "x" }).to_string();
    let call = CallFacts { tool: "write_file", class: ToolClass::Mutating, arguments: &arguments };
    assert!(!evaluate(&policy(ApprovalMode::Auto, ""), &Allowlist::default(), call).read_only);
}

#[test]
fn a_reason_names_the_command_as_it_would_be_typed() {
    let p = policy(ApprovalMode::Ask, "");
    let Decision::Prompt { reason, .. } = shell(&p, "python3 -c 'import calc; print(1)'") else {
        panic!("expected a question")
    };
    assert!(reason.contains("`python3 -c 'import calc; print(1)'`"), "{reason}");
}

/// A reading tool that names its files in `paths` (test-only): policy
/// judges every path its descriptor lists, whatever the argument's name.
const READ_MANY: crate::protocol::ToolInfo = crate::protocol::ToolInfo {
    name: "read_many",
    kind: crate::protocol::ToolKind::Read,
    class: ToolClass::ReadOnly,
    claude: &[],
    paths: &[crate::protocol::PathArg {
        arg: "paths",
        operand: crate::protocol::Operand::Files,
        access: Access::Read,
    }],
};

#[test]
fn a_reading_tool_whose_arguments_say_paths_is_judged_by_each_path() {
    let p = policy(
        ApprovalMode::Auto,
        "path_rule(glob = \"private/**\", access = \"read\", decision = \"forbidden\")",
    );
    let judge = |paths: serde_json::Value| {
        let arguments = serde_json::json!({ "paths": paths }).to_string();
        let call =
            CallFacts { tool: READ_MANY.name, class: ToolClass::ReadOnly, arguments: &arguments };
        let verdict = evaluate_described(&p, &Allowlist::default(), call, Some(&READ_MANY));
        (verdict.decision, facts::path_queries_described(&p, call, Some(&READ_MANY)))
    };
    let (decision, queries) = judge(serde_json::json!(["README.md", "private/key.txt"]));
    assert!(
        matches!(decision, Decision::Forbidden { ref reason } if reason.contains("private/key.txt")),
        "{decision:?}"
    );
    assert!(queries.iter().any(|q| q.ends_with("private/key.txt")), "{queries:?}");
    assert!(is_allow(&judge(serde_json::json!(["README.md"])).0));
}

#[test]
fn readers_of_secret_places_ask_and_listings_do_not() {
    let mut p = policy(ApprovalMode::Ask, "");
    p.paths.secrets.add(
        Path::new("/opt/vendor/tokens"),
        "vendor tokens",
        &p.paths.home,
        &p.paths.workspace_root,
    );
    let plan = Policy { mode: ApprovalMode::Plan, ..p.clone() };
    // The jail leaves the home readable, so auto mode asks too.
    let auto = Policy { mode: ApprovalMode::Auto, ..p.clone() };
    for command in [
        "grep -r . ~/.ssh",
        "grep -rn KEY ~",
        "rg KEY /home/u",
        "cd ~/.aws && cat credentials",
        "cd /home/u/.ssh; grep -r BEGIN",
        "ls ~/.ssh; cat ~/.ssh/id_*",
        "cat ~/.docker/config.json",
        "head -5 ~/.kube/config",
        "cat ~/.config/gh/hosts.yml",
        "sed -n p ~/.npmrc",
        "cat ~/.a*/c*",
        "jq . < ~/.docker/config.json",
        "cd ~/.password-store && git log -p",
        "cd \"$D\" && cat credentials",
        "cat /opt/vendor/tokens/prod",
    ] {
        let decision = shell(&p, command);
        assert!(matches!(decision, Decision::Prompt { .. }), "{command}: {decision:?}");
        assert!(matches!(shell(&plan, command), Decision::Forbidden { .. }), "{command}");
        let decision = shell(&auto, command);
        assert!(matches!(decision, Decision::Prompt { .. }), "auto: {command}: {decision:?}");
    }
    for command in
        ["ls -la ~/.ssh", "du -sh ~", "stat ~/.aws", "grep -rn TODO .", "rg x src", "cat src/*.rs"]
    {
        assert!(is_allow(&shell(&p, command)), "{command}");
        assert!(is_allow(&shell(&plan, command)), "{command}");
        assert!(is_allow(&shell(&auto, command)), "auto: {command}");
    }
    let Decision::Prompt { reason } = shell(&p, "cd ~/.aws && cat credentials") else {
        panic!("asks")
    };
    assert!(reason.contains("/home/u/.aws (AWS CLI credentials)"), "{reason}");
}
