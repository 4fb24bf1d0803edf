//! Claude Code plugins (issue 36, item 8) through the real binary: `keel
//! plugin add` installs a folder, and a session then runs its namespaced
//! command, indexes its skill, fires its hook and starts its MCP server,
//! each with `${CLAUDE_PLUGIN_ROOT}` meaning the installed folder; `list`
//! and `remove` round-trip; a folder that is not a plugin is refused.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::mcp_support::{fault_script, python};
use super::support::{Model, Sandbox, json_lines, request_bodies, scripted_model};
use super::wire::{Step, Wire, call};

fn exec(sandbox: &Sandbox, uri: &str, prompt: &str) -> std::process::Output {
    sandbox.run(&Model::at("openai-chat", uri), &["exec", "--json", "--full-auto", prompt])
}

fn keel_plugin(sandbox: &Sandbox, args: &[&str]) -> std::process::Output {
    sandbox.keel().arg("plugin").args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A plugin folder outside the repository with a command, a skill, a
/// SessionStart-free `UserPromptSubmit` hook and a stdio MCP server.
fn tiny_kit(sandbox: &Sandbox, python: &str) -> PathBuf {
    let root = sandbox.root().join("tiny-kit-src");
    let files = [
        (".claude-plugin/plugin.json", r#"{"name": "tiny-kit", "version": "0.2.0", "description": "A test kit", "author": {"name": "keel"}}"#.to_owned()),
        ("commands/greet.md", "---\ndescription: Greet someone\n---\nGreet $ARGUMENTS warmly.\n".to_owned()),
        ("skills/kit-skill/SKILL.md", "---\nname: kit-skill\ndescription: Explains the tiny kit\n---\nUse the kit.\n".to_owned()),
        (
            "hooks/hooks.json",
            r#"{"description": "records its root", "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "cat \"${CLAUDE_PLUGIN_ROOT}/hooks/marker\" > plugin-hook.txt"}, {"type": "command", "command": "printenv CLAUDE_PLUGIN_ROOT > plugin-env.txt"}]}]}}"#.to_owned(),
        ),
        ("hooks/marker", "MARKER-FROM-THE-INSTALLED-FOLDER".to_owned()),
        (
            ".mcp.json",
            format!(r#"{{"mcpServers": {{"kit": {{"command": {python:?}, "args": ["${{CLAUDE_PLUGIN_ROOT}}/server.py", "ok"]}}}}}}"#),
        ),
    ];
    for (path, body) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    }
    std::fs::copy(fault_script(), root.join("server.py")).unwrap();
    root
}

#[tokio::test]
async fn an_installed_plugin_s_command_skill_hook_and_server_work_and_remove_undoes_it() {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let source = tiny_kit(&sandbox, &python);
    let added = keel_plugin(&sandbox, &["add", source.to_str().unwrap()]);
    assert!(added.status.success(), "{}", text(&added.stderr));
    assert!(text(&added.stdout).contains("installed plugin `tiny-kit` (0.2.0)"));
    // The source can go: the session uses the installed copy.
    std::fs::remove_dir_all(&source).unwrap();
    let listed = text(&keel_plugin(&sandbox, &["list"]).stdout);
    assert!(listed.starts_with("tiny-kit 0.2.0 "), "{listed}");

    let server = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    let output = exec(&sandbox, &server.uri(), "/tiny-kit:greet Ada");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stdout));
    let bodies = request_bodies(&server).await;
    assert_eq!(super::routed_model::first_user_of(&bodies[0]), "Greet Ada warmly.");
    let request = bodies[0].to_string();
    // Claude Code's name for a plugin's skill (before: `kit-skill`, which a
    // second plugin's or the user's own skill of that name replaced).
    assert!(request.contains("tiny-kit:kit-skill"), "the plugin's skill is in the index");
    assert!(request.contains("mcp__kit__echo"), "the plugin's server lists its tool");
    assert_eq!(sandbox.read("plugin-hook.txt"), "MARKER-FROM-THE-INSTALLED-FOLDER");
    let installed = sandbox.home.join("plugins/tiny-kit").display().to_string();
    assert_eq!(sandbox.read("plugin-env.txt").trim_end(), installed, "as a hook script reads it");
    let warnings: Vec<Value> =
        json_lines(&output.stdout).into_iter().filter(|l| l["type"] == "warning").collect();
    assert!(warnings.is_empty(), "{warnings:?}");

    let load = Step::Calls {
        text: None,
        calls: vec![call("load_skill", serde_json::json!({"name": "tiny-kit:kit-skill"}))],
    };
    let server = scripted_model(Wire::Chat, &[load, Step::Answer("ok".into())]).await;
    let output = exec(&sandbox, &server.uri(), "use the kit");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stdout));
    let bodies = request_bodies(&server).await;
    assert!(bodies[1].to_string().contains("Use the kit."), "the skill's body reached the model");

    let removed = keel_plugin(&sandbox, &["remove", "tiny-kit"]);
    assert!(removed.status.success(), "{}", text(&removed.stderr));
    assert!(text(&keel_plugin(&sandbox, &["list"]).stdout).starts_with("no plugins installed"));
    assert!(!sandbox.home.join("plugins/tiny-kit").exists());
    let server = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    let output = exec(&sandbox, &server.uri(), "/tiny-kit:greet Ada");
    assert_eq!(output.status.code(), Some(2), "gone with the plugin: {}", text(&output.stdout));
}

