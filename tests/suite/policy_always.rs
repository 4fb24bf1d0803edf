//! "Allow always": one deduplicated prefix rule in
//! `.keel/rules/local.rules`, and the next matching command runs without
//! asking, also after a restart (rules reloaded from disk). Project trust
//! gates the project's allow rules, never its deny rules.

use std::path::Path;

use keel::config::rules::{
    append_local_rule, is_trusted, load_rules, local_rules_path, trust_project,
};
use keel::policy::{
    Allowlist, ApprovalMode, ApprovalScope, CallFacts, Decision, PathContext, Policy, evaluate,
};
use keel::protocol::ToolClass;

fn decide(home: &Path, ws: &Path, allowlist: &Allowlist, command: &str) -> Decision {
    let rules = load_rules(&home.join(".keel"), ws, &[]).unwrap();
    let paths = PathContext::new(home.to_owned(), ws.to_owned(), ws.to_owned());
    let mut policy = Policy::new(rules, ApprovalMode::Ask, paths);
    policy.project_trusted = is_trusted(&home.join(".keel"), ws).unwrap();
    let arguments = serde_json::json!({ "command": command }).to_string();
    let call = CallFacts { tool: "shell", class: ToolClass::Mutating, arguments: &arguments };
    evaluate(&policy, allowlist, call).decision
}

fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_owned).collect()
}

#[test]
fn always_persists_one_rule_that_survives_a_restart() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    trust_project(&home.path().join(".keel"), ws.path()).unwrap();
    let empty = Allowlist::default();
    assert!(matches!(
        decide(home.path(), ws.path(), &empty, "cargo test --all"),
        Decision::Prompt { .. }
    ));

    // The user answers "always" for `cargo test`: the session allowlist
    // covers it at once and the rule is written.
    let mut session = Allowlist::default();
    session.extend(ApprovalScope::AlwaysPrefix(words("cargo test")));
    assert_eq!(decide(home.path(), ws.path(), &session, "cargo test -p x"), Decision::Allow);
    append_local_rule(ws.path(), &words("cargo test")).unwrap();
    append_local_rule(ws.path(), &words("cargo test")).unwrap();
    let text = std::fs::read_to_string(local_rules_path(ws.path())).unwrap();
    assert_eq!(text, "prefix_rule(pattern=[\"cargo\", \"test\"], decision=\"allow\")\n");

    // Restart: a fresh allowlist, rules read from disk.
    assert_eq!(decide(home.path(), ws.path(), &empty, "cargo test --all"), Decision::Allow);
    assert_eq!(decide(home.path(), ws.path(), &empty, "ls && cargo test"), Decision::Allow);
    assert!(matches!(
        decide(home.path(), ws.path(), &empty, "cargo publish"),
        Decision::Prompt { .. }
    ));
}

#[test]
fn too_broad_prefixes_are_refused() {
    let ws = tempfile::tempdir().unwrap();
    for prefix in ["bash", "sh -c", "python -c", "git", "sudo", "sudo make"] {
        assert!(append_local_rule(ws.path(), &words(prefix)).is_err(), "{prefix}");
    }
    assert!(!local_rules_path(ws.path()).exists());
}

#[test]
fn untrusted_project_rules_can_tighten_but_not_loosen() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let rules = ws.path().join(".keel/rules");
    std::fs::create_dir_all(&rules).unwrap();
    std::fs::write(
        rules.join("project.rules"),
        "prefix_rule(pattern=[\"make\"])\nprefix_rule(pattern=[\"ls\"], decision=\"forbidden\")\n",
    )
    .unwrap();
    let empty = Allowlist::default();
    assert!(matches!(decide(home.path(), ws.path(), &empty, "make"), Decision::Prompt { .. }));
    assert!(matches!(decide(home.path(), ws.path(), &empty, "ls"), Decision::Forbidden { .. }));
    trust_project(&home.path().join(".keel"), ws.path()).unwrap();
    assert_eq!(decide(home.path(), ws.path(), &empty, "make"), Decision::Allow);
}
