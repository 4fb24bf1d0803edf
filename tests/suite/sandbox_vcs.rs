//! `.git` and `.keel` read-only through the real `keel sandbox-exec`
//! launcher (a private mount namespace, then landlock): writes into them
//! fail while new top-level files and folders in the workspace root can be
//! created, `git status` works, and the protection cannot be escaped
//! through `/proc/PID/root`. As root (CAP_SYS_ADMIN), as an unprivileged
//! user (user namespace, through `setpriv`), and the two fallbacks when no
//! namespace can be created (a chroot forbids new user namespaces).
//!
//! Workspaces live outside every temp folder (`/var/lib/keel-tests` as
//! root, so `nobody` can reach them wherever the checkout is), so only the
//! launcher's grants make them writable. Every refused write is checked
//! for the kernel's refusal itself, so a launcher that fails to start
//! cannot pass for a sandbox that holds. The tests as `nobody` and in a
//! chroot need root: they are `#[ignore]`d and `.ci/run` runs them, where
//! a missing precondition fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use keel::sandbox::landlock::{Confinement, NetworkMode, SandboxMode};
use keel::sandbox::netproxy::Bridges;
use keel::sandbox::{CommandOutput, CommandSpec};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::policy_sandbox::outside_temp;
use super::support::Sandbox;

const KEEL: &str = env!("CARGO_BIN_EXE_keel");

struct Dirs {
    base: tempfile::TempDir,
    workspace: PathBuf,
    outside: PathBuf,
}

/// Where test workspaces go: outside every temp folder, and reachable by
/// `nobody` when the tests run as root (`outside_temp` may be under
/// `/root`, which only root can enter).
fn workspace_parent() -> PathBuf {
    if !is_root() {
        return outside_temp();
    }
    let parent = PathBuf::from("/var/lib/keel-tests");
    std::fs::create_dir_all(&parent).unwrap();
    let status = Command::new("chmod").arg("755").arg(&parent).status().unwrap();
    assert!(status.success());
    parent
}