fn real_plugin(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/plugins/wshobson").join(name)
}

#[tokio::test]
async fn a_published_plugin_s_command_runs_namespaced_and_a_second_add_is_refused() {
    let sandbox = Sandbox::new();
    let source = real_plugin("block-no-verify");
    assert!(keel_plugin(&sandbox, &["add", source.to_str().unwrap()]).status.success());
    let again = keel_plugin(&sandbox, &["add", source.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(2));
    assert!(text(&again.stderr).contains("a plugin named `block-no-verify` is already installed"));
    let server = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    let output = exec(&sandbox, &server.uri(), "/block-no-verify:block-no-verify");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stdout));
    let sent = super::routed_model::first_user_of(&request_bodies(&server).await[0]);
    assert!(sent.contains("--no-verify"), "{sent}");
}

#[test]
fn a_folder_that_is_not_a_plugin_is_refused_clearly() {
    let sandbox = Sandbox::new();
    let output = keel_plugin(&sandbox, &["add", "."]);
    assert_eq!(output.status.code(), Some(2));
    let message = text(&output.stderr);
    assert!(
        message.contains("has no .claude-plugin/plugin.json: not a Claude Code plugin"),
        "{message}"
    );
    assert!(!sandbox.home.join("plugins/installed.json").exists());
}

#[tokio::test]
async fn doctor_lists_installed_plugins_and_a_broken_one_is_one_warning_not_fatal() {
    let sandbox = Sandbox::new();
    for name in ["block-no-verify", "debugging-toolkit"] {
        let source = real_plugin(name);
        assert!(keel_plugin(&sandbox, &["add", source.to_str().unwrap()]).status.success());
    }
    let server = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    let doctor = sandbox.run(&Model::at("openai-chat", &server.uri()), &["doctor", "--json"]);
    let found: Value = serde_json::from_slice(&doctor.stdout).unwrap();
    let about = found["plugins"]["debugging-toolkit"].as_str().unwrap_or_default().to_owned();
    assert!(about.starts_with("1.2.1, from ") && about.contains("debugging-toolkit"), "{found}");
    assert!(found["plugins"]["block-no-verify"].is_string(), "{found}");

    std::fs::write(sandbox.home.join("plugins/debugging-toolkit/.claude-plugin/plugin.json"), "{")
        .unwrap();
    let server = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    let output = exec(&sandbox, &server.uri(), "/block-no-verify:block-no-verify");
    assert_eq!(output.status.code(), Some(0), "the other plugin still works");
    let warnings: Vec<String> = json_lines(&output.stdout)
        .into_iter()
        .filter(|l| l["type"] == "warning")
        .map(|l| l["message"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].starts_with("plugin debugging-toolkit not loaded:"), "{warnings:?}");
}

#[test]
fn a_git_url_is_cloned_and_installed_with_the_url_as_its_source() {
    let sandbox = Sandbox::new();
    let upstream = sandbox.root().join("upstream");
    let copy = std::process::Command::new("cp")
        .args([
            "-r",
            real_plugin("debugging-toolkit").to_str().unwrap(),
            upstream.to_str().unwrap(),
        ])
        .status()
        .unwrap();
    assert!(copy.success());
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(&upstream)
            .output()
            .unwrap();
        assert!(status.status.success(), "{}", text(&status.stderr));
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "plugin"]);
    let url = format!("file://{}", upstream.display());
    let added = keel_plugin(&sandbox, &["add", &url]);
    assert!(added.status.success(), "{}", text(&added.stderr));
    let listed: Value =
        serde_json::from_slice(&keel_plugin(&sandbox, &["list", "--json"]).stdout).unwrap();
    assert_eq!(listed[0]["name"], "debugging-toolkit");
    assert_eq!(listed[0]["source"], url.as_str());
    let installed = sandbox.home.join("plugins/debugging-toolkit");
    assert!(installed.join("agents/debugger.md").is_file());
    assert!(!installed.join(".git").exists(), "the clone's history is not installed");
    let leftovers: Vec<_> = std::fs::read_dir(sandbox.home.join("plugins"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
