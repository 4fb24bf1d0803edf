//! Issue 36, finding 6: the setup a Claude Code or Codex user already has
//! is picked up, through the real binary, and what keel left out is said.
//! Policy: Codex's `.rules` files (`~/.codex/rules`, a project's
//! `.codex/rules`) and Claude Code's `permissions` (`~/.claude/settings.json`,
//! a project's `.claude/settings.json`) judge commands as keel's own rules
//! do; a project's allows count only once it is trusted.

use serde_json::Value;

use super::support::{Model, Sandbox, scripted_model};
use super::wire::{Step, Wire};

fn check(sandbox: &Sandbox, command: &[&str]) -> Value {
    let output =
        sandbox.keel().args(["policy", "check", "--json", "--"]).args(command).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

fn write_home(sandbox: &Sandbox, rel: &str, text: &str) {
    let path = sandbox.home.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// pydantic-ai's published `.claude/settings.json`: before, `uv run pytest`
/// asked in a trusted checkout (nothing read the file); now it is allowed,
/// by that file's entry, once the project is trusted, and not before.
#[test]
fn a_projects_claude_permissions_allow_once_it_is_trusted() {
    let sandbox = Sandbox::new();
    sandbox.write(
        ".claude/settings.json",
        include_str!("../fixtures/claude/settings/pydantic-ai.json"),
    );
    let untrusted = check(&sandbox, &["uv", "run", "pytest", "-x"]);
    assert_ne!(untrusted["decision"], "allow", "{untrusted}");
    let trust = sandbox.keel().arg("trust").output().unwrap();
    assert!(trust.status.success(), "{}", String::from_utf8_lossy(&trust.stderr));
    let trusted = check(&sandbox, &["uv", "run", "pytest", "-x"]);
    assert_eq!(trusted["decision"], "allow", "{trusted}");
    assert!(trusted.to_string().contains("permissions.allow"), "{trusted}");
    // `Bash(make lint)` is that command alone.
    assert_eq!(check(&sandbox, &["make", "lint"])["decision"], "allow");
    assert_ne!(check(&sandbox, &["make", "lint", "-f", "x.mk"])["decision"], "allow");
}

/// The user's Codex rules and Claude denies hold in every project, trusted
/// or not: `git reset --hard` forbidden by `~/.codex/rules`, `rm -rf`
/// by `~/.claude/settings.json` (before: both only asked).
#[test]
fn the_users_codex_rules_and_claude_denies_hold_everywhere() {
    let sandbox = Sandbox::new();
    write_home(
        &sandbox,
        ".codex/rules/default.rules",
        "prefix_rule(pattern = [\"git\", \"reset\", \"--hard\"], decision = \"forbidden\", \
         justification = \"keep work\")\n",
    );
    write_home(
        &sandbox,
        ".claude/settings.json",
        r#"{"permissions": {"deny": ["Bash(rm -rf:*)"], "allow": ["Bash(git log:*)"]}}"#,
    );
    let reset = check(&sandbox, &["git", "reset", "--hard", "HEAD~1"]);
    assert_eq!(reset["decision"], "forbidden", "{reset}");
    assert!(reset.to_string().contains(".codex/rules/default.rules"), "{reset}");
    let rm = check(&sandbox, &["rm", "-rf", "build"]);
    assert_eq!(rm["decision"], "forbidden", "{rm}");
    assert!(rm.to_string().contains("settings.json"), "{rm}");
}

/// A project's `.codex/rules` is read like `.keel/rules`: its forbids at
/// once, its allows after trust; a Codex file keel cannot parse is skipped
/// and said, never a refusal to start.
#[test]
fn a_projects_codex_rules_count_and_a_broken_one_does_not_stop_keel() {
    let sandbox = Sandbox::new();
    sandbox.write(
        ".codex/rules/team.rules",
        "prefix_rule(pattern = [\"just\", \"deploy\"], decision = \"forbidden\")\n\
         prefix_rule(pattern = [\"just\", \"test\"])\n",
    );
    sandbox.write(".codex/rules/newer.rules", "future_rule(x = 1)\n");
    assert_eq!(check(&sandbox, &["just", "deploy"])["decision"], "forbidden");
    assert_ne!(check(&sandbox, &["just", "test"])["decision"], "allow");
    assert!(sandbox.keel().arg("trust").output().unwrap().status.success());
    assert_eq!(check(&sandbox, &["just", "test"])["decision"], "allow");
}

fn doctor(sandbox: &Sandbox, server: &str) -> Value {
    let output = sandbox.run(&Model::at("openai-chat", server), &["doctor", "--json"]);
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&output.stderr)))
}

