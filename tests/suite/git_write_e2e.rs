//! Issue 31, scope 3, through the real binary, as root and as `nobody`
//! (issue 34: the repository and KEEL_HOME are `nobody`'s, as a real
//! user's are theirs): in auto mode a plain `git checkout -b fix` and then
//! `git commit -am msg` (separate calls) work in the sandbox, while
//! `.git/config` and `.git/hooks` stay read-only to every command, a
//! recognised git command included (its own config write fails), and the
//! ways around recognition (a global `-c`, a compound line, a plain write)
//! keep `.git` read-only.

use std::path::Path;
use std::process::{Command, Output};

use keel::sandbox::landlock::{Confinement, SandboxMode};
use keel::sandbox::{CommandAccess, CommandJail, CommandOutput, CommandSpec, EnvFilter};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::jail_fixture::{
    KEEL, User, as_root_and_nobody, command_as, hand_over, note, require, sandbox_of,
};
use super::support::{Model, Sandbox, scripted_model};
use super::wire::{Step, Wire, call};

as_root_and_nobody! {
    in_auto_mode_checkout_b_then_commit_am_work_as_separate_calls;
    git_config_and_hooks_stay_read_only_to_every_command;
    with_git_writable_what_makes_git_run_programs_stays_read_only;
    in_yolo_mode_add_stash_and_a_branch_work;
}

/// Fails the test when the jail cannot protect `.git` for `user` here
/// (landlock or the mount namespace missing): these tests run where it can.
fn require_jail(user: User, dir: &Path) {
    let output = command_as(user, KEEL)
        .args(["sandbox-exec", "--protect-vcs", "--workspace-root"])
        .arg(dir)
        .args(["--", "--probe"])
        .output()
        .unwrap();
    let layers: Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
    assert!(
        layers["vcs"] == "mounts" && layers["landlock"] != "none",
        "no read-only mounts for .git as {user:?} here: {layers}"
    );
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(future)
}

/// `git args…` as the test's user (root), on a repository that may be
/// `nobody`'s (hence `safe.directory`).
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "safe.directory=*"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// `user`'s repository with one commit, and their identity in their
/// global config (`HOME` is keel's home in these tests); the jail can
/// protect its `.git` for them.
fn repository(user: User) -> Sandbox {
    require(user);
    let sandbox = sandbox_of(user);
    std::fs::write(
        sandbox.home.join(".gitconfig"),
        "[user]\n\tname = T\n\temail = t@x.example.test\n",
    )
    .unwrap();
    sandbox.write("a.txt", "typo\n");
    let repo = &sandbox.repo;
    let identity = ["-c", "user.name=T", "-c", "user.email=t@x.example.test"];
    git(repo, &["add", "a.txt"]);
    git(repo, &[&identity[..], &["commit", "-qm", "first"]].concat());
    hand_over(user, &sandbox);
    require_jail(user, repo);
    sandbox
}

fn shell(command: &str) -> Step {
    Step::Calls { text: None, calls: vec![call("shell", json!({ "command": command }))] }
}

/// `keel exec --json --full-auto` on `steps`; the shell results in order.
async fn exec_auto(sandbox: &Sandbox, steps: &[Step]) -> Vec<(String, Value)> {
    exec_in(sandbox, "--full-auto", steps).await
}

/// `keel exec --json MODE_FLAG` on `steps`; the shell results in order.
async fn exec_in(sandbox: &Sandbox, mode_flag: &str, steps: &[Step]) -> Vec<(String, Value)> {
    let server = scripted_model(Wire::Chat, steps).await;
    let output = sandbox.run(
        &Model::chat(&server),
        &["exec", "--json", mode_flag, "fix the typo on a branch and commit it"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    sandbox
        .only_log()
        .iter()
        .filter(|line| line["type"] == "tool_call_finished")
        .map(|line| (line["result"]["output"].as_str().unwrap().to_owned(), line["meta"].clone()))
        .collect()
}

/// `keel tool shell` in auto mode, approved (`--yes`): what the sandbox
/// alone does with `command`.
fn tool_shell(sandbox: &Sandbox, command: &str) -> Value {
    let args = json!({ "command": command }).to_string();
    let out: Output =
        sandbox.keel().args(["tool", "shell", &args, "--mode", "auto", "--yes"]).output().unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)))
}

fn in_auto_mode_checkout_b_then_commit_am_work_as_separate_calls(user: User) {
    let sandbox = repository(user);
    let steps = [
        shell("git checkout -b fix"),
        shell("echo fixed > a.txt"),
        shell("git commit -am 'fix the typo'"),
        Step::Answer("committed on fix".into()),
    ];
    let results = block_on(exec_auto(&sandbox, &steps));
    for (output, meta) in &results {
        assert_eq!(meta["exit_code"], 0, "{output}");
    }
    assert_eq!(git(&sandbox.repo, &["branch", "--show-current"]), "fix");
    assert_eq!(git(&sandbox.repo, &["log", "-1", "--format=%s %an"]), "fix the typo T");
    assert_eq!(git(&sandbox.repo, &["status", "--porcelain"]), "");
    // The branch was made by `user`'s git, in the jail keel built for them.
    let branch = std::fs::metadata(sandbox.repo.join(".git/refs/heads/fix")).unwrap();
    assert_eq!(std::os::unix::fs::MetadataExt::uid(&branch), user.uid());
}

