//! Adversarial corpus, keel's own git (issue 13, Critical 1): a repository
//! whose config or files name commands (fsmonitor, hooks, filters, external
//! diff, textconv, includes, a submodule's gitdir) and a caller whose
//! `GIT_*` variables do, against the real `keel exec` (environment summary
//! at start and resume, shadow-git checkpoint) and `/diff`'s git. Each case
//! first shows that plain git fires the trap (the attack is live), then
//! that keel's runs leave the canary outside workspace and temp untouched.

use std::path::Path;
use std::process::Command;

use super::canary::{Canary, exec, exec_in, stderr, write_then_answer};
use super::support::{Model, Sandbox, request_bodies, scripted_model};
use super::wire::{Step, Wire};

fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "protocol.file.allow=always"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// A repository with one committed file, `tracked.txt`.
fn committed_repo() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write("tracked.txt", "one\n");
    git(&sandbox.repo, &["add", "tracked.txt"]);
    git(&sandbox.repo, &["commit", "-qm", "init"]);
    sandbox
}

/// Plain git (as a user would run it) fires the trap: the case is real.
fn assert_live(canary: &Canary, dir: &Path, args: &[&str], env: &[(&str, &str)]) {
    let mut command = Command::new("git");
    command.args(args).current_dir(dir);
    for (key, value) in env {
        command.env(key, value);
    }
    let _ = command.output().unwrap();
    assert!(!canary.entries().is_empty(), "the trap did not fire for plain `git {args:?}`");
    for name in canary.entries() {
        std::fs::remove_file(canary.file(&name)).unwrap();
    }
}