/// A git repository with a `.keel` folder, and a folder outside it.
fn dirs() -> Dirs {
    let base = tempfile::tempdir_in(workspace_parent()).unwrap();
    let workspace = base.path().join("ws");
    let outside = base.path().join("outside");
    for dir in [workspace.join(".keel"), outside.clone()] {
        std::fs::create_dir_all(dir).unwrap();
    }
    git(&workspace, &["init", "-q"]);
    Dirs { base, workspace, outside }
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git").args(args).current_dir(dir).status().unwrap();
    assert!(status.success(), "git {args:?}");
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

fn confinement(workspace: &Path, required: bool) -> Confinement {
    Confinement {
        launcher: KEEL.into(),
        mode: SandboxMode::WorkspaceWrite,
        workspace_roots: vec![workspace.to_owned()],
        extra_roots: Vec::new(),
        read_only: Vec::new(),
        max_pids: 4096,
        shared_network: None,
        hidden: Vec::new(),
        network: NetworkMode::Off,
        bridges: Bridges::default(),
        required,
        protect_vcs: true,
        git_write: false,
    }
}

async fn run(workspace: &Path, script: &str) -> CommandOutput {
    let spec = CommandSpec::script(script, workspace).confined(&confinement(workspace, true));
    keel::sandbox::run(&spec, &CancellationToken::new()).await.unwrap()
}

/// Writes `.git` and `.keel` must refuse, each a script that must fail.
const FORBIDDEN: [&str; 4] = [
    "echo evil >> .git/config",
    "echo evil > .git/hooks/pre-commit",
    "echo evil > .keel/x",
    "mkdir .git/evil",
];

/// How the kernel refuses a confined write (read-only mount, landlock,
/// a missing capability), as the command reports it.
const DENIALS: [&str; 4] =
    ["read-only file system", "permission denied", "must be superuser", "operation not permitted"];

/// `script` failed, and because the kernel refused it: not because the
/// launcher or the shell could not start.
fn assert_denied(script: &str, succeeded: bool, stderr: &str) {
    assert!(!succeeded, "`{script}` succeeded");
    let lower = stderr.to_lowercase();
    assert!(
        DENIALS.iter().any(|denial| lower.contains(denial)),
        "`{script}` failed without a refusal from the kernel: {stderr}"
    );
}

fn assert_vcs_untouched(workspace: &Path) {
    let config = std::fs::read_to_string(workspace.join(".git/config")).unwrap();
    assert!(!config.contains("evil"), "{config}");
    for path in [".git/hooks/pre-commit", ".keel/x", ".git/evil"] {
        assert!(!workspace.join(path).exists(), "{path} was created");
    }
}

#[tokio::test]
async fn writes_into_git_and_keel_fail() {
    let d = dirs();
    for script in FORBIDDEN {
        let out = run(&d.workspace, script).await;
        assert!(!out.success(), "`{script}` succeeded");
        assert!(out.stderr.text().contains("Read-only file system"), "{}", out.stderr.text());
    }
    assert_vcs_untouched(&d.workspace);
}

#[tokio::test]
async fn new_top_level_files_and_folders_can_be_created() {
    let d = dirs();
    let out = run(&d.workspace, "mkdir target && touch target/a && echo hi > top.txt").await;
    assert!(out.success(), "{}", out.stderr.text());
    assert!(d.workspace.join("target/a").exists());
    assert_eq!(std::fs::read_to_string(d.workspace.join("top.txt")).unwrap(), "hi\n");
    // No warning: the namespace was created.
    assert!(!out.stderr.text().contains("keel:"), "{}", out.stderr.text());
}

#[tokio::test]
async fn writes_outside_the_workspace_still_fail() {
    let d = dirs();
    let target = d.outside.join("x");
    let script = format!("touch {}", target.display());
    let out = run(&d.workspace, &script).await;
    assert_denied(&script, out.success(), &out.stderr.text());
    assert!(!target.exists());
}

#[tokio::test]
async fn git_status_works() {
    let d = dirs();
    std::fs::write(d.workspace.join("new.txt"), "x").unwrap();
    let out = run(&d.workspace, "git status --short").await;
    assert!(out.success(), "{}", out.stderr.text());
    assert!(out.stdout.text().contains("?? new.txt"), "{}", out.stdout.text());
}

#[tokio::test]
async fn the_mounts_cannot_be_escaped() {
    let d = dirs();
    // The launcher's parent (this test) sees the writable `.git`.
    let escapes = [
        "echo evil >> /proc/$PPID/root$PWD/.git/config",
        "umount .git",
        "mount -o remount,rw,bind .git",
    ];
    for script in escapes {
        let script = format!("{script} && echo evil >> .git/config");
        let out = run(&d.workspace, &script).await;
        assert_denied(&script, out.success(), &out.stderr.text());
    }
    assert_vcs_untouched(&d.workspace);
}

/// `keel sandbox-exec` run directly, `wrapper` (e.g. `setpriv …`) first.
fn launch(wrapper: &[&str], workspace: &Path, required: bool, script: &str) -> Output {
    let mut args: Vec<String> = wrapper.iter().map(|s| s.to_string()).collect();
    args.push(KEEL.to_owned());
    let confinement = confinement(workspace, required);
    let launcher = confinement.launcher_args(&["bash".into(), "-c".into(), script.into()]);
    args.extend(launcher.iter().map(|a| a.to_string_lossy().into_owned()));
    Command::new(&args[0])
        .args(&args[1..])
        .current_dir(workspace)
        .env("HOME", workspace)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const NOBODY: [&str; 4] = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"];

/// Hands the test folders to `nobody` (fails the test when that cannot
/// be done here).
fn give_to_nobody(d: &Dirs) {
    assert!(is_root(), "needs root to switch to an unprivileged user");
    let setpriv = Command::new("setpriv").arg("--version").output();
    assert!(setpriv.is_ok(), "setpriv is not installed");
    let status =
        Command::new("chown").args(["-R", "65534:65534"]).arg(d.base.path()).status().unwrap();
    assert!(status.success());
}

#[test]
#[ignore = "needs root: .ci/run runs it with --ignored"]
fn an_unprivileged_user_gets_the_same_protection() {
    let d = dirs();
    give_to_nobody(&d);
    for script in FORBIDDEN {
        let out = launch(&NOBODY, &d.workspace, false, script);
        assert!(!out.status.success(), "`{script}` succeeded");
        assert!(text(&out.stderr).contains("Read-only file system"), "{}", text(&out.stderr));
    }
    assert_vcs_untouched(&d.workspace);
    let script = "id -u && mkdir target && touch target/a && git status --short";
    let out = launch(&NOBODY, &d.workspace, false, script);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "65534\n?? target/\n", "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("keel:"), "{}", text(&out.stderr));
    let outside = d.outside.join("x");
    let script = format!("touch {}", outside.display());
    let out = launch(&NOBODY, &d.workspace, false, &script);
    assert_denied(&script, out.status.success(), &text(&out.stderr));
    assert!(!outside.exists());
}

/// Runs the launcher as `nobody` inside a chroot (a bind of `/` in a
/// private mount namespace): the kernel refuses new user namespaces to a
/// chrooted process, so the launcher must fall back.
fn launch_without_namespaces(d: &Dirs, required: bool, script: &str) -> Output {
    run_in_chroot(d, &launch_args(&d.workspace, required, script))
}

/// Runs the shell-quoted `inner` words in the workspace, inside a chroot.
fn run_in_chroot(d: &Dirs, inner: &str) -> Output {
    let root = d.base.path().join("chroot");
    std::fs::create_dir_all(&root).unwrap();
    let shell = format!(
        "mount --make-rprivate / && mount --rbind / {root} && cd / && exec chroot {root} \
         sh -c 'cd \"$0\" && exec \"$@\"' {ws} {inner}",
        root = root.display(),
        ws = d.workspace.display(),
    );
    Command::new("unshare")
        .args(["-m", "sh", "-c", &shell])
        .env("HOME", &d.workspace)
        .output()
        .unwrap()
}

/// The shell-quoted `setpriv … keel sandbox-exec … -- bash -c SCRIPT`.
fn launch_args(workspace: &Path, required: bool, script: &str) -> String {
    let confinement = confinement(workspace, required);
    let launcher = confinement.launcher_args(&["bash".into(), "-c".into(), script.into()]);
    let words: Vec<String> = NOBODY
        .iter()
        .map(|s| s.to_string())
        .chain(std::iter::once(KEEL.to_owned()))
        .chain(launcher.iter().map(|a| a.to_string_lossy().into_owned()))
        .collect();
    shlex::try_join(words.iter().map(String::as_str)).unwrap()
}

/// Fails the test when the launcher cannot run as `nobody` in a chroot.
fn require_chroot(d: &Dirs) {
    give_to_nobody(d);
    let probe = launch_without_namespaces(d, false, "true");
    assert!(probe.status.success(), "cannot set up a chroot here: {}", text(&probe.stderr));
}

#[test]
#[ignore = "needs root: .ci/run runs it with --ignored"]
fn without_namespaces_git_stays_writable_and_the_launcher_says_so() {
    let d = dirs();
    require_chroot(&d);
    let out = launch_without_namespaces(&d, false, "mkdir target && echo ok >> .git/config");
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "WARNING: .git, .keel, .claude, .mcp.json, .vscode, .idea, .husky, .envrc are NOT read-only"
        ),
        "{stderr}"
    );
    assert!(d.workspace.join("target").is_dir());
}

