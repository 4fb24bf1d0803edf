//! Confinement is a value (issue 30): two sessions' jails in one process
//! (as `keel mcp-server` runs tasks side by side) confine their commands
//! each by its own, at the same time, with their own environment filters;
//! an unsandboxed re-run's jail confines nothing and leaves its session's
//! jail as it was.

use std::path::{Path, PathBuf};
use std::time::Duration;

use keel::sandbox::landlock::{Confinement, SandboxMode};
use keel::sandbox::{CommandAccess, CommandJail, CommandOutput, CommandSpec, EnvFilter};
use tokio_util::sync::CancellationToken;

use super::policy_sandbox::outside_temp;

const KEEL: &str = env!("CARGO_BIN_EXE_keel");

fn confinement(workspace: &Path) -> Confinement {
    Confinement {
        launcher: KEEL.into(),
        mode: SandboxMode::WorkspaceWrite,
        workspace_roots: vec![workspace.to_owned()],
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
    }
}

/// Two workspaces outside every temp folder: only a jail's own grant
/// makes one writable.
fn workspaces(base: &Path) -> (PathBuf, PathBuf) {
    let (a, b) = (base.join("a"), base.join("b"));
    for dir in [&a, &b] {
        std::fs::create_dir_all(dir).unwrap();
    }
    (a, b)
}

async fn run(jail: &CommandJail, script: String, cwd: &Path) -> CommandOutput {
    // Bounded: commands that cannot meet fail instead of hanging.
    let spec = CommandSpec::script(script, cwd).with_timeout(Duration::from_secs(30));
    jail.run(spec, CommandAccess::Writes, &CancellationToken::new()).await.unwrap()
}

/// What a command in workspace `own` prints: whether it could write
/// there and in `other`, and whether it inherited `HOME`.
fn probe(own: &Path, other: &Path) -> String {
    format!(
        "touch {own}/mine && echo own=written; touch {other}/theirs 2>/dev/null && echo \
         other=written; echo home=${{HOME:+set}}",
        own = own.display(),
        other = other.display()
    )
}

#[tokio::test]
async fn two_jails_in_one_process_confine_their_commands_each_by_its_own_at_once() {
    let base = tempfile::tempdir_in(outside_temp()).unwrap();
    let (a, b) = workspaces(base.path());
    assert!(std::env::var_os("HOME").is_some(), "the test needs HOME set");
    let jail_a = CommandJail::new(Some(confinement(&a)), EnvFilter::new(&["HOME".into()], &[]));
    let jail_b = CommandJail::new(Some(confinement(&b)), EnvFilter::default());
    // Each command waits, through a pipe in its own workspace, for the
    // other to be running: neither can finish unless both run at once.
    let meet = |own: &Path, other: &Path, first: bool| {
        let (mine, theirs) = (own.join("meet"), other.join("meet"));
        let (mine, theirs) = (mine.display(), theirs.display());
        let speak = format!("mkfifo {mine} && echo hi > {mine}; ");
        let listen = format!("until [ -p {theirs} ]; do :; done; read x < {theirs}; ");
        if first { speak + &listen } else { listen + &speak }
    };
    let script_a = meet(&a, &b, true) + &probe(&a, &b);
    let script_b = meet(&b, &a, false) + &probe(&b, &a);
    let (out_a, out_b) = tokio::join!(run(&jail_a, script_a, &a), run(&jail_b, script_b, &b));
    assert_eq!(out_a.stdout.text(), "own=written\nhome=\n", "{}", out_a.stderr.text());
    assert_eq!(out_b.stdout.text(), "own=written\nhome=set\n", "{}", out_b.stderr.text());
    assert!(a.join("mine").exists() && b.join("mine").exists());
    assert!(
        !a.join("theirs").exists() && !b.join("theirs").exists(),
        "a jail wrote outside its own"
    );
}

#[tokio::test]
async fn a_jail_without_confinement_runs_unconfined_and_leaves_the_session_jail_confined() {
    let base = tempfile::tempdir_in(outside_temp()).unwrap();
    let (a, b) = workspaces(base.path());
    let jail = CommandJail::new(Some(confinement(&a)), EnvFilter::default());
    let rerun = jail.without_confinement();
    assert!(rerun.confinement().is_none());
    let out = run(&rerun, probe(&a, &b), &a).await;
    assert_eq!(
        out.stdout.text(),
        "own=written\nother=written\nhome=set\n",
        "{}",
        out.stderr.text()
    );
    std::fs::remove_file(b.join("theirs")).unwrap();
    let out = run(&jail, probe(&a, &b), &a).await;
    assert_eq!(out.stdout.text(), "own=written\nhome=set\n", "{}", out.stderr.text());
    assert!(!b.join("theirs").exists());
}
