use super::*;
use crate::protocol::Access;

fn argv(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_owned).collect()
}

fn decisions(rules: &RuleSet, command: &str) -> Vec<RuleDecision> {
    rules.matches(&argv(command), false).iter().map(|m| m.decision).collect()
}

fn skipped<'a>(report: &'a [PermissionEntry], entry: &str) -> &'a str {
    report
        .iter()
        .find(|line| line.entry.contains(entry))
        .and_then(|line| line.skipped.as_deref())
        .unwrap_or_else(|| panic!("{entry} not skipped: {report:#?}"))
}

/// pydantic-ai's own `.claude/settings.json`: the commands its developers
/// let Claude run without asking run in keel without asking too (they
/// asked before: nothing read the file), exactly as written.
#[test]
fn a_published_allow_list_becomes_keel_rules() {
    let json: serde_json::Value =
        serde_json::from_str(include_str!("../../tests/fixtures/claude/settings/pydantic-ai.json"))
            .unwrap();
    let mut rules = RuleSet::default();
    let report = add_permission_rules(
        &mut rules,
        "/p/.claude/settings.json",
        &json["permissions"],
        Origin::Project,
    );
    assert_eq!(decisions(&rules, "uv run pytest -x tests/test_a.py"), [RuleDecision::Allow]);
    assert_eq!(decisions(&rules, "gh pr view 12"), [RuleDecision::Allow]);
    assert_eq!(decisions(&rules, "make lint"), [RuleDecision::Allow]);
    // `Bash(make lint)` is that command alone, as in Claude Code.
    assert!(decisions(&rules, "make lint -f ../other.mk").is_empty());
    // `uv run` runs anything: keel never allows it without asking.
    assert!(skipped(&report, "Bash(uv run:*)").contains("does not allow"), "{report:#?}");
    let refused: Vec<&str> =
        report.iter().filter(|line| line.skipped.is_some()).map(|l| l.entry.as_str()).collect();
    // `find` runs programs too (`-exec`): keel's "always" refuses it alike.
    assert_eq!(
        refused,
        ["permissions.allow \"Bash(uv run:*)\"", "permissions.allow \"Bash(find:*)\""]
    );
    let matched = rules.matches(&argv("git add a.rs"), false);
    assert_eq!(matched[0].source.origin, Origin::Project);
    assert_eq!(
        matched[0].source.to_string(),
        "/p/.claude/settings.json permissions.allow \"Bash(git add:*)\""
    );
}

#[test]
fn each_kind_of_entry_has_its_keel_rule_or_its_reason() {
    let permissions = serde_json::json!({
        "allow": ["Read", "Edit(src/**)", "WebFetch(domain:docs.example.org)", "mcp__github",
                  "Bash(npm run test *)", "Bash", "WebSearch", "Read(~/notes/**)"],
        "ask": ["Bash(git push:*)", "mcp__db__drop_table"],
        "deny": ["Read(./.env*)", "Bash(rm -rf:*)", "Bash(*DROP TABLE*)", "Write(//etc/**)"]
    });
    let mut rules = RuleSet::default();
    let report = add_permission_rules(&mut rules, "s.json", &permissions, Origin::User);
    assert_eq!(decisions(&rules, "npm run test -- --watch"), [RuleDecision::Allow]);
    assert_eq!(decisions(&rules, "git push origin main"), [RuleDecision::Prompt]);
    assert_eq!(decisions(&rules, "rm -rf build"), [RuleDecision::Forbidden]);
    let path = |path: &str, access| -> Vec<RuleDecision> {
        rules.path_matches(path, access).iter().map(|m| m.decision).collect()
    };
    assert_eq!(path(".env.local", Access::Read), [RuleDecision::Forbidden]);
    assert_eq!(path("a/.env", Access::Read), [RuleDecision::Forbidden]);
    assert_eq!(path("src/lib.rs", Access::Write), [RuleDecision::Allow]);
    assert!(path("docs/a.md", Access::Write).is_empty());
    let tools: Vec<(&str, RuleDecision)> =
        rules.tool_rules.iter().map(|rule| (rule.pattern.as_str(), rule.decision)).collect();
    assert_eq!(
        tools,
        [("mcp__github__*", RuleDecision::Allow), ("mcp__db__drop_table", RuleDecision::Prompt)]
    );
    assert_eq!(rules.web_rules.len(), 1);
    assert!(skipped(&report, "\"Read\"").contains("already"));
    assert!(skipped(&report, "\"Bash\"").contains("every command"));
    assert!(skipped(&report, "WebSearch").contains("no rule"));
    assert!(skipped(&report, "~/notes").contains("workspace"));
    assert!(skipped(&report, "//etc").contains("workspace"));
    assert!(skipped(&report, "DROP TABLE").contains("wildcard"));
}

/// Anything a real file holds is reported, never fatal.
#[test]
fn malformed_entries_are_skipped_and_said() {
    let permissions = serde_json::json!({
        "allow": ["Bash(git add:*", 7, "Bash(\"unclosed:*)"],
        "deny": "Bash(rm:*)"
    });
    let mut rules = RuleSet::default();
    let report = add_permission_rules(&mut rules, "s.json", &permissions, Origin::User);
    assert_eq!(report.len(), 4, "{report:#?}");
    assert!(report.iter().all(|line| line.skipped.is_some()), "{report:#?}");
    assert!(rules.prefix_rules.is_empty());
}

/// Issue 36: a command's `allowed-tools` is read as Claude Code's
/// permission rules, prefixes and exact commands kept apart; what keel
/// cannot pre-approve is named.
#[test]
fn allowed_tools_become_prefixes_exact_commands_and_mcp_patterns() {
    let items: Vec<String> = [
        "Bash(git add:*)",
        "Bash(git status)",
        "Read",
        "mcp__docs",
        "Bash(npm run test *)",
        "Bash",
        "Bash(python:*)",
        "Edit",
        "mcp__db__query",
        "Grep",
        "TodoWrite",
        "Bash(git diff:*, git log:*)",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    let found = preapprovals(&items);
    let words = |list: &[&str]| list.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
    let prefixes: [&[&str]; 4] =
        [&["git", "add"], &["npm", "run", "test"], &["git", "diff"], &["git", "log"]];
    assert_eq!(found.prefixes, prefixes.map(words));
    assert_eq!(found.commands, [words(&["git", "status"])]);
    assert_eq!(found.tools, ["mcp__docs__*", "mcp__db__query"]);
    assert_eq!(found.ignored.len(), 3, "{:?}", found.ignored);
    assert!(found.ignored[0].contains("every command"), "{:?}", found.ignored);
    assert!(found.ignored[1].starts_with("`Bash(python:*)`"), "{:?}", found.ignored);
    assert_eq!(found.ignored[2], "`Edit`");
    assert!(!found.is_empty() && preapprovals(&words(&["Read", "Glob"])).is_empty());
}
