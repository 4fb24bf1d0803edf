//! Issue 34: a repository's textconv, filter, diff and merge drivers (a
//! `.gitattributes` line picks one, the repository's own config names
//! its program) never run in the model's git: not in a command judged a
//! read (`git diff` runs without approval in auto and ask mode), not in a
//! recognised git write (`git add` in auto mode). Each ran before.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use super::jail_fixture::note;
use super::support::{Model, Sandbox, scripted_model};
use super::wire::{Step, Wire, call};

fn git(repo: &Path, args: &[&str]) -> String {
    let output = Command::new("git").args(args).current_dir(repo).output().unwrap();
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Runs `command` as the model's one shell call in `mode`; its result.
async fn shell(sandbox: &Sandbox, mode: &str, command: &str) -> (String, Value) {
    let steps = [
        Step::Calls { text: None, calls: vec![call("shell", json!({ "command": command }))] },
        Step::Answer("done".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = sandbox
        .keel_on(&Model::chat(&server), &["exec", "--json", "--mode", mode, "go"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let log = sandbox.only_log();
    let finished = log.iter().find(|line| line["type"] == "tool_call_finished").unwrap();
    (finished["result"]["output"].as_str().unwrap().to_owned(), finished["meta"].clone())
}

/// A repository whose `secret.txt` diffs through a planted textconv and
/// is cleaned through a planted filter (both print a marker; the filter
/// on stderr, where a key it read would go).
fn planted(sandbox: &Sandbox) {
    let repo = &sandbox.repo;
    sandbox.write("secret.txt", "one\n");
    sandbox.write(".gitattributes", "secret.txt diff=peek filter=peek\n");
    git(repo, &["add", "secret.txt", ".gitattributes"]);
    git(repo, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start"]);
    git(repo, &["config", "diff.peek.textconv", "sh -c 'echo PLANTED-TEXTCONV; cat \"$0\"'"]);
    git(repo, &["config", "filter.peek.clean", "sh -c 'echo PLANTED-CLEAN >&2; cat'"]);
    sandbox.write("secret.txt", "two\n");
}

fn jail_missing(sandbox: &Sandbox) -> bool {
    let probe = Command::new(super::jail_fixture::KEEL)
        .args(["sandbox-exec", "--protect-vcs", "--workspace-root"])
        .arg(&sandbox.repo)
        .args(["--", "--probe"])
        .output()
        .unwrap();
    let answer: Value = serde_json::from_slice(&probe.stdout).unwrap_or_default();
    if answer["vcs"] != "mounts" || answer["landlock"] == "none" {
        note(&format!("skipped: no read-only mounts for .git here: {answer}"));
        return true;
    }
    false
}

#[tokio::test]
async fn a_read_git_diff_runs_no_textconv_of_the_repository() {
    let sandbox = Sandbox::new();
    if jail_missing(&sandbox) {
        return;
    }
    planted(&sandbox);
    // The clean filter runs (for the changed file) in `status` and
    // `diff`; the textconv in `diff`. Their stderr reaches the model.
    let command = "git status --short && git diff secret.txt";
    let (output, meta) = shell(&sandbox, "ask", command).await;
    assert_eq!(meta["read_only"], true, "{meta}");
    assert!(output.contains(" M secret.txt"), "{output}");
    assert!(!output.contains("PLANTED"), "the repository's drivers ran: {output}");
}

#[tokio::test]
async fn a_git_add_in_auto_mode_runs_no_clean_filter_of_the_repository() {
    let sandbox = Sandbox::new();
    if jail_missing(&sandbox) {
        return;
    }
    planted(&sandbox);
    let (output, _) = shell(&sandbox, "auto", "git add secret.txt").await;
    assert!(!output.contains("PLANTED"), "the repository's clean filter ran: {output}");
    let staged = git(&sandbox.repo, &["cat-file", "-p", ":secret.txt"]);
    assert_eq!(staged, "two\n", "{output}");
}