#[test]
#[ignore = "needs root: .ci/run runs it with --ignored"]
fn without_namespaces_keel_names_every_missing_layer() {
    let d = dirs();
    require_chroot(&d);
    let call = json!({"command": "touch made-in-the-chroot"}).to_string();
    let words: Vec<String> = NOBODY
        .iter()
        .map(|s| s.to_string())
        .chain([KEEL, "tool", "shell", &call, "--yes"].map(str::to_owned))
        .collect();
    let out = run_in_chroot(&d, &shlex::try_join(words.iter().map(String::as_str)).unwrap());
    let stderr = text(&out.stderr);
    // Said at start (keel tool's probe) and for the command (the launcher).
    for gap in [
        "no PID namespace",
        "no mount namespace",
        ".git, .keel, .claude, .mcp.json, .vscode, .idea, .husky, .envrc are NOT",
    ] {
        assert!(stderr.contains(gap), "`{gap}` not said: {stderr}");
    }
    // Landlock still holds, so the command runs, confined.
    let envelope: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{stderr}"));
    assert_eq!(envelope["meta"]["exit_code"], 0, "{envelope}");
    assert!(d.workspace.join("made-in-the-chroot").exists());
}

#[test]
#[ignore = "needs root: .ci/run runs it with --ignored"]
fn without_namespaces_required_falls_back_to_landlock() {
    let d = dirs();
    require_chroot(&d);
    for script in FORBIDDEN {
        let out = launch_without_namespaces(&d, true, script);
        assert!(!out.status.success(), "`{script}` succeeded");
        assert!(text(&out.stderr).contains("kept read-only by landlock"), "{}", text(&out.stderr));
    }
    assert_vcs_untouched(&d.workspace);
    // The landlock fallback's limit: no new top-level entries.
    for script in ["mkdir target", "touch README"] {
        let out = launch_without_namespaces(&d, true, script);
        assert_denied(script, out.status.success(), &text(&out.stderr));
    }
}

