//! The landlock sandbox on this machine, through the real `keel
//! sandbox-exec` launcher: writes inside the workspace succeed, outside
//! and into `.git` fail, TCP connects fail with the network off; and a
//! model whose command is blocked reads a sandbox-violation result.
//!
//! Folders live outside every temp folder (`/tmp`, `/var/tmp`,
//! `/dev/shm`, `$TMPDIR`), which are writable inside the sandbox: under
//! `CARGO_TARGET_TMPDIR` unless the checkout itself is in a temp folder,
//! else under `$HOME/.cache`.

use std::net::TcpListener;
use std::path::{Path, PathBuf};

use keel::sandbox::landlock::{Confinement, NetworkMode, SandboxMode};
use keel::sandbox::netproxy::Bridges;
use keel::sandbox::{CommandOutput, CommandSpec};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::support::{Model, Sandbox, json_lines, scripted_model};
use super::wire::{Step, Wire, call};

struct Dirs {
    _base: tempfile::TempDir,
    workspace: PathBuf,
    outside: PathBuf,
}

/// A folder for test directories that the sandbox does not make writable.
pub(super) fn outside_temp() -> PathBuf {
    let mut temp: Vec<PathBuf> = ["/tmp", "/var/tmp", "/dev/shm"].map(PathBuf::from).to_vec();
    temp.extend(std::env::var_os("TMPDIR").map(PathBuf::from));
    let home = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/keel-tests"));
    let candidates = std::iter::once(PathBuf::from(env!("CARGO_TARGET_TMPDIR"))).chain(home);
    let chosen = candidates
        .into_iter()
        .find(|dir| !temp.iter().any(|root| dir.starts_with(root)))
        .expect("no folder outside the temp folders for sandbox tests");
    std::fs::create_dir_all(&chosen).unwrap();
    chosen
}

fn dirs() -> Dirs {
    let base = tempfile::tempdir_in(outside_temp()).unwrap();
    let workspace = base.path().join("ws");
    let outside = base.path().join("outside");
    for dir in [workspace.join(".git"), workspace.join("src"), outside.clone()] {
        std::fs::create_dir_all(dir).unwrap();
    }
    Dirs { workspace, outside, _base: base }
}

fn confinement(workspace: &Path, network: bool) -> Confinement {
    Confinement {
        launcher: env!("CARGO_BIN_EXE_keel").into(),
        mode: SandboxMode::WorkspaceWrite,
        workspace_roots: vec![workspace.to_owned()],
        extra_roots: Vec::new(),
        read_only: Vec::new(),
        max_pids: 4096,
        shared_network: None,
        hidden: Vec::new(),
        network: if network { NetworkMode::On } else { NetworkMode::Off },
        bridges: Bridges::default(),
        required: true,
        protect_vcs: true,
        git_write: false,
    }
}

async fn run(workspace: &Path, network: bool, script: &str) -> CommandOutput {
    let spec = CommandSpec::script(script, workspace).confined(&confinement(workspace, network));
    keel::sandbox::run(&spec, &CancellationToken::new()).await.unwrap()
}

#[tokio::test]
async fn writes_inside_the_workspace_succeed() {
    let d = dirs();
    let out =
        run(&d.workspace, false, "echo hi > src/a.txt && mkdir -p src/b && echo ok > src/b/c")
            .await;
    assert!(out.success(), "{}", out.stderr.text());
    assert_eq!(std::fs::read_to_string(d.workspace.join("src/b/c")).unwrap(), "ok\n");
}

#[tokio::test]
async fn writes_outside_the_workspace_fail() {
    let d = dirs();
    let target = d.outside.join("x");
    let out = run(&d.workspace, false, &format!("touch {}", target.display())).await;
    assert!(!out.success());
    // The jail's read-only mounts answer first; landlock behind them.
    let stderr = out.stderr.text();
    assert!(
        stderr.contains("Read-only file system") || stderr.contains("Permission denied"),
        "{stderr}"
    );
    assert!(!target.exists());
}

#[tokio::test]
async fn writes_into_git_fail() {
    let d = dirs();
    let out = run(&d.workspace, false, "echo evil > .git/hooks-pre-commit").await;
    assert!(!out.success());
    assert!(!d.workspace.join(".git/hooks-pre-commit").exists());
}