/// Runs `keel exec` (start, summary, checkpoint) and then `keel exec
/// resume --last` in the repository; both must finish and fire nothing.
async fn assert_keel_quiet(sandbox: &Sandbox, canary: &Canary, env: &[(&str, &str)]) {
    let output = exec(sandbox, env).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    canary.assert_quiet("keel exec");
    let server = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    let mut resume = sandbox.keel();
    for (key, value) in env {
        resume.env(key, value);
    }
    let output = resume
        .arg("exec")
        .args(Model::chat(&server).flags())
        .args(["resume", "--last", "again"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    canary.assert_quiet("keel exec resume");
}

fn set_config(repo: &Path, key: &str, value: &str) {
    assert!(git(repo, &["config", key, value]).status.success());
}

#[tokio::test]
async fn fsmonitor_in_the_repository_config_does_not_run() {
    let sandbox = committed_repo();
    let canary = Canary::new("fsmonitor");
    set_config(&sandbox.repo, "core.fsmonitor", &format!("{}; echo", canary.trap("fsmonitor")));
    assert_live(&canary, &sandbox.repo, &["status"], &[]);
    assert_keel_quiet(&sandbox, &canary, &[]).await;
}

#[tokio::test]
async fn the_status_summary_still_reaches_the_model() {
    let sandbox = committed_repo();
    let canary = Canary::new("summary");
    set_config(&sandbox.repo, "core.fsmonitor", &canary.trap("fsmonitor"));
    sandbox.write("tracked.txt", "changed\n");
    let server = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    let output = sandbox.run(&Model::chat(&server), &["exec", "hi"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let first = request_bodies(&server).await[0].to_string();
    assert!(first.contains("1 uncommitted change (M tracked.txt)"), "{first}");
    canary.assert_quiet("summary");
}

#[tokio::test]
async fn fsmonitor_from_an_included_file_does_not_run() {
    let sandbox = committed_repo();
    let canary = Canary::new("include");
    sandbox.write("evil.cfg", &format!("[core]\n\tfsmonitor = \"{}; echo\"\n", canary.trap("inc")));
    set_config(&sandbox.repo, "include.path", "../evil.cfg");
    assert_live(&canary, &sandbox.repo, &["status"], &[]);
    assert_keel_quiet(&sandbox, &canary, &[]).await;
}

#[tokio::test]
async fn fsmonitor_from_an_include_if_does_not_run() {
    let sandbox = committed_repo();
    let canary = Canary::new("includeif");
    sandbox.write("evil.cfg", &format!("[core]\n\tfsmonitor = \"{}; echo\"\n", canary.trap("if")));
    let evil = sandbox.repo.join("evil.cfg");
    set_config(&sandbox.repo, "includeIf.gitdir:/.path", &evil.display().to_string());
    assert_live(&canary, &sandbox.repo, &["status"], &[]);
    assert_keel_quiet(&sandbox, &canary, &[]).await;
}

fn hook(dir: &Path, name: &str, body: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

const HOOKS: [&str; 6] = [
    "post-index-change",
    "pre-commit",
    "post-commit",
    "post-checkout",
    "reference-transaction",
    "pre-auto-gc",
];

#[tokio::test]
async fn hooks_in_the_repository_do_not_run() {
    let sandbox = committed_repo();
    let canary = Canary::new("hooks");
    for name in HOOKS {
        hook(&sandbox.repo.join(".git/hooks"), name, &canary.trap(name));
    }
    touch_old(&sandbox.repo.join("tracked.txt"), 1_000_000);
    assert_live(&canary, &sandbox.repo, &["status"], &[]);
    touch_old(&sandbox.repo.join("tracked.txt"), 2_000_000);
    assert_keel_quiet(&sandbox, &canary, &[]).await;
}

#[tokio::test]
async fn a_hooks_path_in_the_workspace_does_not_run() {
    let sandbox = committed_repo();
    let canary = Canary::new("hookspath");
    for name in HOOKS {
        hook(&sandbox.repo.join("githooks"), name, &canary.trap(name));
    }
    set_config(&sandbox.repo, "core.hooksPath", "githooks");
    touch_old(&sandbox.repo.join("tracked.txt"), 1_000_000);
    assert_live(&canary, &sandbox.repo, &["status"], &[]);
    touch_old(&sandbox.repo.join("tracked.txt"), 2_000_000);
    assert_keel_quiet(&sandbox, &canary, &[]).await;
}

/// Makes the index's stat data stale (a new mtime `secs` after the epoch),
/// so status refreshes and writes the index.
fn touch_old(path: &Path, secs: u64) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs)).unwrap();
}

#[tokio::test]
async fn a_clean_filter_named_by_gitattributes_does_not_run() {
    let sandbox = committed_repo();
    let canary = Canary::new("clean");
    sandbox.write(".gitattributes", "* filter=evil\n");
    set_config(&sandbox.repo, "filter.evil.clean", &format!("{}; cat", canary.trap("clean")));
    set_config(&sandbox.repo, "filter.evil.smudge", &format!("{}; cat", canary.trap("smudge")));
    set_config(&sandbox.repo, "filter.evil.required", "true");
    sandbox.write("tracked.txt", "two\n");
    assert_live(&canary, &sandbox.repo, &["status"], &[]);
    assert_keel_quiet(&sandbox, &canary, &[]).await;
}

#[tokio::test]
async fn a_process_filter_named_by_info_attributes_does_not_run() {
    let sandbox = committed_repo();
    let canary = Canary::new("process");
    std::fs::create_dir_all(sandbox.repo.join(".git/info")).unwrap();
    std::fs::write(sandbox.repo.join(".git/info/attributes"), "*.txt filter=p\n").unwrap();
    set_config(&sandbox.repo, "filter.p.process", &canary.trap("process"));
    sandbox.write("tracked.txt", "two\n");
    assert_live(&canary, &sandbox.repo, &["status"], &[]);
    assert_keel_quiet(&sandbox, &canary, &[]).await;
}

#[tokio::test]
async fn a_driver_name_that_cannot_be_overridden_stops_git_not_keel() {
    let sandbox = committed_repo();
    let canary = Canary::new("equals");
    std::fs::create_dir_all(sandbox.repo.join(".git/info")).unwrap();
    std::fs::write(sandbox.repo.join(".git/info/attributes"), "* filter=a=b\n").unwrap();
    let config = sandbox.repo.join(".git/config");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!("[filter \"a=b\"]\n\tclean = \"{}; cat\"\n", canary.trap("eq")));
    std::fs::write(&config, text).unwrap();
    sandbox.write("tracked.txt", "two\n");
    assert_live(&canary, &sandbox.repo, &["status"], &[]);
    let server = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    let output = sandbox.run(&Model::chat(&server), &["exec", "hi"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let first = request_bodies(&server).await[0].to_string();
    assert!(first.contains("status not read"), "{first}");
    assert!(first.contains("filter.a=b.clean"), "the reason names the key: {first}");
    canary.assert_quiet("driver with =");
}

#[tokio::test]
async fn a_gitdir_file_pointing_at_a_hostile_gitdir_does_not_run() {
    let sandbox = committed_repo();
    let canary = Canary::new("gitdir");
    // The hostile git dir lives outside the workspace; the workspace's
    // `.git` is a file naming it, as a submodule's or a worktree's is.
    let hostile = tempfile::tempdir().unwrap();
    let moved = hostile.path().join("evil.git");
    std::fs::rename(sandbox.repo.join(".git"), &moved).unwrap();
    std::fs::write(sandbox.repo.join(".git"), format!("gitdir: {}\n", moved.display())).unwrap();
    set_config(&sandbox.repo, "core.fsmonitor", &format!("{}; echo", canary.trap("gitdir")));
    assert_live(&canary, &sandbox.repo, &["status"], &[]);
    assert_keel_quiet(&sandbox, &canary, &[]).await;
}

#[tokio::test]
async fn a_submodule_with_a_hostile_config_is_not_entered() {
    let sandbox = committed_repo();
    let canary = Canary::new("submodule");
    let sub = sandbox.repo.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    git(&sub, &["init", "-q"]);
    std::fs::write(sub.join("s.txt"), "s\n").unwrap();
    git(&sub, &["add", "s.txt"]);
    git(&sub, &["commit", "-qm", "s"]);
    git(&sandbox.repo, &["add", "sub"]);
    git(&sandbox.repo, &["commit", "-qm", "sub"]);
    set_config(&sub, "core.fsmonitor", &format!("{}; echo", canary.trap("sub")));
    std::fs::write(sub.join("s.txt"), "changed\n").unwrap();
    assert_live(&canary, &sandbox.repo, &["status"], &[]);
    assert_keel_quiet(&sandbox, &canary, &[]).await;
}

#[tokio::test]
async fn git_variables_of_the_caller_do_not_steer_keels_git() {
    let sandbox = committed_repo();
    let canary = Canary::new("callerenv");
    let trap = format!("{}; echo", canary.trap("env"));
    let env = [
        ("GIT_CONFIG_COUNT", "1"),
        ("GIT_CONFIG_KEY_0", "core.fsmonitor"),
        ("GIT_CONFIG_VALUE_0", trap.as_str()),
    ];
    assert_live(&canary, &sandbox.repo, &["status"], &env);
    let parameters = format!("'core.fsmonitor'='{trap}'");
    assert_live(&canary, &sandbox.repo, &["status"], &[("GIT_CONFIG_PARAMETERS", &parameters)]);
    let mut all = env.to_vec();
    all.push(("GIT_CONFIG_PARAMETERS", &parameters));
    all.push(("GIT_EXTERNAL_DIFF", &trap));
    assert_keel_quiet(&sandbox, &canary, &all).await;
}

#[tokio::test]
async fn the_users_global_config_does_not_reach_the_shadow_repository() {
    let sandbox = committed_repo();
    let canary = Canary::new("global");
    // A workspace file names a filter the user's global config defines
    // (as git-lfs does): the checkpoint's `git add` must not run it.
    sandbox.write(".gitattributes", "* filter=evil\n");
    std::fs::write(
        sandbox.home.join(".gitconfig"),
        format!(
            "[filter \"evil\"]\n\tclean = \"{}; cat\"\n[core]\n\tfsmonitor = \"{}; echo\"\n",
            canary.trap("clean"),
            canary.trap("fsmonitor")
        ),
    )
    .unwrap();
    let home = sandbox.home.display().to_string();
    assert_live(&canary, &sandbox.repo, &["status"], &[("HOME", &home)]);
    assert_keel_quiet(&sandbox, &canary, &[]).await;
    assert!(sandbox.repo.join("note.txt").exists(), "the run itself worked");
}

#[tokio::test]
async fn diff_for_the_tui_runs_no_external_diff_textconv_or_filter() {
    let sandbox = committed_repo();
    let canary = Canary::new("diff");
    sandbox.write(".gitattributes", "*.txt diff=evil filter=evil\n");
    set_config(&sandbox.repo, "diff.external", &canary.trap("external"));
    set_config(&sandbox.repo, "diff.evil.textconv", &format!("{}; cat", canary.trap("tc")));
    set_config(&sandbox.repo, "diff.evil.command", &canary.trap("command"));
    set_config(&sandbox.repo, "filter.evil.clean", &format!("{}; cat", canary.trap("clean")));
    set_config(&sandbox.repo, "core.pager", &canary.trap("pager"));
    sandbox.write("tracked.txt", "two\n");
    assert_live(&canary, &sandbox.repo, &["diff"], &[]);
    let diff = keel::runtime::git::workspace_diff(sandbox.repo.clone()).await.unwrap();
    assert!(diff.contains("-one\n+two\n"), "{diff}");
    canary.assert_quiet("workspace diff");
}

#[tokio::test]
async fn a_workspace_without_git_at_launch_that_gains_a_hostile_one_is_safe_next_start() {
    let sandbox = Sandbox::new();
    std::fs::remove_dir_all(sandbox.repo.join(".git")).unwrap();
    let canary = Canary::new("later");
    // The first session runs in a plain folder …
    let output = exec(&sandbox, &[]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // … where a repository with a hostile config appears (as `git init &&
    // git config core.fsmonitor …` by the model would make it) …
    git(&sandbox.repo, &["init", "-q"]);
    set_config(&sandbox.repo, "core.fsmonitor", &format!("{}; echo", canary.trap("later")));
    assert_live(&canary, &sandbox.repo, &["status"], &[]);
    // … and the next start must not run it.
    let output = exec_in(&sandbox, &sandbox.repo.clone(), &write_then_answer(), &[], &[]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    canary.assert_quiet("next start");
}