#[test]
fn the_shell_tool_keeps_git_read_only_and_builds_working() {
    let sandbox = Sandbox::new();
    let write = json!({"command": "echo evil >> .git/config"}).to_string();
    let out = sandbox.keel().args(["tool", "shell", &write, "--yes"]).output().unwrap();
    let envelope: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", text(&out.stderr)));
    assert_eq!(envelope["meta"]["kind"], "sandbox_violation", "{envelope}");
    assert!(!sandbox.read(".git/config").contains("evil"));
    let build = json!({"command": "mkdir target && touch target/a && git status --short"});
    let out = sandbox.keel().args(["tool", "shell", &build.to_string(), "--yes"]).output().unwrap();
    let envelope: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(envelope["meta"]["exit_code"], 0, "{envelope}");
    assert!(envelope["output"].as_str().unwrap().contains("?? target/"), "{envelope}");
    assert!(sandbox.repo.join("target/a").exists());
}

/// What makes keel or the user's tools run programs later (`.mcp.json`,
/// editor tasks, husky hooks) is read-only like `.git` and `.keel`: a
/// command cannot change, replace or remove it (issue 34: a planted
/// `.mcp.json` server ran unconfined in the next session).
#[tokio::test]
async fn files_that_run_programs_later_are_read_only_to_commands() {
    let d = dirs();
    let servers = r#"{"mcpServers":{}}"#;
    std::fs::write(d.workspace.join(".mcp.json"), servers).unwrap();
    std::fs::create_dir_all(d.workspace.join(".vscode")).unwrap();
    std::fs::write(d.workspace.join(".vscode/tasks.json"), "{}").unwrap();
    for script in [
        r#"echo '{"mcpServers":{"x":{"command":"sh"}}}' > .mcp.json"#,
        "echo evil > .vscode/tasks.json",
        "mv .mcp.json gone.json",
        "rm -f .mcp.json",
        "echo '{}' > new.json && mv -f new.json .mcp.json",
    ] {
        let out = run(&d.workspace, script).await;
        assert!(!out.success(), "`{script}` succeeded");
    }
    assert_eq!(std::fs::read_to_string(d.workspace.join(".mcp.json")).unwrap(), servers);
    assert_eq!(std::fs::read_to_string(d.workspace.join(".vscode/tasks.json")).unwrap(), "{}");
}