fn has(lines: &Value, what: &str, from: &str, why: &str) -> bool {
    lines.as_array().unwrap().iter().any(|line| {
        line["what"].as_str().unwrap_or_default().contains(what)
            && line["from"].as_str().unwrap_or_default().contains(from)
            && line["why"].as_str().unwrap_or_default().contains(why)
    })
}

/// `keel doctor` says what of the user's Claude Code and Codex setup keel
/// picked up, from where, and what it left out and why (before: nothing
/// about any of it).
#[tokio::test]
async fn doctor_says_what_was_picked_up_and_what_was_left_out() {
    let sandbox = Sandbox::new();
    write_home(
        &sandbox,
        ".claude/settings.json",
        r#"{"permissions": {"allow": ["Bash(git log:*)", "WebSearch"]},
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}"#,
    );
    write_home(&sandbox, ".codex/rules/default.rules", "prefix_rule(pattern = [\"just\"])\n");
    sandbox.write(".codex/rules/newer.rules", "future_rule(x = 1)\n");
    write_home(&sandbox, ".claude/CLAUDE.md", "answer in French\n");
    write_home(&sandbox, "notes.md", "mine\n");
    sandbox.write("CLAUDE.local.md", "my sandbox URL\n- @~/notes.md\n");
    write_home(&sandbox, ".claude.json", r#"{"mcpServers": {"notes": {"command": "notes-mcp"}}}"#);
    write_home(
        &sandbox,
        ".codex/config.toml",
        "model = \"o3\"\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\n[mcp_servers.notes]\n\
         command = \"other\"\n",
    );
    let server = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    let found = doctor(&sandbox, &server.uri());
    let setup = &found["setup"];
    assert!(has(&setup["read"], "Claude Code permissions", ".claude/settings.json", "1 taken"));
    assert!(has(&setup["read"], "Codex rules", ".codex/rules/default.rules", "1 taken"));
    assert!(has(&setup["skipped"], "Claude Code permissions", "settings.json", "WebSearch"));
    assert!(has(&setup["skipped"], "Codex rules", "newer.rules", "not read: "), "{setup:#}");
    assert!(!has(&setup["read"], "Codex rules", "newer.rules", ""), "{setup:#}");
    assert!(has(&setup["skipped"], "Claude Code hooks", "settings.json", "import_claude_hooks"));
    assert!(has(&setup["read"], "Claude Code user memory", ".claude/CLAUDE.md", ""));
    assert!(has(&setup["read"], "Claude personal project file", "CLAUDE.local.md", ""));
    assert!(has(&setup["read"], "MCP server notes", ".claude.json", ""), "{setup:#}");
    assert!(has(&setup["read"], "MCP server docs", ".codex/config.toml", ""), "{setup:#}");
    assert!(has(&setup["skipped"], "MCP server notes", ".codex/config.toml", "already"));
    // An untrusted clone may not pull a file from the user's home.
    assert!(has(&setup["skipped"], "instruction import", "CLAUDE.local.md", "keel trust"));
    let human = sandbox.run(&Model::at("openai-chat", &server.uri()), &["doctor"]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("setup: left out: Codex rules from "), "{text}");
}

/// `import_setup = false` in the user's config keeps keel to its own files;
/// a project, trusted or not, cannot switch the user's Claude denies off.
#[test]
fn import_setup_false_is_the_users_choice_only() {
    let sandbox = Sandbox::new();
    write_home(
        &sandbox,
        ".claude/settings.json",
        r#"{"permissions": {"deny": ["Bash(just deploy:*)"]}}"#,
    );
    sandbox.write(".keel/config.toml", "import_setup = false\n");
    assert!(sandbox.keel().arg("trust").output().unwrap().status.success());
    assert_eq!(check(&sandbox, &["just", "deploy"])["decision"], "forbidden");
    write_home(&sandbox, "config.toml", "import_setup = false\n");
    assert_ne!(check(&sandbox, &["just", "deploy"])["decision"], "forbidden");
}