/// Issue 31: `git add`, `git stash` and `git checkout -b` failed in every
/// sandboxed mode, yolo included (`.git` read-only); the sandbox holds in
/// yolo too, and git through git works there as in auto.
fn in_yolo_mode_add_stash_and_a_branch_work(user: User) {
    let sandbox = repository(user);
    let steps = [
        shell("echo draft > a.txt"),
        shell("git add a.txt"),
        shell("git stash"),
        shell("git checkout -b fix"),
        shell("git stash pop"),
        Step::Answer("stashed and moved to fix".into()),
    ];
    let results = block_on(exec_in(&sandbox, "--yolo", &steps));
    assert_eq!(results.len(), 5, "{results:?}");
    for (output, meta) in &results {
        assert_eq!(meta["exit_code"], 0, "{output}");
    }
    assert_eq!(git(&sandbox.repo, &["branch", "--show-current"]), "fix");
    assert_eq!(sandbox.read("a.txt"), "draft\n");
    assert_eq!(git(&sandbox.repo, &["stash", "list"]), "");
}

fn git_config_and_hooks_stay_read_only_to_every_command(user: User) {
    let sandbox = repository(user);
    let config = sandbox.read(".git/config");
    for command in [
        // Not recognised: `.git` read-only as a whole.
        "echo evil > .git/hooks/x",
        "echo evil >> .git/config",
        "git config core.hooksPath /tmp/evil-hooks",
        "git -c core.hooksPath=/tmp/evil-hooks commit --allow-empty -m evil",
        "git add a.txt && echo evil > .git/hooks/post-commit",
        // Recognised, `.git` writable: but its config is not.
        "git switch -c evil --track master",
    ] {
        let envelope = tool_shell(&sandbox, command);
        assert_ne!(envelope["meta"]["exit_code"], 0, "`{command}` succeeded: {envelope}");
        assert_eq!(sandbox.read(".git/config"), config, "`{command}` changed .git/config");
        assert!(!sandbox.repo.join(".git/hooks/x").exists(), "`{command}` wrote a hook");
        assert!(!sandbox.repo.join(".git/hooks/post-commit").exists(), "`{command}` wrote a hook");
    }
    assert_eq!(git(&sandbox.repo, &["log", "--format=%s"]), "first", "no commit landed");
}

/// `script` in the jail of a recognised git command (`.git` writable
/// but for its config, hooks and `info/`), through `keel sandbox-exec`
/// as `user`: the launcher keel's jail runs.
fn run_git_writable(user: User, repo: &Path, script: &str) -> Output {
    command_as(user, KEEL)
        .args(["sandbox-exec", "--required", "--protect-vcs", "--git-write", "--workspace-root"])
        .arg(repo)
        .args(["--", "bash", "-c", script])
        .current_dir(repo)
        .output()
        .unwrap()
}

/// The same through keel's `CommandJail` in this process (root's): it
/// adds the sweep of guarded names the command created.
async fn jail_git_writable(repo: &Path, script: &str) -> CommandOutput {
    let confinement = Confinement {
        launcher: KEEL.into(),
        mode: SandboxMode::WorkspaceWrite,
        workspace_roots: vec![repo.to_owned()],
        extra_roots: Vec::new(),
        read_only: Vec::new(),
        network: keel::sandbox::landlock::NetworkMode::Off,
        bridges: Default::default(),
        required: true,
        protect_vcs: true,
        git_write: false,
        max_pids: 4096,
        shared_network: None,
        hidden: Vec::new(),
    };
    let jail = CommandJail::new(Some(confinement), EnvFilter::default());
    let spec = CommandSpec::script(script, repo);
    jail.run(spec, CommandAccess::GitWrites, &CancellationToken::new()).await.unwrap()
}

fn with_git_writable_what_makes_git_run_programs_stays_read_only(user: User) {
    let sandbox = repository(user);
    let config = sandbox.read(".git/config");
    for script in [
        "echo evil >> .git/config",
        "echo evil > .git/hooks/pre-commit",
        "echo evil > .git/info/attributes",
        "mv .git/config .git/config.old",
    ] {
        let out = run_git_writable(user, &sandbox.repo, script);
        assert!(!out.status.success(), "`{script}` succeeded");
    }
    assert_eq!(sandbox.read(".git/config"), config);
    assert!(!sandbox.repo.join(".git/hooks/pre-commit").exists());
    assert!(!sandbox.repo.join(".git/info/attributes").exists());
    // The rest of `.git` is writable (objects, refs, the index).
    let out =
        run_git_writable(user, &sandbox.repo, "echo x > .git/keel-probe && rm .git/keel-probe");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    if user == User::Nobody {
        // The sweep runs in keel's own process after the command, the
        // same code for every user: root's run below covers it.
        return note("the sweep of created guarded names is checked as root");
    }
    // A guarded name the command creates (a common folder elsewhere:
    // its config and hooks) is removed after it, and the command fails.
    let out = block_on(jail_git_writable(&sandbox.repo, "echo /tmp/evil > .git/commondir"));
    assert!(!out.success());
    assert!(out.stderr.text().contains("removed `.git/commondir`"), "{}", out.stderr.text());
    assert!(!sandbox.repo.join(".git/commondir").exists());
}