#[tokio::test]
async fn tcp_connect_fails_with_network_off_and_works_with_it_on() {
    let d = dirs();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let off = run(&d.workspace, false, &script).await;
    assert!(!off.success(), "connected with the network off: {}", off.stdout.text());
    let on = run(&d.workspace, true, &script).await;
    assert_eq!(on.stdout.text(), "connected\n", "{}", on.stderr.text());
}

#[tokio::test]
async fn the_model_sees_a_sandbox_violation() {
    let d = dirs();
    let sandbox = Sandbox::new();
    let target = d.outside.join("escaped");
    let steps = vec![
        Step::Calls {
            text: None,
            calls: vec![call("shell", json!({"command": format!("touch {}", target.display())}))],
        },
        Step::Answer("done".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = sandbox.run(
        &Model::on(Wire::Chat, &server).named("mock-model"),
        &["exec", "--json", "--full-auto", "touch a file outside"],
    );
    assert!(!target.exists(), "the write escaped the sandbox");
    let lines = json_lines(&output.stdout);
    let shell = lines
        .iter()
        .find(|l| l["type"] == "item_completed" && l["item"]["name"] == "shell")
        .unwrap_or_else(|| panic!("{}", String::from_utf8_lossy(&output.stderr)));
    assert_eq!(shell["item"]["meta"]["kind"], "sandbox_violation", "{shell}");
    assert!(shell["item"]["output"].as_str().unwrap().contains("sandbox violation"));
}

#[test]
fn keel_tool_runs_shell_commands_inside_the_sandbox() {
    let d = dirs();
    let sandbox = Sandbox::new();
    let target = d.outside.join("escaped-by-tool");
    let command = json!({"command": format!("touch {}", target.display())}).to_string();
    // Needs approval in ask mode; --yes approves it, the sandbox still holds.
    let out = sandbox.keel().args(["tool", "shell", &command, "--yes"]).output().unwrap();
    assert!(!target.exists(), "the write escaped the sandbox");
    let envelope: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    // Like in a session, a failing command is a result, not a tool error.
    assert_eq!(envelope["meta"]["exit_code"], 1, "{envelope}");
    assert_eq!(envelope["meta"]["kind"], "sandbox_violation", "{envelope}");
    let inside = json!({"command": "touch inside.txt"}).to_string();
    sandbox.keel().args(["tool", "shell", &inside, "--yes"]).assert().success();
    assert!(sandbox.repo.join("inside.txt").exists());
}

/// In ask mode a command the sandbox blocked is offered one re-run
/// outside it; `step` asks (a headless run declines) and records the
/// answer as an `approval` line between the call's start and its result,
/// which stays the blocked one.
#[tokio::test]
async fn a_blocked_command_is_offered_a_rerun_and_the_answer_is_logged() {
    let d = dirs();
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.home.join("rules")).unwrap();
    let rules = "prefix_rule(pattern=[\"touch\"], decision=\"allow\")\n";
    std::fs::write(sandbox.home.join("rules/user.rules"), rules).unwrap();
    let target = d.outside.join("escaped");
    let command = format!("touch {}", target.display());
    let steps = vec![
        Step::Calls { text: None, calls: vec![call("shell", json!({ "command": command }))] },
        Step::Answer("done".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = sandbox.run(
        &Model::on(Wire::Chat, &server).named("mock-model"),
        &["exec", "--json", "touch a file outside"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!target.exists(), "the write escaped the sandbox");
    let log = sandbox.only_log();
    let types: Vec<&str> = log.iter().filter_map(|l| l["type"].as_str()).collect();
    let started = types.iter().position(|t| *t == "tool_call_started").unwrap();
    let approval =
        types.iter().position(|t| *t == "approval").unwrap_or_else(|| panic!("{types:?}"));
    let finished = types.iter().position(|t| *t == "tool_call_finished").unwrap();
    assert!(started < approval && approval < finished, "{types:?}");
    assert_eq!(log[approval]["approved"], false, "{}", log[approval]);
    assert_eq!(log[approval]["scope"], "once", "{}", log[approval]);
    assert_eq!(log[finished]["meta"]["kind"], "sandbox_violation", "{}", log[finished]);
}