/// A `.mcp.json` a command creates is removed when it ends, and said.
#[test]
fn a_planted_mcp_json_is_removed_after_the_command() {
    let sandbox = Sandbox::new();
    let plant = json!({"command": r#"echo '{"mcpServers":{"x":{"command":"sh"}}}' > .mcp.json"#});
    let out = sandbox.keel().args(["tool", "shell", &plant.to_string(), "--yes"]).output().unwrap();
    let envelope: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", text(&out.stderr)));
    let output = envelope["output"].as_str().unwrap_or_default();
    assert!(output.contains("removed `.mcp.json` created by the command"), "{envelope}");
    assert!(!sandbox.repo.join(".mcp.json").exists());
}

/// keel's home under a writable temp folder (issue 34): the read-only
/// carve-out cannot be renamed away with a folder above it and replaced by
/// a fresh one holding planted hooks.
#[tokio::test]
async fn keel_home_under_a_temp_root_cannot_be_renamed_away() {
    let d = dirs();
    let temp = tempfile::tempdir_in("/tmp").unwrap();
    let keel_home = temp.path().join("a/keel");
    std::fs::create_dir_all(&keel_home).unwrap();
    std::fs::write(keel_home.join("config.toml"), "model = \"m\"\n").unwrap();
    let mut confined = confinement(&d.workspace, true);
    confined.read_only = vec![keel_home.clone()];
    let a = temp.path().join("a");
    let swap = format!(
        "mv {a} {a}.old && mkdir -p {home} && echo planted > {home}/config.toml",
        a = a.display(),
        home = keel_home.display()
    );
    for script in
        [swap.as_str(), &format!("mv {} {}.old", keel_home.display(), keel_home.display())]
    {
        let spec = CommandSpec::script(script, &d.workspace).confined(&confined);
        let out = keel::sandbox::run(&spec, &CancellationToken::new()).await.unwrap();
        assert!(!out.success(), "`{script}` succeeded");
    }
    let config = std::fs::read_to_string(keel_home.join("config.toml")).unwrap();
    assert_eq!(config, "model = \"m\"\n");
    assert!(!temp.path().join("a.old").exists());
}

/// Runs `script` as `nobody` in the launcher under `confined`.
fn launch_confined_as_nobody(confined: &Confinement, workspace: &Path, script: &str) -> Output {
    let launcher = confined.launcher_args(&["bash".into(), "-c".into(), script.into()]);
    Command::new(NOBODY[0])
        .args(&NOBODY[1..])
        .arg(KEEL)
        .args(&launcher)
        .current_dir(workspace)
        .env("HOME", workspace)
        .output()
        .unwrap()
}

/// The two protections above for an unprivileged user (issue 34: the jail's
/// tests run as root and as nobody): `.mcp.json` and editor tasks stay
/// read-only, and keel's home under a writable temp root cannot be renamed
/// away, when the launcher runs as `nobody`.
#[test]
#[ignore = "needs root: .ci/run runs it with --ignored"]
fn files_that_run_programs_later_and_keel_home_hold_for_an_unprivileged_user() {
    let d = dirs();
    let servers = r#"{"mcpServers":{}}"#;
    std::fs::write(d.workspace.join(".mcp.json"), servers).unwrap();
    std::fs::create_dir_all(d.workspace.join(".vscode")).unwrap();
    std::fs::write(d.workspace.join(".vscode/tasks.json"), "{}").unwrap();
    give_to_nobody(&d);
    for script in [
        r#"echo '{"mcpServers":{"x":{"command":"sh"}}}' > .mcp.json"#,
        "echo evil > .vscode/tasks.json",
        "mv .mcp.json gone.json",
        "echo '{}' > new.json && mv -f new.json .mcp.json",
    ] {
        let out = launch(&NOBODY, &d.workspace, false, script);
        assert!(!out.status.success(), "`{script}` succeeded as nobody");
    }
    assert_eq!(std::fs::read_to_string(d.workspace.join(".mcp.json")).unwrap(), servers);
    assert_eq!(std::fs::read_to_string(d.workspace.join(".vscode/tasks.json")).unwrap(), "{}");

    let temp = tempfile::tempdir_in("/tmp").unwrap();
    let keel_home = temp.path().join("a/keel");
    std::fs::create_dir_all(&keel_home).unwrap();
    std::fs::write(keel_home.join("config.toml"), "model = \"m\"\n").unwrap();
    let chown = Command::new("chown").args(["-R", "65534:65534"]).arg(temp.path()).status();
    assert!(chown.unwrap().success());
    let mut confined = confinement(&d.workspace, true);
    confined.read_only = vec![keel_home.clone()];
    let a = temp.path().join("a");
    let swap = format!(
        "mv {a} {a}.old && mkdir -p {home} && echo planted > {home}/config.toml",
        a = a.display(),
        home = keel_home.display()
    );
    let out = launch_confined_as_nobody(&confined, &d.workspace, &swap);
    assert!(!out.status.success(), "`{swap}` succeeded as nobody");
    let config = std::fs::read_to_string(keel_home.join("config.toml")).unwrap();
    assert_eq!(config, "model = \"m\"\n");
    assert!(!temp.path().join("a.old").exists());
}
