//! "Allow always": one deduplicated prefix rule in
//! `.keel/rules/local.rules`, and the next matching command runs without
//! asking, also after a restart (rules reloaded from disk). Project trust
//! gates the project's allow rules, never its deny rules.

use std::path::Path;

use keel::config::rules::{
    RulePlaces, append_local_rule, is_trusted, load_rules, local_rules_path, trust_project,
};
use keel::policy::{
    Allowlist, ApprovalMode, ApprovalScope, CallFacts, Decision, PathContext, Policy, evaluate,
};
use keel::protocol::ToolClass;

fn decide(home: &Path, ws: &Path, allowlist: &Allowlist, command: &str) -> Decision {
    let keel_home = home.join(".keel");
    let codex_home = home.join(".codex");
    let places = RulePlaces {
        keel_home: &keel_home,
        codex_home: &codex_home,
        home,
        workspace_root: ws,
        extra: &[],
        import: true,
    };
    let rules = load_rules(&places).unwrap().rules;
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

/// Answers "always" for `make lint` the first time it is asked, then
/// once; counts the questions.
struct AlwaysThenOnce(std::sync::Arc<std::sync::Mutex<usize>>);

impl keel::runtime::Approver for AlwaysThenOnce {
    fn decide<'a>(
        &'a mut self,
        _: &'a keel::protocol::ToolCall,
        _: &'a str,
    ) -> keel::tools::BoxFuture<'a, keel::runtime::ApprovalAnswer> {
        let mut asked = self.0.lock().unwrap();
        *asked += 1;
        let scope = if *asked == 1 {
            ApprovalScope::AlwaysPrefix(words("make lint"))
        } else {
            ApprovalScope::Once
        };
        Box::pin(async move { keel::runtime::ApprovalAnswer { approved: true, note: None, scope } })
    }
}

struct Quiet;

impl keel::runtime::EventSink for Quiet {
    fn emit(&mut self, _event: keel::runtime::RuntimeEvent) {}
}

/// `/permissions remove N` (`Session::remove_always`): the rule's line
/// leaves `local.rules` (the rest byte for byte), and the next identical
/// call asks again, in this session and after a resume.
#[tokio::test]
async fn a_removed_always_answer_asks_again_at_once_and_after_a_resume() {
    use super::support::{Sandbox, scripted_model};
    use super::wire::{Step, Wire, call};
    let sandbox = Sandbox::new();
    let lint = || Step::Calls {
        text: None,
        calls: vec![call("shell", serde_json::json!({ "command": "make lint" }))],
    };
    let steps = [
        lint(),
        Step::Answer("1".into()),
        lint(),
        Step::Answer("2".into()),
        lint(),
        Step::Answer("3".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let rules = local_rules_path(&sandbox.repo);
    std::fs::create_dir_all(rules.parent().unwrap()).unwrap();
    std::fs::write(
        &rules,
        "# kept as typed \r\nprefix_rule(pattern=[\"ls\"], decision=\"prompt\")",
    )
    .unwrap();
    let asked = std::sync::Arc::new(std::sync::Mutex::new(0));
    let settings = sandbox.settings(&server.uri());
    let options = sandbox.options(ApprovalMode::Ask);
    let mut session = keel::runtime::Session::start(
        &settings,
        options.clone(),
        Box::new(Quiet),
        Box::new(AlwaysThenOnce(asked.clone())),
    )
    .unwrap();
    let cancel = tokio_util::sync::CancellationToken::new();
    session.run_turn("lint".into(), &cancel).await.unwrap();
    session.run_turn("lint again".into(), &cancel).await.unwrap();
    assert_eq!(*asked.lock().unwrap(), 1, "the \"always\" answered the second call");
    let always = session.in_force().always;
    assert_eq!(always.len(), 1, "{always:?}");
    assert_eq!(always[0].text, "make lint");
    assert_eq!(always[0].at, Some(format!("{}:3", rules.display())));

    let said = session.remove_always(&always[0].scope).unwrap();
    assert!(said.contains("the next such call asks again"), "{said}");
    let text = std::fs::read_to_string(&rules).unwrap();
    assert_eq!(text, "# kept as typed \r\nprefix_rule(pattern=[\"ls\"], decision=\"prompt\")\n");
    assert!(session.in_force().always.is_empty());
    session.run_turn("lint once more".into(), &cancel).await.unwrap();
    assert_eq!(*asked.lock().unwrap(), 2, "asked again");
    let log_path = session.log_path().to_owned();
    drop(session);

    let resumed = keel::runtime::Session::resume(
        &settings,
        &log_path,
        options,
        Box::new(Quiet),
        Box::new(AlwaysThenOnce(asked)),
    )
    .unwrap();
    assert!(resumed.in_force().always.is_empty(), "the log's approval does not bring it back");
}
